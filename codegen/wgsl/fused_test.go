package wgsl_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// fusedGraphs are the row and elementwise ops whose kernels divide: the
// ones Target.Fused changes.
var fusedGraphs = []struct {
	name  string
	shape ir.Shape
	build func(x ir.Tensor) ir.Tensor
	call  string // a call the fused kernel makes
}{
	{"softmax", ir.Shape{4, 1024}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) }, "prim_div_row_fma("},
	{"softmax, short rows", ir.Shape{100, 13}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) }, "prim_div_row_fma("},
	{"tanh", ir.Shape{1000}, func(x ir.Tensor) ir.Tensor { return x.Tanh() }, "prim_div_normal("},
	{"tanh, vec4", ir.Shape{4096}, func(x ir.Tensor) ir.Tensor { return x.Tanh() }, "prim_div_normal("},
	{"x / (x + 3)", ir.Shape{1000}, func(x ir.Tensor) ir.Tensor { return x.Div(x.AddScalar(3)) }, "prim_div("},
}

// FusedShaders emits each of fusedGraphs with target t.
func fusedShaders(t *testing.T, tg wgsl.Target) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tc := range fusedGraphs {
		b := ir.NewBuilder()
		x := b.Input(tc.shape, irtest.Values(1, tc.shape.Len(), 1))
		b.Output("y", tc.build(x))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := passes.Compile(g, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		shaders, err := tg.Emit(p)
		if err != nil {
			t.Fatal(err)
		}
		var src []string
		for _, s := range shaders {
			src = append(src, s.Source)
		}
		out[tc.name] = strings.Join(src, "\n")
	}
	return out
}

// TestFusedTarget: Target{Fused: true} computes the divisions with fma()
// (division and tanh's division by their fused twins, under their own
// names; a rows kernel's division by its row's divisor by
// div_row_fma), and the plain target has no fma() anywhere; the two have
// different names, so no cache hands one's code to the other.
func TestFusedTarget(t *testing.T) {
	if (wgsl.Target{Fused: true}).Name() == (wgsl.Target{}).Name() {
		t.Fatal("the fused target has the plain one's name")
	}
	fused, plain := fusedShaders(t, wgsl.Target{Fused: true}), fusedShaders(t, wgsl.Target{})
	for _, tc := range fusedGraphs {
		f, p := fused[tc.name], plain[tc.name]
		if !strings.Contains(f, "fma(") || !strings.Contains(f, tc.call) {
			t.Errorf("%s: the fused kernel lacks fma() or %s:\n%s", tc.name, tc.call, f)
		}
		if strings.Contains(p, "fma(") {
			t.Errorf("%s: the plain kernel calls fma():\n%s", tc.name, p)
		}
	}
}

// TestFMAProbeSource: the probe computes each of its outputs as its doc
// says: the Keep'd product, the bare a * b + a, fma of the product's
// negation, and prim_div by its fused twin.
func TestFMAProbeSource(t *testing.T) {
	src := wgsl.FMAProbe(100)
	for _, want := range []string{"(p0 * p1) * params.one;", "out0[100u + i] = a * b + a;", "fma(p0, p1, ", "out0[300u + i] = prim_div(a, b);", "fma(r_"} {
		if !strings.Contains(src, want) {
			t.Errorf("the probe lacks %q:\n%s", want, src)
		}
	}
}
