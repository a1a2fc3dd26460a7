package ir_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

const seed = `{"version":1,"nodes":[
 {"id":0,"op":"input","shape":[3],"data":[-2,3,4]},
 {"id":1,"op":"input","shape":[3],"data":[10,20,30]},
 {"id":2,"op":"mul","a":0,"b":1},
 {"id":3,"op":"relu","a":2}],
 "outputs":[{"name":"values","id":3}]}`

func TestDecodeSeed(t *testing.T) {
	g, err := ir.DecodeBytes([]byte(seed), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := "%0 = input (3 values) : [3]\n%1 = input (3 values) : [3]\n%2 = mul %0, %1 : [3]\n%3 = relu %2 : [3]\nout \"values\" = %3\n"
	if diff := cmp.Diff(want, g.String()); diff != "" {
		t.Errorf("text form (-want +got):\n%s", diff)
	}
}

// graph wraps node JSON into a protocol document.
func graph(nodes, outputs string) string {
	return `{"version":1,"nodes":[` + nodes + `],"outputs":[` + outputs + `]}`
}

const in3 = `{"id":0,"op":"input","shape":[3],"data":[1,2,3]}`
const out0 = `{"name":"y","id":0}`
const in23 = `{"id":0,"op":"input","shape":[2,3],"data":[1,2,3,4,5,6]}`

func TestDecodeRefuses(t *testing.T) {
	small := ir.Limits{MaxNodes: 3, MaxElements: 16, MaxStorageBytes: 128, MaxOps: 50, MaxOutputs: 2, MaxGraphBytes: 4096}
	tests := []struct {
		name   string
		doc    string
		limits ir.Limits
		code   ir.Code
		node   int
		field  string
	}{
		{"empty document", ``, ir.Limits{}, ir.CodeInvalidGraph, -1, ""},
		{"not an object", `[1,2]`, ir.Limits{}, ir.CodeInvalidGraph, -1, ""},
		{"truncated", seed[:40], ir.Limits{}, ir.CodeInvalidGraph, -1, ""},
		{"trailing data", seed + `{}`, ir.Limits{}, ir.CodeInvalidGraph, -1, ""},
		{"missing version", `{"nodes":[` + in3 + `],"outputs":[` + out0 + `]}`, ir.Limits{}, ir.CodeInvalidGraph, -1, "version"},
		{"version 2", strings.Replace(graph(in3, out0), `"version":1`, `"version":2`, 1), ir.Limits{}, ir.CodeInvalidGraph, -1, "version"},
		{"version as string", strings.Replace(graph(in3, out0), `"version":1`, `"version":"1"`, 1), ir.Limits{}, ir.CodeInvalidGraph, -1, "version"},
		{"unknown top-level field", strings.Replace(graph(in3, out0), `"version":1`, `"version":1,"extra":true`, 1), ir.Limits{}, ir.CodeInvalidGraph, -1, ""},
		{"unknown node field", graph(`{"id":0,"op":"input","shape":[3],"data":[1,2,3],"layout":"nchw"}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, ""},
		{"no nodes", graph(``, out0), ir.Limits{}, ir.CodeInvalidGraph, -1, "outputs[0].id"},
		{"no outputs", graph(in3, ``), ir.Limits{}, ir.CodeInvalidGraph, -1, "outputs"},
		{"id out of order", graph(`{"id":1,"op":"input","shape":[3],"data":[1,2,3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "id"},
		{"missing id", graph(`{"op":"input","shape":[3],"data":[1,2,3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "id"},
		{"unknown op", graph(`{"id":0,"op":"conv3d","shape":[3],"data":[1,2,3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "op"},
		{"op wrong type", graph(`{"id":0,"op":7,"shape":[3],"data":[1,2,3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "op"},
		{"forward reference", graph(in3+`,{"id":1,"op":"relu","a":2}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"self reference", graph(in3+`,{"id":1,"op":"relu","a":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"negative reference", graph(in3+`,{"id":1,"op":"relu","a":-1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"reference as float", graph(in3+`,{"id":1,"op":"relu","a":0.5}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"missing a", graph(in3+`,{"id":1,"op":"relu"}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"add without b or scalar", graph(in3+`,{"id":1,"op":"add","a":0}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "b"},
		{"add with b and scalar", graph(in3+`,{"id":1,"op":"add","a":0,"b":0,"scalar":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "scalar"},
		{"relu with b", graph(in3+`,{"id":1,"op":"relu","a":0,"b":0}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "b"},
		{"relu with shape", graph(in3+`,{"id":1,"op":"relu","a":0,"shape":[3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
		{"shape mismatch", graph(in3+`,{"id":1,"op":"input","shape":[4],"data":[1,2,3,4]},{"id":2,"op":"add","a":0,"b":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 2, "b"},
		{"transpose of 1-D", graph(in3+`,{"id":1,"op":"transpose","a":0}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"life of 1-D", graph(in3+`,{"id":1,"op":"life","a":0}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "a"},
		{"matmul inner mismatch", graph(`{"id":0,"op":"full","shape":[2,3],"value":1},{"id":1,"op":"matmul","a":0,"b":0}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "b"},
		{"input without data", graph(`{"id":0,"op":"input","shape":[3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"input without shape", graph(`{"id":0,"op":"input","data":[1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "shape"},
		{"too few values", graph(`{"id":0,"op":"input","shape":[3],"data":[1,2]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"too many values", graph(`{"id":0,"op":"input","shape":[3],"data":[1,2,3,4]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"string value", graph(`{"id":0,"op":"input","shape":[3],"data":[1,"2",3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"null value", graph(`{"id":0,"op":"input","shape":[3],"data":[1,null,3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"nested data", graph(`{"id":0,"op":"input","shape":[3],"data":[[1,2,3]]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"data not an array", graph(`{"id":0,"op":"input","shape":[3],"data":{"0":1}}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"value overflows float32", graph(`{"id":0,"op":"input","shape":[1],"data":[1e39]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "data"},
		{"full value overflows", graph(`{"id":0,"op":"full","shape":[1],"value":-4e38}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "value"},
		{"scalar overflows", graph(in3+`,{"id":1,"op":"mul","a":0,"scalar":1e300}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "scalar"},
		{"scalar as string", graph(in3+`,{"id":1,"op":"mul","a":0,"scalar":"2"}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "scalar"},
		{"full value as bool", graph(`{"id":0,"op":"full","shape":[1],"value":true}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "value"},
		{"zero dimension", graph(`{"id":0,"op":"full","shape":[0],"value":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "shape"},
		{"negative dimension", graph(`{"id":0,"op":"full","shape":[-3],"value":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "shape"},
		{"fractional dimension", graph(`{"id":0,"op":"full","shape":[2.5],"value":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "shape"},
		{"rank 9", graph(`{"id":0,"op":"full","shape":[1,1,1,1,1,1,1,1,1],"value":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "shape"},
		{"overflowing shape", graph(`{"id":0,"op":"full","shape":[4294967296,4294967296,4294967296],"value":1}`, out0), ir.Limits{}, ir.CodeLimitExceeded, 0, "shape"},
		{"huge dimension", graph(`{"id":0,"op":"full","shape":[1e30],"value":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "shape"},
		{"duplicate output", graph(in3, out0+`,`+out0), ir.Limits{}, ir.CodeInvalidGraph, -1, "outputs[1].name"},
		{"empty output name", graph(in3, `{"name":"","id":0}`), ir.Limits{}, ir.CodeInvalidGraph, -1, "outputs[0].name"},
		{"output to missing node", graph(in3, `{"name":"y","id":5}`), ir.Limits{}, ir.CodeInvalidGraph, -1, "outputs[0].id"},
		{"output without id", graph(in3, `{"name":"y"}`), ir.Limits{}, ir.CodeInvalidGraph, -1, "outputs[0].id"},
		{"too many nodes", graph(in3+`,{"id":1,"op":"relu","a":0},{"id":2,"op":"relu","a":1},{"id":3,"op":"relu","a":2}`, out0), small, ir.CodeLimitExceeded, -1, "nodes"},
		{"too many elements", graph(`{"id":0,"op":"full","shape":[17],"value":1}`, out0), small, ir.CodeLimitExceeded, 0, "shape"},
		{"matmul result too big", graph(`{"id":0,"op":"full","shape":[5,1],"value":1},{"id":1,"op":"full","shape":[1,5],"value":1},{"id":2,"op":"matmul","a":0,"b":1}`, out0), small, ir.CodeLimitExceeded, 2, "shape"},
		{"too much storage", graph(`{"id":0,"op":"full","shape":[16],"value":1},{"id":1,"op":"relu","a":0},{"id":2,"op":"relu","a":1}`, out0), small, ir.CodeLimitExceeded, 2, "shape"},
		{"too many operations", graph(`{"id":0,"op":"full","shape":[4,4],"value":1},{"id":1,"op":"matmul","a":0,"b":0}`, out0), small, ir.CodeLimitExceeded, 1, "op"},
		{"too many outputs", graph(in3, out0+`,{"name":"b","id":0},{"name":"c","id":0}`), small, ir.CodeLimitExceeded, -1, "outputs"},
		{"document too large", graph(in3, out0) + strings.Repeat(" ", 5000), small, ir.CodeLimitExceeded, -1, ""},
		// The training extension: names, params, broadcasting and views.
		{"name on a non-input", graph(in3+`,{"id":1,"op":"relu","a":0,"name":"r"}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "name"},
		{"param on a non-input", graph(in3+`,{"id":1,"op":"relu","a":0,"param":true}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "param"},
		{"param not a bool", graph(`{"id":0,"op":"input","name":"w","param":1,"shape":[1],"data":[1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "param"},
		{"param as string", graph(`{"id":0,"op":"input","name":"w","param":"true","shape":[1],"data":[1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "param"},
		{"name not a string", graph(`{"id":0,"op":"input","name":3,"shape":[1],"data":[1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "name"},
		{"empty name", graph(`{"id":0,"op":"input","name":"","shape":[1],"data":[1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "name"},
		{"duplicate names", graph(`{"id":0,"op":"input","name":"w","shape":[1],"data":[1]},{"id":1,"op":"input","name":"w","shape":[1],"data":[2]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "name"},
		{"param without a name", graph(`{"id":0,"op":"input","param":true,"shape":[1],"data":[1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 0, "param"},
		{"broadcast non-suffix", graph(`{"id":0,"op":"full","shape":[2,3],"value":1},{"id":1,"op":"full","shape":[2],"value":1},{"id":2,"op":"add","a":0,"b":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 2, "b"},
		{"broadcast stretches a dimension that is not 1", graph(`{"id":0,"op":"full","shape":[3,1,5],"value":1},{"id":1,"op":"full","shape":[4,2],"value":1},{"id":2,"op":"div","a":0,"b":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 2, "b"},
		{"broadcast of both sides too big", graph(`{"id":0,"op":"full","shape":[5,1],"value":1},{"id":1,"op":"full","shape":[1,5],"value":1},{"id":2,"op":"maximum","a":0,"b":1}`, out0), small, ir.CodeLimitExceeded, 2, "shape"},
		{"broadcast storage", graph(`{"id":0,"op":"full","shape":[4,1],"value":1},{"id":1,"op":"full","shape":[1,4],"value":1},{"id":2,"op":"sub","a":0,"b":1}`, out0), ir.Limits{MaxStorageBytes: 100}, ir.CodeLimitExceeded, 2, "shape"},
		{"broadcast op to a non-suffix", graph(in3+`,{"id":1,"op":"broadcast","a":0,"shape":[3,2]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
		{"broadcast op to a lower rank", graph(`{"id":0,"op":"full","shape":[1,3],"value":1},{"id":1,"op":"broadcast","a":0,"shape":[3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
		{"broadcast op stretching a dimension that is not 1", graph(`{"id":0,"op":"full","shape":[2,1],"value":1},{"id":1,"op":"broadcast","a":0,"shape":[4,3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
		{"broadcast op without shape", graph(in3+`,{"id":1,"op":"broadcast","a":0}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
		{"reshape changes the count", graph(in3+`,{"id":1,"op":"reshape","a":0,"shape":[2,2]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
		{"axis out of range", graph(in23+`,{"id":1,"op":"sum","a":0,"axes":[2]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"negative axis out of range", graph(in23+`,{"id":1,"op":"max","a":0,"axes":[-3]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"duplicate axis", graph(in23+`,{"id":1,"op":"sum","a":0,"axes":[1,-1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"axes of a scalar", graph(`{"id":0,"op":"input","shape":[],"data":[1]},{"id":1,"op":"sum","a":0,"axes":[0]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"axes not integers", graph(in23+`,{"id":1,"op":"sum","a":0,"axes":[0.5]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"axes not a list", graph(in23+`,{"id":1,"op":"sum","a":0,"axes":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"more axes than the rank limit", graph(in23+`,{"id":1,"op":"sum","a":0,"axes":[0,1,0,1,0,1,0,1,0]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"keepdims not a boolean", graph(in23+`,{"id":1,"op":"sum","a":0,"keepdims":1}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "keepdims"},
		{"axes on a non-reduction", graph(in23+`,{"id":1,"op":"relu","a":0,"axes":[0]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "axes"},
		{"keepdims on a non-reduction", graph(in23+`,{"id":1,"op":"neg","a":0,"keepdims":true}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "keepdims"},
		{"shape on a reduction", graph(in23+`,{"id":1,"op":"sum","a":0,"shape":[2,1]}`, out0), ir.Limits{}, ir.CodeInvalidGraph, 1, "shape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ir.DecodeBytes([]byte(tt.doc), tt.limits)
			var e *ir.Error
			if !errors.As(err, &e) {
				t.Fatalf("got graph %v, error %v; want an *ir.Error", g, err)
			}
			got := struct {
				Code  ir.Code
				Node  int
				Field string
			}{e.Code, e.Node, e.Field}
			want := struct {
				Code  ir.Code
				Node  int
				Field string
			}{tt.code, tt.node, tt.field}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error %q (-want +got):\n%s", err, diff)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"scalar variants", graph(in3+`,{"id":1,"op":"sub","a":0,"scalar":0.1}`, `{"name":"y","id":1}`),
			"%0 = input (3 values) : [3]\n%1 = sub_scalar %0, 0.1 : [3]\nout \"y\" = %1\n"},
		{"rank-0 input and sum", graph(`{"id":0,"op":"input","shape":[],"data":[5]},{"id":1,"op":"sum","a":0}`, `{"name":"s","id":1}`),
			"%0 = input (1 values) : []\n%1 = sum %0 : []\nout \"s\" = %1\n"},
		{"float32 max", graph(`{"id":0,"op":"full","shape":[1],"value":3.4028235e38}`, out0),
			"%0 = full 3.4028235e+38 : [1]\nout \"y\" = %0\n"},
		{"rounds once to float32", graph(`{"id":0,"op":"full","shape":[1],"value":0.1}`, out0),
			"%0 = full 0.1 : [1]\nout \"y\" = %0\n"},
		// A broadcasting op becomes a broadcast node and the op; later wire
		// ids (here the output's 3 and node 3's a) map to shifted IR ids.
		{"names, params and a bias add", graph(`{"id":0,"op":"input","name":"x","shape":[2,3],"data":[1,2,3,4,5,6]},`+
			`{"id":1,"op":"input","name":"b","param":true,"shape":[3],"data":[1,2,3]},`+
			`{"id":2,"op":"add","a":0,"b":1},{"id":3,"op":"relu","a":2}`, `{"name":"y","id":3},{"name":"z","id":2}`),
			"%0 = input \"x\" (6 values) : [2,3]\n%1 = input \"b\" param (3 values) : [3]\n%2 = broadcast %1 : [2,3]\n" +
				"%3 = add %0, %2 : [2,3]\n%4 = relu %3 : [2,3]\nout \"y\" = %4\nout \"z\" = %3\n"},
		{"scalar tensor broadcast and param false", graph(in3+`,{"id":1,"op":"input","name":"s","param":false,"shape":[],"data":[2]},{"id":2,"op":"sub","a":0,"b":1}`, `{"name":"y","id":2}`),
			"%0 = input (3 values) : [3]\n%1 = input \"s\" (1 values) : []\n%2 = broadcast %1 : [3]\n%3 = sub %0, %2 : [3]\nout \"y\" = %3\n"},
		{"sum over axes", graph(in23+`,{"id":1,"op":"sum","a":0,"axes":[-1]},{"id":2,"op":"sum","a":0,"axes":[0],"keepdims":true},{"id":3,"op":"sum","a":0,"axes":[1,0]},{"id":4,"op":"sum","a":0,"keepdims":true}`, `{"name":"y","id":1},{"name":"z","id":4}`),
			"%0 = input (6 values) : [2,3]\n%1 = sum %0 : [2,1]\n%2 = reshape %1 : [2]\n%3 = sum %0 : [1,3]\n%4 = sum %0 : []\n%5 = sum %0 : [1,1]\nout \"y\" = %2\nout \"z\" = %5\n"},
		{"max over axes", graph(in23+`,{"id":1,"op":"max","a":0},{"id":2,"op":"max","a":0,"axes":[],"keepdims":false}`, `{"name":"y","id":1},{"name":"z","id":2}`),
			"%0 = input (6 values) : [2,3]\n%1 = max_reduce %0 : []\n%2 = max_reduce %0 : [2,3]\nout \"y\" = %1\nout \"z\" = %2\n"},
		{"view ops", graph(in3+`,{"id":1,"op":"broadcast","a":0,"shape":[2,3]},{"id":2,"op":"reshape","a":1,"shape":[3,2]}`, `{"name":"y","id":2}`),
			"%0 = input (3 values) : [3]\n%1 = broadcast %0 : [2,3]\n%2 = reshape %1 : [3,2]\nout \"y\" = %2\n"},
		// numpy's broadcasting: a, b or both broadcast, each by its own node.
		{"a broadcasts", graph(`{"id":0,"op":"full","shape":[3],"value":1},{"id":1,"op":"full","shape":[2,3],"value":2},{"id":2,"op":"mul","a":0,"b":1}`, `{"name":"y","id":2}`),
			"%0 = full 1 : [3]\n%1 = full 2 : [2,3]\n%2 = broadcast %0 : [2,3]\n%3 = mul %2, %1 : [2,3]\nout \"y\" = %3\n"},
		{"both broadcast", graph(`{"id":0,"op":"full","shape":[4,1],"value":1},{"id":1,"op":"full","shape":[1,5],"value":2},{"id":2,"op":"add","a":0,"b":1},{"id":3,"op":"relu","a":2}`, `{"name":"y","id":3}`),
			"%0 = full 1 : [4,1]\n%1 = full 2 : [1,5]\n%2 = broadcast %0 : [4,5]\n%3 = broadcast %1 : [4,5]\n%4 = add %2, %3 : [4,5]\n%5 = relu %4 : [4,5]\nout \"y\" = %5\n"},
		{"ranks 3 and 2", graph(`{"id":0,"op":"full","shape":[3,1,5],"value":1},{"id":1,"op":"full","shape":[4,1],"value":2},{"id":2,"op":"minimum","a":0,"b":1}`, `{"name":"y","id":2}`),
			"%0 = full 1 : [3,1,5]\n%1 = full 2 : [4,1]\n%2 = broadcast %0 : [3,4,5]\n%3 = broadcast %1 : [3,4,5]\n%4 = minimum %2, %3 : [3,4,5]\nout \"y\" = %4\n"},
		{"broadcast op of size-1 dimensions", graph(`{"id":0,"op":"full","shape":[3,1],"value":1},{"id":1,"op":"broadcast","a":0,"shape":[2,3,4]}`, `{"name":"y","id":1}`),
			"%0 = full 1 : [3,1]\n%1 = broadcast %0 : [2,3,4]\nout \"y\" = %1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ir.DecodeBytes([]byte(tt.doc), ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, g.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeRoundTrip checks Decode(Encode(g)) == g on every suite graph.
func TestEncodeRoundTrip(t *testing.T) {
	for _, c := range irtest.Suite() {
		t.Run(c.Name, func(t *testing.T) {
			doc := ir.Encode(c.Graph)
			g, err := ir.DecodeBytes(doc, ir.Limits{MaxStorageBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ir.Encode(g), doc) {
				t.Error("re-encoding differs")
			}
			if diff := cmp.Diff(c.Graph, g, cmp.Comparer(sameBits)); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeRoundTripTraining: names, params and the broadcast a
// broadcasting add decodes to survive Encode and Decode.
func TestEncodeRoundTripTraining(t *testing.T) {
	raw, err := os.ReadFile("../testdata/fixtures/mlp_train_public.graph.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ir.DecodeBytes(raw, ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ir.DecodeBytes(ir.Encode(g), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(g, back, cmp.Comparer(sameBits)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got := len(g.Params()); got != 4 {
		t.Errorf("%d params, want 4", got)
	}
}

func sameBits(a, b float32) bool { return a == b && (a != 0 || (1/a > 0) == (1/b > 0)) }

// FuzzDecode feeds arbitrary bytes to Decode, under the finite policy and
// under Limits.NonFinite: it must never panic, and any graph it accepts
// must validate and survive an encode/decode round trip to the same
// encoding, always valid JSON (±Inf and NaN spelled as strings).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(graph(`{"id":0,"op":"input","shape":[3],"data":[1,"-Infinity","NaN"]},{"id":1,"op":"add","a":0,"scalar":"Infinity"},{"id":2,"op":"full","dtype":"float16","shape":[1],"value":"-Infinity"}`, out0)))
	f.Add([]byte(seed))
	f.Add([]byte(graph(in3+`,{"id":1,"op":"sum","a":0}`, out0)))
	f.Add([]byte(graph(in23+`,{"id":1,"op":"sum","a":0,"axes":[-1,0],"keepdims":true},{"id":2,"op":"max","a":0,"axes":[1]}`, out0)))
	for _, c := range irtest.Suite()[:4] {
		f.Add(ir.Encode(c.Graph))
	}
	for seed := range 64 { // every op of the table (irtest.TestRandomOpsCoversTheTable)
		f.Add(ir.Encode(irtest.RandomOps(uint64(seed), 12)))
	}
	for _, c := range irtest.Typed() { // every dtype and typed row
		f.Add(ir.Encode(c.Graph))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, nf := range []bool{false, true} {
			g, err := ir.DecodeBytes(doc, ir.Limits{MaxGraphBytes: 1 << 16, NonFinite: nf})
			if err != nil {
				var e *ir.Error
				if !errors.As(err, &e) || e.Code == "" {
					t.Fatalf("error without a code: %v", err)
				}
				continue
			}
			if err := ir.Validate(g, ir.Limits{NonFinite: nf}); err != nil {
				t.Fatalf("accepted graph fails validation: %v", err)
			}
			raw := ir.Encode(g)
			if !json.Valid(raw) {
				t.Fatalf("Encode wrote invalid JSON: %.300s", raw)
			}
			back, err := ir.DecodeBytes(raw, ir.Limits{NonFinite: nf})
			if err != nil {
				t.Fatalf("round trip refused: %v", err)
			}
			if again := ir.Encode(back); !bytes.Equal(again, raw) {
				t.Fatalf("round trip changed the graph:\n%.300s\n%.300s", raw, again)
			}
		}
	})
}

func TestSetInput(t *testing.T) {
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{2}, []float32{1, 2})
	b.Output("y", x.Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("x", []float32{3, -4}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{3, -4}, g.Nodes[g.Input("x")].Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	nan := float32(math.NaN())
	for _, bad := range []struct {
		name string
		data []float32
	}{{"nope", []float32{1, 2}}, {"x", []float32{1}}, {"x", []float32{1, nan}}} {
		if err := g.SetInput(bad.name, bad.data); err == nil {
			t.Errorf("SetInput(%q, %v) accepted", bad.name, bad.data)
		}
	}
}
