package ir_test

import (
	"errors"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestDecodeTyped: protocol v1's "dtype" on inputs, fulls, casts and
// comparisons; integer and boolean data; float16 data rounded once from
// the decimal; a where's "c"; and Encode writes it all back.
func TestDecodeTyped(t *testing.T) {
	doc := `{"version":1,"nodes":[
		{"id":0,"op":"input","dtype":"int64","shape":[3],"data":[9223372036854775807,-9223372036854775808,0]},
		{"id":1,"op":"full","dtype":"int64","shape":[3],"value":1},
		{"id":2,"op":"add","a":0,"b":1},
		{"id":3,"op":"input","dtype":"bool","shape":[3],"data":[true,false,true]},
		{"id":4,"op":"where","a":3,"b":2,"c":0},
		{"id":5,"op":"input","dtype":"float16","shape":[2],"data":[0.1,65519]},
		{"id":6,"op":"cast","a":5,"dtype":"int32"},
		{"id":7,"op":"input","shape":[2],"data":[1,2]},
		{"id":8,"op":"greater","a":7,"b":7,"dtype":"bool"},
		{"id":9,"op":"greater","a":7,"b":7}
	],"outputs":[{"name":"w","id":4},{"name":"c","id":6},{"name":"g","id":8},{"name":"g32","id":9}]}`
	g, err := ir.DecodeBytes([]byte(doc), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ir.DType{ir.I64, ir.I64, ir.I64, ir.Bool, ir.I64, ir.F16, ir.I32, ir.F32, ir.Bool, ir.F32}
	for i, w := range want {
		if g.Nodes[i].DType != w {
			t.Errorf("node %d (%v): dtype %v, want %v", i, g.Nodes[i].Op, g.Nodes[i].DType, w)
		}
	}
	if got := g.Nodes[0].Ints; got[0] != math.MaxInt64 || got[1] != math.MinInt64 {
		t.Errorf("int64 data %v", got)
	}
	if got := g.Nodes[5].Data; got[0] != ir.F16Float(0x2e66) || got[1] != 65504 {
		t.Errorf("float16 data %v, want [0.0999755859375 65504]", got)
	}
	back, err := ir.DecodeBytes(ir.Encode(g), ir.Limits{})
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, ir.Encode(g))
	}
	if string(ir.Encode(back)) != string(ir.Encode(g)) {
		t.Errorf("round trip changed the graph:\n%s\n%s", ir.Encode(g), ir.Encode(back))
	}

	bad := []struct{ name, nodes, field string }{
		{"unknown dtype", `{"id":0,"op":"input","dtype":"f16","shape":[1],"data":[1]}`, "dtype"},
		{"dtype after data", `{"id":0,"op":"input","shape":[1],"data":[1],"dtype":"int32"}`, "dtype"},
		{"a fraction for int32", `{"id":0,"op":"input","dtype":"int32","shape":[1],"data":[1.5]}`, "data"},
		{"a boolean for int32", `{"id":0,"op":"input","dtype":"int32","shape":[1],"data":[true]}`, "data"},
		{"a number for bool", `{"id":0,"op":"input","dtype":"bool","shape":[1],"data":[1]}`, "data"},
		{"uint8 of 256", `{"id":0,"op":"input","dtype":"uint8","shape":[1],"data":[256]}`, "data"},
		{"int64 beyond", `{"id":0,"op":"input","dtype":"int64","shape":[1],"data":[9223372036854775808]}`, "data"},
		{"a boolean for float32", `{"id":0,"op":"full","shape":[1],"value":true}`, "value"},
		{"float16 overflow", `{"id":0,"op":"input","dtype":"float16","shape":[1],"data":[65520]}`, "data"},
		{"neg saying int32 of float32", `{"id":0,"op":"input","shape":[1],"data":[1]},{"id":1,"op":"neg","a":0,"dtype":"int32"}`, "dtype"},
		{"c on add", `{"id":0,"op":"input","shape":[1],"data":[1]},{"id":1,"op":"add","a":0,"b":0,"c":0}`, "c"},
		{"where without c", `{"id":0,"op":"input","dtype":"bool","shape":[1],"data":[true]},{"id":1,"op":"where","a":0,"b":0}`, "c"},
		{"int32 plus float32", `{"id":0,"op":"input","dtype":"int32","shape":[1],"data":[1]},{"id":1,"op":"input","shape":[1],"data":[1]},{"id":2,"op":"add","a":0,"b":1}`, "b"},
	}
	for _, c := range bad {
		last := strings.Count(c.nodes, `"id"`) - 1
		_, err := ir.DecodeBytes([]byte(`{"version":1,"nodes":[`+c.nodes+`],"outputs":[{"name":"y","id":`+strconv.Itoa(last)+`}]}`), ir.Limits{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeInvalidGraph || e.Field != c.field {
			t.Errorf("%s: %v, want invalid_graph on field %q", c.name, err, c.field)
		}
	}
}

// TestRoundFloat64: a decimal reaches float16 and bfloat16 with one
// rounding: a value just above a midpoint, whose float32 rounding is the
// midpoint itself, rounds up, not to even.
func TestRoundFloat64(t *testing.T) {
	mid := 1 + 0x1p-11 // halfway between float16's 1 and 1+2^-10
	for _, c := range []struct {
		t    ir.DType
		x    float64
		want float32
	}{
		{ir.F16, mid, 1},
		{ir.F16, mid + 0x1p-40, 1 + 0x1p-10}, // float32 would tie it down to 1
		{ir.F16, mid - 0x1p-40, 1},
		{ir.BF16, 1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-7},
		{ir.F16, 0x1p-25 + 0x1p-60, 0x1p-24}, // above half the least subnormal
		{ir.F16, 0x1p-25, 0},
		{ir.F16, -0x1p-60, float32(math.Copysign(0, -1))},
		{ir.F32, 0.1, 0.1},
	} {
		if got := ir.RoundFloat64(c.t, c.x); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("RoundFloat64(%v, %v) = %v, want %v", c.t, c.x, got, c.want)
		}
	}
}

// TestProtocolDocDTypes: the dtype example of docs/protocol.md decodes and
// cpuref.EvalTyped gives the int64 result the page states.
func TestProtocolDocDTypes(t *testing.T) {
	raw, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(raw), "## Dtypes:")
	if !ok {
		t.Fatal("docs/protocol.md has no dtype section")
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```\n\ngives `y` of dtype `int64`: `\\[([-0-9, ]+)\\]`").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("the dtype section has no example graph with its stated result")
	}
	g, err := ir.DecodeBytes([]byte(m[1]), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	y := vals[g.Outputs[0].ID]
	var want []int64
	for _, f := range strings.Split(m[2], ", ") {
		v, _ := strconv.ParseInt(f, 10, 64)
		want = append(want, v)
	}
	if y.DType != ir.I64 || !slices.Equal(y.I, want) {
		t.Errorf("y = %v %v, the page says int64 %v", y.DType, y.I, want)
	}
}
