package onnx_test

import (
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestReverseSequenceLengths: lengths 0, 1, the whole time axis and one
// between reverse each batch's prefix (time_axis 0); a length past the
// time axis or below 0 fails the run with invalid_input.
func TestReverseSequenceLengths(t *testing.T) {
	raw := model(10, graph([]msg{node("ReverseSequence", "r", []string{"x", "l"}, []string{"y"})}, nil,
		[]msg{typedValueInfo("x", int64(onnx.Int64), 3, 4), typedValueInfo("l", int64(onnx.Int64), 4)}, []msg{typedValueInfo("y", int64(onnx.Int64), 3, 4)}))
	x := []int64{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23} // x[t, b] = 10t + b
	res, err := runModel(t, raw, nil, map[string][]int64{"x": x, "l": {0, 1, 3, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Outputs["y"].Ints, []int64{0, 1, 22, 13, 10, 11, 12, 3, 20, 21, 2, 23}; !slices.Equal(got, want) {
		t.Errorf("y = %v, want %v", got, want)
	}
	for _, l := range [][]int64{{4, 0, 0, 0}, {0, -1, 0, 0}} {
		if _, err := runModel(t, raw, nil, map[string][]int64{"x": x, "l": l}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("lengths %v: %v, want invalid_input", l, err)
		}
	}
}
