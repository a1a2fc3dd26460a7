package wgsl_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestReductionForms checks which form each reduction's shader takes, by
// its workgroup, dispatch and a line only that form has: rows kernels
// over long rows a workgroup per row (wgsl.RowThreads threads, 256), over
// short rows a thread per row;
// column sums a workgroup per ColumnTile adjacent outputs.
func TestReductionForms(t *testing.T) {
	tests := []struct {
		name      string
		shape     ir.Shape
		build     func(x ir.Tensor) ir.Tensor
		workgroup [3]int
		groups    [3]int
		line      string
	}{
		{"softmax, long rows", ir.Shape{3, 1021}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
			[3]int{256, 1, 1}, [3]int{3, 1, 1}, "let r = 768u + t;"},
		{"softmax, 2039 leaves: staged through padded workgroup memory", ir.Shape{2, 2039}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
			[3]int{256, 1, 1}, [3]int{2, 1, 1}, "a4[7] = red[pad(t * 8u + 7u)];"},
		{"softmax, 4093 leaves (4096 padded, no vec4s): the groups' values beyond the partials", ir.Shape{2, 4093}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
			[3]int{256, 1, 1}, [3]int{2, 1, 1}, "red[256u + t] = grp[0];"},
		{"softmax, its max by order keys", ir.Shape{3, 1021}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
			[3]int{256, 1, 1}, [3]int{3, 1, 1}, "a1[0] = combine_maxkey(a1[0], a1[1]);"},
		{"row sum, staged", ir.Shape{5, 1000}, func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 1) },
			[3]int{256, 1, 1}, [3]int{5, 1, 1}, "let r = block * 1024u + 768u + t;"},
		{"softmax, short rows", ir.Shape{100, 13}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
			[3]int{64, 1, 1}, [3]int{2, 1, 1}, "let r = j;"},
		{"column sum", ir.Shape{1031, 64}, func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 0) },
			[3]int{256, 1, 1}, [3]int{8, 1, 1}, "let q = lid.x / 8u;"},
		{"column sum, tail tile", ir.Shape{300, 17}, func(x ir.Tensor) ir.Tensor { return x.SumAxes(true, 0) },
			[3]int{256, 1, 1}, [3]int{3, 1, 1}, "if (r < 300u && o < 17u) {"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
			shaders, err := wgsl.Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(shaders) != 1 {
				t.Fatalf("%d shaders, want 1:\n%s", len(shaders), p)
			}
			s := shaders[0]
			if diff := cmp.Diff([2][3]int{tc.workgroup, tc.groups}, [2][3]int{s.Workgroup, s.Groups}); diff != "" {
				t.Errorf("workgroup and dispatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(s.Source, tc.line) {
				t.Errorf("the shader lacks %q:\n%s", tc.line, s.Source)
			}
		})
	}
}

// TestRowPartsLazy: with wgsl.RowPartsLazy on a fused device (the near
// path) a per-row divisor's parts for the fused fast path are computed in
// the branch of the leaves outside the near range, once for each of a
// thread's leaves there, not once a thread before them; with it off, or
// without the near path (an unfused device), once a thread before the
// leaves, in the order of the kernels before the knob.
func TestRowPartsLazy(t *testing.T) {
	defer func(lazy, near bool) { wgsl.RowPartsLazy, wgsl.RowDivNear = lazy, near }(wgsl.RowPartsLazy, wgsl.RowDivNear)
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{3, 1024}, make([]float32, 3*1024)).Softmax(1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := passes.Compile(g, passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fused, lazy, near bool
		top, inBranch     int // "_b = prim_div_row_b(" at the top level (one tab) and inside a leaf's else branch
	}{
		{true, true, true, 0, 4}, {true, false, true, 1, 0}, {true, true, false, 1, 0}, {false, true, true, 1, 0},
	} {
		wgsl.RowPartsLazy, wgsl.RowDivNear = c.lazy, c.near
		sh, err := wgsl.Target{Fused: c.fused}.Emit(sp)
		if err != nil {
			t.Fatal(err)
		}
		src := sh[0].Source
		top, inBranch := strings.Count(src, "\n\tlet v4_b = prim_div_row_b("), strings.Count(src, "\n\t\t\tlet v4_b = prim_div_row_b(")
		// eager, the declarations of the kernels before the knob, each once
		if c.fused && c.near && c.top == 1 && !strings.Contains(src, eagerParts) {
			t.Errorf("fused %t, lazy %t, near %t: not the declarations before the knob:\n%s", c.fused, c.lazy, c.near, src)
		}
		if n := strings.Count(src, "let v4_ok = "); n != max(c.top, c.inBranch) {
			t.Errorf("fused %t, lazy %t, near %t: v4_ok declared %d times", c.fused, c.lazy, c.near, n)
		}
		if top != c.top || inBranch != c.inBranch {
			t.Errorf("fused %t, lazy %t, near %t: the parts at the top %d times and in a leaf's branch %d, want %d and %d:\n%s",
				c.fused, c.lazy, c.near, top, inBranch, c.top, c.inBranch, src)
		}
	}
}

// eagerParts is how the rows kernels declared a per-row divisor's values
// on a fused device before wgsl.RowPartsLazy.
const eagerParts = `	let v4_b = prim_div_row_b(v4);
	let v4_y = prim_div_row_y(v4);
	let v4_hi = prim_div_row_hi(v4);
	let v4_lo = prim_div_row_lo(v4);
	let v4_e = prim_div_row_e(v4);
	let v4_rn = prim_div_row_rn(v4);
	let v4_near = bitcast<u32>(v4_rn) != 0u;
	let v4_ok = prim_div_row_ok(v4) == 1.0;
	let v4_one = bitcast<u32>(v4) == 0x3f800000u;
`
