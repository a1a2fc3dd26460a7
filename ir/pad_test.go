package ir_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
)

// TestPadSources: pad's sources along one axis are numpy's pad
// (np.pad(np.arange(n), (before, after), mode), numpy 1.24), borders
// wider than the axis included; -1 is the constant.
func TestPadSources(t *testing.T) {
	for _, tt := range []struct {
		name             string
		n, before, after int
		mode             int
		want             []int
	}{
		{"reflect", 3, 5, 0, ir.PadReflect, []int{1, 0, 1, 2, 1, 0, 1, 2}},
		{"reflect wide", 3, 7, 9, ir.PadReflect, []int{1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1}},
		{"reflect one", 1, 3, 2, ir.PadReflect, []int{0, 0, 0, 0, 0, 0}},
		{"wrap wide", 4, 9, 10, ir.PadWrap, []int{3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1}},
		{"edge", 2, 2, 3, ir.PadEdge, []int{0, 0, 0, 1, 1, 1, 1}},
		{"constant", 2, 1, 2, ir.PadConstant, []int{-1, 0, 1, -1, -1}},
		{"crop", 6, -2, -1, ir.PadConstant, []int{2, 3, 4}},
		{"crop then pad", 4, -3, 2, ir.PadConstant, []int{3, -1, -1}},
		{"crop edge", 4, -1, 2, ir.PadEdge, []int{1, 2, 3, 3, 3}},
		{"crop wrap", 3, -1, 3, ir.PadWrap, []int{1, 2, 0, 1, 2}},
		{"crop reflect", 4, -2, 3, ir.PadReflect, []int{2, 3, 2, 1, 0}},
	} {
		attrs, err := ir.PackAttrs(ir.OpPad, ir.PadAttrs([]int{tt.before, tt.after}, tt.mode, 0))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, ir.PadOf(ir.Shape{tt.n}, attrs).Sources()); diff != "" {
			t.Errorf("%s (-numpy +pad):\n%s", tt.name, diff)
		}
	}
}

// TestPadValueBits: the constant survives the attributes bit for bit,
// -0 and NaN included.
func TestPadValueBits(t *testing.T) {
	for _, bits := range []uint32{0, 0x80000000, 0x7fc00001, 0xff800000, 0x3fc00000, 1} {
		attrs, err := ir.PackAttrs(ir.OpPad, ir.PadAttrs([]int{1, 0}, ir.PadConstant, math.Float32frombits(bits)))
		if err != nil {
			t.Fatal(err)
		}
		if got := ir.PadOf(ir.Shape{2}, attrs).Value; math.Float32bits(got) != bits {
			t.Errorf("value %#08x comes back as %#08x", bits, math.Float32bits(got))
		}
	}
}
