package ir

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeInputNames: an unnamed input is named after its wire id, also
// when the lowering of broadcasts and reductions moved its node; a name
// that is also another input's default name is refused at the node that
// makes the collision, whichever comes first.
func TestDecodeInputNames(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want map[string]NodeID // input name -> IR node (unnamed: its id is the wire id)
		node int               // refused: the node and field "name"
	}{
		{"after a broadcast", `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2,3],"data":[1,2,3,4,5,6]},{"id":1,"op":"input","shape":[3],"data":[1,2,3]},
			{"id":2,"op":"add","a":0,"b":1},{"id":3,"op":"input","shape":[2,3],"data":[1,2,3,4,5,6]},{"id":4,"op":"mul","a":2,"b":3}],"outputs":[{"name":"y","id":4}]}`,
			map[string]NodeID{"input0": 0, "input1": 1, "input3": 4}, 0},
		{"after a reduction without keepdims", `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2,3],"data":[1,2,3,4,5,6]},{"id":1,"op":"sum","a":0,"axes":[1]},
			{"id":2,"op":"input","shape":[2],"data":[1,2]},{"id":3,"op":"sub","a":1,"b":2}],"outputs":[{"name":"y","id":3}]}`,
			map[string]NodeID{"input0": 0, "input2": 3}, 0},
		{"a name like a default of an op's id", `{"version":1,"nodes":[{"id":0,"op":"input","name":"input1","shape":[2],"data":[10,20]},{"id":1,"op":"neg","a":0}],"outputs":[{"name":"y","id":1}]}`,
			map[string]NodeID{"input1": 0}, 0},
		{"its own default name", `{"version":1,"nodes":[{"id":0,"op":"input","name":"input0","shape":[2],"data":[10,20]},{"id":1,"op":"neg","a":0}],"outputs":[{"name":"y","id":1}]}`,
			map[string]NodeID{"input0": 0}, 0},
		// The graph: "input1" on node 0 and an unnamed node 1.
		{"named first", `{"version":1,"nodes":[{"id":0,"op":"input","name":"input1","shape":[2],"data":[10,20]},{"id":1,"op":"input","shape":[2],"data":[1,2]},
			{"id":2,"op":"sub","a":0,"b":1}],"outputs":[{"name":"d","id":2}]}`, nil, 1},
		{"unnamed first", `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[10,20]},{"id":1,"op":"input","name":"input0","shape":[2],"data":[1,2]},
			{"id":2,"op":"sub","a":0,"b":1}],"outputs":[{"name":"d","id":2}]}`, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := DecodeBytes([]byte(tt.doc), Limits{})
			if tt.want == nil {
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeInvalidGraph || e.Node != tt.node || e.Field != "name" {
					t.Fatalf("got %v, want invalid_graph at node %d, field name", err, tt.node)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]NodeID{}
			for i, n := range g.Nodes {
				if n.Op != OpInput {
					continue
				}
				name := n.Name
				if name == "" {
					name = DefaultInputName(i)
				}
				got[name] = NodeID(i)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("input names (-want +got):\n%s", diff)
			}
			// The names survive a round trip through Encode.
			back, err := DecodeBytes(Encode(g), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(g, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateDefaultNames: in a graph built in Go, an input named like
// an unnamed input's default name is refused, before or after it.
func TestValidateDefaultNames(t *testing.T) {
	for _, tt := range []struct {
		name  string
		nodes []Node
		node  int // -1: valid
	}{
		{"named before", []Node{{Op: OpInput, Shape: Shape{1}, Data: []float32{1}, Name: "input1"}, {Op: OpInput, Shape: Shape{1}, Data: []float32{2}}}, 0},
		{"named after", []Node{{Op: OpInput, Shape: Shape{1}, Data: []float32{1}}, {Op: OpInput, Shape: Shape{1}, Data: []float32{2}, Name: "input0"}}, 1},
		{"own default", []Node{{Op: OpInput, Shape: Shape{1}, Data: []float32{1}, Name: "input0"}, {Op: OpInput, Shape: Shape{1}, Data: []float32{2}}}, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &Graph{Nodes: append(tt.nodes, Node{Op: OpAdd, Args: []NodeID{0, 1}, Shape: Shape{1}}), Outputs: []Output{{Name: "y", ID: 2}}}
			err := Validate(g, Limits{})
			var e *Error
			switch {
			case tt.node < 0 && err != nil:
				t.Errorf("refused: %v", err)
			case tt.node >= 0 && (!errors.As(err, &e) || e.Code != CodeInvalidGraph || e.Node != tt.node || e.Field != "name"):
				t.Errorf("got %v, want invalid_graph at node %d, field name", err, tt.node)
			}
		})
	}
}
