package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestRunInputs: gpucc run MODEL.onnx --input x=FILE.npy runs the model
// on those values (not on zeros) under the model's own input name, gives
// the same bits from a JSON array, matches cpuref on the same values, and
// --output-dir writes each output as NAME.npy with the printed bits; a
// wrong name, shape, dtype or a truncated file is invalid_input (issue 36).
func TestRunInputs(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	x := []float32{1, -2, 0.5, 4, 5.25, -6}
	write := func(name string, a *npy.Array) string {
		var buf bytes.Buffer
		if err := npy.Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	xnpy := write("x.npy", &npy.Array{DType: "float32", Shape: []int{2, 3}, Float32: x})

	// The reference: the model imported, its input given x, in cpuref.
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := slices.IndexFunc(g.Nodes, func(n ir.Node) bool { return n.Op == ir.OpInput && n.Name == "x" })
	g.Nodes[in].Data = x
	out := slices.IndexFunc(g.Outputs, func(o ir.Output) bool { return o.Name == "probs" })
	want := cpuref.Eval(g)[g.Outputs[out].ID]

	probs := func(args ...string) []float32 {
		t.Helper()
		stdout, v, code := gpucc(t, "", append([]string{"run", "--backend", "cpu"}, args...)...)
		if code != 0 {
			t.Fatalf("gpucc run %v: exit %d: %s", args, code, stdout)
		}
		var res struct {
			Outputs map[string]struct{ Data []float32 }
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, v)
		}
		return res.Outputs["probs"].Data
	}
	outDir := filepath.Join(dir, "out")
	fromNpy := probs("--input", "x="+xnpy, "--output-dir", outDir, model)
	fromJSON := probs("--input", "x=[[1,-2,0.5],[4,5.25,-6]]", model)
	zeros := probs(model)
	bits := func(v []float32) []uint32 {
		b := make([]uint32, len(v))
		for i, f := range v {
			b[i] = math.Float32bits(f)
		}
		return b
	}
	if !slices.Equal(bits(fromNpy), bits(want)) || !slices.Equal(bits(fromJSON), bits(want)) {
		t.Errorf("probs from x.npy %v, from JSON %v; cpuref on x: %v", fromNpy, fromJSON, want)
	}
	if slices.Equal(bits(zeros), bits(want)) {
		t.Errorf("the run on zeros gave x's answer %v: the input was not bound", zeros)
	}
	f, err := os.Open(filepath.Join(outDir, "probs.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := npy.Read(f, 1<<20)
	if err != nil || a.DType != "float32" || !slices.Equal(a.Shape, []int{2, 2}) || !slices.Equal(bits(a.Float32), bits(want)) {
		t.Errorf("--output-dir's probs.npy: %+v, %v; want %v", a, err, want)
	}

	good, _ := os.ReadFile(xnpy)
	truncated := filepath.Join(dir, "short.npy")
	os.WriteFile(truncated, good[:len(good)-3], 0o644)
	fortran := filepath.Join(dir, "fortran.npy")
	os.WriteFile(fortran, bytes.Replace(good, []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1), 0o644)
	for _, c := range []struct {
		name, arg, code, says string
	}{
		{"unknown name", "input1=" + xnpy, "invalid_input", "input1"},
		{"wrong shape", "x=" + write("x3.npy", &npy.Array{DType: "float32", Shape: []int{3, 2}, Float32: x}), "invalid_input", "shape"},
		{"wrong dtype", "x=" + write("xi.npy", &npy.Array{DType: "int32", Shape: []int{2, 3}, Int64: make([]int64, 6)}), "invalid_input", "int32"},
		{"truncated", "x=" + truncated, "invalid_input", "unexpected EOF"},
		{"fortran order", "x=" + fortran, "invalid_input", "Fortran"},
		{"ragged JSON", "x=[[1,2,3],[4,5]]", "invalid_input", "rectangular"},
		{"missing file", "x=" + filepath.Join(dir, "none.npy"), "io", "none.npy"},
	} {
		stdout, v, code := gpucc(t, "", "run", "--backend", "cpu", "--input", c.arg, model)
		if code != 1 || errorCode(v) != c.code || !strings.Contains(stdout, c.says) {
			t.Errorf("%s: exit %d, %s; want code %s saying %q", c.name, code, stdout, c.code, c.says)
		}
	}
}

// TestRunInputNonFinite: gpucc run GRAPH.json --input with a NaN or ±Inf
// (a float32 or float16 .npy, a JSON array's 1e39) is invalid_input naming
// the input and the element, under the finite policy: the value was bound
// into the graph and its validation answered invalid_graph. Under
// --non-finite the same values run and come back bit for bit.
func TestRunInputNonFinite(t *testing.T) {
	dir := t.TempDir()
	graph := filepath.Join(dir, "g.json")
	os.WriteFile(graph, []byte(`{"version":1,"nodes":[{"id":0,"op":"input","name":"x","shape":[3],"data":[1,2,3]},`+
		`{"id":1,"op":"input","name":"h","dtype":"float16","shape":[2],"data":[1,2]}],"outputs":[{"name":"x","id":0},{"name":"h","id":1}]}`), 0o644)
	write := func(name string, a *npy.Array) string {
		var buf bytes.Buffer
		if err := npy.Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nan := write("nan.npy", &npy.Array{DType: "float32", Shape: []int{3}, Float32: []float32{1, float32(math.NaN()), 3}})
	inf16 := write("inf16.npy", &npy.Array{DType: "float16", Shape: []int{2}, Float32: []float32{float32(math.Inf(-1)), 0}})
	for _, c := range []struct{ name, arg, says string }{
		{"float32 NaN", "x=" + nan, "element 1"},
		{"float16 -Inf", "h=" + inf16, "element 0"},
		{"JSON overflow", "x=[1,2,1e39]", "element 2"},
	} {
		stdout, v, code := gpucc(t, "", "run", "--backend", "cpu", "--input", c.arg, graph)
		if code != 1 || errorCode(v) != "invalid_input" || !strings.Contains(stdout, c.says) {
			t.Errorf("%s: exit %d, %s; want invalid_input saying %q", c.name, code, stdout, c.says)
		}
	}
	stdout, _, code := gpucc(t, "", "run", "--non-finite", "--backend", "cpu", "--input", "x="+nan, "--input", "h="+inf16, graph)
	if code != 0 || !strings.Contains(stdout, `"data":[1,"NaN",3]`) || !strings.Contains(stdout, `"data":["-Infinity",0]`) {
		t.Errorf("--non-finite: exit %d, %s", code, stdout)
	}
}

// TestRunInputTimings: gpucc run MODEL.onnx --input counts the start-up,
// the model's import and the compile (passes, codegen, the backend's
// compile) in its timings, as a run without --input does: it ran through a
// gpucc.Dynamic, whose result held the run's stages alone, so its
// totalMs left out the compile.
func TestRunInputTimings(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := gpucc(t, "", "run", "--backend", "cpu", "--input", "x=[[1,-2,0.5],[4,5.25,-6]]", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var res struct {
		Timings struct {
			StartupMs, ImportMs                                              *float64
			PassesMs, CodegenMs, CompileMs, UploadMs, DispatchMs, ReadbackMs float64
			TotalMs                                                          float64
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	r := res.Timings
	if r.StartupMs == nil {
		r.StartupMs = new(float64)
		t.Errorf("the timings lack startupMs: %s", out)
	}
	if r.ImportMs == nil || *r.ImportMs <= 0 {
		r.ImportMs = new(float64)
		t.Errorf("the timings lack importMs: %s", out)
	}
	tm := map[string]float64{"startupMs": *r.StartupMs, "importMs": *r.ImportMs, "passesMs": r.PassesMs, "codegenMs": r.CodegenMs, "compileMs": r.CompileMs,
		"uploadMs": r.UploadMs, "dispatchMs": r.DispatchMs, "readbackMs": r.ReadbackMs, "totalMs": r.TotalMs}
	if tm["passesMs"] <= 0 {
		t.Errorf("timings %v lack the passes", tm)
	}
	if parts := tm["startupMs"] + tm["importMs"] + tm["passesMs"] + tm["codegenMs"] + tm["compileMs"] + tm["uploadMs"] + tm["dispatchMs"] + tm["readbackMs"]; tm["totalMs"] < parts-0.01 {
		t.Errorf("totalMs %v is less than its stages' sum %v: %v", tm["totalMs"], parts, tm)
	}
}
