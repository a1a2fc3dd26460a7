package passes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestViewFusion counts the kernels of graphs with views inside
// elementwise regions, with the views pass and without it (the pipeline
// without sinking; reshapes of contiguous values join their producer's
// kernel either way), checks both against cpuref, and keeps the fused
// program as golden text (testdata/views/*.ir, -update rewrites them).
// Before this work, every case here but the last two took 2 kernels.
func TestViewFusion(t *testing.T) {
	tests := []struct {
		name          string
		build         func(b *ir.Builder)
		before, after int
	}{
		{"transpose-of-sum", func(b *ir.Builder) { // the example
			x := b.Input(ir.Shape{4, 5}, seq(20, 0.5))
			f := b.Full(ir.Shape{4, 5}, 1.5)
			b.Output("y", x.Add(f.Mul(f)).T())
		}, 2, 1},
		{"transpose-in-a-chain", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 5}, seq(20, 0.5))
			y := b.Input(ir.Shape{4, 5}, seq(20, 0.25))
			z := b.Input(ir.Shape{5, 4}, seq(20, 1))
			b.Output("y", x.Mul(y).Relu().T().Sub(z).MulScalar(3))
		}, 2, 1},
		{"reshape-consumer", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 6}, seq(24, 0.5))
			z := b.Input(ir.Shape{2, 12}, seq(24, 0.25))
			b.Output("y", x.Mul(x).AddScalar(1).Reshape(ir.Shape{2, 12}).Mul(z))
		}, 1, 1}, // sunk, or joined (see same in fuse.go)
		{"shared-value-reshape-joins", func(b *ir.Builder) { // h is stored and reshaped in one kernel
			x := b.Input(ir.Shape{4, 6}, seq(24, 0.5))
			z := b.Input(ir.Shape{3, 8}, seq(24, 0.25))
			h := x.Mul(x).AddScalar(1)
			b.Output("h", h)
			b.Output("y", h.Reshape(ir.Shape{3, 8}).Mul(z).Reshape(ir.Shape{24}).Relu())
		}, 1, 1},
		{"reshape-then-transpose", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 6}, seq(24, 0.5))
			y := b.Input(ir.Shape{4, 6}, seq(24, 0.75))
			c := b.Input(ir.Shape{4, 6}, seq(24, 1))
			b.Output("y", x.Sub(y).Reshape(ir.Shape{6, 4}).T().Add(c))
		}, 2, 1},
		{"sum-of-transpose", func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 7}, seq(21, 0.5))
			b.Output("s", x.Mul(x).T().Sum())
		}, 2, 1},
		{"broadcast-of-cheap-op", func(b *ir.Builder) {
			s := b.Input(ir.Shape{4, 1}, seq(4, 0.5))
			x := b.Input(ir.Shape{4, 8}, seq(32, 0.25))
			b.Output("y", x.Mul(s.Neg().AddScalar(1).Maximum(b.Input(ir.Shape{1, 8}, seq(8, 0.125)))))
		}, 2, 1},
		{"broadcast-of-costly-op-stays", func(b *ir.Builder) { // exp once per row, not per element
			s := b.Input(ir.Shape{4, 1}, seq(4, 0.5))
			x := b.Input(ir.Shape{4, 8}, seq(32, 0.25))
			b.Output("y", x.Mul(s.Exp()))
		}, 2, 2},
		{"shared-value-is-read-through-strides", func(b *ir.Builder) { // relu(x) is stored for h anyway
			x := b.Input(ir.Shape{3, 3}, seq(9, 1))
			h := x.Relu()
			b.Output("h", h)
			b.Output("y", h.T().MulScalar(2))
		}, 2, 2},
		{"unexpressible-reshape-stops", func(b *ir.Builder) { // sunk, it would copy x and y flattened; it joins
			x := b.Input(ir.Shape{4, 6}, seq(24, 0.5))
			y := b.Input(ir.Shape{4, 6}, seq(24, 0.25))
			c := b.Input(ir.Shape{24}, seq(24, 1))
			b.Output("y", x.T().Add(y.T()).Reshape(ir.Shape{24}).Add(c))
		}, 1, 1},
		{"matmul-epilogue-transposed", func(b *ir.Builder) {
			a := b.Input(ir.Shape{3, 4}, seq(12, 0.5))
			w := b.Input(ir.Shape{4, 5}, seq(20, 0.25))
			c := b.Input(ir.Shape{5, 3}, seq(15, 1))
			b.Output("y", a.MatMul(w).Relu().T().Add(c))
		}, 2, 2},
		{"lift-bias-through-head-split", func(b *ir.Builder) { // PyTorch's MultiheadAttention: the +0 bias joins the matmul (lift)
			x := b.Input(ir.Shape{6, 8}, seq(48, 0.5))
			w := b.Input(ir.Shape{8, 12}, seq(96, 0.25))
			h := x.MatMul(w).Reshape(ir.Shape{6, 3, 4}).Permute(1, 0, 2).Add(b.Full(ir.Shape{3, 6, 4}, 0))
			crop := func(i int) ir.Tensor { return h.Pad([]int{-i, 0, 0, i - 2, 0, 0}, ir.PadConstant, 0) }
			b.Output("q", crop(0).MulScalar(2))
			b.Output("k", crop(1).Relu())
			b.Output("v", crop(2).Neg())
		}, 5, 4},
		{"lift-bias-constant-through-head-split", func(b *ir.Builder) { // BERT's export: a bias of the projection's shape, both split alike
			x := b.Input(ir.Shape{6, 8}, seq(48, 0.5))
			w := b.Input(ir.Shape{8, 12}, seq(96, 0.25))
			c := b.Input(ir.Shape{6, 12}, seq(72, 0.125))
			split := func(t ir.Tensor) ir.Tensor { return t.Reshape(ir.Shape{6, 3, 4}).Permute(1, 0, 2) }
			h := split(x.MatMul(w)).Add(split(c))
			crop := func(i int) ir.Tensor { return h.Pad([]int{-i, 0, 0, i - 2, 0, 0}, ir.PadConstant, 0) }
			b.Output("q", crop(0).MulScalar(2))
			b.Output("k", crop(1).Relu())
			b.Output("v", crop(2).Neg())
		}, 5, 4},
		{"epilogue-stays-before-its-view", func(b *ir.Builder) { // the bias joins the matmul; the split reads it in place
			x := b.Input(ir.Shape{6, 8}, seq(48, 0.5))
			w := b.Input(ir.Shape{8, 12}, seq(96, 0.25))
			c := b.Input(ir.Shape{1, 6, 12}, seq(72, 0.125))
			h := x.MatMul(w).Reshape(ir.Shape{1, 6, 12}).Add(c).Reshape(ir.Shape{6, 3, 4}).Permute(1, 0, 2)
			crop := func(i int) ir.Tensor { return h.Pad([]int{-i, 0, 0, i - 2, 0, 0}, ir.PadConstant, 0) }
			b.Output("q", crop(0).MulScalar(2))
			b.Output("k", crop(1).Relu())
			b.Output("v", crop(2).Neg())
		}, 4, 4},
		{"lift-stays-under-a-view", func(b *ir.Builder) { // lifted, the output's transpose would be a copy, and the sum stored
			x := b.Input(ir.Shape{3, 4, 5}, seq(60, 0.5))
			b.Output("y", x.SumAxes(false, 2).T().MulScalar(0.5).Reshape(ir.Shape{12}))
		}, 2, 2},
		{"lift-stays-over-an-input", func(b *ir.Builder) { // no kernel to join: computed where it is read
			x := b.Input(ir.Shape{3, 4}, seq(12, 0.5))
			b.Output("y", x.T().AddScalar(1).Reshape(ir.Shape{12}))
		}, 1, 1},
		{"lift-stays-for-an-output", func(b *ir.Builder) { // lifted, the output would be a view to copy
			x := b.Input(ir.Shape{3, 4}, seq(12, 0.5))
			w := b.Input(ir.Shape{4, 2}, seq(8, 0.25))
			b.Output("y", x.MatMul(w).T().AddScalar(1))
		}, 2, 2},
		{"lift-under-a-consumer", func(b *ir.Builder) { // the add and the relu join the matmul; the mul reads them transposed
			x := b.Input(ir.Shape{3, 4}, seq(12, 0.5))
			w := b.Input(ir.Shape{4, 2}, seq(8, 0.25))
			c := b.Input(ir.Shape{2, 3}, seq(6, 0.75))
			b.Output("y", x.MatMul(w).T().AddScalar(1).Relu().Mul(c))
		}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := compile(t, tt.build, Options{})
			if got := len(p.Kernels); got != tt.after {
				t.Errorf("%d kernels, want %d:\n%s", got, tt.after, p)
			}
			saved := Pipeline
			Pipeline = without(Pipeline, "views")
			before := compile(t, tt.build, Options{})
			Pipeline = saved
			if got := len(before.Kernels); got != tt.before {
				t.Errorf("without the views pass: %d kernels, want %d:\n%s", got, tt.before, before)
			}
			compile(t, tt.build, Options{NoFuse: true})
			golden(t, "views/"+tt.name+".ir", fmt.Sprintf("# %d kernels (%d without the views pass)\n%s", tt.after, tt.before, p))
		})
	}
}

func without(ps []Pass, name string) []Pass {
	var out []Pass
	for _, p := range ps {
		if !strings.EqualFold(p.Name, name) {
			out = append(out, p)
		}
	}
	return out
}
