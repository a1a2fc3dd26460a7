package passes

import (
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// unit is a group, or a piece of a split group, that becomes one kernel.
type unit struct {
	kind  ir.KernelKind
	nodes []ir.NodeID
}

type builder struct {
	*fuser
	p       *ir.Program
	bufOf   map[ir.NodeID]int
	units   []unit
	madeFor map[ir.NodeID]bool // nodes that already have a materialising unit
}

// build turns the groups into a Program.
func (f *fuser) build() (*ir.Program, error) {
	b := &builder{fuser: f, p: &ir.Program{}, bufOf: map[ir.NodeID]int{}, madeFor: map[ir.NodeID]bool{}}
	for _, g := range f.groups {
		if !g.dead {
			b.units = append(b.units, b.split(g)...)
		}
	}
	for _, o := range f.g.Outputs {
		out := ir.ProgramOutput{Name: o.Name, Shape: f.g.Nodes[o.ID].Shape, Buffer: -1}
		r := f.resolve(o.ID)
		switch {
		case f.g.Nodes[r.base].Op == ir.OpFull:
			out.Const = f.g.Nodes[r.base].Scalar
		case f.whole(r): // the base's buffer, perhaps under another shape (reshape)
			if f.mixed(r) {
				b.materialise(r.base)
			}
			out.Buffer = b.buffer(r.base)
		default:
			b.materialise(o.ID)
			out.Buffer = b.buffer(o.ID)
		}
		b.p.Outputs = append(b.p.Outputs, out)
	}
	var kernels []ir.Kernel
	for i := 0; i < len(b.units); i++ { // units may grow while building
		kernels = append(kernels, b.kernel(b.units[i]))
	}
	order, ok := kernelOrder(kernels)
	if !ok {
		return nil, f.errorf("fuse: kernels depend on each other in a cycle")
	}
	for i, k := range order {
		k.Name = kernelName(i, k)
		b.p.Kernels = append(b.p.Kernels, k)
	}
	return b.p, nil
}

// materialise adds a unit that writes node v (a full or a view) to its own
// buffer, once.
func (b *builder) materialise(v ir.NodeID) {
	if !b.madeFor[v] {
		b.madeFor[v] = true
		b.units = append(b.units, unit{kind: ir.KernelElementwise, nodes: []ir.NodeID{v}})
	}
}

// buffer returns the buffer holding node v, creating it on first use.
func (b *builder) buffer(v ir.NodeID) int {
	if id, ok := b.bufOf[v]; ok {
		return id
	}
	n := &b.g.Nodes[v]
	buf := ir.Buffer{Len: n.Shape.Len(), Shape: n.Shape, Node: b.st.Origin[v]}
	if n.Op == ir.OpInput {
		buf.Input, buf.Data = true, n.Data
	}
	b.p.Buffers = append(b.p.Buffers, buf)
	b.bufOf[v] = len(b.p.Buffers) - 1
	return b.bufOf[v]
}

// operand returns the buffer operand through which a matmul or life
// kernel reads node v: plain or transposed, materialising a mixed view
// chain's inner node, or v itself when it is a full or those kernels
// cannot read it in place (they index rows and columns themselves: a
// broadcast, say).
func (b *builder) operand(v ir.NodeID, kind ir.KernelKind) ir.Operand {
	r := b.resolve(v)
	if !b.inPlace(r, v, kind) {
		b.materialise(v)
		return ir.PlainOperand(b.buffer(v), b.g.Nodes[v].Shape)
	}
	if b.mixed(r) {
		b.materialise(r.base)
	}
	return b.fuser.operand(r, b.buffer(r.base))
}

// load returns the operand through which the body of a kernel of kind
// reads node v (any view), materialising a mixed view chain's inner node,
// or v itself where v is a slice (an offset) that kind does not take; or
// false when v is a full: a constant, not a load.
func (b *builder) load(v ir.NodeID, kind ir.KernelKind) (ir.Operand, bool) {
	r := b.resolve(v)
	if b.g.Nodes[r.base].Op == ir.OpFull {
		return ir.Operand{}, false
	}
	if r.offset != 0 && !kind.Info().Offsets {
		b.materialise(v)
		return ir.PlainOperand(b.buffer(v), b.g.Nodes[v].Shape), true
	}
	if b.mixed(r) {
		b.materialise(r.base)
	}
	return b.fuser.operand(r, b.buffer(r.base)), true
}

// readKey identifies the buffer read through which member m reads node v,
// for counting bindings: reads of one key share a binding. ok is false
// when the read is a constant.
func (b *builder) readKey(m, v ir.NodeID) (key viewKey, ok bool) {
	r := b.resolve(v)
	if kind := b.g.Nodes[m].Op.Info().Kernel; accumulates(kind) || kind == ir.KernelLife {
		if !b.inPlace(r, v, kind) {
			return view{base: v}.key(), true // materialised as v
		}
		return r.key(), true
	}
	return r.key(), b.g.Nodes[r.base].Op != ir.OpFull
}

// split cuts a group whose kernel would bind more than MaxBindings buffers
// into consecutive pieces that each fit. A piece is closed as soon as the
// next member would not fit; since its later members are then outside it,
// its count is exact when it closes.
func (b *builder) split(g *group) []unit {
	max := b.st.Options.MaxBindings
	if b.cost(g.nodes) <= max {
		return []unit{{kind: g.kind, nodes: g.nodes}}
	}
	var units []unit
	var cur []ir.NodeID
	flush := func() {
		kind := ir.KernelElementwise
		if g.root >= 0 && slices.Contains(cur, g.root) {
			kind = g.kind
		}
		units = append(units, unit{kind: kind, nodes: cur})
		cur = nil
	}
	for _, v := range g.nodes {
		if len(cur) > 0 && b.cost(append(slices.Clone(cur), v)) > max {
			flush()
		}
		cur = append(cur, v)
	}
	flush()
	return units
}

// cost counts the buffers a kernel over members would bind.
func (b *builder) cost(members []ir.NodeID) int {
	loads := map[viewKey]bool{}
	n := 0
	for _, m := range members {
		for _, a := range b.g.Nodes[m].Args {
			if slices.Contains(members, b.same(a)) {
				continue
			}
			if key, ok := b.readKey(m, a); ok {
				loads[key] = true
			}
		}
		if b.g.Nodes[m].Op.IsElementwise() || accumulates(b.g.Nodes[m].Op.Info().Kernel) {
			if b.stored(m, members) {
				n++
			}
		} else if b.g.Nodes[m].Op.IsReduction() || b.g.Nodes[m].Op == ir.OpLife {
			n++
		}
	}
	return n + len(loads)
}

// kernel builds the kernel of one unit.
func (b *builder) kernel(u unit) ir.Kernel {
	k := ir.Kernel{Kind: u.kind}
	vals := map[ir.NodeID]int32{}
	consts := map[uint32]int32{}
	loads := map[string]int32{} // one load per operand
	emit := func(in ir.Instr) int32 {
		k.Body = append(k.Body, in)
		return int32(len(k.Body) - 1)
	}
	value := func(v ir.NodeID) int32 { // the body value of node v, loading it if outside
		if m := b.same(v); slices.Contains(u.nodes, m) { // v itself, or a reshape of m
			if i, ok := vals[m]; ok {
				return i
			}
		}
		op, ok := b.load(v, u.kind)
		if !ok {
			s := b.g.Nodes[b.resolve(v).base].Scalar
			bits := math.Float32bits(s)
			if i, ok := consts[bits]; ok {
				return i
			}
			consts[bits] = emit(ir.Instr{Kind: ir.InstrConst, Scalar: s, Node: -1})
			return consts[bits]
		}
		key := fmt.Sprint(op.Buffer, op.Shape, op.Strides, op.Offset)
		if i, ok := loads[key]; ok {
			return i
		}
		k.Inputs = append(k.Inputs, op)
		loads[key] = emit(ir.Instr{Kind: ir.InstrLoad, Operand: len(k.Inputs) - 1, Node: -1})
		return loads[key]
	}
	store := func(v ir.NodeID, val int32) {
		k.Stores = append(k.Stores, val)
		k.Outputs = append(k.Outputs, b.buffer(v))
	}
	members := u.nodes
	epilogue := func(m ir.NodeID) bool { // a reduction unit's members after its root
		return u.kind == ir.KernelReduce && !b.prologue[m] && !b.g.Nodes[m].Op.IsReduction()
	}
	if u.kind == ir.KernelReduce {
		// The prologue, the reduction, then the epilogue (whose members may
		// come earlier in node order: they do not depend on each other).
		members = slices.Clone(u.nodes)
		rank := func(m ir.NodeID) int {
			switch {
			case b.prologue[m]:
				return 0
			case epilogue(m):
				return 2
			}
			return 1
		}
		slices.SortStableFunc(members, func(x, y ir.NodeID) int { return rank(x) - rank(y) })
	}
	if accumulates(u.kind) {
		// The matmul (conv) goes first so that its operands are Inputs[0]
		// and [1]; members before it in node order do not depend on it.
		members = slices.Clone(u.nodes)
		root := func(v ir.NodeID) int { return b1(accumulates(b.g.Nodes[v].Op.Info().Kernel)) }
		slices.SortStableFunc(members, func(x, y ir.NodeID) int { return root(y) - root(x) })
	}
	for _, m := range members {
		n := &b.g.Nodes[m]
		k.Nodes = append(k.Nodes, b.st.Origin[m])
		if n.Op.IsReduction() {
			k.Shape, k.Reduce = b.g.Nodes[n.Args[0]].Shape, n.Op
			if n.Shape.Len() > 1 { // else one output: the whole-tensor reduction
				k.Keep = n.Shape
			}
			leaf := value(n.Args[0])
			store(m, leaf)
			if slices.ContainsFunc(members, epilogue) {
				// The epilogue reads per output: its own loads and constants.
				vals[m] = emit(ir.Instr{Kind: ir.InstrAcc, Args: [2]int32{leaf}, Node: b.st.Origin[m]})
				clear(loads)
				clear(consts)
			}
			continue
		}
		switch {
		case n.Op == ir.OpFull || n.IsView(): // materialising units
			k.Shape = n.Shape
			vals[m] = value(m)
		case n.Op == ir.OpMatmul:
			a, r := b.g.Nodes[n.Args[0]].Shape, len(n.Shape)
			k.M, k.K, k.N = n.Shape[r-2], a[len(a)-1], n.Shape[r-1]
			// Both operands get the result's batch dimensions (stride 0
			// where broadcast), so every target indexes them alike.
			batch := n.Shape[:r-2]
			k.Inputs = append(k.Inputs, b.operand(n.Args[0], ir.KernelMatmul).BroadcastTo(append(slices.Clone(batch), k.M, k.K)),
				b.operand(n.Args[1], ir.KernelMatmul).BroadcastTo(append(slices.Clone(batch), k.K, k.N)))
			k.Shape = n.Shape
			vals[m] = emit(ir.Instr{Kind: ir.InstrAcc, Node: b.st.Origin[m]})
		case n.Op == ir.OpLife:
			k.Shape = n.Shape
			k.Inputs = append(k.Inputs, b.operand(n.Args[0], ir.KernelLife))
			k.Outputs = append(k.Outputs, b.buffer(m))
			continue
		default:
			if kind := n.Op.Info().Kernel; accumulates(kind) {
				// conv2d, pooling, resize, pad, …: every argument an
				// operand in place, the node's attributes, and the
				// accumulator (ir.KernelInfo.Accumulates).
				args := n.Args
				if n.Op == ir.OpAttention && b.negZero(args[3]) { // no mask: t + -0 is t
					args = args[:3]
				}
				for _, a := range args {
					k.Inputs = append(k.Inputs, b.operand(a, kind))
				}
				k.Shape, k.Attrs = n.Shape, slices.Clone(n.Attrs)
				if n.Op == ir.OpAttention {
					k.K = len(args) // its own operands, the epilogue's after them (ir.Kernel.Masked)
				}
				if k.K == 4 && n.Op == ir.OpAttention { // the mask read as the scores
					k.Inputs[3] = k.Inputs[3].BroadcastTo(ir.AttentionOf(b.argShapes(n), n.Attrs).Scores())
				}
				vals[m] = emit(ir.Instr{Kind: ir.InstrAcc, Node: b.st.Origin[m]})
				break
			}
			if k.Shape == nil {
				k.Shape = n.Shape
			}
			in := ir.Instr{Kind: ir.InstrOp, Op: n.Op, Scalar: n.Scalar, Node: b.st.Origin[m]}
			for j, a := range n.Args {
				in.Args[j] = value(a)
			}
			vals[m] = emit(in)
		}
		if (u.kind != ir.KernelReduce || epilogue(m)) && (b.stored(m, u.nodes) || n.Op == ir.OpFull || n.IsView()) {
			store(m, vals[m])
		}
	}
	slices.Sort(k.Nodes)
	return k
}

// kernelOrder sorts kernels so that each runs after the kernels writing the
// buffers it reads, keeping the build order among independent kernels: it
// takes, each time, the first kernel in ks whose inputs' writers have all
// been taken. It reports false where none can be (a cycle, or a kernel
// reading what it writes).
//
// A heap of the ready kernels' indexes gives that order in O(E log n);
// rescanning ks for the first ready kernel after each one taken was
// O(n²·inputs), and fuseRows orders the program again after every merge:
// two thirds of ViT-Tiny's passes (2026-12-05).
func kernelOrder(ks []ir.Kernel) ([]ir.Kernel, bool) {
	writer := map[int]int{}
	for i, k := range ks {
		for _, o := range k.Outputs {
			writer[o] = i
		}
	}
	pending := make([]int, len(ks))      // inputs whose writer is not taken yet
	dependents := make([][]int, len(ks)) // a kernel's readers, once per input read
	for i, k := range ks {
		for _, in := range k.Inputs {
			if w, ok := writer[in.Buffer]; ok {
				pending[i]++
				dependents[w] = append(dependents[w], i)
			}
		}
	}
	ready := &indexHeap{}
	for i := range ks {
		if pending[i] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]ir.Kernel, 0, len(ks))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, ks[i])
		for _, d := range dependents[i] {
			if pending[d]--; pending[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	if len(out) < len(ks) {
		return nil, false
	}
	return out, true
}

// inOrder reports whether every kernel of ks comes after the kernels
// writing the buffers it reads (the last writer of each, as kernelOrder
// counts them). Then kernelOrder(ks) is ks itself: taking the kernels in
// index order, each is ready when its turn comes and is the first ready
// one. fuseRows asks after each merge, where the order rarely changes.
func inOrder(ks []ir.Kernel) bool {
	writer := map[int]int{}
	for i, k := range ks {
		for _, o := range k.Outputs {
			writer[o] = i
		}
	}
	for i, k := range ks {
		for _, in := range k.Inputs {
			if w, ok := writer[in.Buffer]; ok && w >= i {
				return false
			}
		}
	}
	return true
}

// indexHeap is a min-heap of kernel indexes (container/heap).
type indexHeap []int

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(a, b int) bool { return h[a] < h[b] }
func (h indexHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func kernelName(i int, k ir.Kernel) string {
	return k.Kind.String() + "_" + itoa(i)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func b1(v bool) int {
	if v {
		return 1
	}
	return 0
}

// argShapes returns the shapes of node n's arguments.
func (b *builder) argShapes(n *ir.Node) []ir.Shape {
	s := make([]ir.Shape, len(n.Args))
	for j, a := range n.Args {
		s[j] = b.g.Nodes[a].Shape
	}
	return s
}

// negZero reports whether node v is a full of -0 (through views).
func (b *builder) negZero(v ir.NodeID) bool {
	n := &b.g.Nodes[b.resolve(v).base]
	return n.Op == ir.OpFull && math.Float32bits(n.Scalar) == 0x80000000
}
