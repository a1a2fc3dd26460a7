package ir_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// eps32 is float32's unit roundoff, 2⁻²⁴.
const eps32 = 0x1p-24

// eval evaluates g on cpuref and returns its outputs by name.
func eval(t *testing.T, g *ir.Graph) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		out[o.Name] = vals[o.ID]
	}
	return out
}

// gradients returns ∂loss/∂p for every parameter of g, computed by grad on
// cpuref. Every parameter must hold zeros and enter the graph only through
// c.Add(p), a constant c plus a zero shift: then c + p = c exactly, the
// forward pass is the one without p, and one SGD step with lr 1 gives
// p' = 0 - 1·g = -g exactly, so the gradient comes back unrounded.
func gradients(t *testing.T, g *ir.Graph, loss string) map[string][]float32 {
	t.Helper()
	for _, p := range g.Params() {
		for _, v := range g.Nodes[p.ID].Data {
			if v != 0 {
				t.Fatalf("gradients: parameter %q is not all zeros", p.Name)
			}
		}
	}
	sg, err := grad.Step(g, loss, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, sg)
	gs := map[string][]float32{}
	for _, p := range g.Params() {
		v := out[p.Name]
		neg := make([]float32, len(v))
		for i := range v {
			neg[i] = -v[i]
		}
		gs[p.Name] = neg
	}
	return gs
}

// within checks got against want (float64 math) elementwise, with bound(i)
// the allowed |got - want|, and logs the largest error relative to its
// bound.
func within(t *testing.T, name string, got []float32, want []float64, bound func(i int) float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, at, bad := 0.0, -1, 0
	for i := range got {
		d := math.Abs(float64(got[i]) - want[i])
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		r := d / bound(i)
		if r > worst {
			worst, at = r, i
		}
		if r > 1 {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v (difference %.3g, bound %.3g)", name, i, got[i], want[i], d, bound(i))
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values out of bound in all", name, bad)
	}
	if at >= 0 {
		t.Logf("%s: largest error %.3g of its bound at %d (got %v, want %v)", name, worst, at, got[at], want[at])
	}
}

// gelu64 and its derivative in float64, with the float32 constants the
// composite uses.
func gelu64(x float64) float64 {
	k, c := float64(float32(math.Sqrt(2/math.Pi))), float64(float32(0.044715))
	return 0.5 * x * (1 + math.Tanh(k*(x+c*x*x*x)))
}

func geluPrime64(x float64) float64 {
	k, c := float64(float32(math.Sqrt(2/math.Pi))), float64(float32(0.044715))
	th := math.Tanh(k * (x + c*x*x*x))
	return 0.5*(1+th) + 0.5*x*(1-th*th)*k*(1+3*c*x*x)
}

// TestGELU checks GELU against float64 math over ordinary and extreme
// values (±3e38, subnormals, ±0), within 8ε(|x| + |y|) + 2⁻¹⁴⁹: tanh's
// 2-ULP error (2ε absolute near ±1) carried through 1 + tanh, where it is
// not relative (large negative x), scaled by 0.5|x|, plus a few roundings
// of y, and one subnormal step where 0.5·x rounds.
func TestGELU(t *testing.T) {
	xs := append(irtest.Values(1, 4096, 6), irtest.Extremes(2, 4096)...)
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{len(xs)}, xs).GELU())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := eval(t, g)["y"]
	want := make([]float64, len(xs))
	for i, x := range xs {
		want[i] = gelu64(float64(x))
	}
	within(t, "gelu", got, want, func(i int) float64 {
		return 8*eps32*(math.Abs(float64(xs[i]))+math.Abs(want[i])) + 0x1p-149
	})
}

// TestGELUGradient checks grad's gradient of sum(w·GELU(x)), which is
// w·GELU'(x), against float64 math within 16ε·|w|·(1 + 0.5|x|·k·(1+3c·x²)):
// the rounding of 1 - tanh² is absolute and is scaled by the second term's
// factor.
func TestGELUGradient(t *testing.T) {
	n := 2048
	xs, ws := irtest.Values(3, n, 6), irtest.Values(4, n, 2)
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n}, xs).Add(b.Param("x", ir.Shape{n}, make([]float32, n)))
	b.Output("loss", x.GELU().Mul(b.Input(ir.Shape{n}, ws)).Sum())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := gradients(t, g, "loss")["x"]
	want := make([]float64, n)
	for i := range want {
		want[i] = float64(ws[i]) * geluPrime64(float64(xs[i]))
	}
	k, c := float64(geluK()), 0.044715
	within(t, "gelu'", got, want, func(i int) float64 {
		x := math.Abs(float64(xs[i]))
		return 16*eps32*math.Abs(float64(ws[i]))*(1+0.5*x*k*(1+3*c*x*x)) + 0x1p-149
	})
}

func geluK() float32 { return float32(math.Sqrt(2 / math.Pi)) }

// GELU is the tanh form, lowered to multiplies, an add and tanh.
func ExampleTensor_GELU() {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{5}, []float32{-3, -1, 0, 1, 3})
	b.Output("y", x.GELU())
	g, _ := b.Build(ir.Limits{})
	for _, v := range cpuref.Eval(g)[g.Outputs[0].ID] {
		fmt.Printf("%.6f ", v)
	}
	fmt.Println()
	// Output:
	// -0.003637 -0.158808 0.000000 0.841192 2.996363
}
