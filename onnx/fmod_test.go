package onnx_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestModFmodIntegers: Mod with fmod 1 of run-time int64 values is C's
// remainder (the dividend's sign), at int64's ends too (MinInt64 fmod -1
// is 0, not a trap); a zero divisor fails the run with a code.
func TestModFmodIntegers(t *testing.T) {
	raw := model(13, graph([]msg{node("Mod", "m", []string{"a", "b"}, []string{"y"}, attrInt("fmod", 1))}, nil,
		[]msg{typedValueInfo("a", int64(onnx.Int64), 6), typedValueInfo("b", int64(onnx.Int64), 6)}, []msg{typedValueInfo("y", int64(onnx.Int64), 6)}))
	a := []int64{-7, 7, -7, math.MinInt64, math.MaxInt64, math.MinInt64}
	b := []int64{3, -3, -3, -1, 2, math.MaxInt64}
	res, err := runModel(t, raw, nil, map[string][]int64{"a": a, "b": b})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Outputs["y"].Ints, []int64{-1, 1, -1, 0, 1, -1}; !slices.Equal(got, want) {
		t.Errorf("fmod: %v, want %v", got, want)
	}
	b[2] = 0
	if _, err := runModel(t, raw, nil, map[string][]int64{"a": a, "b": b}); err == nil || gpucc.CodeOf(err) == ir.CodeInternal {
		t.Errorf("fmod by zero: %v, want a run failing with a code", err)
	}
}
