package web

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestONNXPickerNpy: the page takes an input's data as a .npy file, read
// by the command line's and the server's reader: the digits model on
// export.py's x saved with numpy's format gives cpuref's bits on that x,
// with the shape field left empty (the file's shape binds it), the same
// as gpucc run --input and serve's form; a Fortran-order, truncated or
// int64 file and a shape that contradicts the file's are invalid_input
// (issue 36: model data everywhere, the page too).
func TestONNXPickerNpy(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	digits, _ := filepath.Abs(filepath.Join(modelsDir, "digits.onnx"))
	x := float32s(t, filepath.Join(modelsDir, "digits.input.bin"))
	raw, err := os.ReadFile(digits)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("x", x); err != nil {
		t.Fatal(err)
	}
	want := cpuref.Eval(g)[g.Outputs[0].ID]
	dir := t.TempDir()
	save := func(name string, a *npy.Array, edit func([]byte) []byte) string {
		var buf bytes.Buffer
		if err := npy.Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if edit != nil {
			b = edit(b)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	xnpy := save("x.npy", &npy.Array{DType: "float32", Shape: []int{32, 64}, Float32: x}, nil)

	pickModel(t, ctx, digits)
	pick(t, ctx, "#onnxData-0", xnpy)
	evalString(t, ctx, `(document.getElementById("onnxShape-0").value = "", "")`)
	r := runPicked(t, ctx, "cpu")
	if r.Error != nil {
		t.Fatalf("x.npy: %s: %s", r.Error.Code, r.Error.Message)
	}
	var wantBits []uint32
	for _, v := range want {
		wantBits = append(wantBits, math.Float32bits(v))
	}
	if !slices.Equal(r.Outputs["y"].Bits, wantBits) {
		t.Errorf("y from x.npy differs from cpuref's on x")
	}

	for _, c := range []struct{ name, file, shape string }{
		{"Fortran order", save("f.npy", &npy.Array{DType: "float32", Shape: []int{32, 64}, Float32: x},
			func(b []byte) []byte {
				return bytes.Replace(b, []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1)
			}), ""},
		{"truncated", save("t.npy", &npy.Array{DType: "float32", Shape: []int{32, 64}, Float32: x}, func(b []byte) []byte { return b[:len(b)-5] }), ""},
		{"int64", save("i.npy", &npy.Array{DType: "int64", Shape: []int{32, 64}, Int64: make([]int64, 32*64)}, nil), ""},
		{"shape against the file's", xnpy, "16,128"},
	} {
		pick(t, ctx, "#onnxData-0", c.file)
		evalString(t, ctx, `(document.getElementById("onnxShape-0").value = "`+c.shape+`", "")`)
		if r := runPicked(t, ctx, "cpu"); r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) {
			t.Errorf("%s: %+v, want invalid_input", c.name, r.Error)
		}
	}
}
