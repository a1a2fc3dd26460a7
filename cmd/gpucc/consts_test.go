package main

import (
	"bytes"
	le "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"google.golang.org/protobuf/encoding/protowire"
)

// pb is a protobuf message written field by field (onnx.proto's numbers).
type pb []byte

func (m pb) bytes(num protowire.Number, v []byte) pb {
	return protowire.AppendBytes(protowire.AppendTag(m, num, protowire.BytesType), v)
}
func (m pb) str(num protowire.Number, s string) pb { return m.bytes(num, []byte(s)) }
func (m pb) varint(num protowire.Number, v int64) pb {
	return protowire.AppendVarint(protowire.AppendTag(m, num, protowire.VarintType), uint64(v))
}

// tensorType is a ValueInfoProto of element type et and static dims.
func tensorType(name string, et int64, dims ...int64) pb {
	var shape pb
	for _, d := range dims {
		shape = shape.bytes(1, pb(nil).varint(1, d))
	}
	return pb(nil).str(1, name).bytes(2, pb(nil).bytes(1, pb(nil).varint(1, et).bytes(2, shape)))
}

func ifModelNode(op string, ins, outs []string, attrs ...pb) pb {
	var n pb
	for _, s := range ins {
		n = n.str(1, s)
	}
	for _, s := range outs {
		n = n.str(2, s)
	}
	n = n.str(4, op)
	for _, a := range attrs {
		n = n.bytes(5, a)
	}
	return n
}

// srModel is a model as a VAD ships: y = x + 1 if sr == 16000 else x - 1,
// x a float32 [3] and sr an int64 scalar input; one and 16000 are
// initializers.
func srModel() []byte {
	one := pb(nil).varint(1, 1).varint(2, 1).str(8, "one").bytes(9, le.LittleEndian.AppendUint32(nil, 0x3f800000))
	k := pb(nil).varint(2, 7).str(8, "k").bytes(7, protowire.AppendVarint(nil, 16000))
	branch := func(op string) pb {
		return pb(nil).bytes(1, ifModelNode(op, []string{"x", "one"}, []string{"t"})).str(2, op).bytes(12, tensorType("t", 1, 3))
	}
	attr := func(name string, g pb) pb { return pb(nil).str(1, name).varint(20, 5).bytes(6, g) }
	g := pb(nil).
		bytes(1, ifModelNode("Equal", []string{"sr", "k"}, []string{"c"})).
		bytes(1, ifModelNode("If", []string{"c"}, []string{"y"}, attr("then_branch", branch("Add")), attr("else_branch", branch("Sub")))).
		str(2, "sr").bytes(5, one).bytes(5, k).
		bytes(11, tensorType("x", 1, 3)).bytes(11, tensorType("sr", 7)).bytes(12, tensorType("y", 1, 3))
	return pb(nil).varint(1, 8).bytes(8, pb(nil).varint(2, 13)).bytes(7, g)
}

// npyFile writes a .npy file of one value (numpy.save's format 1.0).
func npyFile(t *testing.T, path, descr string, data []byte) string {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (), }", descr)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := le.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), uint16(len(h)))
	if err := os.WriteFile(path, append(append(b, h...), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConst: --const fixes an .onnx input at import, from a value or a
// .npy file: the If folds to its branch and the input is gone from the
// graph; without it, sr is a run-time int64 and both branches run
// (zero-filled: else). Bad values are refused by name.
func TestConst(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "sr.onnx")
	if err := os.WriteFile(model, srModel(), 0o644); err != nil {
		t.Fatal(err)
	}
	plus := map[string]any{"y": map[string]any{"shape": []any{3.0}, "data": []any{1.0, 1.0, 1.0}}}
	minus := map[string]any{"y": map[string]any{"shape": []any{3.0}, "data": []any{-1.0, -1.0, -1.0}}}
	npy16k := npyFile(t, filepath.Join(dir, "sr.npy"), "<i8", le.LittleEndian.AppendUint64(nil, 16000))
	npyF := npyFile(t, filepath.Join(dir, "f.npy"), "<f4", le.LittleEndian.AppendUint32(nil, 0))
	for _, tt := range []struct {
		args []string
		want map[string]any
	}{
		{[]string{"--const", "sr=16000"}, plus},
		{[]string{"--const", "sr=8000"}, minus},
		{[]string{"--const", "sr=" + npy16k}, plus},
		{nil, minus},
	} {
		_, v, code := gpucc(t, "", append([]string{"run", "--backend", "cpu", model}, tt.args...)...)
		if code != 0 {
			t.Fatalf("run %v: exit %d: %v", tt.args, code, v)
		}
		if diff := cmp.Diff(tt.want, v["outputs"]); diff != "" {
			t.Errorf("run %v (-want +got):\n%s", tt.args, diff)
		}
	}
	_, v, code := gpucc(t, "", "import", model, "-o", filepath.Join(dir, "g.json"), "--const", "sr=16000")
	if code != 0 || fmt.Sprint(v["inputs"]) != "[map[name:x shape:[3]]]" {
		t.Errorf("import --const sr=16000: exit %d, inputs %v; want x only", code, v["inputs"])
	}
	if _, v, code := gpucc(t, "", "build", model, "-o", filepath.Join(dir, "pkg"), "--const", "sr=16000"); code != 0 {
		t.Errorf("build --const: exit %d: %v", code, v)
	}
	for _, tt := range []struct {
		arg  string
		exit int
		code string
		msg  string
	}{
		{"sr=abc", 1, "invalid_input", `value "abc" is not of type int64`},
		{"sr=1,2", 1, "invalid_input", "2 values were given"},
		{"rate=1", 1, "invalid_input", `no input named "rate"`},
		{"x=1,2,3", 1, "invalid_input", ""}, // a float32 input fixed: then no input is left to name; it imports
		{"sr=" + npyF, 1, "invalid_input", "holds float32; the model's input is int64"},
		{"sr=" + filepath.Join(dir, "none.npy"), 1, "io", ""},
		{"sr", 2, "usage", ""},
	} {
		_, v, code := gpucc(t, "", "run", "--backend", "cpu", model, "--const", tt.arg)
		if tt.arg == "x=1,2,3" {
			if code != 0 {
				t.Errorf("--const %s: exit %d: %v", tt.arg, code, v)
			}
			continue
		}
		if code != tt.exit || errorCode(v) != tt.code || !strings.Contains(fmt.Sprint(v["error"]), tt.msg) {
			t.Errorf("--const %s: exit %d, %v; want exit %d, %s containing %q", tt.arg, code, v, tt.exit, tt.code, tt.msg)
		}
	}
}

// TestServeConst: /v1/execute's const=NAME=V0,… fixes an ONNX body's
// input at import, as --const does; a .npy name, a JSON body and a
// malformed const are usage errors.
func TestServeConst(t *testing.T) {
	a := testAPI(t, nil)
	model := string(srModel())
	for _, tt := range []struct {
		query string
		want  float64
	}{{"?const=sr%3D16000", 1}, {"?const=sr%3D8000&backend=cpu", -1}} {
		status, e, _ := do(t, a, "POST", "/v1/execute"+tt.query, model, "Content-Type", "application/onnx")
		y, _ := e.Value["outputs"].(map[string]any)["y"].(map[string]any)
		if status != 200 || fmt.Sprint(y["data"]) != fmt.Sprint([]float64{tt.want, tt.want, tt.want}) {
			t.Errorf("%s: %d %+v", tt.query, status, e)
		}
	}
	for _, tt := range []struct{ query, body, ctype, code string }{
		{"?const=sr%3Dsr.npy", model, "application/onnx", "usage"},
		{"?const=sr", model, "application/onnx", "usage"},
		{"?const=sr%3D1&const=sr%3D2", model, "application/onnx", "usage"},
		{"?const=rate%3D1", model, "application/onnx", "invalid_input"},
		{"?const=x%3D1", seedGraph, "application/json", "usage"},
	} {
		if status, e, _ := do(t, a, "POST", "/v1/execute"+tt.query, tt.body, "Content-Type", tt.ctype); e.code() != tt.code || status != 400 {
			t.Errorf("%s (%s): %d %s %+v, want 400 %s", tt.query, tt.ctype, status, e.code(), e.Error, tt.code)
		}
	}
}

// TestReadModelOneBuffer: a model file is read into one buffer of its
// size (io.ReadAll's growing series allocated several times the file),
// and a file over the limit still reads one byte past it.
func TestReadModelOneBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.onnx")
	want := bytes.Repeat([]byte{8, 1, 2, 3}, 1<<18) // 1 MiB
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(limit int64) ([]byte, uint64) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		raw, err := readModel(f, ir.Limits{MaxGraphBytes: limit})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return raw, after.TotalAlloc - before.TotalAlloc
	}
	raw, alloc := read(4 << 20)
	if !bytes.Equal(raw, want) {
		t.Fatalf("read %d bytes, not the file's %d", len(raw), len(want))
	}
	if alloc > uint64(len(want))*5/4 {
		t.Errorf("reading a %d-byte model allocated %d bytes; want one buffer of its size", len(want), alloc)
	}
	if raw, _ := read(1000); len(raw) != 1001 {
		t.Errorf("a model over a 1000-byte limit: read %d bytes, want 1001", len(raw))
	}
}
