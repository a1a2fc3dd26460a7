package ir_test

import (
	"fmt"
	"reflect"
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
			Inputs:  []ir.Operand{ir.PlainOperand(0, ir.Shape{2, 3}), ir.PlainOperand(1, ir.Shape{3, 4})},
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
			p.Kernels[0].Inputs[1].Strides = []int{0, 1}
		}, "want a plain or transposed"},
		{"transposed matmul operand", func(p *ir.Program) {
			p.Buffers[1] = ir.Buffer{Len: 12, Shape: ir.Shape{4, 3}, Input: true, Data: make([]float32, 12)}
			p.Kernels[0].Inputs[1].Strides = []int{1, 3}
		}, ""},
		{"strides past the end", func(p *ir.Program) { p.Kernels[0].Inputs[1].Strides = []int{4, 2} }, "reaches past its end"},
		{"huge stride", func(p *ir.Program) { p.Kernels[0].Inputs[1].Strides = []int{1 << 62, 1} }, "reaches past its end"},
		{"negative stride", func(p *ir.Program) { p.Kernels[0].Inputs[1].Strides = []int{-4, 1} }, "want one ≥ 0"},
		{"strides of another rank", func(p *ir.Program) { p.Kernels[0].Inputs[1].Strides = []int{1} }, "want one ≥ 0"},
		{"3-D permuted matmul operand", func(p *ir.Program) {
			p.Kernels[0].Inputs[1].Shape, p.Kernels[0].Inputs[1].Strides = ir.Shape{3, 2, 2}, []int{1, 6, 3}
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

// TestKeyCoversEveryKernelField changes each field of a Kernel, found by
// reflection so that a new field cannot be forgotten, and checks that the
// program key changes, except for constant values, which the key leaves
// out on purpose (targets read them from a parameter block).
func TestKeyCoversEveryKernelField(t *testing.T) {
	sample := func() *ir.Program {
		return &ir.Program{Kernels: []ir.Kernel{{
			Name: "k", Kind: ir.KernelMatmul, Nodes: []ir.NodeID{3},
			Inputs:  []ir.Operand{{Buffer: 1, Shape: ir.Shape{2, 3}, Strides: []int{1, 2}}},
			Outputs: []int{4}, Shape: ir.Shape{5, 6},
			Body:   []ir.Instr{{Kind: ir.InstrOp, Op: ir.OpAdd, Args: [2]int32{1, 2}, Scalar: 1.5, Operand: 1, Node: 7}},
			Stores: []int32{0}, M: 1, K: 2, N: 3,
			Tile: ir.Tile{BM: 1, BN: 2, TM: 3, TN: 4, BK: 5, Vector: 6}, Blocks: 2,
		}}}
	}
	skip := map[string]bool{".Body[0].Scalar": true}
	base := string(sample().Key())
	var walk func(v reflect.Value, path string, at func(*ir.Program) reflect.Value)
	check := func(path string, at func(*ir.Program) reflect.Value, change func(reflect.Value)) {
		p := sample()
		change(at(p))
		if changed := string(p.Key()) != base; changed == skip[path] {
			t.Errorf("changing Kernel%s: key changed = %v, want %v", path, changed, !skip[path])
		}
	}
	walk = func(v reflect.Value, path string, at func(*ir.Program) reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				i := i
				walk(v.Field(i), path+"."+v.Type().Field(i).Name, func(p *ir.Program) reflect.Value { return at(p).Field(i) })
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice {
				check(path+"(len)", at, func(s reflect.Value) { s.Set(reflect.Append(s, reflect.Zero(s.Type().Elem()))) })
			}
			for j := 0; j < v.Len(); j++ {
				j := j
				walk(v.Index(j), fmt.Sprintf("%s[%d]", path, j), func(p *ir.Program) reflect.Value { return at(p).Index(j) })
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			check(path, at, func(x reflect.Value) { x.SetInt(x.Int() + 1) })
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			check(path, at, func(x reflect.Value) { x.SetUint(x.Uint() + 1) })
		case reflect.Bool:
			check(path, at, func(x reflect.Value) { x.SetBool(!x.Bool()) })
		case reflect.String:
			check(path, at, func(x reflect.Value) { x.SetString(x.String() + "x") })
		case reflect.Float32, reflect.Float64:
			check(path, at, func(x reflect.Value) { x.SetFloat(x.Float() + 1) })
		default:
			t.Errorf("Kernel%s: field of kind %v; teach this test to change it", path, v.Kind())
		}
	}
	walk(reflect.ValueOf(sample().Kernels[0]), "", func(p *ir.Program) reflect.Value { return reflect.ValueOf(&p.Kernels[0]).Elem() })
}

// TestValidateProgramRefusesBadKernels: the facts every code generator
// relies on are checked once, here.
func TestValidateProgramRefusesBadKernels(t *testing.T) {
	tests := []struct {
		name string
		p    *ir.Program
	}{
		{"non-elementwise op in body", &ir.Program{
			Buffers: []ir.Buffer{{Len: 1, Shape: ir.Shape{1}, Input: true, Data: []float32{1}}, {Len: 1, Shape: ir.Shape{1}}},
			Kernels: []ir.Kernel{{Name: "k", Kind: ir.KernelElementwise, Shape: ir.Shape{1},
				Inputs: []ir.Operand{ir.PlainOperand(0, ir.Shape{1})}, Outputs: []int{1},
				Body: []ir.Instr{{Kind: ir.InstrLoad}, {Kind: ir.InstrOp, Op: ir.OpMatmul}}, Stores: []int32{1}}},
		}},
		{"unknown kind", &ir.Program{
			Buffers: []ir.Buffer{{Len: 1, Shape: ir.Shape{1}}},
			Kernels: []ir.Kernel{{Name: "k", Kind: 99, Shape: ir.Shape{1}, Outputs: []int{0},
				Body: []ir.Instr{{Kind: ir.InstrConst}}, Stores: []int32{0}}},
		}},
		{"broadcast matmul operand", &ir.Program{
			Buffers: []ir.Buffer{{Len: 2, Shape: ir.Shape{2}, Input: true, Data: []float32{1, 2}},
				{Len: 4, Shape: ir.Shape{2, 2}, Input: true, Data: []float32{1, 2, 3, 4}}, {Len: 4, Shape: ir.Shape{2, 2}}},
			Kernels: []ir.Kernel{{Name: "k", Kind: ir.KernelMatmul, Shape: ir.Shape{2, 2}, M: 2, K: 2, N: 2,
				Inputs:  []ir.Operand{{Buffer: 0, Shape: ir.Shape{2, 2}, Strides: []int{0, 1}}, ir.PlainOperand(1, ir.Shape{2, 2})},
				Outputs: []int{2}, Body: []ir.Instr{{Kind: ir.InstrAcc}}, Stores: []int32{0}}},
		}},
		{"matmul operand shapes disagree with M, K, N", &ir.Program{
			Buffers: []ir.Buffer{{Len: 4, Shape: ir.Shape{2, 2}, Input: true, Data: make([]float32, 4)},
				{Len: 4, Shape: ir.Shape{2, 2}, Input: true, Data: make([]float32, 4)}, {Len: 4, Shape: ir.Shape{4, 1}}},
			Kernels: []ir.Kernel{{Name: "k", Kind: ir.KernelMatmul, Shape: ir.Shape{4, 1}, M: 4, K: 1, N: 1,
				Inputs:  []ir.Operand{ir.PlainOperand(0, ir.Shape{2, 2}), ir.PlainOperand(1, ir.Shape{2, 2})},
				Outputs: []int{2}, Body: []ir.Instr{{Kind: ir.InstrAcc}}, Stores: []int32{0}}},
		}},
		{"broadcast life operand", &ir.Program{
			Buffers: []ir.Buffer{{Len: 3, Shape: ir.Shape{3}, Input: true, Data: []float32{1, 0, 1}}, {Len: 6, Shape: ir.Shape{2, 3}}},
			Kernels: []ir.Kernel{{Name: "k", Kind: ir.KernelLife, Shape: ir.Shape{2, 3},
				Inputs: []ir.Operand{{Buffer: 0, Shape: ir.Shape{2, 3}, Strides: []int{0, 1}}}, Outputs: []int{1}}},
		}},
		{"sum blocks that do not divide the leaves", &ir.Program{
			Buffers: []ir.Buffer{{Len: 8, Shape: ir.Shape{8}, Input: true, Data: make([]float32, 8)}, {Len: 3, Shape: ir.Shape{3}}},
			Kernels: []ir.Kernel{{Name: "k", Kind: ir.KernelReduce, Reduce: ir.OpSum, Shape: ir.Shape{8}, Blocks: 3,
				Inputs: []ir.Operand{ir.PlainOperand(0, ir.Shape{8})}, Outputs: []int{1},
				Body: []ir.Instr{{Kind: ir.InstrLoad}}, Stores: []int32{0}}},
		}},
		{"invalid program", &ir.Program{
			Kernels: []ir.Kernel{{Name: "k", Outputs: []int{3}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := ir.ValidateProgram(tc.p); err == nil {
				t.Error("ValidateProgram accepted it")
			}
		})
	}
}
