package ir

// permute: numpy's transpose of any rank, a view (fusion reads its
// argument through permuted strides).

// permuteAttrs declares permute's one attribute: perm, the argument's axis
// that each output axis is, a permutation of 0..rank-1.
var permuteAttrs = []AttrSpec{{Name: "perm", Len: 0}}

func permuteShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	perm := op.Attr(attrs, "perm")
	s := args[0]
	if len(perm) != len(s) {
		return nil, Errorf(CodeInvalidGraph, node, "perm", "permute of rank %d needs %d axes in perm, got %v", len(s), len(s), perm)
	}
	seen := make([]bool, len(s))
	out := make(Shape, len(s))
	for k, p := range perm {
		if p < 0 || p >= len(s) || seen[p] {
			return nil, Errorf(CodeInvalidGraph, node, "perm", "perm %v is not a permutation of 0..%d", perm, len(s)-1)
		}
		seen[p] = true
		out[k] = s[p]
	}
	return out, nil
}

// permuteGrad is permute's rule: the gradient permuted back by the
// inverse permutation (axis perm[k] of the argument is axis k of the
// output). It moves values only, so it changes no bit.
func permuteGrad(d Diff, k int) (Val, bool) {
	perm := OpPermute.Attr(d.Attrs(), "perm")
	inv := make([]int, len(perm))
	for k, p := range perm {
		inv[p] = k
	}
	// perm's layout in Attrs: its count, then its values (AttrSpec).
	return d.ApplyAttrs(OpPermute, append([]int{len(inv)}, inv...), d.Grad()), true
}

// Permute returns t with its axes in the order perm (numpy's transpose:
// output axis k is t's axis perm[k]). It is a view: no data moves until a
// kernel reads it.
func (t Tensor) Permute(perm ...int) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpPermute, map[string][]int{"perm": perm})
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpPermute, a)
}

// PermuteStrides returns the strides that read, in permute's output
// order, an argument whose axes have strides st.
func PermuteStrides(st []int, perm []int) []int {
	out := make([]int, len(perm))
	for k, p := range perm {
		out[k] = st[p]
	}
	return out
}

// PermuteSources returns, for each element of permute's output (row-major),
// the row-major index of the argument element it holds: the argument has
// shape s, the output's axis k is its axis perm[k].
func PermuteSources(s Shape, perm []int) []int {
	st := PermuteStrides(RowMajor(s), perm)
	out := make(Shape, len(perm))
	for k, p := range perm {
		out[k] = s[p]
	}
	src := make([]int, out.Len())
	pos := make([]int, len(out))
	for i := range src {
		j := 0
		for k, p := range pos {
			j += p * st[k]
		}
		src[i] = j
		for k := len(pos) - 1; k >= 0; k-- {
			if pos[k]++; pos[k] < out[k] {
				break
			}
			pos[k] = 0
		}
	}
	return src
}
