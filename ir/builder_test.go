package ir_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

// TestBuilderMisuse: the zero Tensor and tensors of another builder give
// an invalid_graph error at Build, never a nil-pointer panic or a graph
// whose output points at the wrong node.
func TestBuilderMisuse(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *ir.Builder)
		msg   string
	}{
		{"zero tensor as output", func(b *ir.Builder) {
			var z ir.Tensor
			b.Output("y", z)
		}, "zero Tensor"},
		{"op on the zero tensor", func(b *ir.Builder) {
			var z ir.Tensor
			b.Output("y", z.Relu().MulScalar(2).Sum().T().Broadcast(ir.Shape{2}).Reshape(ir.Shape{2}))
		}, "zero Tensor"},
		{"zero tensor as b", func(b *ir.Builder) {
			x := b.Input(ir.Shape{2}, []float32{1, 2})
			var z ir.Tensor
			b.Output("y", x.Add(z))
		}, "zero Tensor"},
		{"zero tensor as a", func(b *ir.Builder) {
			x := b.Input(ir.Shape{2}, []float32{1, 2})
			var z ir.Tensor
			b.Output("y", z.Mul(x))
		}, "zero Tensor"},
		{"output from another builder", func(b *ir.Builder) {
			b.Input(ir.Shape{2}, []float32{1, 2})
			other := ir.NewBuilder()
			b.Output("y", other.Input(ir.Shape{1}, []float32{7}))
		}, "another builder"},
		{"operand from another builder", func(b *ir.Builder) {
			x := b.Input(ir.Shape{1}, []float32{1})
			b.Output("y", x.Add(ir.NewBuilder().Input(ir.Shape{1}, []float32{7})))
		}, "another builder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ir.NewBuilder()
			tt.build(b)
			g, err := b.Build(ir.DefaultLimits())
			if !errors.Is(err, ir.ErrInvalidGraph) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Build = %v, %v; want invalid_graph mentioning %q", g, err, tt.msg)
			}
		})
	}
	var z ir.Tensor
	if z.Shape() != nil || z.ID() != -1 {
		t.Errorf("zero Tensor: Shape %v, ID %d; want nil, -1", z.Shape(), z.ID())
	}
}

// TestBuilderBroadcasts: binary ops broadcast both operands by numpy's
// rule, each through its own broadcast node, exactly as Decode lowers the
// same wire graph; shapes that do not broadcast are refused, naming b.
func TestBuilderBroadcasts(t *testing.T) {
	tests := []struct {
		name   string
		a, b   ir.Shape
		want   ir.Shape
		nodes  int // broadcast nodes added
		refuse bool
	}{
		{"bias row", ir.Shape{4, 16}, ir.Shape{16}, ir.Shape{4, 16}, 1, false},
		{"a broadcasts", ir.Shape{16}, ir.Shape{4, 16}, ir.Shape{4, 16}, 1, false},
		{"column times row", ir.Shape{4, 1}, ir.Shape{1, 5}, ir.Shape{4, 5}, 2, false},
		{"ranks 3 and 2", ir.Shape{3, 1, 5}, ir.Shape{4, 1}, ir.Shape{3, 4, 5}, 2, false},
		{"scalar", ir.Shape{}, ir.Shape{2, 3}, ir.Shape{2, 3}, 1, false},
		{"equal", ir.Shape{2, 3}, ir.Shape{2, 3}, ir.Shape{2, 3}, 0, false},
		{"size-1 to size-1", ir.Shape{1}, ir.Shape{1, 1}, ir.Shape{1, 1}, 1, false},
		{"mismatch", ir.Shape{4, 16}, ir.Shape{4}, nil, 0, true},
		{"inner mismatch", ir.Shape{3, 1, 5}, ir.Shape{4, 2}, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMaximum, ir.OpMinimum} {
				b := ir.NewBuilder()
				x := b.Input(tt.a, make([]float32, tt.a.Len()))
				y := b.Input(tt.b, make([]float32, tt.b.Len()))
				z := x.Apply(op, y)
				b.Output("z", z)
				g, err := b.Build(ir.DefaultLimits())
				if tt.refuse {
					var e *ir.Error
					if !errors.As(err, &e) || e.Code != ir.CodeInvalidGraph || e.Field != "b" || !strings.Contains(e.Msg, "do not broadcast") {
						t.Fatalf("%v: Build = %v; want invalid_graph on b saying the shapes do not broadcast", op, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%v: %v", op, err)
				}
				if got := z.Shape(); !got.Equal(tt.want) {
					t.Errorf("%v: shape %v, want %v", op, got, tt.want)
				}
				if n := len(g.Nodes) - 3; n != tt.nodes {
					t.Errorf("%v: %d broadcast nodes, want %d:\n%s", op, n, tt.nodes, g)
				}
				// Decode lowers the wire form to the same graph.
				wire := fmt.Sprintf(`{"version":1,"nodes":[{"id":0,"op":"input","shape":%s,"data":%s},{"id":1,"op":"input","shape":%s,"data":%s},{"id":2,"op":%q,"a":0,"b":1}],"outputs":[{"name":"z","id":2}]}`,
					jsonInts(tt.a), jsonInts(make(ir.Shape, tt.a.Len())), jsonInts(tt.b), jsonInts(make(ir.Shape, tt.b.Len())), op.Info().Wire)
				d, err := ir.DecodeBytes([]byte(wire), ir.DefaultLimits())
				if err != nil {
					t.Fatalf("%v: decode: %v", op, err)
				}
				if d.String() != g.String() {
					t.Errorf("%v: Decode gives\n%s\nthe Builder\n%s", op, d, g)
				}
			}
		})
	}
}

func jsonInts(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestReduceAxes: SumAxes and MaxAxes give numpy's result shapes through
// the keepdims IR form, and refuse bad axes with invalid_graph on "axes".
func TestReduceAxes(t *testing.T) {
	tests := []struct {
		axes      []int
		keep      bool
		want      ir.Shape
		reduction ir.Shape // the reduction node's target
	}{
		{nil, false, ir.Shape{}, ir.Shape{}},
		{nil, true, ir.Shape{1, 1, 1}, ir.Shape{1, 1, 1}},
		{[]int{0}, false, ir.Shape{3, 4}, ir.Shape{1, 3, 4}},
		{[]int{-1}, true, ir.Shape{2, 3, 1}, ir.Shape{2, 3, 1}},
		{[]int{2, 0}, false, ir.Shape{3}, ir.Shape{1, 3, 1}},
		{[]int{0, 1, 2}, false, ir.Shape{}, ir.Shape{}},
	}
	for _, tt := range tests {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{2, 3, 4}, make([]float32, 24))
		for k, r := range []ir.Tensor{x.SumAxes(tt.keep, tt.axes...), x.MaxAxes(tt.keep, tt.axes...)} {
			if !r.Shape().Equal(tt.want) {
				t.Errorf("axes %v keepdims %v: shape %v, want %v", tt.axes, tt.keep, r.Shape(), tt.want)
			}
			b.Output([]string{"sum", "max"}[k], r)
		}
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Nodes[1].Shape; !got.Equal(tt.reduction) {
			t.Errorf("axes %v keepdims %v: reduction target %v, want %v", tt.axes, tt.keep, got, tt.reduction)
		}
	}
	for _, axes := range [][]int{{3}, {-4}, {1, 1}, {0, -3}} {
		b := ir.NewBuilder()
		b.Output("s", b.Input(ir.Shape{2, 3, 4}, make([]float32, 24)).SumAxes(false, axes...))
		_, err := b.Build(ir.Limits{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeInvalidGraph || e.Field != "axes" {
			t.Errorf("axes %v: error %v, want invalid_graph on axes", axes, err)
		}
	}
}

// TestReductionOf: dimensions of size 1 drop out and contiguous ones merge.
func TestReductionOf(t *testing.T) {
	tests := []struct {
		arg, keep ir.Shape
		want      ir.Reduction
	}{
		{ir.Shape{3, 4}, ir.Shape{3, 1}, ir.Reduction{Outputs: 3, Leaves: 4, Kept: []ir.Dim{{3, 4}}, Reduced: []ir.Dim{{4, 1}}}},
		{ir.Shape{3, 4}, nil, ir.Reduction{Outputs: 1, Leaves: 12, Reduced: []ir.Dim{{12, 1}}}},
		{ir.Shape{2, 3, 4, 5}, ir.Shape{1, 3, 4, 1}, ir.Reduction{Outputs: 12, Leaves: 10, Kept: []ir.Dim{{12, 5}}, Reduced: []ir.Dim{{2, 60}, {5, 1}}}},
		{ir.Shape{2, 1, 4}, ir.Shape{2, 1, 1}, ir.Reduction{Outputs: 2, Leaves: 4, Kept: []ir.Dim{{2, 4}}, Reduced: []ir.Dim{{4, 1}}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ir.ReductionOf(tt.arg, tt.keep)); diff != "" {
			t.Errorf("%v to %v (-want +got):\n%s", tt.arg, tt.keep, diff)
		}
	}
}

// TestBuilderMaxNodes: SetMaxNodes stops the builder when it would hold
// one node more, with Validate's limit_exceeded error (Limit MaxNodes,
// the node it refused), which Build returns; the broadcast a binary op
// inserts counts as a node; n ≤ 0 bounds nothing.
func TestBuilderMaxNodes(t *testing.T) {
	build := func(n int) (*ir.Graph, error) {
		b := ir.NewBuilder()
		b.SetMaxNodes(n)
		x := b.Input(ir.Shape{2, 3}, make([]float32, 6))
		y := b.Input(ir.Shape{3}, make([]float32, 3))
		b.Output("z", x.Add(y).Relu()) // inputs, broadcast, add, relu: 5 nodes
		return b.Build(ir.Limits{})
	}
	for _, n := range []int{-1, 0, 5, 6} {
		if g, err := build(n); err != nil || len(g.Nodes) != 5 {
			t.Errorf("SetMaxNodes(%d): %v; want the graph of 5 nodes", n, err)
		}
	}
	for n := 1; n < 5; n++ {
		_, err := build(n)
		var ie *ir.Error
		if !errors.As(err, &ie) || ie.Code != ir.CodeLimitExceeded || ie.Limit != "MaxNodes" || ie.Node != n {
			t.Errorf("SetMaxNodes(%d): %#v; want limit_exceeded of MaxNodes at node %d", n, err, n)
		}
	}
}
