package passes

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// fuse lowers the graph to a Program, one kernel per group:
//
//   - elementwise nodes of one shape join the groups of their elementwise
//     arguments, merging them, as long as no group would then depend on
//     itself through a node outside it (a cycle between kernels);
//   - a matmul starts a group that elementwise consumers join as its
//     epilogue (bias add, relu, …); at most one matmul per group;
//   - views (transpose, broadcast, reshape) are folded into the indexing of
//     whoever reads them (see resolve);
//   - a sum whose argument group feeds nothing else takes that group as its
//     prologue;
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
	st      *State
	g       *ir.Graph
	groupOf []int // group of each node, or -1
	groups  []*group
	users   [][]ir.NodeID
	output  []bool
}

func newFuser(st *State) *fuser {
	g := st.Graph
	f := &fuser{st: st, g: g, groupOf: make([]int, len(g.Nodes)),
		users: make([][]ir.NodeID, len(g.Nodes)), output: make([]bool, len(g.Nodes))}
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
	case n.Op == ir.OpInput || n.Op == ir.OpFull || n.Op.IsView():
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
	for f.g.Nodes[v].Op.IsView() {
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
		if g := f.groupOf[a]; g >= 0 && slices.Contains(skip, g) {
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
		c := f.groupOf[a]
		if c < 0 || slices.Contains(chosen, c) {
			continue
		}
		if k := f.groups[c].kind; k != ir.KernelElementwise && k != ir.KernelMatmul {
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

// mergeExt returns the external dependencies of v merged with groups cs,
// and whether that merge is legal: no group depends on itself and at most
// one matmul shares the kernel.
func (f *fuser) mergeExt(v ir.NodeID, cs []int) (bitset, bool) {
	ext := f.argDeps(v, cs)
	matmuls := 0
	for _, c := range cs {
		ext.or(f.closure(f.groups[c].ext.clone()))
		if f.groups[c].kind == ir.KernelMatmul {
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
	if s.kind == ir.KernelMatmul {
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

// fuseSumPrologues folds into each sum the elementwise group computing its
// argument, when nothing else reads that group.
func (f *fuser) fuseSumPrologues() {
	for gi, sg := range f.groups {
		if sg.dead || sg.kind != ir.KernelSum {
			continue
		}
		arg := f.g.Nodes[sg.root].Args[0]
		pi := f.groupOf[arg]
		if pi < 0 || f.groups[pi].kind != ir.KernelElementwise {
			continue
		}
		private := true
		for _, m := range f.groups[pi].nodes {
			private = private && !f.output[m]
			for _, u := range f.users[m] {
				private = private && (f.groupOf[u] == pi || u == sg.root)
			}
		}
		if private {
			f.absorb(gi, pi)
		}
	}
}

// view says how a kernel reads a node through a chain of view ops: it
// reads base's buffer (or constant, for a full) plainly, transposed or
// broadcast (repeated; index i % base's length), never two at once.
type view struct {
	base       ir.NodeID
	transposed bool
	broadcast  bool
}

// mixed reports whether resolve stopped at a view op: that node must be
// materialised into its own buffer, which is then read through the view.
func (f *fuser) mixed(r view) bool { return f.g.Nodes[r.base].Op.IsView() }

// resolve follows view ops from v towards the node holding the data,
// composing their index maps: a reshape keeps the row-major order, so it
// changes no index; transposes compose with transposes (two cancel) and
// broadcasts with broadcasts (i % m % n = i % n, as n divides m). Where a
// chain mixes a transpose with a broadcast, or reshapes a transposed
// value, resolve stops at the inner view node, which the builder then
// materialises with a copy kernel (a transposed read needs the 2-D shape
// the transpose produced).
func (f *fuser) resolve(v ir.NodeID) view {
	shape := f.g.Nodes[v].Shape
	r := view{base: v}
	for {
		n := &f.g.Nodes[r.base]
		switch n.Op {
		case ir.OpReshape:
		case ir.OpBroadcast:
			if r.transposed {
				return r
			}
			r.broadcast = true
		case ir.OpTranspose:
			switch {
			case r.broadcast:
				return r
			case !r.transposed && n.Shape.Equal(shape):
				r.transposed = true
			case r.transposed && n.Shape.Equal(ir.Shape{shape[1], shape[0]}):
				r.transposed = false
			default:
				return r
			}
		default:
			return r
		}
		r.base = n.Args[0]
	}
}

// stored reports whether member v of the member set in must be written to a
// buffer: it is an output or something outside in reads it.
func (f *fuser) stored(v ir.NodeID, in []ir.NodeID) bool {
	if f.output[v] {
		return true
	}
	for _, u := range f.users[v] {
		if !slices.Contains(in, u) {
			return true
		}
	}
	return false
}

func (f *fuser) errorf(format string, a ...any) error {
	return ir.Errorf(ir.CodeInternal, -1, "", format, a...)
}
