package gpucc_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// nonFiniteDeck is what the non-finite tests feed every operand: ±Inf,
// NaNs of both signs and a signalling payload, zeros of both signs, the
// largest and a subnormal float, and ordinary values, in a cycle whose
// length is prime to every case's shape so that each op meets each pair.
var nonFiniteDeck = []float32{
	float32(math.Inf(1)), 1, float32(math.Inf(-1)), math.Float32frombits(0x7fc00000), -2.5,
	math.Float32frombits(0xffc00000), 0, float32(math.Copysign(0, -1)), math.Float32frombits(0x7f800001),
	3e38, -3e38, 1e-45, 0.5, 100, -100, float32(math.Inf(-1)), float32(math.Inf(1)),
}

func deck(offset, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = nonFiniteDeck[(offset+i)%len(nonFiniteDeck)]
	}
	return out
}

// nonFiniteCases are every op of the table (irtest.OpCases) over operands
// from nonFiniteDeck, the scalar forms also with ±Inf and NaN scalars, and
// the softmax of rows with -Inf entries, a row of -Inf only, a NaN and a
// +Inf.
func nonFiniteCases(t *testing.T) []irtest.Case {
	var cs []irtest.Case
	for _, op := range ir.Ops() {
		ocs := irtest.OpCases(op)
		for i, c := range ocs {
			if i != 0 && i != len(ocs)-1 {
				continue // the first and last shapes: every backend compiles each case
			}
			scalars := []float32{c.Scalar}
			if op.Info().Scalar {
				scalars = append(scalars, float32(math.Inf(-1)), math.Float32frombits(0x7fc00000))
			}
			for j, s := range scalars {
				c.Scalar = 0.5 // Graph validates under the finite policy; the data and scalar go in after
				var args [][]float32
				for _, a := range c.Args {
					args = append(args, make([]float32, a.Len()))
				}
				g := c.Graph(args...)
				for k := range c.Args {
					g.Nodes[k].Data = deck(3*i+5*k+j, c.Args[k].Len())
				}
				g.Nodes[len(c.Args)].Scalar = s
				cs = append(cs, irtest.Case{Name: c.String() + "/" + itoa(j), Graph: g})
			}
		}
	}
	ninf, nan := float32(math.Inf(-1)), math.Float32frombits(0x7fc00000)
	g := gpucctest.Build(t, func(b *ir.Builder) {
		x := b.NamedInput("x", ir.Shape{5, 4}, make([]float32, 20))
		b.Output("y", x.Softmax(1))
		b.Output("ls", x.LogSoftmax(1))
	})
	g.Nodes[g.Input("x")].Data = []float32{
		1, ninf, 2, ninf, // masked entries: exact zeros
		ninf, ninf, ninf, ninf, // fully masked: NaN, as ONNX's reference
		0.5, nan, 1, 2, // a NaN: the row is NaN
		float32(math.Inf(1)), 1, 2, 3, // +Inf: Inf - Inf is NaN there
		-3e38, 3e38, 0, 1, // finite, x - max overflows to -Inf: exp gives 0
	}
	cs = append(cs, irtest.Case{Name: "softmax_rows", Graph: g})
	return cs
}

// holdsNonFinite reports whether an input or scalar of g is ±Inf or NaN.
func holdsNonFinite(g *ir.Graph) bool {
	bad := func(v float32) bool { return math.IsInf(float64(v), 0) || v != v }
	for _, n := range g.Nodes {
		if n.Op.Info().Scalar && bad(n.Scalar) {
			return true
		}
		for _, v := range n.Data {
			if bad(v) {
				return true
			}
		}
	}
	return false
}

// canonical makes every NaN the quiet NaN the runtime returns.
func canonical(m map[string][]float32) {
	for _, v := range m {
		for i := range v {
			if v[i] != v[i] {
				v[i] = math.Float32frombits(gpucc.QuietNaN)
			}
		}
	}
}

// TestNonFiniteValues: with ir.Limits.NonFinite, every op of the table
// over ±Inf, NaN, ±0 and extremes gives cpuref's bits on every backend
// (NaNs as the quiet NaN 0x7fc00000: IEEE leaves their sign and payload
// to the hardware); the exactness machinery (the correctly rounded div,
// exp, log emulations, maximum and minimum, the reductions, relu, mask,
// the kernels and the host's output scan) meets them all. Under the
// default (finite) policy the same graphs are refused as inputs.
func TestNonFiniteValues(t *testing.T) {
	lim := ir.Limits{NonFinite: true}
	cases := nonFiniteCases(t)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) { o.Limits = lim })
			fin := open(t, be)
			for _, c := range cases {
				want, _ := gpucctest.Expect(c.Graph)
				canonical(want)
				res, err := rt.Run(context.Background(), c.Graph)
				if err != nil {
					t.Errorf("%s: %v", c.Name, err)
					continue
				}
				got := map[string][]float32{}
				for name, out := range res.Outputs {
					got[name] = out.Data
				}
				if be == "webgpu" {
					flushed := map[string][]float32{}
					for _, o := range c.Graph.Outputs {
						flushed[o.Name] = cpuref.EvalFlushed(c.Graph)[o.ID]
					}
					canonical(flushed)
					for name, w := range want {
						for i := range w {
							if math.Float32bits(got[name][i]) == math.Float32bits(flushed[name][i]) {
								w[i] = got[name][i]
							}
						}
					}
				}
				for name, w := range want {
					for i := range w {
						if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
							t.Errorf("%s: %s[%d] = %v (%#x), cpuref %v (%#x)", c.Name, name, i, got[name][i], math.Float32bits(got[name][i]), w[i], math.Float32bits(w[i]))
							break
						}
					}
				}
				if !holdsNonFinite(c.Graph) {
					continue
				}
				if _, err := fin.Run(context.Background(), c.Graph); gpucc.CodeOf(err) != ir.CodeInvalidGraph {
					t.Errorf("%s under the finite policy: %v, want %s", c.Name, err, ir.CodeInvalidGraph)
				}
			}
		})
	}
}

// TestNonFiniteGoAPI: the Go API's boundaries under each policy. With
// ir.Limits.NonFinite, Upload and a run's host inputs take ±Inf and NaN,
// a kept tensor reads back with its NaNs as the quiet NaN, and a result
// writes them as the JSON strings "Infinity", "-Infinity" and "NaN".
// Under the default policy each is refused: invalid_input for data in,
// non_finite_output for data out.
func TestNonFiniteGoAPI(t *testing.T) {
	ctx := context.Background()
	inf, nan := float32(math.Inf(1)), math.Float32frombits(0xffc00001)
	data := []float32{inf, -inf, nan, 1}
	g := gpucctest.Build(t, func(b *ir.Builder) {
		x := b.NamedInput("x", ir.Shape{4}, make([]float32, 4))
		b.Output("y", x.MulScalar(2))
	})
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) { o.Limits.NonFinite = true })
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			want := []uint32{0x7f800000, 0xff800000, gpucc.QuietNaN, 0x40000000}
			res, err := exe.RunWith(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{4}, data)}, gpucc.RunOptions{Keep: []string{"y"}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := res.Kept["y"].Read(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, gpucctest.BitsOf(got)); diff != "" {
				t.Errorf("kept y read back (-want +got):\n%s", diff)
			}
			res.Kept["y"].Release()
			up, err := rt.Upload(ctx, ir.Shape{4}, data)
			if err != nil {
				t.Fatal(err)
			}
			res, err = exe.Run(ctx, gpucc.Inputs{"x": up})
			up.Release()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, gpucctest.BitsOf(res.Outputs["y"].Data)); diff != "" {
				t.Errorf("y from an uploaded tensor (-want +got):\n%s", diff)
			}
			raw, err := json.Marshal(res.Outputs["y"])
			if err != nil || string(raw) != `{"shape":[4],"data":["Infinity","-Infinity","NaN",2]}` {
				t.Errorf("JSON: %s, %v", raw, err)
			}

			fin := open(t, be)
			if _, err := fin.Upload(ctx, ir.Shape{4}, data); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("finite policy, upload: %v, want invalid_input", err)
			}
			fexe, err := fin.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer fexe.Release()
			if _, err := fexe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{4}, data)}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("finite policy, run: %v, want invalid_input", err)
			}
			if _, err := fexe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{4}, []float32{1, 2, 3e38, 4})}); gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
				t.Errorf("finite policy, an output overflowing: %v, want non_finite_output", err)
			}
		})
	}
}
