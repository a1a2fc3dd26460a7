package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunTransformer runs the exported transformer encoder block
// (onnx/testdata/models) through `gpucc run` on the .onnx itself: the
// output comes back under the model's ONNX name with its shape; its 1.2·10⁸
// estimated operations are over the seed's default, which holds only when
// given as a flag (its limits are sized to the model).
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
	// Its limits are sized to it (modellimits.go): no flag is needed, and
	// the seed's operation limit given as a flag caps it, by name.
	if _, v, code = gpucc(t, "", "run", "--backend", "cpu", model); code != 0 {
		t.Errorf("run with its limits sized to it: exit %d, %.300v", code, v)
	}
	_, v, code = gpucc(t, "", "run", "--backend", "cpu", "--max-ops", "100000000", model)
	if e, _ := v["error"].(map[string]any); code == 0 || e["code"] != "limit_exceeded" || !strings.Contains(fmt.Sprint(e["message"]), "gpucc --max-ops") {
		t.Errorf("run under --max-ops 100000000: exit %d, %.300v; want limit_exceeded naming --max-ops", code, v)
	}
}
