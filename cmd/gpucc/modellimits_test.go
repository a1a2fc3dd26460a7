package main

import (
	le "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reluChain is an .onnx model of n Relus over x of shape dims, then a
// ReduceSum of everything (opset 13): output s, one value.
func reluChain(n int, dims ...int64) []byte {
	var g pb
	for i := range n {
		g = g.bytes(1, ifModelNode("Relu", []string{fmt.Sprintf("x%d", i)}, []string{fmt.Sprintf("x%d", i+1)}))
	}
	g = g.bytes(1, ifModelNode("ReduceSum", []string{fmt.Sprintf("x%d", n)}, []string{"s"}, pb(nil).str(1, "keepdims").varint(20, 2).varint(3, 0)))
	g = g.str(2, "chain").bytes(11, tensorType("x0", 1, dims...)).bytes(12, tensorType("s", 1))
	return pb(nil).varint(1, 8).bytes(8, pb(nil).varint(2, 13)).bytes(7, g)
}

// TestModelSizedLimits: an .onnx model past the seed's defaults (600
// nodes; a tensor of 1.1M elements) runs without flags, its limits sized
// to it; a flag caps it and the refusal names the flag; the same node
// count as a protocol v1 graph is held to the defaults.
func TestModelSizedLimits(t *testing.T) {
	dir := t.TempDir()
	deep, wide := filepath.Join(dir, "deep.onnx"), filepath.Join(dir, "wide.onnx")
	if err := os.WriteFile(deep, reluChain(600, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wide, reluChain(20, 1100, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{deep, wide} {
		_, v, code := gpucc(t, "", "run", "--backend", "cpu", m)
		if code != 0 || fmt.Sprint(v["outputs"]) != "map[s:map[data:[0] shape:[]]]" {
			t.Errorf("run %s: exit %d, %v", filepath.Base(m), code, v)
		}
	}
	for _, tt := range []struct{ model, flag, value, limit string }{
		{deep, "--max-nodes", "512", "Limits.MaxNodes (gpucc --max-nodes)"},
		{wide, "--max-elements", "1048576", "Limits.MaxElements (gpucc --max-elements)"},
	} {
		_, v, code := gpucc(t, "", "run", "--backend", "cpu", tt.flag, tt.value, tt.model)
		if code != 1 || errorCode(v) != "limit_exceeded" || !strings.Contains(fmt.Sprint(v["error"]), tt.limit) {
			t.Errorf("run %s %s %s: exit %d, %v; want limit_exceeded naming %s", filepath.Base(tt.model), tt.flag, tt.value, code, v, tt.limit)
		}
	}
	// The JSON graph of the deep model keeps the defaults.
	js := filepath.Join(dir, "deep.json")
	if _, v, code := gpucc(t, "", "import", deep, "-o", js); code != 0 {
		t.Fatalf("import: exit %d, %v", code, v)
	}
	if _, v, code := gpucc(t, "", "run", "--backend", "cpu", js); code != 1 || !strings.Contains(fmt.Sprint(v["error"]), "raise Limits.MaxNodes") {
		t.Errorf("run of the imported JSON: exit %d, %v; want the default node limit", code, v)
	}
}

// TestModelSizedInputs: gpucc run's --input data of an .onnx model is read
// before the import under the caps of the model's size, so a detector's
// 640² image (1,228,800 values, past the seed's 1,048,576 elements) runs;
// --max-elements still caps it.
func TestModelSizedInputs(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "wide.onnx")
	if err := os.WriteFile(model, reluChain(2, 1, 3, 640, 640), 0o644); err != nil {
		t.Fatal(err)
	}
	h := "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 640, 640), }"
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := append(le.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), uint16(len(h))), h...)
	x := filepath.Join(dir, "x.npy")
	if err := os.WriteFile(x, append(b, make([]byte, 4*3*640*640)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, v, code := gpucc(t, "", "run", "--backend", "cpu", model, "--input", "x0="+x); code != 0 || fmt.Sprint(v["outputs"]) != "map[s:map[data:[0] shape:[]]]" {
		t.Errorf("run with a 640² input: exit %d, %v", code, v)
	}
	if _, v, code := gpucc(t, "", "run", "--backend", "cpu", "--max-elements", "1048576", model, "--input", "x0="+x); code != 1 {
		t.Errorf("--max-elements 1048576: exit %d, %v; want a refusal", code, v)
	}
}
