package onnx_test

import (
	"bytes"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestResizeImport: a Resize with constant scales imports as one
// resize2d of floor(in·scale) with the scale's bits kept; what gpucc
// cannot resize exactly is refused by name (cubic, exclude_outside,
// tf_crop_and_resize, the batch axis, other ranks).
func TestResizeImport(t *testing.T) {
	x := valueInfo("x", 1, 2, 4, 5)
	resize := func(scales []float32, attrs ...msg) []byte {
		return model(13, graph([]msg{node("Resize", "r", []string{"x", "", "s"}, []string{"y"}, attrs...)},
			[]msg{floats("s", []int64{4}, scales...)}, []msg{x}, []msg{valueInfo("y")}))
	}
	g, err := onnx.Load(bytes.NewReader(resize([]float32{1, 1, 0.6, 2.5}, attrStr("mode", "linear"))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got *ir.Node
	for i := range g.Nodes {
		if g.Nodes[i].Op == ir.OpResize2D {
			got = &g.Nodes[i]
		}
	}
	// floor(4·0.6) = 2, floor(5·2.5) = 12.
	if got == nil || !got.Shape.Equal(ir.Shape{1, 2, 2, 12}) || ir.OpResize2D.Attr(got.Attrs, "scale_bits")[0] != int(mathBits(0.6)) {
		t.Fatalf("imported graph:\n%s", g)
	}
	for _, tt := range []struct {
		name string
		doc  []byte
		code ir.Code
	}{
		{"cubic tf_half_pixel_for_nn", resize([]float32{1, 1, 2, 2}, attrStr("mode", "cubic"), attrStr("coordinate_transformation_mode", "tf_half_pixel_for_nn")), ir.CodeUnsupported},
		{"exclude_outside", resize([]float32{1, 1, 2, 2}, attrStr("mode", "linear"), attrInt("exclude_outside", 1)), ir.CodeUnsupported},
		{"tf_crop_and_resize", resize([]float32{1, 1, 2, 2}, attrStr("coordinate_transformation_mode", "tf_crop_and_resize")), ir.CodeUnsupported},
		{"batch axis", resize([]float32{2, 1, 2, 2}), ir.CodeUnsupported},
		{"bad coordinate mode", resize([]float32{1, 1, 2, 2}, attrStr("coordinate_transformation_mode", "corners")), ir.CodeInvalidGraph},
		{"zero scale", resize([]float32{1, 1, 0, 2}), ir.CodeInvalidGraph},
		{"rank 3", model(13, graph([]msg{node("Resize", "r", []string{"x", "", "s"}, []string{"y"})},
			[]msg{floats("s", []int64{3}, 1, 1, 2)}, []msg{valueInfo("x", 1, 2, 4)}, []msg{valueInfo("y")})), ir.CodeUnsupported},
	} {
		if _, err := onnx.Load(bytes.NewReader(tt.doc), onnx.Options{}); gpucc.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}
