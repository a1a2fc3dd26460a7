package onnx_test

import (
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestGatherNDRuntimeIndices: GatherND of run-time int64 indices picks
// numpy's rows (negative components from the end, batch_dims 1), and a
// component outside its dimension fails the run with invalid_input even
// where the combined offset would land inside the data (row [0, 3] of a
// [3, 2] matrix is offset 3, row 1's second element).
func TestGatherNDRuntimeIndices(t *testing.T) {
	data := []int64{10, 11, 20, 21, 30, 31}
	raw := model(13, graph([]msg{node("GatherND", "g", []string{"d", "i"}, []string{"y"})}, nil,
		[]msg{typedValueInfo("d", int64(onnx.Int64), 3, 2), typedValueInfo("i", int64(onnx.Int64), 4, 2)}, []msg{typedValueInfo("y", int64(onnx.Int64), 4)}))
	res, err := runModel(t, raw, nil, map[string][]int64{"d": data, "i": {0, 0, 2, 1, -1, -2, -3, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Outputs["y"].Ints; !slices.Equal(got, []int64{10, 31, 30, 11}) {
		t.Errorf("y = %v, want [10 31 30 11]", got)
	}
	for _, bad := range [][]int64{{0, 3, 0, 0, 0, 0, 0, 0}, {0, -3, 0, 0, 0, 0, 0, 0}, {3, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, -4, 0}} {
		_, err := runModel(t, raw, nil, map[string][]int64{"d": data, "i": bad})
		if gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("indices %v: %v, want invalid_input", bad, err)
		}
	}
	// batch_dims 1: data [2, 3], indices [2, 1]: y[b] = data[b, i[b]]
	raw = model(13, graph([]msg{node("GatherND", "g", []string{"d", "i"}, []string{"y"}, attrInt("batch_dims", 1))}, nil,
		[]msg{typedValueInfo("d", int64(onnx.Int64), 2, 3), typedValueInfo("i", int64(onnx.Int64), 2, 1)}, []msg{typedValueInfo("y", int64(onnx.Int64), 2)}))
	res, err = runModel(t, raw, nil, map[string][]int64{"d": {1, 2, 3, 4, 5, 6}, "i": {2, -3}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Outputs["y"].Ints; !slices.Equal(got, []int64{3, 4}) {
		t.Errorf("batch_dims 1: y = %v, want [3 4]", got)
	}
	if _, err := runModel(t, raw, nil, map[string][]int64{"d": {1, 2, 3, 4, 5, 6}, "i": {3, 0}}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("batch_dims 1, index 3 of 3: %v, want invalid_input", err)
	}
}
