package onnx_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestGridSampleEdges: with align_corners 1, a grid at the pixels' own
// coordinates gives x back in every mode (bit for bit by nearest; the others add 0 to -0), the other taps
// weighing exactly 0; a point outside is 0 with zeros padding and the
// edge pixel with border padding; a NaN coordinate fails the run with a
// code instead of reading anywhere.
func TestGridSampleEdges(t *testing.T) {
	x := []float32{1.5, -2, 3e-38, 7, float32(math.Copysign(0, -1)), 1e30} // [1, 1, 2, 3]
	var grid []float32
	for r := range 2 {
		for c := range 3 {
			grid = append(grid, float32(c)-1, float32(r)*2-1) // x in {-1, 0, 1}, y in {-1, 1}
		}
	}
	for _, mode := range []string{"nearest", "bilinear", "bicubic"} {
		raw := model(16, graph([]msg{node("GridSample", "g", []string{"x", "grid"}, []string{"y"}, attrStr("mode", mode), attrInt("align_corners", 1), attrStr("padding_mode", "border"))}, nil,
			[]msg{valueInfo("x", 1, 1, 2, 3), valueInfo("grid", 1, 2, 3, 2)}, []msg{valueInfo("y", 1, 1, 2, 3)}))
		res, err := runModel(t, raw, map[string][]float32{"x": x, "grid": grid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range res.Outputs["y"].Data {
			if mode == "nearest" && math.Float32bits(v) != math.Float32bits(x[i]) || v != x[i] {
				t.Errorf("%s: y[%d] = %g, want x's %g", mode, i, v, x[i])
			}
		}
	}
	for _, c := range []struct {
		pad  string
		want float32
	}{{"zeros", 0}, {"border", 1e30}} {
		raw := model(16, graph([]msg{node("GridSample", "g", []string{"x", "grid"}, []string{"y"}, attrStr("mode", "nearest"), attrInt("align_corners", 1), attrStr("padding_mode", c.pad))}, nil,
			[]msg{valueInfo("x", 1, 1, 2, 3), valueInfo("grid", 1, 1, 1, 2)}, []msg{valueInfo("y", 1, 1, 1, 1)}))
		res, err := runModel(t, raw, map[string][]float32{"x": x, "grid": {5, 9}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Outputs["y"].Data[0]; v != c.want {
			t.Errorf("%s: a point outside gives %g, want %g", c.pad, v, c.want)
		}
		if _, err := runModel(t, raw, map[string][]float32{"x": x, "grid": {float32(math.NaN()), 0}}, nil); err == nil || gpucc.CodeOf(err) == ir.CodeInternal {
			t.Errorf("%s: a NaN coordinate: %v, want a run failing with a code", c.pad, err)
		}
	}
}
