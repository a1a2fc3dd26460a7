package passes

import "github.com/gpucc/gpucc/ir"

// Sum splitting: a sum over P (padded) leaves becomes a kernel reducing
// P/SumBlockLeaves aligned blocks of SumBlockLeaves leaves each, one per
// workgroup, and a second sum over those block values. Both are subtrees
// of cpuref's one tree, so the result is the same bits, and the first
// kernel runs on many workgroups instead of one.
const (
	SumBlockLeaves = 4096    // leaves per block: 16 per thread of a 256-thread workgroup
	SumSplitMin    = 1 << 16 // sums over fewer elements stay one kernel
)

// split applies sum splitting when Options.SplitSums is set.
func split(st *State) error {
	if !st.Options.SplitSums {
		return nil
	}
	p := st.Program
	var out []ir.Kernel
	for _, k := range p.Kernels {
		n := k.Shape.Len()
		if k.Kind != ir.KernelSum || k.Blocks > 1 || n < SumSplitMin {
			out = append(out, k)
			continue
		}
		leaves := 1
		for leaves < n {
			leaves *= 2
		}
		blocks := leaves / SumBlockLeaves
		final := k.Outputs[0]
		p.Buffers = append(p.Buffers, ir.Buffer{Len: blocks, Shape: ir.Shape{blocks}, Node: p.Buffers[final].Node})
		partial := len(p.Buffers) - 1
		k.Blocks, k.Outputs = blocks, []int{partial}
		out = append(out, k, ir.Kernel{
			Name:    k.Name + "_final",
			Kind:    ir.KernelSum,
			Nodes:   k.Nodes,
			Inputs:  []ir.Operand{ir.PlainOperand(partial, ir.Shape{blocks})},
			Outputs: []int{final},
			Shape:   ir.Shape{blocks},
			Body:    []ir.Instr{{Kind: ir.InstrLoad, Operand: 0, Node: -1}},
			Stores:  []int32{0},
		})
	}
	p.Kernels = out
	return nil
}
