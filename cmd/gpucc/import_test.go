package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
)

// mlpONNX is testdata/mlp.onnx (written by onnx/testdata/mlp.py): an MLP
// whose input x is [N,3] with N dynamic, and whose output is "probs".
func mlpONNX(t *testing.T) string {
	p, err := filepath.Abs(filepath.Join("testdata", "mlp.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImport imports the MLP, then runs the graph written and the .onnx
// file itself: both give the model's output under its ONNX name.
func TestImport(t *testing.T) {
	model := mlpONNX(t)
	out := filepath.Join(t.TempDir(), "mlp.json")
	_, v, code := gpucc(t, "", "import", model, "-o", out, "--input-shape", "x=2,3")
	if code != 0 {
		t.Fatalf("import: exit %d: %v", code, v)
	}
	// The weights keep their ONNX names (issue 36: W1 was input1), as
	// named inputs holding their values, which a run may also bind.
	in := func(name string, shape ...any) any { return map[string]any{"name": name, "shape": shape} }
	want := map[string]any{"graph": out, "nodes": v["nodes"], "inputs": []any{in("x", 2.0, 3.0),
		in("W1", 3.0, 4.0), in("b1", 4.0), in("W2", 4.0, 2.0), in("b2", 2.0)}, "outputs": []any{"probs"}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("import result (-want +got):\n%s", diff)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ir.DecodeBytes(raw, ir.Limits{}); err != nil {
		t.Fatalf("the graph written does not decode: %v", err)
	}
	_, fromJSON, code := gpucc(t, "", "run", "--backend", "cpu", out)
	if code != 0 {
		t.Fatalf("run graph.json: exit %d: %v", code, fromJSON)
	}
	_, fromONNX, code := gpucc(t, "", "run", "--backend", "cpu", "--input-shape", "x=2,3", model)
	if code != 0 {
		t.Fatalf("run model.onnx: exit %d: %v", code, fromONNX)
	}
	if diff := cmp.Diff(fromJSON["outputs"], fromONNX["outputs"]); diff != "" {
		t.Errorf("run of the .onnx differs from run of its import (-json +onnx):\n%s", diff)
	}
	if _, ok := fromONNX["outputs"].(map[string]any)["probs"]; !ok {
		t.Errorf("outputs %v lack the model's output name probs", fromONNX["outputs"])
	}
}

func TestImportErrors(t *testing.T) {
	model := mlpONNX(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.onnx")
	if err := os.WriteFile(bad, []byte("\x0a\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		exit int
		code string
	}{
		{"dynamic dimension unbound", []string{"import", model, "-o", filepath.Join(dir, "g.json")}, 1, "invalid_input"},
		{"malformed model", []string{"run", "--backend", "cpu", bad}, 1, "invalid_graph"},
		{"missing model", []string{"import", filepath.Join(dir, "none.onnx"), "-o", filepath.Join(dir, "g.json")}, 1, "io"},
		{"bad input shape", []string{"import", model, "-o", filepath.Join(dir, "g.json"), "--input-shape", "x=2,-3"}, 2, "usage"},
		{"no -o", []string{"import", model}, 2, "usage"},
		{"shape of no input", []string{"build", model, "-o", dir, "--input-shape", "y=1"}, 1, "invalid_input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v, code := gpucc(t, "", tt.args...)
			if code != tt.exit || errorCode(v) != tt.code {
				t.Errorf("gpucc %v: exit %d, %v; want exit %d, code %s", tt.args, code, v, tt.exit, tt.code)
			}
			if tt.name == "dynamic dimension unbound" && !strings.Contains(fmt.Sprint(v), "--input-shape x=D0,D1") {
				t.Errorf("the CLI's error does not say how to bind the shape: %v", v)
			}
		})
	}
}

// TestServeONNX: the execute API imports a body of Content-Type
// application/onnx, and refuses what Load refuses with its code.
func TestServeONNX(t *testing.T) {
	a := testAPI(t, nil)
	model, err := os.ReadFile(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", string(model), "Content-Type", "application/onnx")
	if status != 200 || !e.OK {
		t.Fatalf("execute mlp2.onnx: %d %+v", status, e)
	}
	if _, ok := e.Value["outputs"].(map[string]any)["probs"]; !ok {
		t.Errorf("outputs %v lack probs", e.Value["outputs"])
	}
	dynamic, err := os.ReadFile(filepath.Join("testdata", "mlp.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// A client's model, not a server fault (400), and the message names no
	// CLI flag the client has no way to pass (issue 36).
	if status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", string(dynamic), "Content-Type", "application/onnx"); status != 400 || e.code() != "invalid_input" || strings.Contains(e.Error.Message, "--input-shape x") || !strings.Contains(e.Error.Message, "static") {
		t.Errorf("execute mlp.onnx (dynamic N): %d %s, want 400 invalid_input saying the server takes static shapes: %+v", status, e.code(), e.Error)
	}
}

// TestTrainONNX: gpucc train reads an .onnx model's float32 initializers
// as its parameters and returns them by their ONNX names.
// testdata/mlp_loss.onnx is loss = ReduceSumSquare(Gemm(x, W1, b1)) with x
// zero-filled, so loss = 2·|b1|² = 0.28 and each step scales b1 by 0.6.
func TestTrainONNX(t *testing.T) {
	p, err := filepath.Abs(filepath.Join("testdata", "mlp_loss.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, v, code := gpucc(t, "", "train", "--backend", "cpu", "--steps", "2", "--lr", "0.1", p)
	if code != 0 {
		t.Fatalf("train: exit %d: %v", code, v)
	}
	params, _ := v["params"].(map[string]any)
	b1, _ := params["b1"].(map[string]any)
	if diff := cmp.Diff([]any{0.28000003, 0.1008}, v["losses"]); diff != "" || b1 == nil || params["W1"] == nil {
		t.Errorf("losses (-want +got):\n%s\nparams: %v", diff, params)
	}
}

// TestImportStdin: a model piped in is read as ONNX, a graph as JSON
// (stdin has no file name to go by: a first byte 0x08, ONNX's ir_version
// tag, is a model), by
// import and by run, with the same graph as from the file (issue 36: a
// model piped to gpucc import - failed as malformed JSON).
func TestImportStdin(t *testing.T) {
	model, err := os.ReadFile(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := filepath.Abs(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	fromFile, _, code := gpucc(t, "", "import", p, "-o", "-")
	if code != 0 {
		t.Fatalf("import the file: exit %d: %s", code, fromFile)
	}
	fromStdin, _, code := gpucc(t, string(model), "import", "-", "-o", "-")
	if code != 0 || fromStdin != fromFile {
		t.Errorf("import - < mlp2.onnx: exit %d, %.200s; the file gives %.200s", code, fromStdin, fromFile)
	}
	out, _, code := gpucc(t, string(model), "run", "--backend", "cpu", "-")
	if code != 0 || !strings.Contains(out, `"probs"`) {
		t.Errorf("run - < mlp2.onnx: exit %d: %s", code, out)
	}
	out, _, code = gpucc(t, " \n"+fromFile, "run", "--backend", "cpu", "-")
	if code != 0 || !strings.Contains(out, `"probs"`) {
		t.Errorf("run - < the imported graph: exit %d: %s", code, out)
	}
	if _, v, code := gpucc(t, "\x08\x07garbage", "import", "-", "-o", "-"); code != 1 || errorCode(v) != "invalid_graph" {
		t.Errorf("import - < a broken model: exit %d, %v; want invalid_graph", code, v)
	}
}
