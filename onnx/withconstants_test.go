package onnx_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestWithConstants: a copy of a model with use_cache_branch fixed (the
// merged decoder fixture, whose If reads it) specializes with no such
// input, its If folded to a branch, and the model it was copied from
// keeps the input as a run-time one.
func TestWithConstants(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "transformers", "gpt2kv_hf_merged.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}})
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{"input_ids": {1, 1}, "attention_mask": {1, 4}, "position_ids": {1, 1}}
	for l := range 2 {
		for _, kv := range []string{"key", "value"} {
			shapes["past_key_values."+string(rune('0'+l))+"."+kv] = []int{1, 4, 3, 16}
		}
	}
	c := m.WithConstants(map[string]*onnx.Tensor{"use_cache_branch": {Name: "use_cache_branch", Type: onnx.Bool, Shape: []int{1}, Int64: []int64{1}}})
	g, err := c.Specialize(context.Background(), shapes)
	if err != nil {
		t.Fatal(err)
	}
	if g.Input("use_cache_branch") >= 0 {
		t.Errorf("the copy's graph has use_cache_branch as an input")
	}
	if g, err := m.Specialize(context.Background(), shapes); err == nil && g.Input("use_cache_branch") < 0 {
		t.Errorf("the original model lost its run-time use_cache_branch")
	}
}
