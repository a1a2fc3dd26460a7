package web

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// saveNpy writes a as a .npy file at path.
func saveNpy(t *testing.T, path string, a *npy.Array) {
	t.Helper()
	var buf bytes.Buffer
	if err := npy.Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestONNXPickerNpyConstant: the page fixes an input at import from a
// .npy file, as gpucc run --const NAME=FILE.npy does (onnxconst.Npy, the
// command line's reader): Silero VAD v5 with its int64 sample rate sr
// from a file holding 16000 gives, on every browser backend, cpuref's
// bits of the model loaded with sr = 16000. A file of another dtype, a
// truncated one, none chosen, or a typed value naming a file (the page
// reads no file by name) are invalid_input.
func TestONNXPickerNpyConstant(t *testing.T) {
	ctx := page(t, "?life=0", onnxDeadline)
	runRealModel(t, ctx, realPageModel{name: "silero_vad_v5", shapes: map[string][]int{"input": {1, 512}, "state": {2, 1, 128}},
		scale: 1, consts: map[string]int64{"sr": 16000}, npyConsts: true}, 2*time.Minute)
	sr := evalString(t, ctx, `String(demo.onnx.signature.inputs.findIndex(p => p.name === "sr"))`)
	dir := t.TempDir()
	f32 := filepath.Join(dir, "f32.npy")
	saveNpy(t, f32, &npy.Array{DType: "float32", Shape: []int{}, Float32: []float32{16000}})
	i64 := filepath.Join(dir, "i64.npy")
	saveNpy(t, i64, &npy.Array{DType: "int64", Shape: []int{}, Int64: []int64{16000}})
	b, err := os.ReadFile(i64)
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.npy")
	if err := os.WriteFile(short, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, file, source, value, msg string }{
		{"float32 file", f32, "constnpy", "", "sr.npy holds float32; the model's input is int64"},
		{"truncated file", short, "constnpy", "", "sr.npy: "},
		{"a name typed", "", "const", "sr.npy", "the page reads no file by name"},
	} {
		if c.file != "" {
			pick(t, ctx, "#onnxData-"+sr, c.file)
		}
		evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxSource-%s").value = %q,
			document.getElementById("onnxConst-%s").value = %q, "")`, sr, c.source, sr, c.value))
		r := runPicked(t, ctx, "cpu")
		if r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) || !strings.Contains(r.Error.Message, c.msg) {
			t.Errorf("%s: %+v, want invalid_input saying %q", c.name, r.Error, c.msg)
		}
	}
	// No file chosen: the page's own check, before gpucc.
	evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxData-%s").value = "",
		document.getElementById("onnxSource-%s").value = "constnpy", "")`, sr, sr))
	if r := runPicked(t, ctx, "cpu"); r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) || !strings.Contains(r.Error.Message, "no .npy file chosen") {
		t.Errorf("no file: %+v, want invalid_input", r.Error)
	}
}
