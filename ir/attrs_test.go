package ir_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

// convDoc is a graph with one conv2d node whose attributes are the JSON
// members attrs (each with its leading comma).
func convDoc(attrs string) string {
	return graph(`{"id":0,"op":"input","shape":[1,2,5,5],"data":[`+strings.Repeat("1,", 49)+`1]},`+
		`{"id":1,"op":"input","shape":[4,1,3,3],"data":[`+strings.Repeat("1,", 35)+`1]},`+
		`{"id":2,"op":"conv2d","a":0,"b":1`+attrs+`}`, `{"name":"y","id":2}`)
}

// TestAttrsRoundTrip: attributes decode into Node.Attrs in the row's
// order with defaults filled in, print in the text form, and Encode
// writes every one, so that Decode(Encode(g)) is g and encodes the same.
func TestAttrsRoundTrip(t *testing.T) {
	g, err := ir.DecodeBytes([]byte(convDoc(`,"group":2,"pads":[1,0,2,1],"strides":[2,1]`)), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	n := g.Nodes[2]
	if diff := cmp.Diff([]int{2, 1, 1, 0, 2, 1, 1, 1, 2}, n.Attrs); diff != "" {
		t.Errorf("Attrs (-want +got):\n%s", diff)
	}
	if got := ir.OpConv2D.Attr(n.Attrs, "pads"); !cmp.Equal(got, []int{1, 0, 2, 1}) {
		t.Errorf("Attr(pads) = %v", got)
	}
	if diff := cmp.Diff(ir.Shape{1, 4, 3, 4}, n.Shape); diff != "" {
		t.Errorf("shape (-want +got):\n%s", diff)
	}
	text := "%2 = conv2d %0, %1 strides=[2,1] pads=[1,0,2,1] dilations=[1,1] group=2 : [1,4,3,4]\n"
	if !strings.Contains(g.String(), text) {
		t.Errorf("text form %q lacks %q", g.String(), text)
	}
	doc := ir.Encode(g)
	if !bytes.Contains(doc, []byte(`"strides":[2,1],"pads":[1,0,2,1],"dilations":[1,1],"group":2`)) {
		t.Errorf("encoding lacks the attributes: %s", doc)
	}
	h, err := ir.DecodeBytes(doc, ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(g, h, cmp.Comparer(sameBits)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !bytes.Equal(ir.Encode(h), doc) {
		t.Error("re-encoding differs")
	}
	d, err := ir.DecodeBytes([]byte(convDoc(`,"group":2`)), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 1, 0, 0, 0, 0, 1, 1, 2}, d.Nodes[2].Attrs); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestAttrsRefused: a malformed, misplaced or out-of-range attribute is
// refused with a stable code naming the node and the attribute.
func TestAttrsRefused(t *testing.T) {
	relu := graph(in3+`,{"id":1,"op":"relu","a":0,"strides":[1,1]}`, `{"name":"y","id":1}`)
	tests := []struct {
		name   string
		doc    string
		limits ir.Limits
		code   ir.Code
		node   int
		field  string
	}{
		{"on an op without it", relu, ir.Limits{}, ir.CodeInvalidGraph, 1, "strides"},
		{"list for an integer", convDoc(`,"group":[1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "group"},
		{"integer for a list", convDoc(`,"strides":2`), ir.Limits{}, ir.CodeInvalidGraph, 2, "strides"},
		{"too few values", convDoc(`,"pads":[1,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "pads"},
		{"too many values", convDoc(`,"strides":[1,1,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "strides"},
		{"not an integer", convDoc(`,"strides":[1.5,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "strides"},
		{"exponent", convDoc(`,"group":1e0`), ir.Limits{}, ir.CodeInvalidGraph, 2, "group"},
		{"string", convDoc(`,"group":"1"`), ir.Limits{}, ir.CodeInvalidGraph, 2, "group"},
		{"null", convDoc(`,"pads":null`), ir.Limits{}, ir.CodeInvalidGraph, 2, "pads"},
		{"beyond 2^31", convDoc(`,"strides":[2147483648,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "strides"},
		{"beyond int64", convDoc(`,"strides":[99999999999999999999,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "strides"},
		{"zero stride", convDoc(`,"strides":[0,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "strides"},
		{"negative pad", convDoc(`,"pads":[0,-1,0,0]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "pads"},
		{"zero dilation", convDoc(`,"dilations":[1,0]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "dilations"},
		{"group not dividing", convDoc(`,"group":3`), ir.Limits{}, ir.CodeInvalidGraph, 2, "group"},
		{"group 0", convDoc(`,"group":0`), ir.Limits{}, ir.CodeInvalidGraph, 2, "group"},
		{"channels per group", convDoc(`,"group":1`), ir.Limits{}, ir.CodeInvalidGraph, 2, "b"},
		{"kernel past the input", convDoc(`,"group":2,"dilations":[3,1]`), ir.Limits{}, ir.CodeInvalidGraph, 2, "b"},
		{"repeated key", convDoc(`,"group":2,"group":2`), ir.Limits{}, ir.CodeInvalidGraph, -1, ""},
		{"list over the limit", convDoc(`,"group":2,"pads":[0,0,0,0]`), ir.Limits{MaxAttrValues: 3}, ir.CodeLimitExceeded, 2, "pads"},
		{"flood", convDoc(`,"pads":[` + strings.Repeat("0,", 1<<16) + `0]`), ir.Limits{}, ir.CodeLimitExceeded, 2, "pads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ir.DecodeBytes([]byte(tt.doc), tt.limits)
			var e *ir.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *ir.Error", err)
			}
			type where struct {
				Code  ir.Code
				Node  int
				Field string
			}
			if diff := cmp.Diff(where{tt.code, tt.node, tt.field}, where{e.Code, e.Node, e.Field}); diff != "" {
				t.Errorf("error %q (-want +got):\n%s", err, diff)
			}
		})
	}
}

// TestAttrsValidate: Validate holds a graph built in Go to the same
// layout: attributes on an op without any, a conv2d's values cut short or
// left over, or over the host's limit are refused.
func TestAttrsValidate(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1, 1, 3, 3}, make([]float32, 9))
	w := b.Input(ir.Shape{1, 1, 2, 2}, make([]float32, 4))
	b.Output("y", x.Conv2D(w, nil))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		edit  func(g *ir.Graph)
		code  ir.Code
		field string
	}{
		{"attrs on an input", func(g *ir.Graph) { g.Nodes[0].Attrs = []int{1} }, ir.CodeInvalidGraph, "attrs"},
		{"cut short", func(g *ir.Graph) { g.Nodes[2].Attrs = g.Nodes[2].Attrs[:5] }, ir.CodeInvalidGraph, "pads"},
		{"none", func(g *ir.Graph) { g.Nodes[2].Attrs = nil }, ir.CodeInvalidGraph, "strides"},
		{"left over", func(g *ir.Graph) { g.Nodes[2].Attrs = append(g.Nodes[2].Attrs, 7) }, ir.CodeInvalidGraph, "attrs"},
		{"zero stride", func(g *ir.Graph) { g.Nodes[2].Attrs[0] = 0 }, ir.CodeInvalidGraph, "strides"},
		{"shape", func(g *ir.Graph) { g.Nodes[2].Attrs[2] = 1 }, ir.CodeInvalidGraph, "shape"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := g.Clone()
			tt.edit(h)
			err := ir.Validate(h, ir.Limits{})
			var e *ir.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Errorf("Validate: %v, want %s on field %q", err, tt.code, tt.field)
			}
		})
	}
	if err := ir.Validate(g, ir.Limits{MaxAttrValues: 8}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("9 attribute values under a limit of 8: %v", err)
	}
}

// TestPackAttrs: PackAttrs fills defaults and refuses unknown names,
// wrong lengths and missing required attributes.
func TestPackAttrs(t *testing.T) {
	got, err := ir.PackAttrs(ir.OpConv2D, map[string][]int{"dilations": {2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 1, 0, 0, 0, 0, 2, 3, 1}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, vals := range []map[string][]int{{"axis": {1}}, {"strides": {1}}, {"group": {1, 2}}} {
		if _, err := ir.PackAttrs(ir.OpConv2D, vals); err == nil {
			t.Errorf("PackAttrs(conv2d, %v) accepted", vals)
		}
	}
	if _, err := ir.PackAttrs(ir.OpRelu, map[string][]int{"group": {1}}); err == nil {
		t.Error("an attribute of relu accepted")
	}
	if a, err := ir.PackAttrs(ir.OpRelu, nil); err != nil || a != nil {
		t.Errorf("PackAttrs(relu) = %v, %v; want nil, nil", a, err)
	}
}
