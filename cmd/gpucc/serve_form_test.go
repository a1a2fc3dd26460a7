package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
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

// formPart is one part of a multipart execute request.
type formPart struct {
	name, contentType string
	body              []byte
}

// postForm posts parts as multipart/form-data to the server at url.
func postForm(t *testing.T, url string, parts ...formPart) (int, envelope, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.name))
		h.Set("Content-Type", p.contentType)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.body)
	}
	mw.Close()
	resp, err := http.Post(url+"/v1/execute?backend=cpu", mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	raw.ReadFrom(resp.Body)
	var e envelope
	if err := json.Unmarshal(raw.Bytes(), &e); err != nil {
		t.Fatalf("not an envelope: %v\n%s", err, raw.String())
	}
	return resp.StatusCode, e, raw.String()
}

func npyBytes(t *testing.T, a *npy.Array) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := npy.Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func modelPart(t *testing.T, file string) formPart {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return formPart{"model", "application/onnx", b}
}

func jsonPart(doc string) formPart { return formPart{"inputs", "application/json", []byte(doc)} }

// floatsOf is an output's data of a reply, bit for bit.
func floatsOf(e envelope, name string) []uint32 {
	o, _ := e.Value["outputs"].(map[string]any)[name].(map[string]any)
	d, _ := o["data"].([]any)
	var bits []uint32
	for _, v := range d {
		f, _ := v.(float64)
		bits = append(bits, math.Float32bits(float32(f)))
	}
	return bits
}

// TestServeModelInputs: serve runs an ONNX model on the client's data,
// posted as multipart/form-data with the model and each input as a .npy
// part or in the JSON form, and gives cpuref's bits on that data; an int64
// input keeps every bit (past 2^53), a dynamic dimension is bound by the
// data's shape, and data that cannot be the input is refused with a code:
// a wrong dtype or shape, a truncated, Fortran-order or pickled .npy, a
// .npy's NaN or Inf under the finite policy (invalid_graph until
// 2026-12-05), an unknown name are invalid_input (400), a malformed form usage (400), too
// many values limit_exceeded (413). Against the real server (issue 36).
func TestServeModelInputs(t *testing.T) {
	url := startServe(t)
	x := []float32{1, -2, 0.5, 4, 5.25, -6}
	raw, err := os.ReadFile(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[slices.IndexFunc(g.Nodes, func(n ir.Node) bool { return n.Op == ir.OpInput && n.Name == "x" })].Data = x
	want := cpuref.Eval(g)[g.Outputs[slices.IndexFunc(g.Outputs, func(o ir.Output) bool { return o.Name == "probs" })].ID]
	var wantBits []uint32
	for _, f := range want {
		wantBits = append(wantBits, math.Float32bits(f))
	}
	xnpy := npyBytes(t, &npy.Array{DType: "float32", Shape: []int{2, 3}, Float32: x})
	const xJSON = `{"inputs":{"x":{"dtype":"float32","shape":[2,3],"data":[1,-2,0.5,4,5.25,-6]}}}`
	for _, c := range []struct {
		name  string
		parts []formPart
	}{
		{".npy part", []formPart{modelPart(t, "mlp2.onnx"), {"x", "application/octet-stream", xnpy}}},
		{"JSON form", []formPart{jsonPart(xJSON), modelPart(t, "mlp2.onnx")}},
		{"JSON form, dtype left out", []formPart{modelPart(t, "mlp2.onnx"), jsonPart(`{"inputs":{"x":{"shape":[2,3],"data":[1,-2,0.5,4,5.25,-6]}}}`)}},
	} {
		status, e, body := postForm(t, url, c.parts...)
		if status != 200 || !slices.Equal(floatsOf(e, "probs"), wantBits) {
			t.Errorf("%s: %d, probs %v; want cpuref's %v on x: %s", c.name, status, floatsOf(e, "probs"), want, body)
		}
	}

	// int64 past 2^53 and negative: the identity returns each bit.
	status, _, body := postForm(t, url, formPart{"model", "application/onnx", int64Model()},
		jsonPart(`{"inputs":{"ids":{"dtype":"int64","shape":[3],"data":[9007199254740993,-1,9223372036854775807]}}}`))
	if status != 200 || !strings.Contains(body, `"y":{"shape":[3],"dtype":"int64","data":[9007199254740993,-1,9223372036854775807]}`) {
		t.Errorf("int64 JSON form: %d %s", status, body)
	}
	status, _, body = postForm(t, url, formPart{"model", "application/onnx", int64Model()},
		formPart{"ids", "application/octet-stream", npyBytes(t, &npy.Array{DType: "int64", Shape: []int{3}, Int64: []int64{-9223372036854775808, 7, 1 << 60}})})
	if status != 200 || !strings.Contains(body, `"data":[-9223372036854775808,7,1152921504606846976]`) {
		t.Errorf("int64 .npy part: %d %s", status, body)
	}

	// mlp.onnx's batch is a dim_param: the data's shape binds it.
	status, e, body := postForm(t, url, modelPart(t, "mlp.onnx"), jsonPart(`{"inputs":{"x":{"shape":[4,3],"data":[1,2,3,4,5,6,7,8,9,10,11,12]}}}`))
	if out, _ := e.Value["outputs"].(map[string]any); status != 200 || len(out) == 0 || !strings.Contains(body, `"shape":[4,`) {
		t.Errorf("mlp.onnx at batch 4: %d %s", status, body)
	}

	truncated := xnpy[:len(xnpy)-3]
	fortran := bytes.Replace(xnpy, []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1)
	pickled := bytes.Replace(xnpy, []byte("'descr': '<f4'"), []byte("'descr': '|O' "), 1)
	model := modelPart(t, "mlp2.onnx")
	for _, c := range []struct {
		name   string
		parts  []formPart
		status int
		code   string
		says   string
	}{
		{"wrong dtype", []formPart{model, {"x", "", npyBytes(t, &npy.Array{DType: "int32", Shape: []int{2, 3}, Int64: make([]int64, 6)})}}, 400, "invalid_input", "int32"},
		{"float64", []formPart{model, {"x", "", npyBytes(t, &npy.Array{DType: "float64", Shape: []int{2, 3}, Float64: make([]float64, 6)})}}, 400, "invalid_input", "float64"},
		{"wrong shape", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[3,2],"data":[1,2,3,4,5,6]}}}`)}, 400, "invalid_input", "shape"},
		{"truncated", []formPart{model, {"x", "", truncated}}, 400, "invalid_input", "unexpected EOF"},
		{"Fortran order", []formPart{model, {"x", "", fortran}}, 400, "invalid_input", "Fortran"},
		{"pickled", []formPart{model, {"x", "", pickled}}, 400, "invalid_input", "|O"},
		{"unknown input", []formPart{model, {"input1", "", xnpy}}, 400, "invalid_input", "input1"},
		{"given twice", []formPart{model, {"x", "", xnpy}, jsonPart(xJSON)}, 400, "usage", "twice"},
		{"no model", []formPart{{"x", "", xnpy}}, 400, "usage", "model"},
		{"JSON data short", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[2,3],"data":[1,2,3]}}}`)}, 400, "invalid_input", "3 values"},
		{"JSON data nested", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[2,3],"data":[[1,2,3],[4,5,6]]}}}`)}, 400, "invalid_input", "element 0"},
		{"JSON unknown dtype", []formPart{model, jsonPart(`{"inputs":{"x":{"dtype":"float128","shape":[2,3],"data":[1,2,3,4,5,6]}}}`)}, 400, "invalid_input", "float128"},
		{"JSON float32 overflow", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[2,3],"data":[1,2,3,4,5,1e39]}}}`)}, 400, "invalid_input", "element 5"},
		{".npy NaN", []formPart{model, {"x", "", npyBytes(t, &npy.Array{DType: "float32", Shape: []int{2, 3}, Float32: []float32{1, 2, 3, 4, float32(math.NaN()), 6}})}}, 400, "invalid_input", "element 4"},
		{".npy -Inf", []formPart{model, {"x", "", npyBytes(t, &npy.Array{DType: "float32", Shape: []int{2, 3}, Float32: []float32{float32(math.Inf(-1)), 2, 3, 4, 5, 6}})}}, 400, "invalid_input", "element 0"},
		{"JSON non-finite", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[2,3],"data":[1,2,3,4,5,"NaN"]}}}`)}, 400, "invalid_input", "finite policy"},
		{"JSON unknown key", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[2,3],"data":[1,2,3,4,5,6],"order":"F"}}}`)}, 400, "invalid_input", "order"},
		{"JSON int64 not an integer", []formPart{{"model", "", int64Model()}, jsonPart(`{"inputs":{"ids":{"dtype":"int64","shape":[3],"data":[1,2.5,3]}}}`)}, 400, "invalid_input", "element 1"},
		{"JSON int64 out of range", []formPart{{"model", "", int64Model()}, jsonPart(`{"inputs":{"ids":{"dtype":"int64","shape":[3],"data":[1,9223372036854775808,3]}}}`)}, 400, "invalid_input", "element 1"},
		{"JSON too many values", []formPart{model, jsonPart(`{"inputs":{"x":{"shape":[2000,1000],"data":[]}}}`)}, 413, "limit_exceeded", "2000000 elements"},
	} {
		status, e, body := postForm(t, url, c.parts...)
		if status != c.status || e.code() != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want %d %s saying %q: %s", c.name, status, e.code(), c.status, c.code, c.says, body)
		}
	}
	// A multipart Content-Type without its boundary is a malformed request.
	resp, err := http.Post(url+"/v1/execute", "multipart/form-data", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("multipart without a boundary: %d, want 400", resp.StatusCode)
	}
}
