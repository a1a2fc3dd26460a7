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
