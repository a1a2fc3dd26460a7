package onnx_test

import (
	"bytes"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestConvImport: a Conv with a bias and SAME_UPPER padding imports as
// one conv2d with the pads auto_pad implies and the bias added; a 1-D
// MaxPool as a maxpool2d of height 1; and what gpucc cannot run is
// refused by name, with unsupported or invalid_graph.
func TestConvImport(t *testing.T) {
	x := valueInfo("x", 1, 2, 5, 5)
	w := floats("w", []int64{3, 2, 2, 2}, make([]float32, 24)...)
	b := floats("b", []int64{3}, 1, 2, 3)
	conv := func(attrs ...msg) []byte {
		return model(13, graph([]msg{node("Conv", "c", []string{"x", "w", "b"}, []string{"y"}, attrs...)},
			[]msg{w, b}, []msg{x}, []msg{valueInfo("y")}))
	}
	g, err := onnx.Load(bytes.NewReader(conv(attrStr("auto_pad", "SAME_UPPER"), attrInts("strides", 2, 2))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got *ir.Node
	for i := range g.Nodes {
		if g.Nodes[i].Op == ir.OpConv2D {
			got = &g.Nodes[i]
		}
	}
	// 5 wide, stride 2: 3 outputs; (3-1)·2 + 2 - 5 = 1 pad, at the end.
	if got == nil || !got.Shape.Equal(ir.Shape{1, 3, 3, 3}) || !equalInts(ir.OpConv2D.Attr(got.Attrs, "pads"), []int{0, 0, 1, 1}) {
		t.Fatalf("imported graph:\n%s", g)
	}
	pool1d := model(13, graph([]msg{node("MaxPool", "p", []string{"x"}, []string{"y"}, attrInts("kernel_shape", 3), attrInts("pads", 1, 1))},
		nil, []msg{valueInfo("x", 1, 2, 7)}, []msg{valueInfo("y")}))
	if g, err := onnx.Load(bytes.NewReader(pool1d), onnx.Options{}); err != nil || !g.Nodes[g.Outputs[0].ID].Shape.Equal(ir.Shape{1, 2, 7}) {
		t.Errorf("1-D MaxPool: %v\n%v", err, g)
	}
	for _, tt := range []struct {
		name string
		doc  []byte
		code ir.Code
	}{
		{"3-D", model(13, graph([]msg{node("MaxPool", "p", []string{"x"}, []string{"y"}, attrInts("kernel_shape", 2, 2, 2))},
			nil, []msg{valueInfo("x", 1, 1, 4, 4, 4)}, []msg{valueInfo("y")})), ir.CodeUnsupported},
		{"Indices", model(13, graph([]msg{node("MaxPool", "p", []string{"x"}, []string{"y", "i"}, attrInts("kernel_shape", 2, 2))},
			nil, []msg{x}, []msg{valueInfo("y"), valueInfo("i")})), ir.CodeUnsupported},
		{"bad auto_pad", conv(attrStr("auto_pad", "SAME")), ir.CodeInvalidGraph},
		{"kernel_shape not W's", conv(attrInts("kernel_shape", 3, 3)), ir.CodeInvalidGraph},
		{"ceil_mode with count_include_pad", model(13, graph([]msg{node("AveragePool", "p", []string{"x"}, []string{"y"},
			attrInts("kernel_shape", 2, 2), attrInts("strides", 2, 2), attrInt("ceil_mode", 1), attrInt("count_include_pad", 1))},
			nil, []msg{x}, []msg{valueInfo("y")})), ir.CodeUnsupported},
	} {
		if _, err := onnx.Load(bytes.NewReader(tt.doc), onnx.Options{}); gpucc.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConvTransposeImport: a ConvTranspose with a bias and output_shape
// imports as one conv_transpose2d with the pads and output_padding the
// shape implies (an end pad below zero is more output_padding) and the
// bias added; an output_shape that needs output before the first input
// row, a 3-D input and a bad auto_pad are refused by name.
func TestConvTransposeImport(t *testing.T) {
	x := valueInfo("x", 1, 2, 3, 3)
	w := floats("w", []int64{2, 3, 3, 3}, make([]float32, 54)...)
	b := floats("b", []int64{3}, 1, 2, 3)
	ct := func(attrs ...msg) []byte {
		return model(13, graph([]msg{node("ConvTranspose", "c", []string{"x", "w", "b"}, []string{"y"}, attrs...)},
			[]msg{w, b}, []msg{x}, []msg{valueInfo("y")}))
	}
	for _, tt := range []struct {
		name          string
		attrs         []msg
		pads, outPads []int
		shape         ir.Shape
	}{
		// 3·2 + 3 = 9 full rows; 10 asked: total -1 → 0 at the start, 1 more output row.
		{"output_shape past the full output", []msg{attrInts("strides", 3, 2), attrInts("output_shape", 10, 8)}, []int{0, 0, 0, 0}, []int{1, 1}, ir.Shape{1, 3, 10, 8}},
		// 2·2 + 3 = 7 full; SAME_UPPER asks 6: total 1, at the end.
		{"SAME_UPPER", []msg{attrStr("auto_pad", "SAME_UPPER"), attrInts("strides", 2, 2)}, []int{0, 0, 1, 1}, []int{0, 0}, ir.Shape{1, 3, 6, 6}},
		{"SAME_LOWER", []msg{attrStr("auto_pad", "SAME_LOWER"), attrInts("strides", 2, 2)}, []int{1, 1, 0, 0}, []int{0, 0}, ir.Shape{1, 3, 6, 6}},
		{"explicit", []msg{attrInts("pads", 1, 2, 0, 1), attrInts("output_padding", 1, 0), attrInts("strides", 2, 2)}, []int{1, 2, 0, 1}, []int{1, 0}, ir.Shape{1, 3, 7, 4}},
	} {
		g, err := onnx.Load(bytes.NewReader(ct(tt.attrs...)), onnx.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got *ir.Node
		for i := range g.Nodes {
			if g.Nodes[i].Op == ir.OpConvTranspose2D {
				got = &g.Nodes[i]
			}
		}
		if got == nil || !got.Shape.Equal(tt.shape) || !equalInts(ir.OpConvTranspose2D.Attr(got.Attrs, "pads"), tt.pads) ||
			!equalInts(ir.OpConvTranspose2D.Attr(got.Attrs, "output_padding"), tt.outPads) {
			t.Errorf("%s: imported graph:\n%s", tt.name, g)
		}
	}
	for _, tt := range []struct {
		name string
		doc  []byte
		code ir.Code
	}{
		{"output before the first row", ct(attrInts("output_shape", 8, 8)), ir.CodeUnsupported},
		{"3-D", model(13, graph([]msg{node("ConvTranspose", "c", []string{"x", "w"}, []string{"y"})},
			[]msg{floats("w", []int64{1, 1, 2, 2, 2}, make([]float32, 8)...)}, []msg{valueInfo("x", 1, 1, 3, 3, 3)}, []msg{valueInfo("y")})), ir.CodeUnsupported},
		{"bad auto_pad", ct(attrStr("auto_pad", "SAME")), ir.CodeInvalidGraph},
		{"kernel_shape not W's", ct(attrInts("kernel_shape", 2, 2)), ir.CodeInvalidGraph},
		{"bias of the wrong length", model(13, graph([]msg{node("ConvTranspose", "c", []string{"x", "w", "b"}, []string{"y"})},
			[]msg{w, floats("b", []int64{2}, 1, 2)}, []msg{x}, []msg{valueInfo("y")})), ir.CodeInvalidGraph},
	} {
		if _, err := onnx.Load(bytes.NewReader(tt.doc), onnx.Options{}); gpucc.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}
