package ir

import (
	"math"
	"slices"
)

// FuseAttention returns g with each softmax(scores)·v over the last axis
// written as one attention node, and how many it wrote: the pattern that
// PyTorch's exporter and Hugging Face models give, after import:
//
//	scores = matmul(q, kᵀ) [· s | / 2^n] [+ mask]
//	y      = matmul(softmax(scores, -1), v)
//
// or, for a causal decoder's masked_fill(mask, -Inf) (ONNX's Where(mask,
// -Inf, scores), which the importer writes as mask(c, -Inf) + mask(1-c,
// scores)), scores = where(c, -Inf, q·kᵀ·s) with c a constant of the
// importer's (an unnamed input) that is nonzero exactly past the
// diagonal: the causal attention, bit for bit the same scores;
//
// where softmax is Tensor.Softmax's composition (max_reduce, sub, exp,
// sum, div), kᵀ a transpose or permute of k swapping its last two axes
// (or any [...,D,T] tensor, which a permute view then turns back), s a
// scalar (mul_scalar, or a mul by a full), a division only by a power of
// two (its quotient is then the product by the reciprocal, bit for bit),
// and the mask any tensor added to the scores, read through its
// broadcast. q, k and v need one batch shape.
//
// The result is attention's order, not the composition's: within a few
// units in the last place of it (the exps summed in key order, one
// division per output), not its bits (see ir/attention.go). The nodes of
// the softmax stay, for any other reader; the compiler drops them where
// none is left. A graph without the pattern is returned as it is.
func FuseAttention(g *Graph) (*Graph, int) {
	users := make([]int, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			users[a]++
		}
	}
	for _, o := range g.Outputs {
		users[o.ID]++
	}
	plans := map[NodeID]attentionPlan{}
	for i := range g.Nodes {
		if p, ok := matchAttention(g, users, NodeID(i)); ok {
			plans[NodeID(i)] = p
		}
	}
	if len(plans) == 0 {
		return GroupAttention(g), 0
	}
	out := &Graph{Nodes: make([]Node, 0, len(g.Nodes)+2*len(plans))}
	at := make([]NodeID, len(g.Nodes))
	emit := func(n Node) NodeID {
		out.Nodes = append(out.Nodes, n)
		return NodeID(len(out.Nodes) - 1)
	}
	for i, n := range g.Nodes {
		n.Args = slices.Clone(n.Args)
		for j, a := range n.Args {
			n.Args[j] = at[a]
		}
		p, ok := plans[NodeID(i)]
		if !ok {
			at[i] = emit(n)
			continue
		}
		k := at[p.k]
		if p.transpose { // kᵀ is no view of k: read it back through one
			s := g.Nodes[p.k].Shape
			r := len(s)
			perm := make([]int, r)
			for d := range perm {
				perm[d] = d
			}
			perm[r-2], perm[r-1] = r-1, r-2
			ts := slices.Clone(s)
			ts[r-2], ts[r-1] = s[r-1], s[r-2]
			attrs, _ := PackAttrs(OpPermute, map[string][]int{"perm": perm})
			k = emit(Node{Op: OpPermute, Args: []NodeID{k}, Shape: ts, Attrs: attrs})
		}
		mask := NodeID(-1)
		if p.mask >= 0 {
			mask = at[p.mask]
		} else {
			mask = emit(Node{Op: OpFull, Shape: Shape{}, Scalar: float32(math.Copysign(0, -1))})
		}
		attrs, _ := PackAttrs(OpAttention, AttentionAttrs(p.scale, p.causal))
		at[i] = emit(Node{Op: OpAttention, Args: []NodeID{at[p.q], k, at[p.v], mask}, Shape: slices.Clone(n.Shape), Attrs: attrs})
	}
	for _, o := range g.Outputs {
		o.ID = at[o.ID]
		out.Outputs = append(out.Outputs, o)
	}
	return GroupAttention(out), len(plans)
}

// GroupAttention returns g with each grouped-query attention that reads
// its keys and values repeated, head by head, through a copy (ONNX
// Attention's kv_num_heads and Hugging Face's repeat_kv write both as
// reshape(broadcast(reshape(x))): [B,G,T,D] as [B,G,1,T,D], broadcast to
// [B,G,N,T,D], merged to [B,G·N,T,D], which no strides express, so the
// merge was a copy kernel of N times the cache) rewritten to read each
// shared head in place: the attention over [B,G,N,...] instead, q and the
// mask split into G groups of N heads by a reshape (a view), k and v the
// broadcasts themselves (stride 0 over the N heads of a group), the
// result merged back to [B,G·N,S,E] (a view). Query head h = g·N + n
// reads key head g either way (the repeat interleaves, h0 h0 h1 h1 …), so
// every output is the same attention of the same rows: the same bits. A
// graph without the pattern is returned as it is.
func GroupAttention(g *Graph) *Graph {
	var found []NodeID
	for i := range g.Nodes {
		if _, _, ok := groupedKV(g.Nodes, NodeID(i)); ok {
			found = append(found, NodeID(i))
		}
	}
	if len(found) == 0 {
		return g
	}
	out := &Graph{Nodes: make([]Node, 0, len(g.Nodes)+4*len(found))}
	at := make([]NodeID, len(g.Nodes))
	emit := func(n Node) NodeID {
		out.Nodes = append(out.Nodes, n)
		return NodeID(len(out.Nodes) - 1)
	}
	reshape := func(x NodeID, s Shape) NodeID {
		if out.Nodes[x].Shape.Equal(s) {
			return x
		}
		return emit(Node{Op: OpReshape, Args: []NodeID{x}, Shape: s, DType: out.Nodes[x].DType})
	}
	for i, n := range g.Nodes {
		n.Args = slices.Clone(n.Args)
		for j, a := range n.Args {
			n.Args[j] = at[a]
		}
		kb, vb, ok := groupedKV(g.Nodes, NodeID(i))
		if !ok {
			at[i] = emit(n)
			continue
		}
		ks := g.Nodes[kb].Shape // [B,G,N,T,D]
		q := g.Nodes[g.Nodes[i].Args[0]].Shape
		G, N := ks[1], ks[2]
		qs := Shape{q[0], G, N, q[2], q[3]}
		ms := g.Nodes[g.Nodes[i].Args[3]].Shape
		mask := n.Args[3]
		if len(ms) >= 3 { // a head axis to split (or a 1 to widen), right-aligned as the scores'
			m4 := append(Shape{1, 1, 1, 1}[:4-len(ms)], ms...)
			m5 := Shape{m4[0], 1, 1, m4[2], m4[3]}
			if m4[1] != 1 {
				m5[1], m5[2] = G, N
			}
			mask = reshape(mask, m5)
		}
		n.Args = []NodeID{reshape(n.Args[0], qs), at[kb], at[vb], mask}
		s := n.Shape // [B,G·N,S,E]
		n.Shape = Shape{s[0], G, N, s[2], s[3]}
		at[i] = reshape(emit(n), slices.Clone(s))
	}
	for _, o := range g.Outputs {
		o.ID = at[o.ID]
		out.Outputs = append(out.Outputs, o)
	}
	return out
}

// groupedKV reports whether node i is a rank-4 attention whose k and v
// are each reshape(broadcast(reshape(x))) repeating G heads N times
// (GroupAttention), and returns the two broadcasts [B,G,N,T,·].
func groupedKV(nodes []Node, i NodeID) (kb, vb NodeID, ok bool) {
	n := &nodes[i]
	if n.Op != OpAttention || len(n.Shape) != 4 {
		return 0, 0, false
	}
	repeated := func(id NodeID) (NodeID, bool) {
		r := &nodes[id]
		if r.Op != OpReshape || len(r.Shape) != 4 || nodes[r.Args[0]].Op != OpBroadcast {
			return 0, false
		}
		b := r.Args[0]
		bs, in := nodes[b].Shape, &nodes[nodes[b].Args[0]]
		if len(bs) != 5 || in.Op != OpReshape || !in.Shape.Equal(Shape{bs[0], bs[1], 1, bs[3], bs[4]}) || bs[2] < 2 ||
			!r.Shape.Equal(Shape{bs[0], bs[1] * bs[2], bs[3], bs[4]}) {
			return 0, false
		}
		return b, true
	}
	kb, ok1 := repeated(n.Args[1])
	vb, ok2 := repeated(n.Args[2])
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	ks, vs := nodes[kb].Shape, nodes[vb].Shape
	if ks[1] != vs[1] || ks[2] != vs[2] {
		return 0, 0, false
	}
	return kb, vb, true
}

// attentionPlan is what matchAttention found: the attention node's
// arguments (k the [...,T,D] keys, or with transpose their [...,D,T]
// transpose), its mask (-1: none) and scale.
type attentionPlan struct {
	q, k, v, mask NodeID
	transpose     bool
	causal        bool
	scale         float32
}

// matchAttention reports whether node i is matmul(softmax(scores), v) as
// FuseAttention describes, and its plan.
func matchAttention(g *Graph, users []int, i NodeID) (attentionPlan, bool) {
	nodes := g.Nodes
	n := &nodes[i]
	if n.Op != OpMatmul || n.DType != F32 {
		return attentionPlan{}, false
	}
	pid, v := n.Args[0], n.Args[1]
	ps, vs := nodes[pid].Shape, nodes[v].Shape
	r := len(ps)
	if r < 2 || r > MaxAttentionRank || len(vs) != r || !ps[:r-2].Equal(vs[:r-2]) || ps[r-1] < 2 || users[pid] != 1 {
		return attentionPlan{}, false
	}
	is := func(id NodeID, op Op) *Node {
		if nodes[id].Op != op {
			return nil
		}
		return &nodes[id]
	}
	// row is whether id reduces x's last axis only, keeping it.
	row := func(id NodeID, op Op, x NodeID) bool {
		m := is(id, op)
		want := append(slices.Clone(ps[:r-1]), 1)
		return m != nil && m.Args[0] == x && m.Shape.Equal(want)
	}
	// under is the node that a broadcast (if any) of id reads.
	under := func(id NodeID) NodeID {
		if nodes[id].Op == OpBroadcast {
			return nodes[id].Args[0]
		}
		return id
	}
	div := is(pid, OpDiv)
	if div == nil {
		return attentionPlan{}, false
	}
	e := div.Args[0]
	ex := is(e, OpExp)
	if ex == nil || !row(under(div.Args[1]), OpSum, e) {
		return attentionPlan{}, false
	}
	sub := is(ex.Args[0], OpSub)
	if sub == nil {
		return attentionPlan{}, false
	}
	x := sub.Args[0]
	if !row(under(sub.Args[1]), OpMax, x) || !nodes[x].Shape.Equal(ps) {
		return attentionPlan{}, false
	}
	p := attentionPlan{mask: -1, v: v}
	y := x
	if w, m, causal, ok := maskedWhere(nodes, x, ps); ok {
		y, p.mask, p.causal = w, m, causal
	} else if a := is(x, OpAdd); a != nil {
		for side := range 2 {
			if z, s, ok := scaled(nodes, a.Args[side]); ok && nodes[z].Op == OpMatmul {
				y, p.mask, p.scale = a.Args[side], under(a.Args[1-side]), s
				break
			}
		}
		if p.mask < 0 {
			return attentionPlan{}, false
		}
	}
	z, s, ok := scaled(nodes, y)
	if !ok {
		return attentionPlan{}, false
	}
	p.scale = s
	mm := is(z, OpMatmul)
	if mm == nil || !nodes[z].Shape.Equal(ps) {
		return attentionPlan{}, false
	}
	p.q = mm.Args[0]
	qs, kts := nodes[p.q].Shape, nodes[mm.Args[1]].Shape
	if len(qs) != r || len(kts) != r || !qs[:r-2].Equal(ps[:r-2]) || !kts[:r-2].Equal(ps[:r-2]) {
		return attentionPlan{}, false
	}
	p.k, p.transpose = mm.Args[1], true
	if kt := &nodes[mm.Args[1]]; kt.Op == OpTranspose || kt.Op == OpPermute && swapsLast(OpPermute.Attr(kt.Attrs, "perm")) {
		p.k, p.transpose = kt.Args[0], false
	}
	return p, true
}

// scaled returns the node that y scales and the scale: y itself by 1, a
// mul_scalar's, a mul by a full (through a broadcast), or a division by a
// power of two as the product by its reciprocal.
func scaled(nodes []Node, y NodeID) (NodeID, float32, bool) {
	n := &nodes[y]
	full := func(id NodeID) (float32, bool) {
		for nodes[id].Op == OpBroadcast || nodes[id].Op == OpReshape {
			id = nodes[id].Args[0]
		}
		return nodes[id].Scalar, nodes[id].Op == OpFull
	}
	recip := func(c float32) (float32, bool) {
		m, _ := math.Frexp(float64(c))
		r := 1 / c
		return r, (m == 0.5 || m == -0.5) && !math.IsInf(float64(r), 0) && r != 0 && 1/r == c
	}
	switch n.Op {
	case OpMulScalar:
		return n.Args[0], n.Scalar, true
	case OpDivScalar:
		r, ok := recip(n.Scalar)
		return n.Args[0], r, ok
	case OpMul:
		for side := range 2 {
			if c, ok := full(n.Args[side]); ok {
				return n.Args[1-side], c, true
			}
		}
	case OpDiv:
		if c, ok := full(n.Args[1]); ok {
			r, ok := recip(c)
			return n.Args[0], r, ok
		}
	case OpMatmul:
		return y, 1, true
	}
	return 0, 0, false
}

// swapsLast reports whether perm swaps the last two axes and keeps the
// others.
func swapsLast(perm []int) bool {
	r := len(perm)
	for d, p := range perm {
		want := d
		if d == r-2 {
			want = r - 1
		} else if d == r-1 {
			want = r - 2
		}
		if p != want {
			return false
		}
	}
	return r >= 2
}

// maskedWhere reports whether x, of the scores' shape s, is a
// masked_fill(c, -Inf) of scores y as the importer writes ONNX's Where,
// mask(a, -Inf) + mask(b, y) (either order, each through broadcasts and
// reshapes) with a and b complementary 0/1 values (one is 1 - the other;
// see boolValued): Where(c, -Inf, y) has a = c, Where(c, y, -Inf) has
// b = c. It returns y, and either causal (a is an unnamed constant that is
// 1 exactly past the diagonal: the scores are causal attention's, bit for
// bit, -Inf selected) or the mask node mask(a, -Inf), which the attention
// adds to y: -0 where a is 0, so y + -0 is y there as the where's
// -0 + y is; -Inf where a is 1, which is the where's -Inf except where y
// itself is +Inf or NaN (then the sum is NaN, where the where gives
// -Inf). That one difference is the additive mask's, as PyTorch's
// scaled_dot_product_attention and ONNX's Attention define a boolean
// mask: a masked score that overflowed makes its row NaN.
//
// The fill may be float32's lowest (-MaxFloat32) instead of -Inf where
// the condition is the causal constant (transformers' GPT-2 writes
// Where(bias[..., :T, :T], scores, finfo.min) at a full sequence): causal
// attention's -Inf gives the where's bits except in a row whose every
// unmasked score is -Inf or exactly the lowest (the row's maximum is then
// the lowest: the where spreads the row over its masked keys, exp(0) each,
// where causal attention gives NaN or the unmasked keys alone). Every
// finite score is at least the lowest, so otherwise both rows have the
// same maximum m > lowest, and exp(lowest − m) is +0, as exp(-Inf − m)
// is. An added mask of the lowest is not fused (s + lowest is not the
// lowest for |s| ≥ 2^103).
func maskedWhere(nodes []Node, x NodeID, s Shape) (y, mask NodeID, causal, ok bool) {
	under := func(id NodeID) NodeID {
		for nodes[id].Op == OpBroadcast || nodes[id].Op == OpReshape {
			id = nodes[id].Args[0]
		}
		return id
	}
	// not reports whether a is 1 - b as the importer writes it.
	not := func(a, b NodeID) bool {
		one := &nodes[under(a)]
		return one.Op == OpAddScalar && one.Scalar == 1 && nodes[one.Args[0]].Op == OpNeg && under(nodes[one.Args[0]].Args[0]) == under(b)
	}
	a := &nodes[x]
	if a.Op != OpAdd {
		return 0, 0, false, false
	}
	for side := range 2 {
		m1, m2 := &nodes[under(a.Args[side])], &nodes[under(a.Args[1-side])]
		if m1.Op != OpMask || m2.Op != OpMask {
			continue
		}
		inf := &nodes[under(m1.Args[1])]
		lowest := inf.Op == OpFull && inf.Scalar == -math.MaxFloat32
		if inf.Op != OpFull || !math.IsInf(float64(inf.Scalar), -1) && !lowest {
			continue
		}
		c1, c2 := m1.Args[0], m2.Args[0]
		if !not(c2, c1) && !not(c1, c2) || !boolValued(nodes, c1, 8) || !boolValued(nodes, c2, 8) {
			continue
		}
		if c := under(c1); causalConstant(&nodes[c], s, false) {
			return m2.Args[1], -1, true, true
		}
		if one := &nodes[under(c1)]; one.Op == OpAddScalar && causalConstant(&nodes[under(nodes[one.Args[0]].Args[0])], s, true) {
			return m2.Args[1], -1, true, true
		}
		if lowest { // added, float32's lowest would move a score past ±2^103 (see above)
			continue
		}
		return m2.Args[1], under(a.Args[side]), false, true
	}
	return 0, 0, false, false
}

// boolValued reports whether every element of node id is 0 or 1, as the
// importer's run-time bools are: a cast of a bool, an unnamed constant of
// 0s and 1s, 1 - x, x·y or the larger of x and y (not, and, or) of such
// values, through broadcasts and reshapes, looking depth nodes deep.
func boolValued(nodes []Node, id NodeID, depth int) bool {
	n := &nodes[id]
	if depth == 0 {
		return false
	}
	switch n.Op {
	case OpBroadcast, OpReshape:
		return boolValued(nodes, n.Args[0], depth-1)
	case OpCast:
		return nodes[n.Args[0]].DType == Bool
	case OpInput:
		if n.Name != "" || n.Param || n.DType != F32 || len(n.Data) != n.Shape.Len() {
			return false
		}
		for _, v := range n.Data {
			if math.Float32bits(v) != 0 && v != 1 {
				return false
			}
		}
		return true
	case OpAddScalar:
		return n.Scalar == 1 && nodes[n.Args[0]].Op == OpNeg && boolValued(nodes, nodes[n.Args[0]].Args[0], depth-1)
	case OpMul, OpMaximum:
		return boolValued(nodes, n.Args[0], depth-1) && boolValued(nodes, n.Args[1], depth-1)
	}
	return n.DType == Bool
}

// causalConstant reports whether n is an unnamed constant input of [S,T]
// elements (its last two axes s's) that is > 0 exactly where j > i, or
// with flip, where 1 - n is (n is 0 exactly where j > i).
func causalConstant(n *Node, s Shape, flip bool) bool {
	r, cs := len(s), n.Shape
	if n.Op != OpInput || n.Name != "" || n.Param || n.DType != F32 || len(n.Data) == 0 || len(cs) < 2 {
		return false
	}
	S, T := s[r-2], s[r-1]
	if cs[len(cs)-2] != S || cs[len(cs)-1] != T || cs.Len() != S*T {
		return false
	}
	for i := range S {
		for j := range T {
			v := n.Data[i*T+j]
			if flip {
				v = 1 - v
			}
			if (v > 0) != (j > i) {
				return false
			}
		}
	}
	return true
}
