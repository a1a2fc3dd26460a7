package main

import (
	le "encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/internal/npy"
)

// npyFloats writes a float32 .npy file of the given shape (numpy.save's
// format 1.0).
func npyFloats(t *testing.T, path string, shape []int, data []float32) string {
	dims := ""
	for _, d := range shape {
		dims += fmt.Sprintf("%d, ", d)
	}
	h := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", strings.TrimSuffix(dims, " "))
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := le.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), uint16(len(h)))
	b = append(b, h...)
	for _, v := range data {
		b = le.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunDynamicInput: gpucc run takes an .onnx model with a dynamic
// sequence length (onnx/testdata/dynseq) and --input data of any length,
// without --input-shape: the data's shape binds "seq"; --explain names
// the dynamic dimension and states the shape cache's policy. Without data
// or a shape the dynamic dimension is refused by name.
func TestRunDynamicInput(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "dynseq", "dynseq.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{3, 7} {
		x := npyFloats(t, filepath.Join(dir, fmt.Sprintf("x%d.npy", n)), []int{1, n, 8}, make([]float32, 8*n))
		_, v, code := gpucc(t, "", "run", "--backend", "cpu", "--input", "x="+x, model)
		if code != 0 {
			t.Fatalf("seq %d: exit %d: %v", n, code, v)
		}
		outs, _ := v["outputs"].(map[string]any)
		y, _ := outs["y"].(map[string]any)
		if diff := cmp.Diff([]any{1.0, float64(n), 8.0}, y["shape"]); diff != "" {
			t.Errorf("seq %d: y's shape (-want +got):\n%s", n, diff)
		}
		out, _, code := gpuccStderr(t, "", "run", "--backend", "cpu", "--explain", "--input", "x="+x, model)
		for _, want := range []string{`x[1]=seq`, "at most 8 shapes kept, the least recently run evicted", fmt.Sprintf("x=[1 %d 8]: 1 compiled", n)} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("--explain: exit %d, %q; want %q", code, out, want)
			}
		}
	}
	_, v, code := gpucc(t, "", "run", "--backend", "cpu", model)
	if e, _ := v["error"].(map[string]any); code == 0 || !strings.Contains(fmt.Sprint(e["message"]), "seq") {
		t.Errorf("no data, no shape: exit %d, %v; want an error naming seq", code, v)
	}
}

// TestRunTypedInput: gpucc run takes a text model's int64 token ids and
// attention mask from .npy files at the model's own dtype (the BERT
// fixture of onnx/testdata/transformers, exported by PyTorch), and gives
// PyTorch's float64 answer within 1e-5 of the output's largest magnitude.
// A float32 file for an int64 input is refused by name.
func TestRunTypedInput(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "transformers"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	f := func(s string) string { return filepath.Join(dir, s) }
	_, v, code := gpucc(t, "", "run", "--backend", "cpu", "--input", "input_ids="+f("bert.7.ids.npy"),
		"--input", "attention_mask="+f("bert.7.mask.npy"), "--output-dir", out, f("bert.onnx"))
	if code != 0 {
		t.Fatalf("exit %d: %v", code, v)
	}
	y, ref := readNpy(t, filepath.Join(out, "last_hidden_state.npy")), readNpy(t, f("bert.7.ref.npy"))
	if diff := cmp.Diff(ref.Shape, y.Shape); diff != "" || len(y.Float32) != len(ref.Float32) {
		t.Fatalf("shape (-ref +got):\n%s", diff)
	}
	var worst, scale float64
	for i, r := range ref.Float32 {
		worst = max(worst, math.Abs(float64(y.Float32[i])-float64(r)))
		scale = max(scale, math.Abs(float64(r)))
	}
	if worst > 1e-5*scale {
		t.Errorf("max |gpucc - PyTorch float64| = %.3g, over 1e-5 × %.3g", worst, scale)
	}
	x := npyFloats(t, filepath.Join(out, "ids.npy"), []int{1, 7}, make([]float32, 7))
	_, v, code = gpucc(t, "", "run", "--backend", "cpu", "--input", "input_ids="+x,
		"--input", "attention_mask="+f("bert.7.mask.npy"), f("bert.onnx"))
	if e, _ := v["error"].(map[string]any); code == 0 || e["code"] != "invalid_input" || !strings.Contains(fmt.Sprint(e["message"]), "int64") {
		t.Errorf("float32 ids: exit %d, %v; want invalid_input naming int64", code, v)
	}
}

func readNpy(t *testing.T, path string) *npy.Array {
	t.Helper()
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, err := npy.Read(r, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
