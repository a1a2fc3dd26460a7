package passes

import (
	"fmt"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// RowLeaves is the longest row (in leaves, padded to a power of two) that
// the rows pass keeps resident: a workgroup of 256 threads holds 16 leaves
// per thread, and C keeps each cached value of a row in a static array.
// Longer rows stay unfused, where the split pass can spread one row over
// many workgroups.
const RowLeaves = 4096

// fuseRows merges kernels of the fused program into rows kernels
// (ir.KernelRows) by the row rule (see the package doc): a kernel merges
// with a kernel that reads one of its outputs, or that reads a buffer it
// reads when both reduce over the same rows (siblings), when
//
//   - at least one of them is a reduction (a sum kernel, unsplit, or a
//     rows kernel) over trailing axes with at least two and at most
//     RowLeaves leaves per row, and if both are, over the same rows;
//   - the other is elementwise over the rows' leaves (per leaf) or over
//     the rows themselves (per row);
//   - every read of the first kernel's outputs by the second is the same
//     element (a per-leaf value at its leaf, a per-row value at its row),
//     or a per-row value broadcast back over its row's leaves;
//   - no third kernel depends on the first and is depended on by the
//     second (the kernels stay acyclic);
//   - the merged kernel binds at most Options.MaxBindings buffers.
//
// Outputs that only the merged kernels read become the rows kernel's
// scratch: its parts write them, it keeps them in registers.
func fuseRows(st *State) error {
	if st.Options.NoFuse {
		return nil
	}
	r := &rowser{p: st.Program, max: st.Options.MaxBindings, output: map[int]bool{}}
	for _, o := range r.p.Outputs {
		if o.Buffer >= 0 {
			r.output[o.Buffer] = true
		}
	}
	merged := false
	for r.step() {
		merged = true
	}
	if !merged {
		return nil
	}
	r.compact()
	for i := range r.p.Kernels {
		k := &r.p.Kernels[i]
		k.Name = kernelName(i, *k)
		for j := range k.Parts {
			k.Parts[j].Name = k.Name + "_part" + itoa(j)
		}
	}
	return nil
}

type rowser struct {
	p      *ir.Program
	max    int
	output map[int]bool // buffers that are program outputs
}

// rowsOf returns the rows that kernel k reduces over, when it is a
// reduction the rows rule accepts.
func rowsOf(k *ir.Kernel) (ir.Reduction, bool) {
	if k.Kind != ir.KernelReduce && k.Kind != ir.KernelRows || k.Blocks > 1 {
		return ir.Reduction{}, false
	}
	red := ir.ReductionOf(k.Shape, k.Keep)
	p := 1
	for p < red.Leaves {
		p *= 2
	}
	trailing := len(red.Reduced) == 1 && red.Reduced[0].Stride == 1 && len(red.Kept) <= 1
	return red, trailing && red.Leaves >= 2 && p <= RowLeaves
}

// shareInput reports whether kernels a and b read a buffer in common.
func shareInput(a, b *ir.Kernel) bool {
	for _, x := range a.Inputs {
		for _, y := range b.Inputs {
			if x.Buffer == y.Buffer {
				return true
			}
		}
	}
	return false
}

func sameRows(a, b ir.Reduction) bool {
	return a.Outputs == b.Outputs && a.Leaves == b.Leaves && slices.Equal(a.Kept, b.Kept) && slices.Equal(a.Reduced, b.Reduced)
}

// writers returns the kernel writing each buffer.
func (r *rowser) writers() map[int]int {
	w := map[int]int{}
	for i, k := range r.p.Kernels {
		for _, o := range k.Outputs {
			w[o] = i
		}
	}
	return w
}

// step makes one merge and reports whether it found one.
func (r *rowser) step() bool {
	w := r.writers()
	ks := r.p.Kernels
	// rows[i]: kernel i reduces over rows the rule accepts (rowsOf), asked
	// once a step, not once per pair in the sibling scan below.
	rows := make([]bool, len(ks))
	for i := range ks {
		_, rows[i] = rowsOf(&ks[i])
	}
	for b := range ks {
		var producers []int
		for _, in := range ks[b].Inputs {
			if a, ok := w[in.Buffer]; ok && !slices.Contains(producers, a) {
				producers = append(producers, a)
			}
		}
		slices.Sort(producers)
		// Then the siblings: earlier reductions over the same rows that read
		// a buffer b reads (a sum and a sum of squares, say).
		for a := b - 1; a >= 0 && rows[b]; a-- {
			if rows[a] && !slices.Contains(producers, a) && shareInput(&ks[a], &ks[b]) {
				producers = append([]int{a}, producers...)
			}
		}
		for i := len(producers) - 1; i >= 0; i-- { // the nearest first
			a := producers[i]
			m, ok := r.merge(a, b, w)
			if !ok {
				continue
			}
			rest := make([]ir.Kernel, 0, len(ks)-1)
			for i, k := range ks {
				switch i {
				case a:
				case b:
					rest = append(rest, m)
				default:
					rest = append(rest, k)
				}
			}
			// The merged kernel in b's place is most often already after
			// every kernel it reads from and before every reader, and then
			// kernelOrder would return rest as it is (see inOrder).
			if !inOrder(rest) {
				order, ok := kernelOrder(rest)
				if !ok {
					continue // cannot happen: acyclic checked
				}
				rest = order
			}
			r.p.Kernels = rest
			return true
		}
	}
	return false
}

// depends reports whether kernel b reads, directly or through kernels in
// between, a buffer kernel a writes, other than directly.
func (r *rowser) between(a, b int, w map[int]int) bool {
	reach := make([]bool, len(r.p.Kernels)) // kernels after a that depend on a
	reach[a] = true
	for x := a + 1; x < b; x++ {
		for _, in := range r.p.Kernels[x].Inputs {
			if y, ok := w[in.Buffer]; ok && reach[y] {
				reach[x] = true
			}
		}
	}
	for _, in := range r.p.Kernels[b].Inputs {
		if y, ok := w[in.Buffer]; ok && y != a && reach[y] {
			return true
		}
	}
	return false
}

// merge returns kernels a and b (a before b, b reading an output of a)
// as one rows kernel, when the rows rule allows.
// b need not read a: two reductions over the same rows merge as siblings.
func (r *rowser) merge(a, b int, w map[int]int) (ir.Kernel, bool) {
	ka, kb := &r.p.Kernels[a], &r.p.Kernels[b]
	ra, oka := rowsOf(ka)
	rb, okb := rowsOf(kb)
	var red ir.Reduction
	var shape, keep ir.Shape
	switch {
	case oka && okb:
		if !sameRows(ra, rb) {
			return ir.Kernel{}, false
		}
		red, shape, keep = ra, ka.Shape, ka.Keep
	case oka && kb.Kind == ir.KernelElementwise:
		red, shape, keep = ra, ka.Shape, ka.Keep
	case okb && ka.Kind == ir.KernelElementwise:
		red, shape, keep = rb, kb.Shape, kb.Keep
	default:
		return ir.Kernel{}, false
	}
	n, rows := red.Outputs*red.Leaves, red.Outputs
	for _, k := range []*ir.Kernel{ka, kb} {
		if l := k.Shape.Len(); k.Kind == ir.KernelElementwise && l != n && l != rows {
			return ir.Kernel{}, false
		}
	}
	if r.between(a, b, w) {
		return ir.Kernel{}, false
	}
	fa, fb := rowsForm(ka), rowsForm(kb)
	m := ir.Kernel{Kind: ir.KernelRows, Shape: shape, Keep: keep,
		Inputs: slices.Clone(fa.Inputs), Body: slices.Clone(fa.Body),
		Stores: slices.Clone(fa.Stores), Outputs: slices.Clone(fa.Outputs)}
	loads := map[string]int32{}
	for j, in := range m.Body {
		if in.Kind == ir.InstrLoad {
			loads[operandKey(m.Inputs[in.Operand])] = int32(j)
		}
	}
	stored := map[int]int32{}
	for s, o := range fa.Outputs {
		stored[o] = fa.Stores[s]
	}
	bcast := rowBroadcast(shape, keep)
	remap := make([]int32, len(fb.Body))
	for j, in := range fb.Body {
		switch in.Kind {
		case ir.InstrLoad:
			op := fb.Inputs[in.Operand]
			if v, ok := stored[op.Buffer]; ok {
				leaf, out := op.Shape.Len() == n, r.p.Buffers[op.Buffer].Len
				switch {
				case out == n && leaf && op.Plain(), out == rows && !leaf && op.Plain() && op.Shape.Len() == out,
					out == rows && leaf && sameMap(op, bcast):
					remap[j] = v
				default:
					return ir.Kernel{}, false
				}
				continue
			}
			key := operandKey(op)
			if v, ok := loads[key]; ok {
				remap[j] = v
				continue
			}
			m.Inputs = append(m.Inputs, op)
			in.Operand = len(m.Inputs) - 1
			loads[key] = int32(len(m.Body))
		case ir.InstrOp:
			for x := 0; x < in.Op.Info().Args; x++ {
				in.Args[x] = remap[in.Args[x]]
			}
		case ir.InstrAcc:
			in.Args[0] = remap[in.Args[0]]
		}
		remap[j] = int32(len(m.Body))
		m.Body = append(m.Body, in)
	}
	for s, o := range fb.Outputs {
		m.Stores = append(m.Stores, remap[fb.Stores[s]])
		m.Outputs = append(m.Outputs, o)
	}
	// Outputs only a and b read stay in registers.
	inside := func(x int) bool { return x == a || x == b }
	keepOut := func(o int) bool {
		if r.output[o] {
			return true
		}
		for x, k := range r.p.Kernels {
			if !inside(x) && slices.ContainsFunc(k.Inputs, func(in ir.Operand) bool { return in.Buffer == o }) {
				return true
			}
		}
		return false
	}
	var stores []int32
	var outs []int
	for s, o := range m.Outputs {
		if keepOut(o) {
			stores, outs = append(stores, m.Stores[s]), append(outs, o)
		}
	}
	m.Stores, m.Outputs = stores, outs
	m.Parts = append(parts(ka), parts(kb)...)
	m.Nodes = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ka.Nodes), kb.Nodes...))))
	deadValues(&m)
	// A rows kernel writes a per-row value once per row, so it cannot be
	// the value of an output with a leaf per element (a row's sum
	// broadcast back over the row as an output, say): that output keeps
	// its own kernel.
	row := m.RowValues()
	for s, o := range m.Outputs {
		if row[m.Stores[s]] && r.p.Buffers[o].Len != rows {
			return ir.Kernel{}, false
		}
	}
	if m.Bindings() > r.max || !slices.ContainsFunc(m.Body, func(in ir.Instr) bool { return in.Kind == ir.InstrAcc }) {
		return ir.Kernel{}, false
	}
	return m, true
}

// parts returns what a rows kernel made of k runs where rows kernels
// cannot: k's parts, or k itself.
func parts(k *ir.Kernel) []ir.Kernel {
	if k.Kind == ir.KernelRows {
		return slices.Clone(k.Parts)
	}
	return []ir.Kernel{*k}
}

// rowsForm returns k's body in the form of a rows kernel's: a sum
// kernel's reduction becomes an InstrAcc naming it and its argument, and
// Stores[0] stores that InstrAcc.
func rowsForm(k *ir.Kernel) ir.Kernel {
	f := *k
	f.Body, f.Stores = slices.Clone(k.Body), slices.Clone(k.Stores)
	if k.Kind != ir.KernelReduce {
		return f
	}
	acc := k.AccIndex()
	if acc < 0 {
		f.Body = append(f.Body, ir.Instr{Kind: ir.InstrAcc, Node: -1})
		acc = len(f.Body) - 1
	}
	f.Body[acc].Op, f.Body[acc].Args = k.Reduce, [2]int32{f.Stores[0]}
	f.Stores[0] = int32(acc)
	return f
}

// rowBroadcast returns the operand (buffer 0) that reads, at each element
// of shape, the element of its row in a row-major buffer of keep's shape.
func rowBroadcast(shape, keep ir.Shape) ir.Operand {
	op := ir.Operand{Shape: shape, Strides: make([]int, len(shape))}
	if len(keep) == len(shape) {
		rm := ir.RowMajor(keep)
		for d := range shape {
			if keep[d] != 1 {
				op.Strides[d] = rm[d]
			}
		}
	}
	return op
}

// sameMap reports whether operands x and y read the same buffer elements
// in the same order (whatever their buffers): equal coalesced forms.
func sameMap(x, y ir.Operand) bool {
	cx, cy := x.Coalesced(), y.Coalesced()
	return slices.Equal(cx.Shape, cy.Shape) && slices.Equal(cx.Strides, cy.Strides) && cx.Offset == cy.Offset
}

func operandKey(op ir.Operand) string { return fmt.Sprint(op.Buffer, op.Shape, op.Strides, op.Offset) }

// deadValues drops the body values no store needs, and the operands no
// load reads.
func deadValues(k *ir.Kernel) {
	live := make([]bool, len(k.Body))
	for _, s := range k.Stores {
		live[s] = true
	}
	for j := len(k.Body) - 1; j >= 0; j-- {
		in := k.Body[j]
		if !live[j] {
			continue
		}
		switch in.Kind {
		case ir.InstrOp:
			for a := 0; a < in.Op.Info().Args; a++ {
				live[in.Args[a]] = true
			}
		case ir.InstrAcc:
			live[in.Args[0]] = true
		}
	}
	remap := make([]int32, len(k.Body))
	opRemap := map[int]int{}
	var body []ir.Instr
	var inputs []ir.Operand
	for j, in := range k.Body {
		if !live[j] {
			continue
		}
		switch in.Kind {
		case ir.InstrLoad:
			if _, ok := opRemap[in.Operand]; !ok {
				opRemap[in.Operand] = len(inputs)
				inputs = append(inputs, k.Inputs[in.Operand])
			}
			in.Operand = opRemap[in.Operand]
		case ir.InstrOp:
			for a := 0; a < in.Op.Info().Args; a++ {
				in.Args[a] = remap[in.Args[a]]
			}
		case ir.InstrAcc:
			in.Args[0] = remap[in.Args[0]]
		}
		remap[j] = int32(len(body))
		body = append(body, in)
	}
	for s := range k.Stores {
		k.Stores[s] = remap[k.Stores[s]]
	}
	k.Body, k.Inputs = body, inputs
}

// compact drops the buffers no kernel writes any more (the rows kernels'
// registers) from the program, renumbering the rest, and makes them the
// scratch of the rows kernel whose parts write them.
func (r *rowser) compact() {
	p := r.p
	keep := make([]bool, len(p.Buffers))
	for i, b := range p.Buffers {
		keep[i] = b.Input
	}
	for _, k := range p.Kernels {
		for _, o := range k.Outputs {
			keep[o] = true
		}
	}
	at := make([]int, len(p.Buffers))
	var bufs []ir.Buffer
	for i, b := range p.Buffers {
		if keep[i] {
			at[i] = len(bufs)
			bufs = append(bufs, b)
		}
	}
	renumber := func(k *ir.Kernel, at func(int) int) {
		k.Inputs = slices.Clone(k.Inputs)
		for j := range k.Inputs {
			k.Inputs[j].Buffer = at(k.Inputs[j].Buffer)
		}
		k.Outputs = slices.Clone(k.Outputs)
		for j := range k.Outputs {
			k.Outputs[j] = at(k.Outputs[j])
		}
	}
	for i := range p.Kernels {
		k := &p.Kernels[i]
		if k.Kind == ir.KernelRows {
			scratch := map[int]int{}
			k.Scratch = nil
			for j := range k.Parts {
				for _, o := range k.Parts[j].Outputs {
					if !keep[o] {
						scratch[o] = -1 - len(k.Scratch)
						k.Scratch = append(k.Scratch, p.Buffers[o])
					}
				}
			}
			for j := range k.Parts {
				renumber(&k.Parts[j], func(b int) int {
					if s, ok := scratch[b]; ok {
						return s
					}
					return at[b]
				})
			}
		}
		renumber(k, func(b int) int { return at[b] })
	}
	for i := range p.Outputs {
		if b := p.Outputs[i].Buffer; b >= 0 {
			p.Outputs[i].Buffer = at[b]
		}
	}
	p.Buffers = bufs
}
