package wgsl

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestMatmulInputElem: a lean matmul binds an operand as vec4s only where
// every vec4 it reads starts at a multiple of four elements and its
// epilogue reads none of it; any other kernel, tile or operand stays f32.
func TestMatmulInputElem(t *testing.T) {
	lean := ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileLean}
	kernel := func(tile ir.Tile, a ir.Operand) *ir.Kernel {
		return &ir.Kernel{Kind: ir.KernelMatmul, M: 8, K: 8, N: 8, Tile: tile,
			Inputs: []ir.Operand{a, ir.PlainOperand(1, ir.Shape{3, 8, 8})}}
	}
	plain := ir.PlainOperand(0, ir.Shape{3, 8, 8})
	for _, c := range []struct {
		name string
		k    *ir.Kernel
		i    int
		want string
	}{
		{"plain", kernel(lean, plain), 0, "vec4<f32>"},
		{"B", kernel(lean, plain), 1, "vec4<f32>"},
		{"transposed", kernel(lean, ir.Operand{Shape: ir.Shape{3, 8, 8}, Strides: []int{64, 1, 8}}), 0, "vec4<f32>"},
		{"broadcast batch", kernel(lean, ir.Operand{Shape: ir.Shape{3, 8, 8}, Strides: []int{0, 8, 1}}), 0, "vec4<f32>"},
		{"offset 2", kernel(lean, ir.Operand{Shape: ir.Shape{3, 8, 8}, Strides: []int{64, 8, 1}, Offset: 2}), 0, ""},
		{"batch stride 66", kernel(lean, ir.Operand{Shape: ir.Shape{3, 8, 8}, Strides: []int{66, 8, 1}}), 0, ""},
		{"batch stride 66 of one", kernel(lean, ir.Operand{Shape: ir.Shape{1, 8, 8}, Strides: []int{66, 8, 1}}), 0, "vec4<f32>"},
		{"s2", kernel(ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2}, plain), 0, ""},
		{"w alone", kernel(ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileWarp}, plain), 0, ""},
		{"an epilogue input", kernel(lean, plain), 2, ""},
	} {
		if got := matmulInputElem(c.k, c.i); got != c.want {
			t.Errorf("%s: input %d bound as %q, want %q", c.name, c.i, got, c.want)
		}
	}
	k := kernel(lean, plain)
	k.Body = []ir.Instr{{Kind: ir.InstrLoad, Operand: 0}}
	if got := matmulInputElem(k, 0); got != "" {
		t.Errorf("an operand the epilogue reads: bound as %q", got)
	}
}
