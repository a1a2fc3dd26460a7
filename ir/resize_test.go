package ir_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

// TestResizeTaps: one axis's taps and weights as ONNX 1.12's reference
// defines them, for the coordinate and nearest modes, worked by hand.
func TestResizeTaps(t *testing.T) {
	for _, tt := range []struct {
		name              string
		in, out           int
		scale             float32
		mode, coord, near int
		want              ir.ResizeAxis
	}{
		// half_pixel 2→4: x = -0.25, 0.25, 0.75, 1.25; edge-clamped taps.
		{"linear half_pixel up", 2, 4, 0, ir.ResizeLinear, ir.ResizeHalfPixel, 0,
			ir.ResizeAxis{I0: []int{0, 0, 0, 1}, I1: []int{0, 1, 1, 1}, W0: []float32{0.25, 0.75, 0.25, 0.75}, W1: []float32{0.75, 0.25, 0.75, 0.25}}},
		// An integer coordinate: taps x-1 and x, weights 0 and 1.
		{"linear asymmetric integer", 3, 3, 0, ir.ResizeLinear, ir.ResizeAsymmetric, 0,
			ir.ResizeAxis{I0: []int{0, 0, 1}, I1: []int{0, 1, 2}, W0: []float32{0, 0, 0}, W1: []float32{1, 1, 1}}},
		// align_corners with the float width 0.6·4 = 2.4000000953674316: x = 0, 3/1.4000000953674316.
		{"linear align_corners scale", 4, 2, 0.6, ir.ResizeLinear, ir.ResizeAlignCorners, 0,
			ir.ResizeAxis{I0: []int{0, 2}, I1: []int{0, 3}, W0: []float32{0, float32(1 - (3/1.4000000953674316 - 2))}, W1: []float32{1, float32(3/1.4000000953674316 - 2)}}},
		// nearest half_pixel 4→7: x = (o+0.5)·4/7 - 0.5 = -0.21, 0.36, 0.93, 1.5 (a tie: floor), 2.07, 2.64, 3.21.
		{"nearest prefer floor", 4, 7, 0, ir.ResizeNearest, ir.ResizeHalfPixel, ir.ResizeRoundPreferFloor,
			ir.ResizeAxis{I0: []int{0, 0, 1, 1, 2, 3, 3}}},
		{"nearest ceil asymmetric", 3, 2, 0, ir.ResizeNearest, ir.ResizeAsymmetric, ir.ResizeCeil,
			ir.ResizeAxis{I0: []int{0, 2}, I1: []int{0, 2}}},
		{"nearest floor", 3, 2, 0, ir.ResizeNearest, ir.ResizeAsymmetric, ir.ResizeFloor,
			ir.ResizeAxis{I0: []int{0, 1}, I1: []int{0, 2}}},
		{"pytorch one output", 4, 1, 0, ir.ResizeLinear, ir.ResizePytorchHalfPixel, 0,
			ir.ResizeAxis{I0: []int{0}, I1: []int{0}, W0: []float32{0.5}, W1: []float32{0.5}}},
	} {
		bits := uint32(0)
		if tt.scale != 0 {
			bits = math.Float32bits(tt.scale)
		}
		got := ir.ResizeTaps(tt.in, tt.out, bits, tt.mode, tt.coord, tt.near)
		if tt.mode == ir.ResizeNearest {
			got.I1 = tt.want.I1 // unused by nearest
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.name, diff)
		}
	}
}

// TestResizeShapeRule: sizes past MaxResize, a mode, coordinate or
// nearest mode out of range, and scale bits that are not a positive
// normal finite float32 are refused with invalid_graph, naming the
// attribute.
func TestResizeShapeRule(t *testing.T) {
	for _, tt := range []struct {
		attrs map[string][]int
		field string
	}{
		{map[string][]int{"sizes": {ir.MaxResize + 1, 2}}, "sizes"},
		{map[string][]int{"sizes": {2, 0}}, "sizes"},
		{map[string][]int{"sizes": {2, 2}, "mode": {2}}, "mode"},
		{map[string][]int{"sizes": {2, 2}, "coordinate_mode": {5}}, "coordinate_mode"},
		{map[string][]int{"sizes": {2, 2}, "nearest_mode": {-1}}, "nearest_mode"},
		{map[string][]int{"sizes": {2, 2}, "scale_bits": {int(math.Float32bits(float32(math.Inf(1)))), 0}}, "scale_bits"},
		{map[string][]int{"sizes": {2, 2}, "scale_bits": {1, 0}}, "scale_bits"}, // subnormal
	} {
		a, err := ir.PackAttrs(ir.OpResize2D, tt.attrs)
		if err != nil {
			t.Fatal(err)
		}
		_, serr := ir.InferShape(0, ir.OpResize2D, []ir.Shape{{1, 1, 3, 3}}, a)
		if serr == nil || serr.Code != ir.CodeInvalidGraph || serr.Field != tt.field {
			t.Errorf("%v: %v, want invalid_graph on %s", tt.attrs, serr, tt.field)
		}
	}
}
