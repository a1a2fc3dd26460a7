package codegen_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
)

// nestKernel is a kernel with one operand x of shape [2,3] (transposed:
// strides 1, 2) for the nests below to load.
var nestKernel = &ir.Kernel{Shape: ir.Shape{2, 3}, Inputs: []ir.Operand{{Buffer: 0, Shape: ir.Shape{2, 3}, Strides: []int{1, 2}}}}

// testNest has a loop with a guard that Skips, a guarded load, a product,
// a select, a fold and operators of every precedence.
var testNest = &codegen.Nest{Name: "t", Dims: []string{"r", "c"}, Acc: "acc", DType: codegen.F32, Body: []codegen.Stmt{
	codegen.Var(codegen.Val(codegen.F32), "acc", codegen.Opaque(0)),
	codegen.For("k", 3,
		codegen.Skip(codegen.V("k").Mod(codegen.N(2)).Ne(codegen.N(0)).Or(codegen.V("r").Lt(codegen.N(1)).And(codegen.V("c").Ge(codegen.N(2))))),
		codegen.Let(codegen.Idx, "j", codegen.V("c").Sub(codegen.V("k").Sub(codegen.N(1)))),
		codegen.Let(codegen.Val(codegen.F32), "p", codegen.Prod(codegen.Load(0, codegen.V("r"), codegen.V("j").Div(codegen.N(2))), codegen.Float(codegen.N(0x3f800000)))),
		codegen.Let(codegen.Idx, "s", codegen.Sel(codegen.V("k").Lt(codegen.N(1)), codegen.N(0), codegen.V("k").Add(codegen.N(1)))),
		codegen.If(codegen.Bits(codegen.V("p")).Ne(codegen.N(0)),
			codegen.Fold("mx", ir.OpMax, "acc", "p"),
			codegen.Set("acc", codegen.V("mx")))),
}}

// TestNestRender: one nest, rendered through each target's Lang, is that
// target's syntax for the same statements: typed declarations, loops over
// the index type, loads through the operand's strides (GLSL's through its
// logical index), products kept from contraction, parentheses where the
// operators need them (WGSL refuses a && b || c unbracketed).
func TestNestRender(t *testing.T) {
	want := map[string][]string{
		"c": {
			"float acc = F(0x00000000u);",
			"for (idx k = 0; k < 3u; k++) {",
			"\tif (k % 2u != 0u || (r < 1u && c >= 2u)) { continue; }",
			"\tconst idx j = c - (k - 1u);",
			"\tconst float p = in0[r + (j / 2u) * 2u] * F(1065353216u);",
			"\tconst idx s = (k < 1u ? 0u : k + 1u);",
		},
		"wgsl": {
			"var acc: f32 = params.zero;",
			"for (var k: u32 = 0u; k < 3u; k++) {",
			"\tif (k % 2u != 0u || (r < 1u && c >= 2u)) { continue; }",
			"\tlet j: u32 = c - (k - 1u);",
			"\tlet p: f32 = (in0[r + (j / 2u) * 2u] * bitcast<f32>(1065353216u)) * params.one;",
			"\tlet s: u32 = select(k + 1u, 0u, k < 1u);",
		},
		"glsl": {
			"float acc = u_zero;",
			"for (uint k = 0u; k < 3u; k++) {",
			"\tif (k % 2u != 0u || (r < 1u && c >= 2u)) { continue; }",
			"\tuint j = c - (k - 1u);",
			"\tfloat p = (load0(r * 3u + j / 2u) * uintBitsToFloat(1065353216u)) * u_one;",
			"\tuint s = (k < 1u ? 0u : k + 1u);",
		},
	}
	langs := map[string]codegen.Lang{"c": c.Lang, "glsl": glsl.Lang, "wgsl": wgsl.Lang}
	for name, l := range langs {
		got := testNest.Render(l, nestKernel)
		if diff := cmp.Diff(want[name], got[:len(want[name])]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if last := got[len(got)-1]; last != "}" || !strings.Contains(strings.Join(got, "\n"), "\tif (") {
			t.Errorf("%s: the loop or its guard is not closed:\n%s", name, strings.Join(got, "\n"))
		}
	}
}

// TestNestLoopCost: a loop of n trips inside loops of m trips costs
// m·(n+1), as ir.LoopBudget counts (WGSL's LoopCost of a direct kernel).
func TestNestLoopCost(t *testing.T) {
	n := &codegen.Nest{Body: []codegen.Stmt{
		codegen.For("a", 3, codegen.For("b", 4, codegen.If(codegen.V("b").Lt(codegen.N(1)), codegen.For("c", 5)))),
		codegen.For("d", 2),
	}}
	if got, want := n.LoopCost(), (3+1)+3*(4+1)+12*(5+1)+(2+1); got != want {
		t.Errorf("LoopCost = %d, want %d", got, want)
	}
}

// TestNestRefuses: a Skip outside any loop and a dtype a target has no
// type for are bugs, named, not rendered.
func TestNestRefuses(t *testing.T) {
	for name, n := range map[string]*codegen.Nest{
		"skip outside a loop":  {Body: []codegen.Stmt{codegen.Skip(codegen.N(1).Lt(codegen.N(2)))}},
		"a dtype with no type": {Body: []codegen.Stmt{codegen.Var(codegen.Val(codegen.DType(7)), "x", codegen.N(0))}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "BUG") {
					t.Errorf("%s: recovered %v, want a BUG panic", name, r)
				}
			}()
			n.Render(c.Lang, nestKernel)
		}()
	}
}

// TestDirectKindsHaveNests: the direct kernel kinds are written from one
// nest each, on every target.
func TestDirectKindsHaveNests(t *testing.T) {
	for _, kind := range []ir.KernelKind{ir.KernelConv, ir.KernelPool, ir.KernelPoolGrad, ir.KernelConvTranspose, ir.KernelResize, ir.KernelPad} {
		if !codegen.HasNest(kind) {
			t.Errorf("kind %v has no nest", kind)
		}
	}
}
