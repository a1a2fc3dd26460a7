package passes

import "github.com/gpucc/gpucc/ir"

// sinkViews moves views (transpose, broadcast, reshape) from the results of
// elementwise nodes to their arguments, so that a view inside an
// elementwise region is indexing at the loads (which fuse's resolve folds
// into strides) rather than a kernel boundary: transpose(a + b) becomes
// transpose(a) + transpose(b), one kernel instead of two. The rewrite is
// exact: an elementwise op computes each element from the elements at the
// same position, so moving values before or after it gives the same bits.
//
// A view sinks through elementwise node x only when the view is x's one
// use (and x is no output): x is then computed once, as before, only in
// another order. When x has other uses it is stored for them anyway, and
// the view reads that buffer through strides; sinking would compute x a
// second time and read all of x's arguments instead of one buffer. A
// broadcast sinks only where the cost model says it pays (sinkPays: x
// then runs once per broadcast element rather than once per argument
// element, exp or div over a row, say, against a small kernel whose
// result is read broadcast). A reshape sinks only where strides express
// it over every argument that is a view (see sinks). A view of a full
// becomes a full.
func sinkViews(st *State) error {
	if st.Options.NoFuse {
		return nil
	}
	g := st.Graph
	uses := make([]int, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			uses[a]++
		}
	}
	pinned := make([]bool, len(g.Nodes)) // outputs, and nodes an output views: lift leaves them alone
	for _, o := range g.Outputs {
		uses[o.ID] += 2 // never sink through an output
		pinned[o.ID] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- { // users come after their arguments
		if n := &g.Nodes[i]; pinned[i] && n.IsView() {
			pinned[n.Args[0]] = true
		}
	}
	s := &sinker{st: st, old: g.Nodes, uses: uses}
	newID := make([]ir.NodeID, len(g.Nodes))
	for i, n := range s.old {
		for k, a := range n.Args {
			n.Args[k] = newID[a]
		}
		if n.Op.IsView() {
			newID[i] = s.view(n.Op, n.Shape, n.Attrs, n.Args[0], st.Origin[i], uses[i])
			continue
		}
		newID[i] = s.lift(n, st.Origin[i], uses[i], pinned[i])
	}
	for k := range g.Outputs {
		g.Outputs[k].ID = newID[g.Outputs[k].ID]
	}
	g.Nodes, st.Origin = s.nodes, s.origin
	return dce(st)
}

// The cost model for sinking a broadcast (the rule in the package doc).
// A broadcast of x from s to t elements sinks through x when
//
//	w·(t − s) ≤ Balance·(t + 8·s + launch)
//
// w is x's operations per element (OpInfo.Cost). Sinking adds w·(t − s)
// operations to the kernel that reads the broadcast, and saves x's own
// pass: x's s values stored and read back (8·s bytes) and, when x would be
// a kernel of its own (not an epilogue of the reduction or matmul that
// computes its argument) on a workgroup backend, a dispatch (LaunchBytes).
// The reader moves at least 4·t bytes, a quarter of which (t) is the
// memory time a sunk op may fill with arithmetic. Balance converts bytes
// to operations. For a large broadcast (t ≫ s) this is w ≤ Balance: the
// seed's ops, neg, maximum, minimum, greater, equal, mask and floor sink;
// div, exp, log, tanh, sqrt, rsqrt, sigmoid, ceil, round, erf, pow, sin,
// cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh and atanh (over 16)
// sink only into a few times their own elements (exp, 63 per element, into
// at most 4 times), or where they save a dispatch.
const (
	// Balance is the operations a device runs in the time it moves one
	// byte: the H200's 67 TFLOP/s of float32 over its 4.8 TB/s is 14.
	Balance = 16
	// LaunchBytes is a dispatch's fixed cost, in the bytes moved in its
	// time: a few microseconds of a GPU's bandwidth (the H200 moves 24 MB
	// in 5 µs; this is a conservative 1 MiB). CPU targets call a
	// function: they use 0 (Options.MaxInvocations unset).
	LaunchBytes = 1 << 20
)

// sinkPays reports whether the cost model lets a broadcast to shape
// target sink through elementwise node n (alone: n would be a kernel of
// its own) under options o.
func sinkPays(n ir.Node, target ir.Shape, alone bool, o Options) bool {
	w := n.Op.Info().Cost([]ir.Shape{{1}, {1}}, ir.Shape{1})
	s, t := int64(n.Shape.Len()), int64(target.Len())
	saved := ir.SatAdd(t, ir.SatMul(8, s))
	if alone && o.MaxInvocations > 0 {
		saved = ir.SatAdd(saved, LaunchBytes)
	}
	return ir.SatMul(w, t-s) <= ir.SatMul(Balance, saved)
}

type sinker struct {
	st     *State
	old    []ir.Node // the graph before, whose Args are rewritten in place
	uses   []int     // per old node: its uses (+2 for an output)
	nodes  []ir.Node // the graph after
	origin []ir.NodeID
	users  []int // per new node: its uses, as the old node it stands for had
	// inEpilogue memoises fused, per new node.
	inEpilogue map[ir.NodeID]bool
}

func (s *sinker) add(n ir.Node, origin ir.NodeID, users int) ir.NodeID {
	s.nodes = append(s.nodes, n)
	s.origin = append(s.origin, origin)
	s.users = append(s.users, users)
	return ir.NodeID(len(s.nodes) - 1)
}

// view adds op (a view, to shape, with attrs: permute's perm) of new node
// a, sunk through a where it may, and returns the node holding the
// result; users is how many uses that result has.
func (s *sinker) view(op ir.Op, shape ir.Shape, attrs []int, a ir.NodeID, origin ir.NodeID, users int) ir.NodeID {
	n := s.nodes[a]
	switch {
	case n.Op == ir.OpFull:
		return s.add(ir.Node{Op: ir.OpFull, Shape: shape, Scalar: n.Scalar}, origin, users)
	case n.Op.IsElementwise() && s.users[a] == 1 && s.sinks(op, shape, n):
		args := make([]ir.NodeID, len(n.Args))
		for k, x := range n.Args {
			args[k] = s.view(op, shape, attrs, x, s.origin[a], 1)
		}
		return s.add(ir.Node{Op: n.Op, Args: args, Scalar: n.Scalar, Shape: shape}, origin, users)
	}
	return s.add(ir.Node{Op: op, Args: []ir.NodeID{a}, Shape: shape, Attrs: attrs}, origin, users)
}

// epilogue reports whether elementwise node n would be computed in the
// kernel of a reduction or matmul it reads (fuse joins elementwise nodes
// over a reduction's result, or a matmul's, to that kernel as its
// epilogue): some argument of n's shape is such a node, or an elementwise
// node that is itself an epilogue.
func (s *sinker) epilogue(n ir.Node) bool {
	for _, a := range n.Args {
		if s.nodes[a].Shape.Equal(n.Shape) && s.fused(a) {
			return true
		}
	}
	return false
}

// fused reports whether new node a is a reduction or matmul, or an
// elementwise node that is an epilogue of one (memoised: a DAG's paths
// are exponentially many).
func (s *sinker) fused(a ir.NodeID) bool {
	if v, ok := s.inEpilogue[a]; ok {
		return v
	}
	m := s.nodes[a]
	k := m.Op.Info().Kernel
	v := !m.Op.IsElementwise() && !m.Op.IsView() && (k == ir.KernelReduce || k == ir.KernelMatmul) ||
		m.Op.IsElementwise() && s.epilogue(m)
	if s.inEpilogue == nil {
		s.inEpilogue = map[ir.NodeID]bool{}
	}
	s.inEpilogue[a] = v
	return v
}

// sinks reports whether view op (to shape) may sink through elementwise
// node n: a broadcast only through a cheap op, and a reshape only where
// strides express it over each argument that is itself a view (a reshape
// of a transposed value, say, would have to be materialised, once per
// argument instead of once).
func (s *sinker) sinks(op ir.Op, shape ir.Shape, n ir.Node) bool {
	if op != ir.OpBroadcast && s.joins(n) {
		// n joins its argument's matmul or reduction kernel; sunk, it
		// would be a kernel of its own unless an elementwise consumer
		// took it, while the view read in place costs nothing (a bias
		// added before BERT's head split, read by attention: a copy of
		// each projection with its bias).
		return false
	}
	switch op {
	case ir.OpBroadcast:
		return sinkPays(n, shape, !s.epilogue(n), s.st.Options)
	case ir.OpReshape:
		for _, a := range n.Args {
			if !s.nodes[a].Op.IsView() {
				continue
			}
			r := resolve(s.nodes, a)
			if s.nodes[r.base].Op.IsView() {
				return false
			}
			if r.strides != nil { // nil: a view of a full, a constant
				if _, ok := reshapeStrides(r.shape, r.strides, shape); !ok {
					return false
				}
			}
		}
	}
	return true
}
