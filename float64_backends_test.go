package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// f64Extremes are float64 values at binary64's limits and at the limits
// of the casts from it: ±0, the least subnormal 5e-324 and the largest
// subnormal, the least normal, ±1.7976931348623157e308, ±Inf, NaN (and a
// negative NaN with a payload), float32's largest and the first value
// that rounds past it, float32's least subnormal and the ties around it,
// float16's largest and its overflow tie, bfloat16's ties, ±2^63 and the
// double below 2^63, 2^53+2, and some ordinary values.
var f64Extremes = []float64{
	0, math.Copysign(0, -1), 5e-324, -5e-324, 0x1.ffffffffffffep-1023, 0x1p-1022, -0x1p-1022,
	math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0xfff4000000000123),
	math.MaxFloat32, 0x1.ffffffp127, -0x1.fffffe8p127, 0x1p-149, 0x1p-150, 0x1.8p-150, 0x1p-151, -0x1.0000001p-150,
	65504, 65520, 65519.99999999999, 0x1.01p0, 0x1.0100000000001p0, 0x1.03p0,
	0x1p63, -0x1p63, 0x1.fffffffffffffp62, 0x1p53 + 2, 1, -1, 0.1, -2.5, 3, 1e300, -1e-300, 1.5, -0.5,
}

// f64Finite is f64Extremes without ±Inf and NaN.
func f64Finite() []float64 {
	var out []float64
	for _, x := range f64Extremes {
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

func f64Bits(xs []float64) []int64 {
	out := make([]int64, len(xs))
	for k, x := range xs {
		out[k] = ir.F64Bits(x)
	}
	return out
}

// f64Case is one graph of TestFloat64Backends: build makes it with its
// data in its inputs; fault, when set, is the error code every backend's
// run fails with (as the reference's does).
type f64Case struct {
	name  string
	build func(b *ir.Builder)
	fault ir.Code
}

// f64Cases are TestFloat64Backends' graphs, one per family of rows.
func f64Cases() []f64Case {
	n := len(f64Extremes)
	pairs := func(b *ir.Builder) (ir.Tensor, ir.Tensor) { // every value against every value
		x := b.TypedInput("x", ir.F64, ir.Shape{n, 1}, nil, f64Bits(f64Extremes)).Broadcast(ir.Shape{n, n})
		y := b.TypedInput("y", ir.F64, ir.Shape{1, n}, nil, f64Bits(f64Extremes)).Broadcast(ir.Shape{n, n})
		return x, y
	}
	cases := []f64Case{
		{name: "arithmetic", build: func(b *ir.Builder) {
			x, y := pairs(b)
			for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMaximum, ir.OpMinimum, ir.OpPow} {
				b.Output(op.String(), x.Apply(op, y))
			}
		}},
		{name: "compare-where", build: func(b *ir.Builder) {
			x, y := pairs(b)
			for _, op := range []ir.Op{ir.OpGreater, ir.OpGreaterEqual, ir.OpEqual} {
				b.Output(op.String(), x.ApplyTo(ir.Bool, op, y))
			}
			b.Output("where", x.ApplyTo(ir.Bool, ir.OpGreater, y).Where(x, y))
		}},
		{name: "unary", build: func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F64, ir.Shape{n}, nil, f64Bits(f64Extremes))
			b.Output("neg", x.Neg())
			b.Output("sqrt", x.Sqrt())
			b.Output("exp", x.Exp())
			b.Output("log", x.Log())
			// exp and log over their whole range, pow of ordinary values.
			w := make([]float64, 4000)
			for k := range w {
				w[k] = -746 + 1456*float64(k)/float64(len(w)) + 1/float64(k+3)
			}
			xw := b.TypedInput("w", ir.F64, ir.Shape{len(w)}, nil, f64Bits(w))
			b.Output("exp-range", xw.Exp())
			b.Output("log-range", xw.Log())
			b.Output("pow-range", xw.Apply(ir.OpPow, b.FullOf(ir.F64, ir.Shape{len(w)}, 0, ir.F64Bits(-1.37))))
			b.Output("full", x.Add(b.FullOf(ir.F64, ir.Shape{n}, 0, ir.F64Bits(-0x1p-1074))))
		}},
		{name: "reduce", build: func(b *ir.Builder) {
			x, y := pairs(b)
			p := x.Mul(y)
			b.Output("sum-rows", p.SumAxes(false, 1))
			b.Output("sum-cols", p.SumAxes(true, 0))
			b.Output("max-rows", p.MaxAxes(false, 1))
			b.Output("max-all", x.Sub(y).MaxAxes(false, 0, 1))
			ones := make([]int64, 1000) // a tree of 1024 leaves: 0.1 a thousand times rounds at every level
			for k := range ones {
				ones[k] = ir.F64Bits(0.1 * float64(k%7+1))
			}
			b.Output("sum-1000", b.TypedInput("w", ir.F64, ir.Shape{1000}, nil, ones).SumAxes(false, 0))
		}},
		{name: "views-gather", build: func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F64, ir.Shape{5, 8}, nil, f64Bits(f64Extremes[:40]))
			b.Output("transpose", x.T())
			b.Output("reshape", x.Reshape(ir.Shape{8, 5}))
			idx := b.TypedInput("i", ir.I64, ir.Shape{3}, nil, []int64{4, -1, 0})
			b.Output("gather", x.Gather(idx, 0))
			ge := b.TypedInput("e", ir.I32, ir.Shape{2, 8}, nil, []int64{0, 1, 2, 3, 4, -1, -2, -3, 4, 3, 2, 1, 0, 0, 1, 1})
			b.Output("gather-elements", x.GatherElements(ge, 0))
			none, _ := ir.ParseScatterReduction("none")
			upd := b.TypedInput("u", ir.F64, ir.Shape{2, 8}, nil, f64Bits(f64Extremes[24:40]))
			b.Output("scatter-elements", x.ScatterElements(ge, upd, 0, none))
			// duplicates combined in index order: indices 4, 3, 2, 1, 0 and 0, 1 twice in
			// each row's tail, over the extremes (±Inf, NaN, subnormals, the largest)
			for _, r := range []string{"add", "mul", "max", "min"} {
				red, _ := ir.ParseScatterReduction(r)
				b.Output("scatter-elements-"+r, x.ScatterElements(ge, upd, 0, red))
			}
		}},
		{name: "cast-from-float64", build: func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F64, ir.Shape{n}, nil, f64Bits(f64Extremes))
			for _, to := range []ir.DType{ir.F32, ir.F16, ir.BF16, ir.Bool, ir.F64} {
				b.Output("to-"+to.String(), x.Cast(to))
			}
			// to every integer dtype from values each holds: the truncations of
			// ±0.5, ±1.5, 100.9 and of the range's ends.
			for _, to := range ir.AllDTypes() {
				if !to.IsInt() {
					continue
				}
				lo, hi := to.Range()
				vs := []float64{0.5, -0.5, 1.5, 100.9, float64(lo), float64(hi)}
				if to.Signed() {
					vs = append(vs, -1.5, -100.9, float64(lo)-0.5)
				} else {
					vs = append(vs, -0.99)
				}
				if to.Bits() < 53 {
					vs = append(vs, float64(hi)+0.75)
				} else {
					vs[5] = 0x1.fffffffffffffp62 // the double below 2^63
				}
				b.Output("to-"+to.String(), b.TypedInput("v"+to.String(), ir.F64, ir.Shape{len(vs)}, nil, f64Bits(vs)).Cast(to))
			}
		}},
		{name: "cast-to-float64", build: func(b *ir.Builder) {
			f := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, -0x1p-149, math.MaxFloat32, -math.MaxFloat32, 0.1, 65504, 0x1p-24, 3}
			for _, from := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
				vs := make([]float32, len(f))
				for k, v := range f {
					vs[k] = from.Round(v)
				}
				b.Output("from-"+from.String(), b.TypedInput("f"+from.String(), from, ir.Shape{len(vs)}, vs, nil).Cast(ir.F64))
			}
			for _, from := range ir.AllDTypes() {
				if !from.IsInt() && from != ir.Bool {
					continue
				}
				lo, hi := from.Range()
				vs := []int64{lo, hi, 0, 1, hi / 3, lo / 7}
				if from.Bits() == 64 {
					vs = append(vs, 1<<53+1, 1<<53+3, hi-511, hi-512, -(1<<53 + 1))
				}
				for k := range vs {
					vs[k] = from.Wrap(vs[k])
					if !from.InRange(vs[k]) {
						vs[k] = 0
					}
				}
				b.Output("from-"+from.String(), b.TypedInput("i"+from.String(), from, ir.Shape{len(vs)}, nil, vs).Cast(ir.F64))
			}
		}},
	}
	// A cast with no answer fails the run on every backend.
	for _, c := range []struct {
		to ir.DType
		x  float64
	}{{ir.I64, 0x1p63}, {ir.I64, -0x1.0000000000001p63}, {ir.I64, math.NaN()}, {ir.I32, 0x1p31}, {ir.I32, -0x1p31 - 1},
		{ir.U8, 256}, {ir.U8, -1}, {ir.U64, 0x1p63}, {ir.I16, math.Inf(-1)}, {ir.U32, math.Inf(1)}, {ir.I8, 1e300}} {
		cases = append(cases, f64Case{name: fmt.Sprintf("fault-%v-%v", c.to, c.x), fault: ir.CodeIntegerFault, build: func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F64, ir.Shape{3}, nil, f64Bits([]float64{1, c.x, 2}))
			b.Output("y", x.Cast(c.to))
		}})
	}
	return cases
}

// TestFloat64Backends: every float64 row the C targets hold (add, sub,
// mul, div, maximum, minimum, pow, the comparisons, where, neg, sqrt, exp,
// log, full,
// sum and max reductions, views, gather, gather_elements, a scatter
// without reduction, casts to and from every dtype)
// over binary64's extremes (f64Extremes: ±0, subnormals down to 5e-324,
// ±1.7976931348623157e308, ±Inf, NaN, the casts' overflow to float32 and
// float16 and their ties) gives the reference's bits on native and wasm,
// every NaN of a float64 output the quiet NaN 0x7ff8000000000000 (a
// float32 output's 0x7fc00000) on every backend, and a cast with no
// answer (NaN, ±Inf, beyond the integer's range) fails the run with
// integer_fault on each, as on cpu. webgpu refuses each graph by name.
func TestFloat64Backends(t *testing.T) {
	ctx := context.Background()
	cpu := open(t, "cpu", withNonFinite)
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name, withNonFinite)
			for _, c := range f64Cases() {
				t.Run(c.name, func(t *testing.T) {
					b := ir.NewBuilder()
					c.build(b)
					g, err := b.Build(ir.Limits{NonFinite: true})
					if err != nil {
						t.Fatal(err)
					}
					want, werr := cpu.Run(ctx, g)
					got, err := rt.Run(ctx, g)
					if name == "webgpu" {
						if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "float64") {
							t.Fatalf("webgpu: %v, want unsupported naming float64", err)
						}
						return
					}
					if c.fault != "" {
						if gpucc.CodeOf(werr) != c.fault || gpucc.CodeOf(err) != c.fault {
							t.Fatalf("cpu: %v; %s: %v; want %s on both", werr, name, err, c.fault)
						}
						if werr.Error() != err.Error() {
							t.Errorf("%s's fault reads %q, cpu's %q", name, err, werr)
						}
						return
					}
					if werr != nil || err != nil {
						t.Fatalf("cpu: %v; %s: %v", werr, name, err)
					}
					for o, w := range want.Outputs {
						checkCanonicalNaN(t, "cpu", o, w)
						checkCanonicalNaN(t, name, o, got.Outputs[o])
						if why := sameBits(w, got.Outputs[o]); why != "" {
							t.Errorf("output %s: %s", o, why)
						}
					}
				})
			}
		})
	}
}

// withNonFinite lets a runtime's graphs and outputs hold NaN and ±Inf.
func withNonFinite(o *gpucc.Options) { o.Limits.NonFinite = true }

// checkCanonicalNaN fails t where a float output holds a NaN other than
// its dtype's quiet NaN: 0x7ff8000000000000 for float64, 0x7fc00000 for
// float32 values (float16 and bfloat16's included).
func checkCanonicalNaN(t *testing.T, backend, name string, v gpucc.Tensor) {
	t.Helper()
	for k, x := range v.Data {
		if x != x && math.Float32bits(x) != 0x7fc00000 {
			t.Errorf("%s: output %s element %d is NaN %#x, not 0x7fc00000", backend, name, k, math.Float32bits(x))
		}
	}
	if v.DType.IsFloat64() {
		for k, b := range v.Ints {
			if x := ir.F64Value(b); x != x && uint64(b) != 0x7ff8000000000000 {
				t.Errorf("%s: output %s element %d is NaN %#x, not 0x7ff8000000000000", backend, name, k, uint64(b))
			}
		}
	}
}

// sameBits returns "" when got holds want's dtype, shape and bits.
func sameBits(want, got gpucc.Tensor) string {
	if got.DType != want.DType || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) || len(got.Data) != len(want.Data) || len(got.Ints) != len(want.Ints) {
		return fmt.Sprintf("%v %v (%d+%d values), cpu's %v %v (%d+%d)", got.DType, got.Shape, len(got.Data), len(got.Ints), want.DType, want.Shape, len(want.Data), len(want.Ints))
	}
	for k := range want.Data {
		if math.Float32bits(got.Data[k]) != math.Float32bits(want.Data[k]) {
			return fmt.Sprintf("element %d is %#x, cpu's %#x", k, math.Float32bits(got.Data[k]), math.Float32bits(want.Data[k]))
		}
	}
	for k := range want.Ints {
		if got.Ints[k] != want.Ints[k] {
			return fmt.Sprintf("element %d is %#x, cpu's %#x", k, uint64(got.Ints[k]), uint64(want.Ints[k]))
		}
	}
	return ""
}

// TestFloat64Kept: a float64 output kept on the device (RunOptions.Keep)
// and read back with ReadTensor holds the run's bits, every NaN the quiet
// NaN 0x7ff8000000000000 where the runtime allows non-finite values (as a
// returned output does), and fails with non_finite_output where it does
// not, on cpu, native and wasm.
func TestFloat64Kept(t *testing.T) {
	ctx := context.Background()
	vals := []float64{0, math.Copysign(0, -1), math.MaxFloat64, 1.5, 5e-324, -math.MaxFloat64}
	for _, name := range []string{"cpu", "native", "wasm"} {
		for _, allow := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/nonfinite=%v", name, allow), func(t *testing.T) {
				rt := open(t, name, func(o *gpucc.Options) { o.Limits.NonFinite = allow })
				b := ir.NewBuilder()
				x := b.TypedInput("x", ir.F64, ir.Shape{len(vals)}, nil, f64Bits(vals))
				b.Output("q", x.Div(x)) // 0/0 and -0/-0 are NaN: the hardware's, of either sign
				b.Output("n", x.Neg())
				g, err := b.Build(ir.Limits{NonFinite: true})
				if err != nil {
					t.Fatal(err)
				}
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				defer exe.Release()
				res, err := exe.RunWith(ctx, nil, gpucc.RunOptions{Keep: []string{"q", "n"}})
				if err != nil {
					t.Fatal(err)
				}
				q, err := res.Kept["q"].ReadTensor(ctx)
				if !allow {
					if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
						t.Errorf("a kept output of NaNs read: %v, want non_finite_output", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				checkCanonicalNaN(t, name, "q", q)
				want := []int64{0x7ff8000000000000, 0x7ff8000000000000, ir.F64Bits(1), ir.F64Bits(1), ir.F64Bits(1), ir.F64Bits(1)}
				if fmt.Sprint(q.Ints) != fmt.Sprint(want) {
					t.Errorf("q = %#x, want %#x", q.Ints, want)
				}
				n, err := res.Kept["n"].ReadTensor(ctx)
				if err != nil || n.DType != ir.F64 || n.Ints[1] != 0 || n.Ints[0] != math.MinInt64 || ir.F64Value(n.Ints[2]) != -math.MaxFloat64 {
					t.Errorf("n = %v %#x (%v)", n.DType, n.Ints, err)
				}
			})
		}
	}
}
