package ir_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestEncodeNonFinite: a graph with non-finite values (built in Go under
// Limits.NonFinite) encodes to valid JSON, each ±Inf or NaN spelled as the
// string "Infinity", "-Infinity" or "NaN" (a result's spelling) in input
// data of each float dtype, a full value and an op's scalar; Decode reads
// it back to the same graph under Limits.NonFinite, every NaN as the quiet
// NaN 0x7fc00000, and refuses it under the finite policy (invalid_graph,
// naming the policy). Encode wrote bare NaN, +Inf and -Inf, which is not
// JSON. A float64 input's values are written as decimals, not the bits it
// is carried in, and Decode refuses the dtype.
func TestEncodeNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negNaN := math.Float32frombits(0xffc00001)
	for _, v := range []float32{nan, negNaN, inf, -inf} {
		for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
			b := ir.NewBuilder()
			x := b.TypedInput("x", dt, ir.Shape{4}, []float32{1, dt.Round(v), float32(math.Copysign(0, -1)), 0.5}, nil)
			c := b.Full(ir.Shape{4}, v)
			b.Output("y", x.Cast(ir.F32).Add(c).AddScalar(v))
			g, err := b.Build(ir.Limits{NonFinite: true})
			if err != nil {
				t.Fatal(err)
			}
			raw := ir.Encode(g)
			if !json.Valid(raw) {
				t.Fatalf("%v %v: not JSON: %s", v, dt, raw)
			}
			spelling := map[bool]string{true: `"NaN"`, false: `"Infinity"`}[v != v]
			if v < 0 && v == v {
				spelling = `"-Infinity"`
			}
			if strings.Count(string(raw), spelling) != 3 {
				t.Errorf("%v %v: want %s in the data, the full value and the scalar: %s", v, dt, spelling, raw)
			}
			back, err := ir.Decode(bytes.NewReader(raw), ir.Limits{NonFinite: true})
			if err != nil {
				t.Fatalf("%v %v: %v\n%s", v, dt, err, raw)
			}
			want := canonical(g)
			if !reflect.DeepEqual(bitsOf(back), bitsOf(want)) {
				t.Errorf("%v %v: the graph read back differs:\n%s\n%s", v, dt, ir.Encode(back), raw)
			}
			_, err = ir.Decode(bytes.NewReader(raw), ir.Limits{})
			if e := wantCode(t, err, ir.CodeInvalidGraph); !strings.Contains(e.Msg, "finite policy") {
				t.Errorf("%v %v: under the finite policy: %v", v, dt, err)
			}
		}
	}
	// Strings that spell no number stay refused, under either policy.
	for _, doc := range []string{
		`{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":["nan"]}],"outputs":[{"name":"y","id":0}]}`,
		`{"version":1,"nodes":[{"id":0,"op":"full","shape":[1],"value":"inf"}],"outputs":[{"name":"y","id":0}]}`,
		`{"version":1,"nodes":[{"id":0,"op":"input","dtype":"int32","shape":[1],"data":["NaN"]}],"outputs":[{"name":"y","id":0}]}`,
		`{"version":1,"nodes":[{"id":0,"op":"input","dtype":"bool","shape":[1],"data":["Infinity"]}],"outputs":[{"name":"y","id":0}]}`,
	} {
		for _, nf := range []bool{false, true} {
			_, err := ir.Decode(strings.NewReader(doc), ir.Limits{NonFinite: nf})
			wantCode(t, err, ir.CodeInvalidGraph)
		}
	}
	// float64: its values, never its carrier's bits.
	b := ir.NewBuilder()
	b.Output("y", b.TypedInput("x", ir.F64, ir.Shape{3}, nil, []int64{ir.F64Bits(1.5), ir.F64Bits(-0.1), ir.F64Bits(math.Inf(-1))}))
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	raw := ir.Encode(g)
	if !json.Valid(raw) || !strings.Contains(string(raw), `"data":[1.5,-0.1,"-Infinity"]`) {
		t.Errorf("float64: %s", raw)
	}
	_, err = ir.Decode(bytes.NewReader(raw), ir.Limits{NonFinite: true})
	wantCode(t, err, ir.CodeUnsupported)
}

// canonical is g with every NaN the quiet NaN 0x7fc00000, as Decode reads
// "NaN".
func canonical(g *ir.Graph) *ir.Graph {
	c := g.Clone()
	q := math.Float32frombits(0x7fc00000)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Scalar != n.Scalar {
			n.Scalar = q
		}
		for k, v := range n.Data {
			if v != v {
				n.Data[k] = q
			}
		}
	}
	return c
}

// bitsOf is g's nodes with every float as its bits, so that NaN, -0 and
// +0 compare as values do not.
func bitsOf(g *ir.Graph) []any {
	var out []any
	for _, n := range g.Nodes {
		d := make([]uint32, len(n.Data))
		for k, v := range n.Data {
			d[k] = math.Float32bits(v)
		}
		out = append(out, n.Op, n.DType, []int(n.Shape), n.Args, n.Name, math.Float32bits(n.Scalar), d, n.Ints)
	}
	return append(out, g.Outputs)
}
