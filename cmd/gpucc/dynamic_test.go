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
