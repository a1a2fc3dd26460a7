package main

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunTransformer runs the exported transformer encoder block
// (onnx/testdata/models) through `gpucc run` on the .onnx itself: the
// output comes back under the model's ONNX name with its shape, and the
// default operation limit refuses it with limit_exceeded (its 1.2·10⁸
// estimated operations need --max-ops).
func TestRunTransformer(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "models", "transformer.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, v, code := gpucc(t, "", "run", "--backend", "cpu", "--max-ops", "200000000", model)
	if code != 0 {
		t.Fatalf("run transformer.onnx: exit %d: %v", code, v)
	}
	outs, _ := v["outputs"].(map[string]any)
	y, ok := outs["y"].(map[string]any)
	if !ok {
		t.Fatalf("outputs %v lack the model's output name y", outs)
	}
	if diff := cmp.Diff([]any{1.0, 128.0, 256.0}, y["shape"]); diff != "" {
		t.Errorf("y's shape (-want +got):\n%s", diff)
	}
	_, v, code = gpucc(t, "", "run", "--backend", "cpu", model)
	if e, _ := v["error"].(map[string]any); code == 0 || e["code"] != "limit_exceeded" {
		t.Errorf("run under the default limits: exit %d, %v; want limit_exceeded", code, v)
	}
}
