package passes

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// Sum splitting: a reduction (sum or max) over P (padded) leaves per
// output becomes a kernel reducing P/SumBlockLeaves aligned blocks of
// SumBlockLeaves leaves each, one per workgroup, and a second reduction
// over each output's block values. Both are subtrees of cpuref's one tree
// per output, so the result is the same bits, and the first kernel runs on
// many workgroups instead of one per output.
const (
	SumBlockLeaves = 4096    // leaves per block: 16 per thread of a 256-thread workgroup
	SumSplitMin    = 1 << 16 // sums over fewer elements stay one kernel
)

// split applies sum splitting, and attention's (splitAttention), when
// Options.SplitSums is set.
func split(st *State) error {
	if !st.Options.SplitSums {
		return nil
	}
	p := st.Program
	var out []ir.Kernel
	for _, k := range p.Kernels {
		if parts, combine, ok := splitAttention(p, k); ok {
			out = append(out, parts, combine)
			continue
		}
		if k.Kind != ir.KernelReduce || k.Blocks > 1 || k.Shape.Len()/k.Keep.Len() < SumSplitMin {
			out = append(out, k)
			continue
		}
		n, outs := k.Shape.Len()/k.Keep.Len(), k.Keep.Len()
		leaves := 1
		for leaves < n {
			leaves *= 2
		}
		blocks := leaves / SumBlockLeaves
		final := k.Outputs[0]
		// The partials of output o are its row of [outs, blocks].
		shape, keep := ir.Shape{blocks}, ir.Shape(nil)
		if outs > 1 {
			shape, keep = ir.Shape{outs, blocks}, ir.Shape{outs, 1}
		}
		p.Buffers = append(p.Buffers, ir.Buffer{Len: outs * blocks, Shape: shape, Node: p.Buffers[final].Node})
		partial := len(p.Buffers) - 1
		fin := ir.Kernel{
			Name:    k.Name + "_final",
			Kind:    ir.KernelReduce,
			Nodes:   k.Nodes,
			Inputs:  []ir.Operand{ir.PlainOperand(partial, shape)},
			Outputs: []int{final},
			Shape:   shape,
			Body:    []ir.Instr{{Kind: ir.InstrLoad, Operand: 0, Node: -1}},
			Stores:  []int32{0},
			Reduce:  k.Reduce,
			Keep:    keep,
		}
		if acc := k.AccIndex(); acc >= 0 { // the epilogue moves to the final kernel
			fin.Body, fin.Stores, fin.Outputs, fin.Inputs = moveEpilogue(&k, acc, fin.Inputs[0], final)
			k.Body = k.Body[:acc]
		}
		k.Blocks, k.Outputs, k.Stores = blocks, []int{partial}, k.Stores[:1]
		out = append(out, k, fin)
	}
	p.Kernels = out
	return nil
}

// Attention splitting: an attention in the split order (ir.AttentionSplit
// set, its keys cut into Attention.Parts parts; see ir/attention.go)
// becomes a kernel of the parts alone (Blocks = P: one part of one row
// tile a workgroup, each writing its undivided o, m and l) and a combine
// kernel (ir.KernelAttentionCombine) that runs the order's combine, the
// division and the epilogue. Both are the order's own steps, so the bits
// are the same as one kernel's, and where the query rows are few (one
// head of 2048 rows is 128 workgroups of 16 rows on a GPU of 132 cores)
// the parts run on P times the workgroups instead of side by side in one.
func splitAttention(p *ir.Program, k ir.Kernel) (parts, combine ir.Kernel, ok bool) {
	if k.Kind != ir.KernelAttention || k.Blocks > 1 {
		return k, k, false
	}
	a := ir.AttentionKernel(&k)
	acc := k.AccIndex()
	fixed := k.K // q, k, v, and the mask where there is one
	if a.Chunk == 0 || acc < 0 || len(k.Inputs) < fixed {
		return k, k, false
	}
	shape := a.PartsShape()
	p.Buffers = append(p.Buffers, ir.Buffer{Len: shape.Len(), Shape: shape, Node: p.Buffers[k.Outputs[0]].Node})
	buf := len(p.Buffers) - 1
	combine = ir.Kernel{
		Name:    k.Name + "_combine",
		Kind:    ir.KernelAttentionCombine,
		Nodes:   k.Nodes,
		Inputs:  []ir.Operand{ir.PlainOperand(buf, shape)},
		Outputs: k.Outputs,
		Shape:   k.Shape,
		Body:    slices.Clone(k.Body),
		Stores:  k.Stores,
	}
	// The epilogue's loads, renumbered after the parts: whatever operand
	// they read (q itself, for a residual), once each.
	operand := map[int]int{}
	for j := range combine.Body {
		if combine.Body[j].Kind == ir.InstrLoad {
			combine.Inputs = moveLoad(&combine.Body[j], k.Inputs, combine.Inputs, operand)
		}
	}
	parts = k
	parts.Inputs, parts.Outputs, parts.Shape, parts.Blocks = k.Inputs[:fixed:fixed], []int{buf}, shape, a.Parts()
	parts.Body, parts.Stores = []ir.Instr{k.Body[acc]}, []int32{0}
	return parts, combine, true
}

// moveEpilogue returns the body, stores, outputs and operands of a final
// reduction kernel that reads its partials as operand 0 and then runs k's
// epilogue (from the InstrAcc at acc), renumbered.
func moveEpilogue(k *ir.Kernel, acc int, partials ir.Operand, final int) ([]ir.Instr, []int32, []int, []ir.Operand) {
	body := []ir.Instr{{Kind: ir.InstrLoad, Operand: 0, Node: -1}}
	inputs := []ir.Operand{partials}
	operand := map[int]int{}
	shift := func(j int32) int32 { return j - int32(acc) + 1 }
	for _, in := range k.Body[acc:] {
		switch in.Kind {
		case ir.InstrAcc:
			in.Args[0] = 0
		case ir.InstrLoad:
			inputs = moveLoad(&in, k.Inputs, inputs, operand)
		case ir.InstrOp:
			for a := 0; a < in.Op.Info().Args; a++ {
				in.Args[a] = shift(in.Args[a])
			}
		}
		body = append(body, in)
	}
	stores := []int32{0}
	for _, s := range k.Stores[1:] {
		stores = append(stores, shift(s))
	}
	return body, stores, append([]int{final}, k.Outputs[1:]...), inputs
}

// moveLoad renumbers load in, which reads operand in.Operand of from, to
// that operand's place in inputs (operand maps from's indexes to it),
// appending it the first time it is read; it returns inputs.
func moveLoad(in *ir.Instr, from, inputs []ir.Operand, operand map[int]int) []ir.Operand {
	j, ok := operand[in.Operand]
	if !ok {
		j = len(inputs)
		operand[in.Operand] = j
		inputs = append(inputs, from[in.Operand])
	}
	in.Operand = j
	return inputs
}
