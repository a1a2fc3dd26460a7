package main

import (
	"bytes"
	le "encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/internal/npy"
)

// embeddingModel returns an ONNX model of int64 ids [4] (opset 13):
// emb = Gather(table, ids) of a float32 [5,3] initializer, twice = ids +
// ids (int64), f = Cast(ids, float), pos = ids > 0.
func embeddingModel() []byte {
	node := func(op string, out string, in ...string) pb { return ifModelNode(op, in, []string{out}) }
	raw := make([]byte, 0, 60)
	for k := range 15 {
		raw = le.LittleEndian.AppendUint32(raw, math.Float32bits(float32(k)/7))
	}
	table := pb(nil).varint(1, 5).varint(1, 3).varint(2, 1).str(8, "table").bytes(9, raw)
	zero := pb(nil).varint(2, 7).str(8, "zero").bytes(9, make([]byte, 8))
	cast := node("Cast", "f", "ids").bytes(5, pb(nil).str(1, "to").varint(3, 1).varint(20, 2))
	graph := pb(nil).bytes(1, node("Gather", "emb", "table", "ids")).bytes(1, node("Add", "twice", "ids", "ids")).
		bytes(1, cast).bytes(1, node("Greater", "pos", "ids", "zero")).str(2, "g").
		bytes(5, table).bytes(5, zero).bytes(11, tensorType("ids", 7, 4)).
		bytes(12, tensorType("emb", 1, 4, 3)).bytes(12, tensorType("twice", 7, 4)).bytes(12, tensorType("f", 1, 4)).bytes(12, tensorType("pos", 9, 4))
	return pb(nil).varint(1, 7).bytes(7, graph).bytes(8, pb(nil).varint(2, 13))
}

// TestRunTypedModelBackends: gpucc run of an ONNX model with int64 ids
// given as --input ids=FILE.npy gives cpu's outputs, value for value, on
// native and wasm (a typed graph's code on each); an index outside the
// table's rows fails on each with cpu's invalid_input, naming the op and
// the index.
func TestRunTypedModelBackends(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "emb.onnx")
	if err := os.WriteFile(model, embeddingModel(), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := func(name string, v ...int64) string {
		var buf bytes.Buffer
		if err := npy.Write(&buf, &npy.Array{DType: "int64", Shape: []int{len(v)}, Int64: v}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := ids("ids.npy", 4, -1, 0, -5), ids("bad.npy", 4, -6, 0, 1)
	outputs := func(v map[string]any) string {
		b, _ := json.Marshal(v["outputs"])
		return string(b)
	}
	_, want, code := gpucc(t, "", "run", "--backend", "cpu", "--input", "ids="+good, model)
	if code != 0 {
		t.Fatalf("cpu: exit %d: %v", code, want)
	}
	for _, s := range []string{`"twice":{"data":[8,-2,0,-10],"dtype":"int64","shape":[4]}`, `"emb":{"data":[1.7142857,1.8571428,2,1.7142857,`} {
		if !strings.Contains(outputs(want), s) {
			t.Errorf("cpu: no %s in %s", s, outputs(want))
		}
	}
	wantBad, _, _ := gpucc(t, "", "run", "--backend", "cpu", "--input", "ids="+bad, model)
	if !strings.Contains(wantBad, `"code":"invalid_input"`) || !strings.Contains(wantBad, "gather: index -6") {
		t.Errorf("cpu: an index outside the table: %s", wantBad)
	}
	for _, backend := range []string{"native", "wasm"} {
		out, v, code := gpucc(t, "", "run", "--backend", backend, "--input", "ids="+good, model)
		if errorCode(v) == "backend_unavailable" {
			continue
		}
		if code != 0 || v["backend"] != backend || outputs(v) != outputs(want) {
			t.Errorf("%s: exit %d: %s\ncpu's outputs: %s", backend, code, out, outputs(want))
		}
		if out, _, _ := gpucc(t, "", "run", "--backend", backend, "--input", "ids="+bad, model); strings.ReplaceAll(out, backend, "cpu") != wantBad {
			t.Errorf("%s: an index outside the table: %s\ncpu: %s", backend, out, wantBad)
		}
	}
}
