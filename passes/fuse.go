package passes

import (
	"fmt"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// fuse lowers the graph to a Program, one kernel per group:
//
//   - elementwise nodes of one shape join the groups of their elementwise
//     arguments, merging them, as long as no group would then depend on
//     itself through a node outside it (a cycle between kernels);
//   - a matmul, a convolution or a max pooling starts a group that
//     elementwise consumers join as its epilogue (bias add, relu, residual
//     add, …); at most one of them or a reduction per group;
//   - views (transpose, broadcast, reshape, and a pad that only crops: a
//     Slice or Split, ir.Node.Crop) are folded into the indexing of
//     whoever reads them (see resolve), a crop as an offset that kinds
//     taking one (ir.KernelInfo.Offsets) read in place and others read
//     through a copy; the views pass has already sunk
//     them through single-use elementwise nodes to the loads, so a view
//     inside an elementwise region is strides, not a kernel boundary;
//   - a reduction (sum, max) whose argument group feeds nothing else takes
//     that group as its prologue, and elementwise nodes over its result
//     (or a reshape of it) join it as its epilogue (evaluated per output
//     element);
//   - an elementwise node that is only ever reduced does not join the
//     epilogue of a matmul or reduction whose value it reads when that
//     value is an output: the reduction reads the output instead (see
//     onlySummed);
//   - fulls become constants in kernel bodies, and are materialised only
//     where a matmul or life reads them;
//   - a group binding more than Options.MaxBindings buffers is split.
//
// With Options.NoFuse every node is its own kernel: the baseline that
// differential tests compare against.
func fuse(st *State) error {
	f := newFuser(st)
	for i := range f.g.Nodes {
		f.place(ir.NodeID(i))
	}
	f.fuseSumPrologues()
	p, err := f.build()
	if err != nil {
		return err
	}
	st.Program = p
	return nil
}

type group struct {
	kind  ir.KernelKind
	nodes []ir.NodeID // members in node order
	root  ir.NodeID   // the matmul, sum or life node; -1 for pure elementwise
	ext   bitset      // groups that must complete before this one starts
	dead  bool        // merged into another group
}

type fuser struct {
	st       *State
	g        *ir.Graph
	groupOf  []int  // group of each node, or -1
	prologue []bool // nodes a reduction's group evaluates per leaf
	groups   []*group
	users    [][]ir.NodeID
	output   []bool
	summed   map[ir.NodeID]bool // onlySummed's memo
}

func newFuser(st *State) *fuser {
	g := st.Graph
	f := &fuser{st: st, g: g, groupOf: make([]int, len(g.Nodes)), prologue: make([]bool, len(g.Nodes)),
		users: make([][]ir.NodeID, len(g.Nodes)), output: make([]bool, len(g.Nodes)), summed: map[ir.NodeID]bool{}}
	for i, n := range g.Nodes {
		f.groupOf[i] = -1
		for _, a := range n.Args {
			f.users[a] = append(f.users[a], ir.NodeID(i))
		}
	}
	for _, o := range g.Outputs {
		f.output[o.ID] = true
	}
	return f
}

// place assigns node v to a group (or to none: inputs, fulls, views).
func (f *fuser) place(v ir.NodeID) {
	n := &f.g.Nodes[v]
	switch {
	case n.Op == ir.OpInput || n.Op == ir.OpFull || n.IsView():
	case n.Op.IsElementwise() && !f.st.Options.NoFuse:
		f.placeElementwise(v)
	default:
		kind := n.Op.Info().Kernel
		root := v
		if n.Op.IsElementwise() {
			root = -1
		}
		f.newGroup(v, kind, root, f.argDeps(v, nil))
	}
}

func (f *fuser) newGroup(v ir.NodeID, kind ir.KernelKind, root ir.NodeID, ext bitset) {
	f.groups = append(f.groups, &group{kind: kind, nodes: []ir.NodeID{v}, root: root, ext: ext})
	f.groupOf[v] = len(f.groups) - 1
}

// need returns the groups that must complete before node v's value exists:
// its own group and, transitively, everything that group waits for.
// Computed afresh each time, because groups grow and merge.
func (f *fuser) need(v ir.NodeID) bitset {
	d := newBitset(len(f.g.Nodes))
	for f.g.Nodes[v].IsView() {
		v = f.g.Nodes[v].Args[0]
	}
	if g := f.groupOf[v]; g >= 0 {
		d.set(g)
		d.or(f.groups[g].ext)
	}
	return f.closure(d)
}

// closure adds to d every group that a group in d waits for.
func (f *fuser) closure(d bitset) bitset {
	for changed := true; changed; {
		changed = false
		for g, gr := range f.groups {
			if d.has(g) && !d.contains(gr.ext) {
				d.or(gr.ext)
				changed = true
			}
		}
	}
	return d
}

// argDeps is the union of need over v's arguments outside the groups in skip.
func (f *fuser) argDeps(v ir.NodeID, skip []int) bitset {
	d := newBitset(len(f.g.Nodes))
	for _, a := range f.g.Nodes[v].Args {
		if g := f.groupOf[f.same(a)]; g >= 0 && slices.Contains(skip, g) {
			continue
		}
		d.or(f.need(a))
	}
	return d
}

// placeElementwise merges v with as many argument groups as stay legal.
func (f *fuser) placeElementwise(v ir.NodeID) {
	var chosen []int
	for _, a := range f.g.Nodes[v].Args {
		c := f.groupOf[f.same(a)]
		if c < 0 || slices.Contains(chosen, c) {
			continue
		}
		if k := f.groups[c].kind; k != ir.KernelElementwise && !accumulates(k) && !f.epilogue(v, c, chosen) {
			continue
		}
		if k := f.groups[c].kind; k != ir.KernelElementwise && f.output[f.same(a)] && f.onlySummed(v) {
			continue // see onlySummed
		}
		if f.feedsReduction(c, chosen) {
			continue
		}
		if _, ok := f.mergeExt(v, append(slices.Clone(chosen), c)); ok {
			chosen = append(chosen, c)
		}
	}
	ext, _ := f.mergeExt(v, chosen)
	if len(chosen) == 0 {
		f.newGroup(v, ir.KernelElementwise, -1, ext)
		return
	}
	into := f.groups[chosen[0]]
	for _, c := range chosen[1:] {
		f.absorb(chosen[0], c)
	}
	into.nodes = append(into.nodes, v)
	into.ext = ext
	f.groupOf[v] = chosen[0]
}

// onlySummed reports whether elementwise node v's value is only ever
// reduced: it is no output, and each of its uses is a reduction's
// argument or an elementwise node of its shape that is only summed.
// Such a node does not join a matmul's or a reduction's kernel as its
// epilogue when the value it reads there is an output (stored anyway):
// there it would be stored for the reduction, which can instead read the
// output as its prologue, a store and a load of v's size fewer (the loss
// guard of a training step reads every updated parameter so).
func (f *fuser) onlySummed(v ir.NodeID) bool {
	if r, ok := f.summed[v]; ok {
		return r
	}
	r := f.summedUses(v)
	f.summed[v] = r
	return r
}

// summedUses is onlySummed without the memo (a DAG's paths are
// exponentially many).
func (f *fuser) summedUses(v ir.NodeID) bool {
	if f.output[v] || len(f.users[v]) == 0 {
		return false
	}
	for _, u := range f.users[v] {
		n := &f.g.Nodes[u]
		switch {
		case n.Op.Info().Kernel == ir.KernelReduce && !n.Op.IsElementwise() && !n.Op.IsView():
		case n.Op.IsElementwise() && n.Shape.Equal(f.g.Nodes[v].Shape) && f.onlySummed(u):
		default:
			return false
		}
	}
	return true
}

// epilogue reports whether elementwise node v may join reduction group c
// (with the groups chosen) as its epilogue: v is over the reduction's
// result (or a reshape of it, see same), and no chosen group computes the reduction's argument
// (whose values are per leaf, not per output).
func (f *fuser) epilogue(v ir.NodeID, c int, chosen []int) bool {
	gr := f.groups[c]
	if gr.kind != ir.KernelReduce || f.g.Nodes[v].Shape.Len() != f.g.Nodes[gr.root].Shape.Len() {
		return false
	}
	arg := f.groupOf[f.g.Nodes[gr.root].Args[0]]
	return arg < 0 || !slices.Contains(chosen, arg)
}

// feedsReduction reports whether group c computes the argument of a
// reduction group among chosen: it cannot join that reduction's epilogue.
func (f *fuser) feedsReduction(c int, chosen []int) bool {
	for _, s := range chosen {
		if gr := f.groups[s]; gr.kind == ir.KernelReduce && f.groupOf[f.g.Nodes[gr.root].Args[0]] == c {
			return true
		}
	}
	return false
}

// mergeExt returns the external dependencies of v merged with groups cs,
// and whether that merge is legal: no group depends on itself and at most
// one matmul or reduction shares the kernel.
func (f *fuser) mergeExt(v ir.NodeID, cs []int) (bitset, bool) {
	ext := f.argDeps(v, cs)
	matmuls := 0
	for _, c := range cs {
		ext.or(f.closure(f.groups[c].ext.clone()))
		if k := f.groups[c].kind; accumulates(k) || k == ir.KernelReduce {
			matmuls++
		}
	}
	for _, c := range cs {
		if ext.has(c) {
			return ext, false
		}
	}
	return ext, matmuls <= 1
}

// absorb moves group src into dst and makes every dependency on src a
// dependency on dst.
func (f *fuser) absorb(dst, src int) {
	d, s := f.groups[dst], f.groups[src]
	if accumulates(s.kind) || s.kind == ir.KernelReduce && d.kind == ir.KernelElementwise {
		d.kind, d.root = s.kind, s.root
	}
	for _, v := range s.nodes {
		f.groupOf[v] = dst
	}
	d.nodes = append(d.nodes, s.nodes...)
	slices.Sort(d.nodes)
	d.ext.or(s.ext)
	s.dead, s.nodes = true, nil
	for _, g := range f.groups {
		if g.ext.has(src) {
			g.ext.set(dst)
		}
	}
	d.ext.clear(dst) // the prologue a sum absorbs was among its dependencies
}

// fuseSumPrologues folds into each reduction the elementwise group
// computing its argument, when nothing else reads that group (epilogue
// members do not: they never join with that group).
func (f *fuser) fuseSumPrologues() {
	for gi, sg := range f.groups {
		if sg.dead || sg.kind != ir.KernelReduce {
			continue
		}
		arg := f.g.Nodes[sg.root].Args[0]
		pi := f.groupOf[arg]
		if pi < 0 || f.groups[pi].kind != ir.KernelElementwise {
			continue
		}
		// private: no member is stored, even through a reshape of
		// contiguous data that another member reads (see stored).
		in := append(slices.Clone(f.groups[pi].nodes), sg.root)
		private := !slices.ContainsFunc(f.groups[pi].nodes, func(m ir.NodeID) bool { return f.stored(m, in) })
		if private {
			for _, m := range f.groups[pi].nodes {
				f.prologue[m] = true
			}
			f.absorb(gi, pi)
		}
	}
}

// view says how a kernel reads a node through a chain of view ops: it
// reads base's buffer (or constant, for a full) as shape, through strides,
// one per dimension of shape. shape is the node's, or after a reshape that
// strides cannot express, the shape before it: the same elements in the
// same row-major order, which is all a kernel reading element i needs.
// offset is the buffer element of index 0: a crop (a Slice or Split read
// in place, ir.Node.Crop) moves it.
type view struct {
	base    ir.NodeID
	shape   ir.Shape
	strides []int
	offset  int
}

// viewKey identifies a view, for counting and sharing the reads of a kernel.
type viewKey struct {
	base    ir.NodeID
	strides string
}

func (r view) key() viewKey { return viewKey{r.base, fmt.Sprint(r.shape, r.strides, r.offset)} }

// mixed reports whether resolve stopped at a view: that node must be
// materialised into its own buffer, which is then read through the view.
func (f *fuser) mixed(r view) bool { return f.g.Nodes[r.base].IsView() }

// whole reports whether r reads all of its base's elements in row-major
// order: the base's value itself, perhaps under another shape (a
// reshape). A plain view may read less: a crop that keeps a prefix.
func (f *fuser) whole(r view) bool {
	return f.operand(r, 0).Plain() && r.shape.Len() == f.g.Nodes[r.base].Shape.Len()
}

// operand returns the operand reading r's base.
func (f *fuser) operand(r view, buffer int) ir.Operand {
	return ir.Operand{Buffer: buffer, Shape: r.shape, Strides: r.strides, Offset: r.offset}
}

// inPlace reports whether a matmul, conv, pool or life kernel (of kind)
// can read node v through r itself: r is no full and reads v's shape
// plainly or transposed (those kernels index rows and columns
// themselves), or through any strides for a Strided kind; a matmul reads each matrix of a batch so, whatever the
// batch dimensions' strides (ir.Operand.Matrix).
func (f *fuser) inPlace(r view, v ir.NodeID, kind ir.KernelKind) bool {
	op := f.operand(r, 0)
	if op.Offset != 0 && !kind.Info().Offsets {
		return false
	}
	ok := op.Plain() || op.Transposed() || kind.Info().Strided
	if kind == ir.KernelMatmul {
		ok = op.Matrix()
	}
	return f.g.Nodes[r.base].Op != ir.OpFull && op.Shape.Equal(f.g.Nodes[v].Shape) && ok
}

// resolve follows view ops from v to the node holding the data and composes
// their index maps into strides over that node's row-major buffer: a
// transpose swaps two strides, a broadcast (numpy's rule) gives its new and
// its stretched dimensions stride 0, and a reshape re-expresses the strides
// over the new shape (numpy's no-copy reshape: always possible for
// contiguous data). A reshape that no strides express (flattening a
// transpose, say) keeps the shape before it (see view): only a transpose
// or broadcast of it needs its dimensions, and there resolve stops: it
// returns that reshape, a view node, as the base, which the builder then
// materialises with a copy kernel. A crop keeps the strides and moves the
// offset to the first element it keeps. A chain ending in a full resolves to
// the full (every view of a constant is that constant); strides are then
// nil.
func (f *fuser) resolve(v ir.NodeID) view { return resolve(f.g.Nodes, v) }

// resolve is fuser.resolve over any node list.
func resolve(nodes []ir.Node, v ir.NodeID) view {
	var chain []ir.NodeID
	base := v
	for nodes[base].IsView() {
		chain = append(chain, base)
		base = nodes[base].Args[0]
	}
	if nodes[base].Op == ir.OpFull {
		return view{base: base}
	}
	shape := nodes[base].Shape
	strides := ir.RowMajor(shape)
	offset := 0
	for j := len(chain) - 1; j >= 0; j-- {
		n := &nodes[chain[j]]
		if arg := n.Args[0]; n.Op != ir.OpReshape && !shape.Equal(nodes[arg].Shape) {
			base, shape, strides, offset = arg, nodes[arg].Shape, ir.RowMajor(nodes[arg].Shape), 0 // materialise the reshape
		}
		if begin, ok := n.Crop(); ok { // the same strides from the first element kept
			s := ir.Operand{Shape: shape, Strides: strides, Offset: offset}.Slice(begin, n.Shape)
			shape, offset = s.Shape, s.Offset
			continue
		}
		switch n.Op {
		case ir.OpTranspose: // the last two axes swap
			r := len(strides)
			strides = append(strides[:r-2:r-2], strides[r-1], strides[r-2])
		case ir.OpPermute:
			strides = ir.PermuteStrides(strides, n.Op.Attr(n.Attrs, "perm"))
		case ir.OpBroadcast:
			strides = broadcastStrides(shape, strides, n.Shape)
		case ir.OpReshape:
			st, ok := reshapeStrides(shape, strides, n.Shape)
			if !ok {
				continue // read in the shape before it
			}
			strides = st
		}
		shape = n.Shape
	}
	return view{base: base, shape: shape, strides: strides, offset: offset}
}

// broadcastStrides returns the strides of a value of shape s and strides st
// broadcast to target (numpy's rule: s is right-aligned with target, and
// each of its dimensions is target's or 1).
func broadcastStrides(s ir.Shape, st []int, target ir.Shape) []int {
	out := make([]int, len(target))
	off := len(target) - len(s)
	for d := range s {
		if s[d] == target[d+off] {
			out[d+off] = st[d]
		}
	}
	return out
}

// reshapeStrides returns strides that read a value of shape s and strides
// st as shape target in the same row-major order, or false when none do:
// numpy's no-copy reshape. Dimensions of size 1 are dropped from s; then
// each run of s's dimensions whose product equals a run of target's must
// be contiguous in memory (stride[d] = stride[d+1]·s[d+1]), and the
// target run takes row-major strides ending in the run's innermost stride.
func reshapeStrides(s ir.Shape, st []int, target ir.Shape) ([]int, bool) {
	var od, os []int
	for d, n := range s {
		if n != 1 {
			od, os = append(od, n), append(os, st[d])
		}
	}
	ns := make([]int, len(target))
	oi, oj, ni, nj := 0, 1, 0, 1
	for ni < len(target) && oi < len(od) {
		np, op := target[ni], od[oi]
		for np != op {
			if np < op {
				np *= target[nj]
				nj++
			} else {
				op *= od[oj]
				oj++
			}
		}
		for k := oi; k < oj-1; k++ {
			if os[k] != od[k+1]*os[k+1] {
				return nil, false
			}
		}
		ns[nj-1] = os[oj-1]
		for k := nj - 1; k > ni; k-- {
			ns[k-1] = ns[k] * target[k]
		}
		ni, nj = nj, nj+1
		oi, oj = oj, oj+1
	}
	return ns, true // target dimensions left over are 1s: stride 0
}

// stored reports whether member v of the member set in must be written to a
// buffer: it is an output or something outside in reads it (through a
// chain of reshapes, for which see same, only when that something is
// outside in or the chain is an output).
func (f *fuser) stored(v ir.NodeID, in []ir.NodeID) bool {
	if f.output[v] {
		return true
	}
	for _, u := range f.users[v] {
		if slices.Contains(in, u) || f.g.Nodes[u].IsView() && f.same(u) == f.same(v) && !f.stored(u, in) {
			continue
		}
		return true
	}
	return false
}

// same returns the node whose value a is, element for element in
// row-major order: a itself, or for a chain of views that resolves to
// plain strides over a computed node (reshapes of contiguous data), that
// node. An elementwise consumer of such a chain joins the node's group:
// its element i is the node's element i, in the same kernel.
func (f *fuser) same(a ir.NodeID) ir.NodeID {
	if !f.g.Nodes[a].IsView() {
		return a
	}
	r := f.resolve(a)
	if n := &f.g.Nodes[r.base]; n.Op == ir.OpFull || n.IsView() || !f.whole(r) {
		return a
	}
	return r.base
}

func (f *fuser) errorf(format string, a ...any) error {
	return ir.Errorf(ir.CodeInternal, -1, "", format, a...)
}

// accumulates reports whether kernels of kind k compute an accumulator per
// element of their Shape (InstrAcc) that an elementwise epilogue reads
// (the row's ir.KernelInfo.Accumulates: matmul, conv, pooling, ...).
func accumulates(k ir.KernelKind) bool { return k.Info().Accumulates }
