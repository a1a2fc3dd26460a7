package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// typedGraph is protocol v1 with dtypes: int64 arithmetic that wraps, a
// mod, a bool comparison over float32 and a float16 cast.
const typedGraph = `{"version":1,"nodes":[
 {"id":0,"op":"input","name":"ids","dtype":"int64","shape":[3],"data":[9223372036854775807,-7,7]},
 {"id":1,"op":"full","dtype":"int64","shape":[3],"value":2},
 {"id":2,"op":"add","a":0,"b":1},
 {"id":3,"op":"mod","a":0,"b":1},
 {"id":4,"op":"input","shape":[3],"data":[0.5,-1,1e-5]},
 {"id":5,"op":"greater","a":4,"b":4,"dtype":"bool"},
 {"id":6,"op":"cast","a":4,"dtype":"float16"},
 {"id":7,"op":"relu","a":4}
],"outputs":[{"name":"sum","id":2},{"name":"mod","id":3},{"name":"gt","id":5},{"name":"half","id":6},{"name":"relu","id":7}]}`

// TestRunTyped: gpucc run on a typed graph, end to end on the cpu backend
// (auto selects it) and on each backend with typed code (native, wasm,
// webgpu), which give its values: each output says its dtype and carries
// integers or booleans, a float32 output's JSON is unchanged, the result
// satisfies the published schema; a division by zero fails with
// integer_fault.
func TestRunTyped(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	g := write("typed.json", typedGraph)
	for _, backend := range []string{"auto", "cpu", "native", "wasm", "webgpu"} {
		out, v, code := gpucc(t, "", "run", "--backend", backend, "--allow-software", g)
		if c := errorCode(v); c == "backend_unavailable" {
			continue
		}
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", backend, code, out)
		}
		if errs := resultSchema(t, "#/$defs/run").Validate([]byte(out)); len(errs) > 0 {
			t.Errorf("%s: %s\n%s", backend, strings.Join(errs, "; "), out)
		}
		if want := map[string]string{"auto": "cpu"}[backend]; want != "" && v["backend"] != want {
			t.Errorf("%s: ran on %v, want %s", backend, v["backend"], want)
		}
		for _, want := range []string{
			`"sum":{"shape":[3],"dtype":"int64","data":[-9223372036854775807,-5,9]}`,
			`"mod":{"shape":[3],"dtype":"int64","data":[1,1,1]}`,
			`"gt":{"shape":[3],"dtype":"bool","data":[false,false,false]}`,
			`"half":{"shape":[3],"dtype":"float16","data":[0.5,-1,0.00001001358]}`, // float32's shortest decimal of float16's 1e-5,
			`"relu":{"shape":[3],"data":[0.5,0,0.00001]}`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %s in\n%s", backend, want, out)
			}
		}
	}
	byZero := write("zero.json", `{"version":1,"nodes":[
 {"id":0,"op":"input","dtype":"int32","shape":[2],"data":[1,2]},
 {"id":1,"op":"input","dtype":"int32","shape":[2],"data":[1,0]},
 {"id":2,"op":"div","a":0,"b":1}],"outputs":[{"name":"q","id":2}]}`)
	out, v, code := gpucc(t, "", "run", byZero)
	if code == 0 || errorCode(v) != "integer_fault" {
		t.Errorf("int32 division by zero: exit %d: %s", code, out)
	}
	for _, backend := range []string{"native", "wasm"} { // the same code and message
		o, w, c := gpucc(t, "", "run", "--backend", backend, byZero)
		if errorCode(w) != "backend_unavailable" && (c == 0 || strings.ReplaceAll(o, backend, "cpu") != out) {
			t.Errorf("%s: int32 division by zero: exit %d: %s\ncpu: %s", backend, c, o, out)
		}
	}
	if errs := resultSchema(t, "#/$defs/failure").Validate([]byte(out)); len(errs) > 0 {
		t.Errorf("failure: %s\n%s", strings.Join(errs, "; "), out)
	}
}

// int64Model returns an ONNX model y = Identity(ids) with ids an int64
// input of shape [3], written with protowire (onnx.proto's field numbers).
func int64Model() []byte {
	msg := func(fields ...func([]byte) []byte) []byte {
		var b []byte
		for _, f := range fields {
			b = f(b)
		}
		return b
	}
	bytesF := func(n protowire.Number, v []byte) func([]byte) []byte {
		return func(b []byte) []byte { return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v) }
	}
	varint := func(n protowire.Number, v uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
		}
	}
	info := func(name string) []byte {
		dim := msg(varint(1, 3))
		tensor := msg(varint(1, 7), bytesF(2, msg(bytesF(1, dim))))
		return msg(bytesF(1, []byte(name)), bytesF(2, msg(bytesF(1, tensor))))
	}
	node := msg(bytesF(1, []byte("ids")), bytesF(2, []byte("y")), bytesF(4, []byte("Identity")))
	graph := msg(bytesF(1, node), bytesF(2, []byte("g")), bytesF(11, info("ids")), bytesF(12, info("y")))
	return msg(varint(1, 7), bytesF(7, graph), bytesF(8, msg(varint(2, 13))))
}

// TestImportTyped: gpucc import keeps an int64 input's dtype and says it;
// gpucc run of the model returns the int64 output as integers, on cpu.
func TestImportTyped(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "ids.onnx")
	if err := os.WriteFile(model, int64Model(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := gpucc(t, "", "import", model, "-o", filepath.Join(dir, "ids.json"))
	if code != 0 || !strings.Contains(out, `"inputs":[{"name":"ids","shape":[3],"dtype":"int64"}]`) {
		t.Fatalf("import: exit %d: %s", code, out)
	}
	out, v, code := gpucc(t, "", "run", model)
	if code != 0 || v["backend"] != "cpu" || !strings.Contains(out, `"y":{"shape":[3],"dtype":"int64","data":[0,0,0]}`) {
		t.Errorf("run: exit %d: %s", code, out)
	}
}
