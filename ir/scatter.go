package ir

// The scatters (ONNX ScatterND, ScatterElements and the deprecated
// Scatter): data with the elements that run-time indices name replaced by
// (or combined with) updates. Arguments are (data, updates, indices): the
// indices last, as every indexed row has them (TypeRule.Index). Their
// meaning, one definition for every backend (cpuref.Scatter computes it):
//
//   - the result starts as a copy of data;
//   - the update elements are applied one at a time in row-major order
//     over the updates' shape, each to the data element its index names
//     (ScatterOf): reduction none stores the update, so when two updates
//     name one element the later one in that order wins (ONNX leaves
//     duplicates undefined; gpucc defines them so, on every backend, as
//     ONNX's reference implementation does), and add, mul, max and min
//     combine the element with the update by the op table's add, mul,
//     maximum and minimum rows (integers wrap; a float16 or bfloat16
//     result is rounded after every combination; maximum and minimum
//     return the first NaN), so the updates aimed at one element fold
//     into it in that order, starting from data's value;
//   - an index is a run-time int32 or int64 value; a negative one counts
//     from the end of its dimension once, and one outside [-d, d) fails
//     the run with invalid_input naming the node (never a write out of
//     bounds), whichever element it is.
//
// Reductions of bool are numpy's (ONNX's reference): add and max are or,
// mul and min are and. A scatter does the output plus the updates on
// the host (cpuref, C) and on WebGPU (codegen/wgsl's linear passes: a
// copy, then a pass over the updates), where an element that two or more
// updates aim at is folded, under a reduction, from every update that
// may aim at it (codegen.ScatterGatherOf's candidates: the index rows for
// scatter_nd, the indices along the axis for scatter_elements), in the
// reference's order. Its cost, which MaxOps bounds, is that work at its
// most: the output plus the updates, plus, under a reduction, the
// candidates for each element updated (at most the updates, at most the
// output), so a host's operation limit stands for the work any backend
// may do (4096 rows of an embedding's gradient into [50257, 768] are
// 1.3e10). WebGL2's kernels compute each output element from its
// candidates (no atomics, no scattered stores): codegen/glsl refuses
// one whose checks, the output times the candidates, pass MaxGLSLScatterChecks.

// ScatterReduction is a scatter's reduction attribute.
type ScatterReduction int

// The reductions, as the attribute's values: ONNX's names.
const (
	ScatterNone ScatterReduction = iota
	ScatterAdd
	ScatterMul
	ScatterMax
	ScatterMin
	numScatterReductions
)

var scatterReductionNames = [numScatterReductions]string{"none", "add", "mul", "max", "min"}

func (r ScatterReduction) String() string {
	if r >= 0 && r < numScatterReductions {
		return scatterReductionNames[r]
	}
	return "reduction?"
}

// ParseScatterReduction returns the reduction ONNX names name.
func ParseScatterReduction(name string) (ScatterReduction, bool) {
	for r, n := range scatterReductionNames {
		if n == name {
			return ScatterReduction(r), true
		}
	}
	return 0, false
}

// Combine is the elementwise op of the table that combines an element with
// an update (add, mul, maximum, minimum), OpInvalid for none.
func (r ScatterReduction) Combine() Op {
	return [numScatterReductions]Op{OpInvalid, OpAdd, OpMul, OpMaximum, OpMinimum}[r]
}

// scatterNDAttrs: the reduction (ScatterReduction).
var scatterNDAttrs = []AttrSpec{{Name: "reduction", Len: 1, Default: []int{0}}}

// scatterElementsAttrs: the axis of the data (negative from the end) and
// the reduction.
var scatterElementsAttrs = []AttrSpec{{Name: "axis", Len: 1, Default: []int{0}}, {Name: "reduction", Len: 1, Default: []int{0}}}

// ScatterReductionOf returns a scatter node's reduction.
func ScatterReductionOf(op Op, attrs []int) ScatterReduction {
	return ScatterReduction(op.Attr(attrs, "reduction")[0])
}

func checkReduction(node int, op Op, attrs []int) *Error {
	if r := op.Attr(attrs, "reduction")[0]; r < 0 || r >= int(numScatterReductions) {
		return Errorf(CodeInvalidGraph, node, "reduction", "%v's reduction %d is not one of 0 (none), 1 (add), 2 (mul), 3 (max), 4 (min)", op, r)
	}
	return nil
}

// scatterNDShape: data [d0, …, dr-1], indices [q…, k] with 1 ≤ k ≤ r and
// updates [q…, dk, …, dr-1]; the result has data's shape.
func scatterNDShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	data, upd, idx := args[0], args[1], args[2]
	if err := checkReduction(node, op, attrs); err != nil {
		return nil, err
	}
	if len(data) == 0 || len(idx) == 0 {
		return nil, Errorf(CodeInvalidGraph, node, "c", "%v of data %v by indices %v: both need rank 1 or more", op, data, idx)
	}
	k := idx[len(idx)-1]
	if k > len(data) {
		return nil, Errorf(CodeInvalidGraph, node, "c", "%v's index rows of %d into data of rank %d", op, k, len(data))
	}
	want := append(append(Shape{}, idx[:len(idx)-1]...), data[k:]...)
	if len(want) == 0 {
		want = Shape{}
	}
	if !upd.Equal(want) {
		return nil, Errorf(CodeInvalidGraph, node, "b", "%v's updates %v: indices %v into data %v take %v", op, upd, idx, data, want)
	}
	return data, nil
}

// scatterElementsShape: data and indices of one rank, each of the
// indices' dimensions but the axis's at most data's (as gather_elements),
// and updates of the indices' shape; the result has data's shape.
func scatterElementsShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	data, upd, idx := args[0], args[1], args[2]
	if err := checkReduction(node, op, attrs); err != nil {
		return nil, err
	}
	if err := alongAxis(node, op, data, idx, attrs, "c"); err != nil {
		return nil, err
	}
	if !upd.Equal(idx) {
		return nil, Errorf(CodeInvalidGraph, node, "b", "%v's updates %v and indices %v: the shapes differ", op, upd, idx)
	}
	return data, nil
}

// scatterNDCost: the output plus the updates, plus, under a reduction
// (or without the attributes, attrs nil: a bound), the index rows
// (indices [..., k]: args[2]'s elements over its last dimension) for each
// element updated (see scatterCost).
func scatterNDCost(args []Shape, out Shape, attrs []int) int64 {
	if len(args) < 3 {
		return int64(out.Len())
	}
	idx := args[2]
	rows := 1
	if len(idx) > 0 {
		rows = idx[:len(idx)-1].Len()
	}
	return scatterCost(out, args[1], rows, len(attrs) < 1 || attrs[0] != int(ScatterNone))
}

// scatterElementsCost: the output plus the updates, plus, under a
// reduction, the indices along the axis for each element updated;
// without the attributes (attrs nil), along the indices' longest
// dimension, a bound.
func scatterElementsCost(args []Shape, out Shape, attrs []int) int64 {
	if len(args) < 3 {
		return int64(out.Len())
	}
	idx := args[2]
	along := 1
	for _, d := range idx {
		along = max(along, d)
	}
	if len(attrs) >= 2 { // axis, reduction: a validated node's
		if ax := IndexAxis(OpScatterElements, attrs, len(idx)); ax >= 0 && ax < len(idx) {
			along = idx[ax]
		}
	}
	return scatterCost(out, args[1], along, len(attrs) < 2 || attrs[1] != int(ScatterNone))
}

// scatterCost is a scatter's work at its most (ir/scatter.go's doc): the
// output copied, each update marked and applied, and with fold (a
// reduction) the candidates of each element updated, which are at most
// the updates and at most the output.
func scatterCost(out, upd Shape, candidates int, fold bool) int64 {
	c := SatAdd(int64(out.Len()), int64(upd.Len()))
	if fold {
		c = SatAdd(c, SatMul(int64(min(out.Len(), upd.Len())), int64(candidates)))
	}
	return c
}

// MaxGLSLScatterChecks bounds the checks of a scatter's WebGL2 kernel, the
// output times the candidates (codegen.ScatterGather): ir's cost counts
// the linear form of the other backends, so the output-side one is
// refused past the seed's operation limit (DefaultLimits' MaxOps).
const MaxGLSLScatterChecks = 100_000_000

// Scatter is where a scatter node's updates go: update element u
// (row-major over the updates' shape) lands on data element
//
//	Base(u) + Σ_j wrap_j(indices[Index(u) + j]) · Steps[j]
//
// for j < len(Steps), where Base and Index are offsets over the updates'
// shape (Operand strides; Buffer unused) and wrap_j takes an index in
// [-Bounds[j], Bounds[j]) into [0, Bounds[j]) (outside it the run fails).
type Scatter struct {
	Base, Index Operand
	Steps       []int
	Bounds      []int
	Reduction   ScatterReduction
}

// ScatterOf returns node n's map (n a validated scatter_nd or
// scatter_elements of graph g).
func ScatterOf(g *Graph, n *Node) Scatter {
	ds, us, is := g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[1]].Shape, g.Nodes[n.Args[2]].Shape
	dst := RowMajor(ds)
	s := Scatter{Reduction: ScatterReductionOf(n.Op, n.Attrs)}
	if n.Op == OpScatterElements {
		ax := IndexAxis(n.Op, n.Attrs, len(ds))
		base := append([]int{}, dst...)
		base[ax] = 0
		s.Base = Operand{Shape: us, Strides: base}
		s.Index = Operand{Shape: us, Strides: RowMajor(is)}
		s.Steps, s.Bounds = []int{dst[ax]}, []int{ds[ax]}
		return s
	}
	k := is[len(is)-1]
	q := len(is) - 1 // the index rows' rank: updates are [q…, ds[k:]…]
	ist := RowMajor(is)
	base := make([]int, len(us))
	idx := make([]int, len(us))
	copy(base[q:], dst[k:])
	copy(idx[:q], ist[:q])
	s.Base = Operand{Shape: us, Strides: base}
	s.Index = Operand{Shape: us, Strides: idx}
	s.Steps, s.Bounds = dst[:k], ds[:k]
	return s
}

// Targets returns, for each update element of s, the data element it
// lands on, given the indices' values (int64, as the node holds them), or
// false and the first index (its element) outside its bounds.
func (s Scatter) Targets(idx []int64) (targets []int, bad int, ok bool) {
	k := len(s.Steps)
	for e, v := range idx {
		d := int64(s.Bounds[e%k])
		if v < -d || v >= d {
			return nil, e, false
		}
	}
	n := s.Base.Shape.Len()
	targets = make([]int, n)
	pos := make([]int, len(s.Base.Shape))
	for u := range n {
		t, at := 0, 0
		for d, p := range pos {
			t += p * s.Base.Strides[d]
			at += p * s.Index.Strides[d]
		}
		for j := range k {
			v, d := idx[at+j], int64(s.Bounds[j])
			if v < 0 {
				v += d
			}
			t += int(v) * s.Steps[j]
		}
		targets[u] = t
		for d := len(pos) - 1; d >= 0; d-- { // the next position, row-major
			if pos[d]++; pos[d] < s.Base.Shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return targets, 0, true
}

// ScatterND returns t with the slices that the int32 or int64 index rows
// idx [q…, k] name replaced by (or combined with, by r) upd [q…, t's
// dimensions from k]: ONNX's ScatterND.
func (t Tensor) ScatterND(idx, upd Tensor, r ScatterReduction) Tensor {
	return t.ApplyAttrs(OpScatterND, []int{int(r)}, upd, idx)
}

// ScatterElements returns t with element p (p[axis] = idx[p], axis
// negative from the end) replaced by (or combined with, by r) upd[p]:
// ONNX's ScatterElements.
func (t Tensor) ScatterElements(idx, upd Tensor, axis int, r ScatterReduction) Tensor {
	return t.ApplyAttrs(OpScatterElements, []int{axis, int(r)}, upd, idx)
}

// gatherGrad is gather's rule: the data's gradient is a scatter-add of the
// output gradient g, the embedding gradient. Data [outer…, d, inner…]
// gathered by indices of q elements gives [outer…, q…, inner…]: g as
// [outer, q, inner] is added along axis 1 into +0s of [outer, d, inner]
// at the indices broadcast to g's shape, in g's row-major order (each
// element of the data gets the gradients of the outputs that read it,
// by ascending index position). The indices get none.
func gatherGrad(d Diff, k int) (Val, bool) {
	if k != 0 {
		return Val{}, false
	}
	ds, is := d.Shape(d.Arg(0)), d.Shape(d.Arg(1))
	ax := GatherAxis(d.Attrs(), len(ds))
	outer, inner := Shape(ds[:ax]).Len(), Shape(ds[ax+1:]).Len()
	g3 := Shape{outer, is.Len(), inner}
	idx := d.Apply(OpBroadcast, g3, reshape(d, d.Arg(1), Shape{1, is.Len(), 1}))
	acc := d.ApplyAttrs(OpScatterElements, []int{1, int(ScatterAdd)}, d.Full(Shape{outer, ds[ax], inner}, 0), reshape(d, d.Grad(), g3), idx)
	return reshape(d, acc, ds), true
}

// gatherElementsGrad is gather_elements' rule: the data's gradient is
// g added at the indices along the axis into +0s of the data's shape
// (scatter_elements' add, in g's row-major order). The indices get none.
func gatherElementsGrad(d Diff, k int) (Val, bool) {
	if k != 0 {
		return Val{}, false
	}
	ds := d.Shape(d.Arg(0))
	ax := IndexAxis(OpGatherElements, d.Attrs(), len(ds))
	return d.ApplyAttrs(OpScatterElements, []int{ax, int(ScatterAdd)}, d.Full(ds, 0), d.Grad(), d.Arg(1)), true
}
