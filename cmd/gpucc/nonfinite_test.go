package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
	g := filepath.Join(t.TempDir(), "g.json")
	_, v, code = gpucc(t, "", "import", model, "-o", g)
	if e, _ := v["error"].(map[string]any); code == 0 || e["code"] != "unsupported" {
		t.Errorf("import: exit %d, %v; want unsupported", code, v)
	}
	// Under --non-finite, import writes the -Inf as the string
	// "-Infinity" (valid JSON: it wrote a bare -Inf), which run reads back
	// under the same policy, to the model's own outputs, and refuses under
	// the finite one.
	if _, v, code = gpucc(t, "", "import", "--non-finite", model, "-o", g); code != 0 {
		t.Fatalf("import --non-finite: exit %d, %v", code, v)
	}
	raw, err := os.ReadFile(g)
	if err != nil || !json.Valid(raw) || !bytes.Contains(raw, []byte(`"-Infinity"`)) {
		t.Fatalf("import --non-finite wrote %.200s (%v)", raw, err)
	}
	_, back, code := gpucc(t, "", "run", "--non-finite", "--backend", "cpu", g)
	if code != 0 || !reflect.DeepEqual(back["outputs"], outs) {
		t.Errorf("run --non-finite of the imported graph: exit %d, outputs %v; want the model's %v", code, back["outputs"], outs)
	}
	_, v, code = gpucc(t, "", "run", "--backend", "cpu", g)
	if e, _ := v["error"].(map[string]any); code == 0 || e["code"] != "invalid_graph" {
		t.Errorf("run of the imported graph under the finite policy: exit %d, %v; want invalid_graph", code, v)
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
