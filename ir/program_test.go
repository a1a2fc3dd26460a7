package ir_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// matmulProgram is a valid one-kernel [2,3]×[3,4] matmul; tests break it.
func matmulProgram() *ir.Program {
	return &ir.Program{
		Buffers: []ir.Buffer{
			{Len: 6, Shape: ir.Shape{2, 3}, Input: true, Data: make([]float32, 6)},
			{Len: 12, Shape: ir.Shape{3, 4}, Input: true, Data: make([]float32, 12)},
			{Len: 8, Shape: ir.Shape{2, 4}},
		},
		Kernels: []ir.Kernel{{
			Name: "mm", Kind: ir.KernelMatmul, M: 2, K: 3, N: 4, Shape: ir.Shape{2, 4},
			Inputs:  []ir.Operand{{Buffer: 0, Shape: ir.Shape{2, 3}}, {Buffer: 1, Shape: ir.Shape{3, 4}}},
			Outputs: []int{2}, Body: []ir.Instr{{Kind: ir.InstrAcc}}, Stores: []int32{0},
		}},
		Outputs: []ir.ProgramOutput{{Name: "y", Shape: ir.Shape{2, 4}, Buffer: 2}},
	}
}

func TestValidateProgramRefuses(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(p *ir.Program)
		want    string
	}{
		{"valid", func(*ir.Program) {}, ""},
		{"matmul shape", func(p *ir.Program) { p.Kernels[0].N = 5 }, "matmul shape"},
		{"broadcast matmul operand", func(p *ir.Program) {
			p.Buffers[1] = ir.Buffer{Len: 4, Shape: ir.Shape{4}, Input: true, Data: make([]float32, 4)}
			p.Kernels[0].Inputs[1].Broadcast = 4
		}, "want a plain or transposed"},
		{"blocks on a matmul", func(p *ir.Program) { p.Kernels[0].Blocks = 2 }, "splits into 2 blocks"},
		{"reads unwritten", func(p *ir.Program) { p.Buffers[0].Input = false }, "before it is written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := matmulProgram()
			tt.corrupt(p)
			err := ir.ValidateProgram(p)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("valid program refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
