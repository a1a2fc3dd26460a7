package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunCausalMask: gpucc run takes an .onnx model whose mask holds -Inf
// (a model is not a guest graph: the host allows non-finite values for
// it) and prints its fully masked softmax row as the JSON strings "NaN";
// gpucc import, which writes protocol v1 JSON, keeps the seed's finite
// rule and refuses the -Inf by name.
func TestRunCausalMask(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "causal", "causal.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, v, code := gpucc(t, "", "run", "--backend", "cpu", model)
	if code != 0 {
		t.Fatalf("run causal.onnx: exit %d: %v", code, v)
	}
	outs, _ := v["outputs"].(map[string]any)
	p, _ := outs["p_pad"].(map[string]any)
	data, _ := p["data"].([]any)
	if len(data) != 36 || data[0] != "NaN" || data[5] != "NaN" || data[6] != 0.0 || data[7] != 1.0 {
		t.Errorf("p_pad = %v; want row 0 \"NaN\", row 1 [0 1 0 0 0 0]", data)
	}
	_, v, code = gpucc(t, "", "import", model, "-o", filepath.Join(t.TempDir(), "g.json"))
	if e, _ := v["error"].(map[string]any); code == 0 || e["code"] != "unsupported" {
		t.Errorf("import: exit %d, %v; want unsupported", code, v)
	}
}

// TestServeNonFinite: serve's guests keep the seed's finite rule, so
// causal.onnx posted as application/onnx is refused with unsupported;
// under the host's --non-finite policy it runs and the reply writes the
// fully masked row as "NaN".
func TestServeNonFinite(t *testing.T) {
	model, err := os.ReadFile(filepath.Join("..", "..", "onnx", "testdata", "causal", "causal.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	a := testAPI(t, nil)
	if status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", string(model), "Content-Type", "application/onnx"); e.OK || e.code() != "unsupported" {
		t.Errorf("finite policy: %d %+v, want unsupported", status, e)
	}
	a = testAPI(t, func(c *apiConfig) { c.limits.NonFinite = true })
	status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", string(model), "Content-Type", "application/onnx")
	if status != 200 || !e.OK {
		t.Fatalf("--non-finite: %d %+v", status, e)
	}
	p, _ := e.Value["outputs"].(map[string]any)["p_pad"].(map[string]any)
	if data, _ := p["data"].([]any); len(data) != 36 || data[0] != "NaN" || data[6] != 0.0 {
		t.Errorf("p_pad %v; want row 0 \"NaN\"", p)
	}
}
