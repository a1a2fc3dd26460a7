package onnx

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gpucc/gpucc/ir"
)

// The losses and the gathers they need. Class labels and gather indices
// are integers, so they are constants at import; what they select from a
// run-time tensor is computed exactly, with no new op:
//
//	M[…, k, c, …] = equal(c, idx[…, k, …])     (1 or 0; iota and idx are embedded)
//	y[…, k, …]    = sum over c of mask(M, x)   (x[…, idx, …], or -0 where no c matches)
//
// mask gives x or -0, and x + -0 is x bit for bit (NaN, ±0 and ±Inf
// included), so the one selected element passes through the sum
// unchanged. The work is C times the output's elements: fine for the
// class counts of a loss, a slice or a concatenation of a few pieces; the
// mask must fit a tensor (Limits.MaxElements), so a large embedding
// table is refused.

// maxExactIndex bounds the indices and class counts compared as float32
// values: every integer below 2^24 is a float32 exactly.
const maxExactIndex = 1 << 24

// gatherAlong returns x's elements along axis at the constant indices idx
// (GatherElements: y has idx's shape, y[…, k, …] = x[…, idx[…, k, …], …]).
// idx holds normalised indices in [0, x.Shape()[axis]) or -1, which
// selects nothing and gives -0. idx's other dimensions must equal x's.
func (c *importer) gatherAlong(x ir.Tensor, axis int, idx []int64, shape []int) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	if len(shape) != len(s) {
		return ir.Tensor{}, c.invalid("indices of rank %d for data of rank %d", len(shape), len(s))
	}
	for k := range s {
		if k != axis && shape[k] != s[k] {
			return ir.Tensor{}, c.refuse("indices of shape %v for data of shape %v: gpucc gathers along the axis only where the other dimensions are equal", shape, s)
		}
	}
	if len(s)+1 > ir.MaxRank {
		return ir.Tensor{}, c.refuse("a gather from rank %d; gpucc's gathers need rank %d at most", len(s), ir.MaxRank-1)
	}
	n := s[axis]
	if n >= maxExactIndex {
		return ir.Tensor{}, c.refuse("a gather along an axis of %d elements, over 2^24", n)
	}
	if _, ok := dimProduct(c.l.MaxElements, append([]int{n}, shape...)...); !ok {
		work := "more than 2^63-1"
		if w, ok := dimProduct(math.MaxInt64, append([]int{n}, shape...)...); ok {
			work = strconv.FormatInt(w, 10)
		}
		return ir.Tensor{}, c.refuse("a gather of shape %v from an axis of %d at run time: its mask of %s elements is over the %d a tensor may hold (gpucc gathers from run-time tensors by masks, not yet by index)", shape, n, work, c.l.MaxElements)
	}
	// [… K, 1, …] indices, [… 1, C, …] classes and data.
	ishape := append(append(append(ir.Shape{}, shape[:axis+1]...), 1), shape[axis+1:]...)
	cshape := make(ir.Shape, len(s)+1)
	for k := range cshape {
		cshape[k] = 1
	}
	cshape[axis+1] = n
	xshape := append(append(append(ir.Shape{}, s[:axis]...), 1), s[axis:]...)
	fi, err := c.newConst(Float32, ishape)
	if err != nil {
		return ir.Tensor{}, err
	}
	for i, v := range idx {
		fi.Float32[i] = float32(v)
	}
	iota, err := c.newConst(Float32, cshape)
	if err != nil {
		return ir.Tensor{}, err
	}
	for i := range iota.Float32 {
		iota.Float32[i] = float32(i)
	}
	ti, err := c.runtime(&value{c: fi}, "the indices")
	if err != nil {
		return ir.Tensor{}, err
	}
	tc, err := c.runtime(&value{c: iota}, "the classes")
	if err != nil {
		return ir.Tensor{}, err
	}
	m := tc.Apply(ir.OpEqual, ti)
	return m.Apply(ir.OpMask, reshape(x, xshape)).SumAxes(false, axis+1), nil
}

// gatherElementsOp is GatherElements with constant indices: folded on a
// constant, gatherAlong on a run-time tensor.
func gatherElementsOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	if iv := c.in(1); iv != nil && iv.set || v.set && v.rt.DType() != ir.F32 {
		return c.gatherElementsRT()
	}
	idx, err := c.konst(1, "indices")
	if err != nil {
		return nil, err
	}
	if !idx.Type.isInt() {
		return nil, c.invalid("indices have element type %v", idx.Type)
	}
	s := v.shape()
	if len(s) == 0 {
		return nil, c.invalid("a gather from a scalar")
	}
	axis, err := c.axisOf(c.attrInt("axis", 0), len(s))
	if err != nil {
		return nil, err
	}
	if len(idx.Shape) != len(s) {
		return nil, c.invalid("indices of rank %d for data of rank %d", len(idx.Shape), len(s))
	}
	n := int64(s[axis])
	norm := make([]int64, len(idx.Int64))
	for i, j := range idx.Int64 {
		if j < -n || j >= n {
			return nil, c.invalid("index %d is out of range for axis %d of size %d", j, axis, n)
		}
		if j < 0 {
			j += n
		}
		norm[i] = j
	}
	if !v.set {
		t := v.c
		for k := range s {
			if k != axis && idx.Shape[k] > s[k] {
				return nil, c.invalid("indices of shape %v for data of shape %v", idx.Shape, s)
			}
		}
		st, ist := strides(t.Shape), strides(idx.Shape)
		r, err := c.take(t, idx.Shape, func(pos []int) int {
			j, ii := 0, 0
			for k, p := range pos {
				ii += p * ist[k]
			}
			for k, p := range pos {
				if k == axis {
					p = int(norm[ii])
				}
				j += p * st[k]
			}
			return j
		})
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
	y, err := c.gatherAlong(v.rt, axis, norm, idx.Shape)
	if err != nil {
		return nil, err
	}
	return one(rtValue(y))
}

// gatherElementsRT is GatherElements of run-time indices (or of run-time
// typed data): ir's gather_elements, whose index outside its axis fails
// the run with invalid_input.
func (c *importer) gatherElementsRT() ([]value, *ir.Error) {
	data, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	idx, err := c.indices(1)
	if err != nil {
		return nil, err
	}
	s := data.Shape()
	if len(s) == 0 || len(idx.Shape()) != len(s) {
		return nil, c.invalid("indices of shape %v for data of shape %v", idx.Shape(), s)
	}
	axis, err := c.axisOf(c.attrInt("axis", 0), len(s))
	if err != nil {
		return nil, err
	}
	return one(rtValue(data.GatherElements(idx, axis)))
}

// labels returns the loss's constant class labels (input 1, of shape
// [N, d1, …] for scores of shape [N, C, d1, …]) with each one equal to
// ignore_index as -1, and how many are not ignored.
func (c *importer) labels(scores []int) ([]int64, []int, int, *ir.Error) {
	t, err := c.konst(1, "target")
	if err != nil {
		return nil, nil, 0, err
	}
	if !t.Type.isInt() || t.Type == Bool {
		return nil, nil, 0, c.invalid("target has element type %v, not an integer type", t.Type)
	}
	if len(scores) < 2 {
		return nil, nil, 0, c.invalid("scores of shape %v; a loss needs [N, C, …]", scores)
	}
	want := append([]int{scores[0]}, scores[2:]...)
	if !ir.Shape(t.Shape).Equal(want) {
		return nil, nil, 0, c.invalid("target of shape %v for scores of shape %v (want %v)", t.Shape, scores, want)
	}
	classes := int64(scores[1])
	ii, hasII := int64(0), c.attr("ignore_index") != nil
	if hasII {
		ii = c.attrInt("ignore_index", 0)
	}
	out := make([]int64, len(t.Int64))
	valid := 0
	for i, l := range t.Int64 {
		switch {
		case hasII && l == ii:
			out[i] = -1
		case l < 0 || l >= classes:
			return nil, nil, 0, c.invalid("target %d is out of range for %d classes", l, classes)
		default:
			out[i] = l
			valid++
		}
	}
	return out, t.Shape, valid, nil
}

// nllLoss is NegativeLogLikelihoodLoss of the run-time log-probabilities
// x ([N, C, d1, …]), as ONNX's reference computes it:
//
//	l[n, d] = -x[n, t[n, d], d]                 (+0 where t is ignore_index)
//	w[n, d] = weight[t[n, d]]                   (0 where ignored; 1 without weights)
//	none: w·l    sum: sum(w·l)    mean: sum(w·l)/sum(w), or mean(l) with neither weights nor ignore_index
//
// The gathers are gatherAlong's; an ignored label's gathered -0 is made
// the reference's +0 by a where (mask(v, y) + mask(1-v, 0)).
func (c *importer) nllLoss(x ir.Tensor) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	if v := c.in(1); v != nil && v.set {
		return c.nllLossRT(x)
	}
	t, tshape, valid, err := c.labels(s)
	if err != nil {
		return ir.Tensor{}, err
	}
	red := "mean"
	if a := c.attr("reduction"); a != nil {
		red = string(a.s)
	}
	if red != "mean" && red != "sum" && red != "none" {
		return ir.Tensor{}, c.invalid("reduction %q", red)
	}
	ishape := append([]int{s[0], 1}, s[2:]...)
	picked, err := c.gatherAlong(x, 1, t, ishape)
	if err != nil {
		return ir.Tensor{}, err
	}
	l := reshape(picked, tshape).Neg()
	ignored := valid < len(t)
	var where func(y ir.Tensor) (ir.Tensor, *ir.Error)
	if ignored {
		v, err := c.newConst(Float32, tshape)
		if err != nil {
			return ir.Tensor{}, err
		}
		for i, j := range t {
			v.Float32[i] = float32(b2i(j >= 0))
		}
		tv, err := c.runtime(&value{c: v}, "the labels' mask")
		if err != nil {
			return ir.Tensor{}, err
		}
		zero := c.b.Full(tv.Shape(), 0)
		where = func(y ir.Tensor) (ir.Tensor, *ir.Error) {
			return tv.Apply(ir.OpMask, y).Add(not(tv).Apply(ir.OpMask, zero)), nil
		}
	}
	var w ir.Tensor
	weighted := c.in(2) != nil
	if weighted {
		wt, err := c.rtIn(2)
		if err != nil {
			return ir.Tensor{}, err
		}
		if !wt.Shape().Equal(ir.Shape{s[1]}) {
			return ir.Tensor{}, c.invalid("weight of shape %v for %d classes", wt.Shape(), s[1])
		}
		g, err := c.gatherAlong(wt.Reshape(ir.Shape{1, s[1]}), 1, t, []int{1, len(t)})
		if err != nil {
			return ir.Tensor{}, err
		}
		w = reshape(g, tshape)
		if ignored {
			if w, err = where(w); err != nil {
				return ir.Tensor{}, err
			}
		}
		l = w.Mul(l)
	}
	if ignored {
		if l, err = where(l); err != nil {
			return ir.Tensor{}, err
		}
	}
	switch {
	case red == "none":
		return l, nil
	case red == "sum":
		return l.Sum(), nil
	case weighted:
		return l.Sum().Div(w.Sum()), nil
	case ignored:
		return l.Sum().DivScalar(float32(valid)), nil
	}
	return l.Sum().DivScalar(float32(len(t))), nil
}

func nllLossOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	l, err := c.nllLoss(x)
	if err != nil {
		return nil, err
	}
	return one(rtValue(l))
}

// sceLossOp is SoftmaxCrossEntropyLoss: the log-softmax along axis 1 as
// the reference computes it (log(e/sum(e)), e = exp(x - max(x))), then
// nllLoss. Output 1 is the log-softmax.
func sceLossOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	if len(x.Shape()) < 2 {
		return nil, c.invalid("scores of shape %v; a loss needs [N, C, …]", x.Shape())
	}
	e := x.Sub(x.MaxAxes(true, 1)).Exp()
	lp := e.Div(e.SumAxes(true, 1)).Log()
	l, err := c.nllLoss(lp)
	if err != nil {
		return nil, err
	}
	return []value{rtValue(l), rtValue(lp)}, nil
}

// nllLossRT is nllLoss of run-time labels t (int32 or int64, [N, d1, …]):
// the same formulas with the gathers ir's (gather_elements of x along the
// class axis, gather of the weights), each ignored label (t equal to
// ignore_index) gathering class 0 and then replaced by +0 (a where), and
// the mean's count of labels kept computed at run time (exact: a sum of
// ones below 2^24). A label outside [0, C) that is not ignored fails the
// run with invalid_input naming its element (as the folded labels are
// refused at import: ONNX's labels are in [0, C)).
func (c *importer) nllLossRT(x ir.Tensor) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	t, err := c.indices(1)
	if err != nil {
		return ir.Tensor{}, err
	}
	if len(s) < 2 {
		return ir.Tensor{}, c.invalid("scores of shape %v; a loss needs [N, C, …]", s)
	}
	tshape := append(ir.Shape{s[0]}, s[2:]...)
	if !t.Shape().Equal(tshape) {
		return ir.Tensor{}, c.invalid("target of shape %v for scores of shape %v (want %v)", t.Shape(), s, tshape)
	}
	red := c.attrStr("reduction", "mean")
	if red != "mean" && red != "sum" && red != "none" {
		return ir.Tensor{}, c.invalid("reduction %q", red)
	}
	ignored := c.attr("ignore_index") != nil
	var keep ir.Tensor
	zero := c.b.FullOf(ir.F32, tshape, 0, 0)
	where := func(y ir.Tensor) ir.Tensor {
		if !ignored {
			return y
		}
		return keep.Where(y, zero)
	}
	if ignored {
		ii := c.attrInt("ignore_index", 0)
		if lo, hi := t.DType().Range(); ii < lo || ii > hi {
			return ir.Tensor{}, c.refuse("ignore_index %d is outside the %v labels' range", ii, t.DType())
		}
		keep = t.ApplyTo(ir.Bool, ir.OpEqual, c.b.FullOf(t.DType(), tshape, 0, ii)).Apply(ir.OpNot)
		t = keep.Where(t, c.b.FullOf(t.DType(), tshape, 0, 0))
	}
	// ONNX's labels are in [0, C): a negative one that is not ignored
	// becomes C, which the gathers refuse (invalid_input, naming its
	// element) instead of counting it from the end.
	tz := c.b.FullOf(t.DType(), tshape, 0, 0)
	t = tz.ApplyTo(ir.Bool, ir.OpGreater, t).Where(c.b.FullOf(t.DType(), tshape, 0, int64(s[1])), t)
	ishape := append(ir.Shape{s[0], 1}, s[2:]...)
	l := where(reshape(x.GatherElements(reshape(t, ishape), 1), tshape).Neg())
	var w ir.Tensor
	weighted := c.in(2) != nil
	if weighted {
		wt, err := c.rtIn(2)
		if err != nil {
			return ir.Tensor{}, err
		}
		if !wt.Shape().Equal(ir.Shape{s[1]}) {
			return ir.Tensor{}, c.invalid("weight of shape %v for %d classes", wt.Shape(), s[1])
		}
		w = where(wt.Gather(t, 0))
		l = w.Mul(l)
	}
	switch {
	case red == "none":
		return l, nil
	case red == "sum":
		return l.Sum(), nil
	case weighted:
		return l.Sum().Div(w.Sum()), nil
	case ignored:
		return l.Sum().Div(keep.Cast(ir.F32).Sum()), nil
	}
	return l.Sum().DivScalar(float32(tshape.Len())), nil
}

// indexedData returns input k, the data of an indexed op, as a run-time
// tensor of its own dtype: a typed value as it is, a float32 one or a
// float32 constant embedded, an integer constant as int64.
func (c *importer) indexedData(k int) (ir.Tensor, *ir.Error) {
	v := c.in(k)
	switch {
	case v == nil:
		return ir.Tensor{}, c.invalid("input %d is missing", k)
	case v.isBool:
		t, err := c.typedOperand(k, ir.Bool)
		return t, err
	case v.isInt:
		return ir.Tensor{}, c.refuse("input %d is an index tensor computed at run time as float32 (the importer's ArgMax); gpucc indexes it as a typed tensor only", k)
	case v.set:
		return v.rt, nil
	case v.c.Type == Float32:
		return c.runtime(v, fmt.Sprintf("input %d", k))
	}
	return c.typedOperand(k, ir.I64)
}

// indices returns input k, an indexed op's indices, as a run-time int32 or
// int64 tensor (a constant as int64).
func (c *importer) indices(k int) (ir.Tensor, *ir.Error) {
	v := c.in(k)
	switch {
	case v == nil:
		return ir.Tensor{}, c.invalid("input %d (indices) is missing", k)
	case v.set && (v.rt.DType() == ir.I64 || v.rt.DType() == ir.I32):
		return v.rt, nil
	case v.set:
		return ir.Tensor{}, c.refuse("input %d (indices) is a run-time %v tensor, not int32 or int64", k, v.rt.DType())
	}
	return c.typedOperand(k, ir.I64)
}
