package ir_test

import (
	"errors"
	"strings"
	"testing"

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
