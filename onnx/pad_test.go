package onnx_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestPadImport: Pad in each mode, by inputs (opset 11 on, axes from 18)
// and by attributes (opset 2), gives numpy's pad of x = [[1,2,3],[4,5,6]],
// reflect and wrap repeating past the axis; a constant x of an integer
// type is padded at import; a crop, an unknown mode, a constant known
// only at run time and rank 5 are refused by name.
func TestPadImport(t *testing.T) {
	x := valueInfo("x", 2, 3)
	pad := func(opset int64, inputs []string, inits []msg, attrs ...msg) []byte {
		return model(opset, graph([]msg{node("Pad", "p", inputs, []string{"y"}, attrs...)}, inits, []msg{x}, []msg{valueInfo("y")}))
	}
	pads := func(vs ...int64) msg { return int64s("pads", []int64{int64(len(vs))}, vs...) }
	for _, tt := range []struct {
		name string
		doc  []byte
		want []float32
	}{
		{"reflect", pad(13, []string{"x", "pads"}, []msg{pads(0, 2, 0, 1)}, attrStr("mode", "reflect")),
			[]float32{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}},
		{"reflect past the axis", pad(13, []string{"x", "pads"}, []msg{pads(0, 5, 0, 0)}, attrStr("mode", "reflect")),
			[]float32{2, 1, 2, 3, 2, 1, 2, 3, 5, 4, 5, 6, 5, 4, 5, 6}},
		{"edge", pad(13, []string{"x", "pads"}, []msg{pads(1, 0, 0, 1)}, attrStr("mode", "edge")),
			[]float32{1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6}},
		{"wrap", pad(19, []string{"x", "pads"}, []msg{pads(0, 1, 1, 2)}, attrStr("mode", "wrap")),
			[]float32{3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2}},
		{"constant on axes", pad(18, []string{"x", "pads", "v", "axes"},
			[]msg{pads(1, 1), floats("v", nil, 9), int64s("axes", []int64{1}, -1)}),
			[]float32{9, 1, 2, 3, 9, 9, 4, 5, 6, 9}},
		{"attributes", pad(2, []string{"x"}, nil, attrInts("pads", 1, 0, 0, 0), attrFloat("value", 7)),
			[]float32{7, 7, 7, 1, 2, 3, 4, 5, 6}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := onnx.Load(bytes.NewReader(tt.doc), onnx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.SetInput("x", []float32{1, 2, 3, 4, 5, 6}); err != nil {
				t.Fatal(err)
			}
			var want []uint32
			for _, v := range tt.want {
				want = append(want, math.Float32bits(v))
			}
			if diff := cmp.Diff(map[string][]uint32{"y": want}, outputs(g)); diff != "" {
				t.Errorf("bits (-want +got):\n%s", diff)
			}
		})
	}
	// A constant x, of any type, is padded at import: int64 reflected.
	g, err := onnx.Load(bytes.NewReader(model(13, graph([]msg{node("Pad", "p", []string{"k", "pads"}, []string{"y"}, attrStr("mode", "reflect"))},
		[]msg{int64s("k", []int64{3}, 10, 20, 30), pads(2, 1)}, nil, []msg{valueInfo("y")}))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []uint32
	for _, v := range []float32{30, 20, 10, 20, 30, 20} {
		want = append(want, math.Float32bits(v))
	}
	if diff := cmp.Diff(map[string][]uint32{"y": want}, outputs(g)); diff != "" {
		t.Errorf("constant int64 x (-want +got):\n%s", diff)
	}
	// A negative pad crops (mode constant): 10 20 30 cropped by one before, padded by two after.
	g, err = onnx.Load(bytes.NewReader(model(13, graph([]msg{node("Pad", "p", []string{"k", "pads"}, []string{"y"})},
		[]msg{int64s("k", []int64{3}, 10, 20, 30), pads(-1, 2)}, nil, []msg{valueInfo("y")}))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want = nil
	for _, v := range []float32{20, 30, 0, 0} {
		want = append(want, math.Float32bits(v))
	}
	if diff := cmp.Diff(map[string][]uint32{"y": want}, outputs(g)); diff != "" {
		t.Errorf("a crop (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		name string
		doc  []byte
		code ir.Code
	}{
		{"crop reflect", pad(13, []string{"x", "pads"}, []msg{pads(0, -1, 0, 1)}, attrStr("mode", "reflect")), ir.CodeUnsupported},
		{"crop to nothing", pad(13, []string{"x", "pads"}, []msg{pads(0, -2, 0, -2)}), ir.CodeUnsupported},
		{"unknown mode", pad(13, []string{"x", "pads"}, []msg{pads(0, 1, 0, 0)}, attrStr("mode", "mirror")), ir.CodeInvalidGraph},
		{"pads of another rank", pad(13, []string{"x", "pads"}, []msg{pads(1, 1)}), ir.CodeInvalidGraph},
		{"run-time constant of another dtype", model(13, graph([]msg{node("Pad", "p", []string{"x", "pads", "v"}, []string{"y"})},
			[]msg{pads(0, 1, 0, 0)}, []msg{x, typedValueInfo("v", int64(onnx.Int64))}, []msg{valueInfo("y")})), ir.CodeInvalidGraph},
		{"rank 5", model(13, graph([]msg{node("Pad", "p", []string{"x", "pads"}, []string{"y"})},
			[]msg{pads(0, 0, 0, 0, 1, 0, 0, 0, 0, 1)}, []msg{valueInfo("x", 1, 1, 1, 2, 3)}, []msg{valueInfo("y")})), ir.CodeUnsupported},
	} {
		if _, err := onnx.Load(bytes.NewReader(tt.doc), onnx.Options{}); gpucc.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}
