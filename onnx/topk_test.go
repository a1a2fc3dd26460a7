package onnx_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/onnx"
)

// TestTopKOrder: TopK takes equal values by index (-0 and +0 equal), puts
// NaN above every number, and orders int64's ends, for largest and
// smallest.
func TestTopKOrder(t *testing.T) {
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	x := []float32{1, negZero, nan, 0, 1, -5}
	for _, c := range []struct {
		largest int64
		idx     []int64
	}{{1, []int64{2, 0, 4, 1}}, {0, []int64{5, 1, 3, 0}}} {
		raw := model(11, graph([]msg{node("TopK", "t", []string{"x", "k"}, []string{"v", "i"}, attrInt("largest", c.largest))}, []msg{int64s("k", []int64{1}, 4)},
			[]msg{valueInfo("x", 6)}, []msg{valueInfo("v", 4), typedValueInfo("i", int64(onnx.Int64), 4)}))
		res, err := runModel(t, raw, map[string][]float32{"x": x}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["i"].Ints; !slices.Equal(got, c.idx) {
			t.Errorf("largest %d: indices %v, want %v", c.largest, got, c.idx)
		}
		for r, i := range c.idx {
			if v := res.Outputs["v"].Data[r]; math.Float32bits(v) != math.Float32bits(x[i]) && !(v != v && x[i] != x[i]) {
				t.Errorf("largest %d: value %d = %g, want x[%d] = %g", c.largest, r, v, i, x[i])
			}
		}
	}
	raw := model(11, graph([]msg{node("TopK", "t", []string{"x", "k"}, []string{"v", "i"})}, []msg{int64s("k", []int64{1}, 3)},
		[]msg{typedValueInfo("x", int64(onnx.Int64), 4)}, []msg{typedValueInfo("v", int64(onnx.Int64), 3), typedValueInfo("i", int64(onnx.Int64), 3)}))
	res, err := runModel(t, raw, nil, map[string][]int64{"x": {math.MinInt64, math.MaxInt64, -1, math.MaxInt64}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Outputs["v"].Ints, []int64{math.MaxInt64, math.MaxInt64, -1}; !slices.Equal(got, want) {
		t.Errorf("int64: %v, want %v", got, want)
	}
	if got, want := res.Outputs["i"].Ints, []int64{1, 3, 2}; !slices.Equal(got, want) {
		t.Errorf("int64 indices: %v, want %v", got, want)
	}
}
