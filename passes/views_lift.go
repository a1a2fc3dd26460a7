package passes

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// lift adds elementwise node n (its Args already new ids) as sinkViews
// does, but first computes it before a view where that makes it an
// epilogue: when each argument of n is a full or the same chain of
// reordering views V (transposes, permutes, reshapes: no broadcast, no
// crop; the same ops, attributes and shapes) of nodes of one shape, one
// of which a matmul or reduction kernel computes (or an epilogue of one),
// op(V(b), V(c), full) becomes V(op(b, c, full)). The rewrite is exact
// (an elementwise op computes each element from the elements at its
// position, V moves every argument's alike, and a full is the same
// everywhere), and op then joins b's kernel as its epilogue, one kernel
// fewer: PyTorch's MultiheadAttention adds its QKV projection's bias (+0
// where it has none) after the head split's reshape and permute, and
// BERT's export adds each projection's bias, folded to a constant of the
// projection's shape, after its head split, each a copy of a projection
// with the add. It is the converse of sinking a view through n, which
// sinkViews does only for a view that is n's result, so the two never
// undo each other. A pinned n is left as it is: an output, or a node that
// an output is a view of (through views and crops), whose view of the
// lifted value would then be copied, a kernel for the one saved and more
// bytes; so are other dtypes than float32.
func (s *sinker) lift(n ir.Node, origin ir.NodeID, users int, pinned bool) ir.NodeID {
	bases, chain, ok := s.liftable(n, pinned)
	if !ok {
		return s.add(n, origin, users)
	}
	bs := s.nodes[bases[firstBase(bases)]].Shape
	args := make([]ir.NodeID, len(n.Args))
	for k, a := range n.Args {
		if bases[k] >= 0 {
			args[k] = bases[k]
			continue
		}
		args[k] = s.add(ir.Node{Op: ir.OpFull, Shape: bs, Scalar: s.nodes[a].Scalar}, origin, 1)
	}
	at := s.add(ir.Node{Op: n.Op, Args: args, Scalar: n.Scalar, Shape: bs}, origin, 1)
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

// liftable returns, per argument of elementwise node n, the node its
// view chain reads (-1 for a full), and one of those chains (from the
// view down), when lift computes n before the views, or false (see lift
// for when): every argument not a full is the same chain of reordering
// views (the same ops, attributes and shapes) of a node of one shape,
// one of them computed by a kernel n can join.
func (s *sinker) liftable(n ir.Node, pinned bool) (bases []ir.NodeID, chain []ir.NodeID, ok bool) {
	if pinned || !n.Op.IsElementwise() || n.DType != ir.F32 {
		return nil, nil, false
	}
	bases = make([]ir.NodeID, len(n.Args))
	var shape ir.Shape // the bases'
	joins := false
	for k, a := range n.Args {
		if m := s.nodes[a]; m.Op == ir.OpFull && m.DType == ir.F32 {
			bases[k] = -1
			continue
		}
		c, b, ok := s.reorders(a)
		if !ok || chain != nil && (!s.sameChain(c, chain) || !s.nodes[b].Shape.Equal(shape)) {
			return nil, nil, false
		}
		m := s.nodes[b]
		if m.DType != ir.F32 || m.Shape.Len() != n.Shape.Len() {
			return nil, nil, false
		}
		chain, bases[k], shape = c, b, m.Shape
		joins = joins || s.kernelResult(m)
	}
	return bases, chain, chain != nil && joins
}

// firstBase returns the index of the first base that is not -1.
func firstBase(bases []ir.NodeID) int {
	for k, b := range bases {
		if b >= 0 {
			return k
		}
	}
	return -1
}

// reorders returns the chain of view nodes from a down (a first) and the
// node it reads, when a is a view made only of transposes, permutes and
// reshapes of float32 values, which reorder its base's elements.
func (s *sinker) reorders(a ir.NodeID) (chain []ir.NodeID, base ir.NodeID, ok bool) {
	base = a
	for s.nodes[base].Op.IsView() {
		switch s.nodes[base].Op {
		case ir.OpTranspose, ir.OpPermute, ir.OpReshape:
		default:
			return nil, 0, false
		}
		if s.nodes[base].DType != ir.F32 {
			return nil, 0, false
		}
		chain = append(chain, base)
		base = s.nodes[base].Args[0]
	}
	return chain, base, len(chain) > 0
}

// sameChain reports whether view chains x and y apply the same ops with
// the same attributes and shapes.
func (s *sinker) sameChain(x, y []ir.NodeID) bool {
	if len(x) != len(y) {
		return false
	}
	for j := range x {
		a, b := s.nodes[x[j]], s.nodes[y[j]]
		if a.Op != b.Op || !a.Shape.Equal(b.Shape) || !slices.Equal(a.Attrs, b.Attrs) {
			return false
		}
	}
	return true
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

// joins reports whether elementwise node n would join the kernel of a
// matmul or reduction as its epilogue: epilogue, seeing through reshapes
// of contiguous data (fuse's same), as the fusion pass does.
func (s *sinker) joins(n ir.Node) bool {
	if s.epilogue(n) {
		return true
	}
	for _, a := range n.Args {
		if !s.nodes[a].Op.IsView() {
			continue
		}
		r := resolve(s.nodes, a)
		if r.strides == nil || s.nodes[r.base].IsView() || r.offset != 0 || r.shape.Len() != s.nodes[r.base].Shape.Len() {
			continue
		}
		if (ir.Operand{Shape: r.shape, Strides: r.strides}).Plain() && s.nodes[r.base].Shape.Len() == n.Shape.Len() && s.fused(r.base) {
			return true
		}
	}
	return false
}
