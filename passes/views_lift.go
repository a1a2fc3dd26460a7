package passes

import "github.com/gpucc/gpucc/ir"

// lift adds elementwise node n (its Args already new ids) as sinkViews
// does, but first computes it before a view where that makes it an
// epilogue: when each argument of n is a full or one and the same view v
// of a node b that a matmul or reduction kernel computes (or an epilogue
// of one), and v's chain only reorders b's elements (transposes,
// permutes, reshapes: no broadcast, no crop), op(view(b), full) becomes
// view(op(b, full)). The rewrite is exact (an elementwise op computes
// each element from the elements at its position, and a full is the same
// everywhere), and op then joins b's kernel as its epilogue, one kernel
// fewer: PyTorch's MultiheadAttention adds its QKV projection's bias (+0
// where it has none) after the head split's reshape and permute, a copy
// of the projection's output with the add. It is the converse of sinking
// a view through n, which sinkViews does only for a view that is n's
// result, so the two never undo each other. A pinned n is left as it is:
// an output, or a node that an output is a view of (through views and
// crops), whose view of the lifted value would then be copied, a kernel
// for the one saved and more bytes; so are other dtypes than float32.
func (s *sinker) lift(n ir.Node, origin ir.NodeID, users int, pinned bool) ir.NodeID {
	v, ok := s.liftable(n, pinned)
	if !ok {
		return s.add(n, origin, users)
	}
	var chain []ir.NodeID // v's view nodes, from v down
	b := v
	for s.nodes[b].Op.IsView() {
		chain = append(chain, b)
		b = s.nodes[b].Args[0]
	}
	shape := s.nodes[b].Shape
	args := make([]ir.NodeID, len(n.Args))
	for k, a := range n.Args {
		if a == v {
			args[k] = b
			continue
		}
		args[k] = s.add(ir.Node{Op: ir.OpFull, Shape: shape, Scalar: s.nodes[a].Scalar}, origin, 1)
	}
	at := s.add(ir.Node{Op: n.Op, Args: args, Scalar: n.Scalar, Shape: shape}, origin, 1)
	for j := len(chain) - 1; j >= 0; j-- {
		c := s.nodes[chain[j]]
		u := 1
		if j == 0 {
			u = users
		}
		at = s.add(ir.Node{Op: c.Op, Args: []ir.NodeID{at}, Shape: c.Shape, Attrs: c.Attrs}, s.origin[chain[j]], u)
	}
	return at
}

// liftable returns the view v that lift computes elementwise node n
// before, or false (see lift for when).
func (s *sinker) liftable(n ir.Node, pinned bool) (v ir.NodeID, ok bool) {
	if pinned || !n.Op.IsElementwise() || n.DType != ir.F32 {
		return 0, false
	}
	v = -1
	for _, a := range n.Args {
		switch m := s.nodes[a]; {
		case m.Op == ir.OpFull && m.DType == ir.F32:
		case v < 0 || v == a:
			v = a
		default:
			return 0, false
		}
	}
	if v < 0 || !s.nodes[v].Op.IsView() {
		return 0, false
	}
	b := v
	for s.nodes[b].Op.IsView() {
		switch s.nodes[b].Op {
		case ir.OpTranspose, ir.OpPermute, ir.OpReshape:
		default:
			return 0, false
		}
		if s.nodes[b].DType != ir.F32 {
			return 0, false
		}
		b = s.nodes[b].Args[0]
	}
	m := s.nodes[b]
	if m.DType != ir.F32 || m.Shape.Len() != n.Shape.Len() || !s.kernelResult(m) {
		return 0, false
	}
	return v, true
}

// kernelResult reports whether node m is computed by a kernel that
// elementwise consumers of its shape join as an epilogue: a reduction, a
// kind that accumulates (matmul, conv, attention, …), or such an
// epilogue itself.
func (s *sinker) kernelResult(m ir.Node) bool {
	if m.Op.IsElementwise() {
		return s.epilogue(m)
	}
	k := m.Op.Info().Kernel
	return !m.IsView() && m.Op != ir.OpInput && m.Op != ir.OpFull && (k == ir.KernelReduce || accumulates(k))
}
