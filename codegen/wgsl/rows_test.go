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
