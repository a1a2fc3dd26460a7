package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// The ops that compute shapes and move data. On constants they fold; on
// run-time tensors they become views (reshape, broadcast, transpose) or
// are refused.

func constantOp(c *importer) ([]value, *ir.Error) {
	if len(c.n.attrs) != 1 {
		return nil, c.invalid("a Constant needs exactly one value attribute, got %d", len(c.n.attrs))
	}
	a := &c.n.attrs[0]
	var t *Tensor
	var err *ir.Error
	switch a.name {
	case "value":
		if a.t == nil {
			return nil, c.invalid("attribute value holds no tensor")
		}
		t, err = convertTensor(a.t, c.l, &c.storage, c.field()+".value")
	case "value_float":
		if t, err = c.newConst(Float32, nil); err == nil {
			t.Float32[0] = a.f
		}
	case "value_floats":
		if t, err = c.newConst(Float32, []int{len(a.floats)}); err == nil {
			copy(t.Float32, a.floats)
		}
	case "value_int":
		if t, err = c.newConst(Int64, nil); err == nil {
			t.Int64[0] = a.i
		}
	case "value_ints":
		if t, err = c.newConst(Int64, []int{len(a.ints)}); err == nil {
			copy(t.Int64, a.ints)
		}
	}
	if err != nil {
		return nil, err
	}
	return one(constValue(t))
}

func shapeOp(c *importer) ([]value, *ir.Error) {
	s := c.in(0).shape()
	r := len(s)
	clamp := func(v int64) int {
		if v < 0 {
			v += int64(r)
		}
		return int(min(max(v, 0), int64(r)))
	}
	start, end := clamp(c.attrInt("start", 0)), clamp(c.attrInt("end", int64(r)))
	if end < start {
		end = start
	}
	t, err := c.newConst(Int64, []int{end - start})
	if err != nil {
		return nil, err
	}
	for k := start; k < end; k++ {
		t.Int64[k-start] = int64(s[k])
	}
	return one(constValue(t))
}

func castOp(c *importer) ([]value, *ir.Error) { return c.castTo(DataType(c.attrInt("to", 0))) }

// castLikeOp is CastLike: Cast to the element type of input 1 (a run-time
// value's dtype, the importer's float32 1/0 a bool's).
func castLikeOp(c *importer) ([]value, *ir.Error) {
	like := c.in(1)
	switch {
	case like == nil:
		return nil, c.invalid("input 1 (target_type) is missing")
	case like.set && like.isBool:
		return c.castTo(Bool)
	case like.set && like.isInt:
		return nil, c.refuse("input 1 is an index computed at run time as float32, whose ONNX type the importer does not keep")
	case like.set:
		return c.castTo(DataTypeOf(like.rt.DType()))
	}
	return c.castTo(like.c.Type)
}

// castTo is Cast of input 0 to the element type to.
func (c *importer) castTo(to DataType) ([]value, *ir.Error) {
	v := c.in(0)
	if t, ok := to.irDType(); ok && t.IsFloat() && t != ir.F32 && (v.set || v.c.Type == Float32) {
		// float16 and bfloat16 are run-time dtypes: a float32 constant
		// is embedded and cast like a run-time value.
		if !v.set {
			if _, err := c.runtime(v, "input 0"); err != nil {
				return nil, err
			}
		}
		if vs, ok, err := c.castTyped(v, to); ok || err != nil {
			return vs, err
		}
		return one(rtValue(v.rt.Cast(t)))
	}
	if !to.isInt() && to != Float32 && to != Float64 {
		return nil, c.refuse("a cast to %v", to)
	}
	if v.set {
		if vs, ok, err := c.castTyped(v, to); ok || err != nil { // a typed value (import.go)
			return vs, err
		}
		switch {
		case to == Float32:
			return one(rtValue(v.rt)) // a bool's 1 and 0 are its float32 values
		case to == Bool && v.isBool:
			return one(*v)
		case to == Bool: // x != 0: true for NaN
			return one(boolValue(not(v.rt.Apply(ir.OpEqual, c.b.Full(v.rt.Shape(), 0)))))
		}
		if t, ok := to.irDType(); ok { // float32 (a bool's 1 and 0, an index's exact integer) to an integer
			return one(rtValue(v.rt.Cast(t)))
		}
		return nil, c.refuse("a cast of a run-time float32 tensor to %v", to)
	}
	t := v.c
	r, err := c.newConst(to, t.Shape)
	if err != nil {
		return nil, err
	}
	for i := 0; i < t.Len(); i++ {
		x, ok := castNumber(t.at(i), t.Type, to)
		if !ok {
			return nil, c.refuse("casting %v to %v: the value is out of the target's range", t.at(i).f, to)
		}
		r.set(i, x)
	}
	return one(constValue(r))
}

// withShape returns v's data as shape: a reshape at run time, the same
// elements for a constant.
func (c *importer) withShape(v *value, shape []int) ([]value, *ir.Error) {
	if v.set {
		t := v.rt
		if !ir.Shape(shape).Equal(t.Shape()) {
			t = t.Reshape(shape)
		}
		return one(value{rt: t, set: true, isBool: v.isBool, isInt: v.isInt})
	}
	r := *v.c
	r.Name = ""
	r.Shape = append([]int{}, shape...)
	return one(constValue(&r))
}

// reshape returns t as shape, t itself when it has that shape.
func reshape(t ir.Tensor, shape ir.Shape) ir.Tensor {
	if t.Shape().Equal(shape) {
		return t
	}
	return t.Reshape(shape)
}

func reshapeOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	want, err := c.ints(1, "shape")
	if err != nil {
		return nil, err
	}
	in := v.shape()
	allowZero := c.attrInt("allowzero", 0) != 0
	out := make([]int, len(want))
	infer := -1
	for k, d := range want {
		switch {
		case d == -1 && infer < 0:
			infer = k
			continue
		case d == 0 && !allowZero:
			if k >= len(in) {
				return nil, c.invalid("shape %v copies dimension %d of a rank-%d input", want, k, len(in))
			}
			out[k] = in[k]
		case d < 0 || d > math.MaxInt32:
			return nil, c.invalid("shape %v has dimension %d", want, d)
		default:
			out[k] = int(d)
		}
	}
	known := slices.Clone(out)
	if infer >= 0 {
		known[infer] = 1
	}
	// The input's count is within the limits; a product over 2^63-1
	// differs from it (it once wrapped to match).
	n64, ok := dimProduct(math.MaxInt64, known...)
	total := ir.Shape(in).Len()
	if !ok {
		return nil, c.invalid("reshape of %v (%d elements) to %v: more elements than 2^63-1", in, total, want)
	}
	n := int(n64)
	if infer >= 0 {
		if n == 0 || total%n != 0 {
			return nil, c.invalid("cannot infer dimension %d of %v for %d elements", infer, want, total)
		}
		out[infer] = total / n
		n = total
	}
	if n != total {
		return nil, c.invalid("reshape of %v (%d elements) to %v", in, total, out)
	}
	return c.withShape(v, out)
}

// axisOf normalises axis against rank r (negative counts from the end).
func (c *importer) axisOf(axis int64, r int) (int, *ir.Error) {
	if axis < -int64(r) || axis >= int64(r) {
		return 0, c.invalid("axis %d is out of range for rank %d", axis, r)
	}
	if axis < 0 {
		axis += int64(r)
	}
	return int(axis), nil
}

func flattenOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := v.shape()
	axis := c.attrInt("axis", 1)
	if axis < -int64(len(s)) || axis > int64(len(s)) {
		return nil, c.invalid("axis %d is out of range for rank %d", axis, len(s))
	}
	if axis < 0 {
		axis += int64(len(s))
	}
	a, b := 1, 1
	for k, d := range s {
		if k < int(axis) {
			a *= d
		} else {
			b *= d
		}
	}
	return c.withShape(v, []int{a, b})
}

// axesArg returns the axes of Squeeze, Unsqueeze and the reductions: the
// attribute before opset since, input 1 from it. ok is false when none
// are given.
func (c *importer) axesArg(since int64) ([]int64, bool, *ir.Error) {
	if c.opset < since {
		ax, ok := c.attrInts("axes")
		return ax, ok, nil
	}
	if c.attr("axes") != nil {
		return nil, false, c.invalid("the axes attribute was replaced by an input in opset %d", since)
	}
	if c.in(1) == nil {
		return nil, false, nil
	}
	ax, err := c.ints(1, "axes")
	return ax, true, err
}

func squeezeOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := v.shape()
	axes, given, err := c.axesArg(13)
	if err != nil {
		return nil, err
	}
	drop := make([]bool, len(s))
	for _, a := range axes {
		k, err := c.axisOf(a, len(s))
		if err != nil {
			return nil, err
		}
		if s[k] != 1 {
			return nil, c.invalid("cannot squeeze axis %d of size %d", k, s[k])
		}
		drop[k] = true
	}
	var out []int
	for k, d := range s {
		if !(drop[k] || !given && d == 1) {
			out = append(out, d)
		}
	}
	return c.withShape(v, out)
}

func unsqueezeOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := v.shape()
	axes, _, err := c.axesArg(13)
	if err != nil {
		return nil, err
	}
	r := len(s) + len(axes)
	ins := make([]bool, r)
	for _, a := range axes {
		k, err := c.axisOf(a, r)
		if err != nil {
			return nil, err
		}
		if ins[k] {
			return nil, c.invalid("axis %d is named twice", k)
		}
		ins[k] = true
	}
	out := make([]int, 0, r)
	j := 0
	for k := 0; k < r; k++ {
		if ins[k] {
			out = append(out, 1)
		} else {
			out = append(out, s[j])
			j++
		}
	}
	return c.withShape(v, out)
}

func expandOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	want, err := c.ints(1, "shape")
	if err != nil {
		return nil, err
	}
	ws := make([]int, len(want))
	for k, d := range want {
		if d < 0 {
			return nil, c.invalid("shape %v has dimension %d", want, d)
		}
		ws[k] = int(min(d, c.l.MaxElements+1)) // over the limit either way, refused below
	}
	out, ok := broadcastConst(v.shape(), ws)
	if !ok {
		return nil, c.invalid("shape %v does not broadcast with %v", v.shape(), want)
	}
	if _, err := c.elements("the expanded tensor", out); err != nil {
		return nil, err
	}
	return c.broadcastTo(v, out)
}

// broadcastTo broadcasts v to shape out by numpy's rule.
func (c *importer) broadcastTo(v *value, out []int) ([]value, *ir.Error) {
	if v.set {
		if ir.Shape(out).Equal(v.rt.Shape()) {
			return one(*v)
		}
		return one(rtValue(v.rt.Broadcast(out)))
	}
	t := v.c
	st := strides(t.Shape)
	r, err := c.take(t, out, func(pos []int) int { return broadcastIndex(t.Shape, st, pos) })
	if err != nil {
		return nil, err
	}
	return one(constValue(r))
}

func transposeOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := v.shape()
	perm64, ok := c.attrInts("perm")
	perm := make([]int, len(s))
	if !ok {
		for k := range perm {
			perm[k] = len(s) - 1 - k
		}
	} else {
		if len(perm64) != len(s) {
			return nil, c.invalid("perm %v for rank %d", perm64, len(s))
		}
		seen := make([]bool, len(s))
		for k, p := range perm64 {
			if p < 0 || p >= int64(len(s)) || seen[p] {
				return nil, c.invalid("perm %v is not a permutation of 0..%d", perm64, len(s)-1)
			}
			seen[p] = true
			perm[k] = int(p)
		}
	}
	out := make([]int, len(s))
	for k, p := range perm {
		out[k] = s[p]
	}
	if !v.set {
		t := v.c
		st := strides(t.Shape)
		r, err := c.take(t, out, func(pos []int) int {
			j := 0
			for k, p := range perm {
				j += pos[k] * st[p]
			}
			return j
		})
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
	// At run time: the axes of size 1 do not move data. What is left must
	// be in order (a reshape) or two axes swapped (a 2-D transpose).
	var moved []int
	for _, p := range perm {
		if s[p] != 1 {
			moved = append(moved, p)
		}
	}
	switch {
	case inOrder(moved):
		return c.withShape(v, out)
	case len(moved) == 2:
		t := reshape(v.rt, ir.Shape{s[moved[1]], s[moved[0]]}).T()
		return c.withShape(&value{rt: t, set: true, isBool: v.isBool, isInt: v.isInt}, out)
	}
	if len(s) > ir.MaxRank {
		return nil, c.refuse("a transpose of rank %d, over %d", len(s), ir.MaxRank)
	}
	return one(value{rt: v.rt.Permute(perm...), set: true, isBool: v.isBool, isInt: v.isInt}) // a view of any rank
}

func inOrder(p []int) bool {
	for k := 1; k < len(p); k++ {
		if p[k] < p[k-1] {
			return false
		}
	}
	return true
}

func constantOfShapeOp(c *importer) ([]value, *ir.Error) {
	want, err := c.ints(0, "shape")
	if err != nil {
		return nil, err
	}
	dt, fill := Float32, number{}
	if a := c.attr("value"); a != nil {
		if a.t == nil {
			return nil, c.invalid("attribute value holds no tensor")
		}
		var scratch int64
		t, err := convertTensor(a.t, c.l, &scratch, c.field()+".value")
		if err != nil {
			return nil, err
		}
		if t.Len() != 1 {
			return nil, c.invalid("attribute value has %d elements, not one", t.Len())
		}
		dt, fill = t.Type, t.at(0)
	}
	shape := make([]int, len(want))
	for k, d := range want {
		if d < 0 {
			return nil, c.invalid("shape %v has dimension %d", want, d)
		}
		shape[k] = int(min(d, c.l.MaxElements+1)) // over the limit either way: newConst refuses it
	}
	r, err := c.newConst(dt, shape)
	if err != nil {
		return nil, err
	}
	for i := 0; i < r.Len(); i++ {
		r.set(i, fill)
	}
	return one(constValue(r))
}

func rangeOp(c *importer) ([]value, *ir.Error) {
	var ts [3]*Tensor
	for k, what := range []string{"start", "limit", "delta"} {
		t, err := c.konst(k, what)
		if err != nil {
			return nil, err
		}
		if t.Len() != 1 {
			return nil, c.invalid("%s has %d elements, not one", what, t.Len())
		}
		ts[k] = t
	}
	dt := ts[0].Type
	if ts[1].Type != dt || ts[2].Type != dt {
		return nil, c.invalid("start, limit and delta have types %v, %v and %v", dt, ts[1].Type, ts[2].Type)
	}
	if dt == Float32 {
		return c.floatRange(ts[0].Float32[0], ts[1].Float32[0], ts[2].Float32[0])
	}
	if !dt.isInt() || dt == Bool {
		return nil, c.refuse("a range of %v (gpucc folds integer and float32 ranges)", dt)
	}
	start, limit, delta := ts[0].Int64[0], ts[1].Int64[0], ts[2].Int64[0]
	if delta == 0 {
		return nil, c.invalid("delta is 0")
	}
	// ceil((limit - start)/delta) in unsigned 64-bit arithmetic, exact
	// where float64 is not (0 to 2^53+1 by 2^53 is 2 elements, not 1) and
	// where limit - start overflows an int64: each span is below 2^64.
	var span, step uint64
	switch {
	case delta > 0 && limit > start:
		span, step = uint64(limit)-uint64(start), uint64(delta)
	case delta < 0 && start > limit:
		span, step = uint64(start)-uint64(limit), -uint64(delta)
	}
	n := uint64(0)
	if span > 0 {
		n = (span-1)/step + 1
	}
	if n > uint64(c.l.MaxElements) {
		return nil, c.overLimit("MaxElements", "%d elements exceed the limit of %d", n, c.l.MaxElements)
	}
	r, err := c.newConst(dt, []int{int(n)})
	if err != nil {
		return nil, err
	}
	for i := range r.Int64 {
		r.Int64[i] = start + int64(i)*delta
	}
	return one(constValue(r))
}

func gatherOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	idx, err := c.konst(1, "indices")
	if err != nil {
		return nil, err
	}
	if !idx.Type.isInt() {
		return nil, c.invalid("indices have element type %v", idx.Type)
	}
	vs := v.shape()
	if len(vs) == 0 {
		return nil, c.invalid("a gather from a scalar")
	}
	axis, err := c.axisOf(c.attrInt("axis", 0), len(vs))
	if err != nil {
		return nil, err
	}
	n := vs[axis]
	for _, i := range idx.Int64 {
		if i < -int64(n) || i >= int64(n) {
			return nil, c.invalid("index %d is out of range for axis %d of size %d", i, axis, n)
		}
	}
	if v.set {
		out := append(append(append([]int{}, vs[:axis]...), idx.Shape...), vs[axis+1:]...)
		if len(out) > ir.MaxRank {
			return nil, c.refuse("a gather of rank %d, over %d", len(out), ir.MaxRank)
		}
		norm := make([]int64, len(idx.Int64))
		for i, j := range idx.Int64 {
			if j < 0 {
				j += int64(n)
			}
			norm[i] = j
		}
		y, err := c.takeAlong(v.rt, axis, norm)
		if err != nil {
			return nil, err
		}
		return c.withShape(&value{rt: y, set: true, isBool: v.isBool, isInt: v.isInt}, out)
	}
	t := v.c
	out := append(append(append([]int{}, t.Shape[:axis]...), idx.Shape...), t.Shape[axis+1:]...)
	st, ist := strides(t.Shape), strides(idx.Shape)
	q := len(idx.Shape)
	r, err := c.take(t, out, func(pos []int) int {
		j := 0
		for k := 0; k < axis; k++ {
			j += pos[k] * st[k]
		}
		ii := 0
		for k := 0; k < q; k++ {
			ii += pos[axis+k] * ist[k]
		}
		i := idx.Int64[ii]
		if i < 0 {
			i += int64(n)
		}
		j += int(i) * st[axis]
		for k := axis + 1; k < len(t.Shape); k++ {
			j += pos[k+q-1] * st[k]
		}
		return j
	})
	if err != nil {
		return nil, err
	}
	return one(constValue(r))
}

func concatOp(c *importer) ([]value, *ir.Error) {
	var ts []*Tensor
	for k := 0; k < c.nin(); k++ {
		v := c.in(k)
		if v == nil {
			continue
		}
		if v.set {
			return c.concatRuntime()
		}
		ts = append(ts, v.c)
	}
	if len(ts) == 0 {
		return nil, c.invalid("no inputs")
	}
	r := len(ts[0].Shape)
	axis, err := c.axisOf(c.attrInt("axis", 0), r)
	if err != nil {
		return nil, err
	}
	out := append([]int{}, ts[0].Shape...)
	along := make([]int, len(ts))
	for i, t := range ts {
		if len(t.Shape) != r || t.Type != ts[0].Type {
			return nil, c.invalid("inputs of shapes or types %v %v and %v %v", ts[0].Type, ts[0].Shape, t.Type, t.Shape)
		}
		for k, d := range t.Shape {
			if k != axis && d != ts[0].Shape[k] {
				return nil, c.invalid("inputs of shapes %v and %v", ts[0].Shape, t.Shape)
			}
		}
		along[i] = t.Shape[axis]
	}
	sum, ok := dimSum(c.l.MaxElements, along...)
	if !ok {
		return nil, c.overLimit("MaxElements", "%d inputs whose axis %d adds up to more than the limit of %d elements per tensor", len(ts), axis, c.l.MaxElements)
	}
	out[axis] = int(sum)
	res, err := c.newConst(ts[0].Type, out)
	if err != nil {
		return nil, err
	}
	// Row-major: for each index before the axis, each input's block in turn.
	outer := 1
	for _, d := range out[:axis] {
		outer *= d
	}
	i := 0
	for o := 0; o < outer; o++ {
		for _, t := range ts {
			block := t.Len() / max(outer, 1)
			if outer == 0 {
				block = 0
			}
			for j := 0; j < block; j++ {
				res.set(i, t.at(o*block+j))
				i++
			}
		}
	}
	return one(constValue(res))
}

// takeAlong returns x's elements along axis at the constant normalised
// indices idx (-1: none, giving -0), the other axes whole: y has x's
// shape with len(idx) along axis. It is gatherAlong with the indices
// repeated over the other axes.
func (c *importer) takeAlong(x ir.Tensor, axis int, idx []int64) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	k := len(idx)
	if k == 0 {
		return ir.Tensor{}, c.refuse("an empty result; gpucc's tensors are not empty")
	}
	gs := append(append(append([]int{}, s[:axis]...), k), s[axis+1:]...)
	if y, ok := cropOrPad(x, axis, idx); ok {
		return y, nil
	}
	if y, ok, err := c.blockAlong(x, axis, idx); ok || err != nil {
		return y, err
	}
	// The index table is as large as the result: bounded before it is
	// allocated (an Expand to [2^31-1, 2^31-1] then a Slice asked 34 GB).
	total, err := c.elements(fmt.Sprintf("a gather from a tensor of shape %v", s), gs)
	if err != nil {
		return ir.Tensor{}, err
	}
	inner := ir.Shape(s[axis+1:]).Len()
	all := make([]int64, total)
	for i := range all {
		all[i] = idx[i/inner%k]
	}
	return c.gatherAlong(x, axis, all, gs)
}

// cropOrPad returns takeAlong's result as one pad node, a copy, where the
// indices are a run of consecutive elements of x, with -1 (giving -0)
// only before a run that starts at x's first element and after one that
// ends at its last: a Slice or Split of step 1 is a crop (negative pads),
// a piece of a Concat a pad with -0, so that adding the pieces gives the
// concatenation bit for bit (v + -0 = v for every v: the masked sum's
// bits). A pad copies each element once where the mask sums over the axis
// for each (Concat's pieces took 144 of the PP-OCRv4 detector's 201 ms at
// 320², 87 of the recognizer's 111 ms; a Split of GPT-2's fused QKV at
// sequence 512 needed a 6.3M-element mask and was refused). It is false
// for other indices, a rank pad does not take, or a dtype other than
// float32.
func cropOrPad(x ir.Tensor, axis int, idx []int64) (ir.Tensor, bool) {
	s := x.Shape()
	if len(s) > ir.MaxPadRank || x.DType() != ir.F32 {
		return ir.Tensor{}, false
	}
	lead := 0
	for lead < len(idx) && idx[lead] < 0 {
		lead++
	}
	k := 0
	for lead+k < len(idx) && idx[lead+k] >= 0 && idx[lead+k] == idx[lead]+int64(k) {
		k++
	}
	trail := len(idx) - lead - k
	for _, j := range idx[lead+k:] {
		if j >= 0 {
			return ir.Tensor{}, false
		}
	}
	if k == 0 {
		return ir.Tensor{}, false
	}
	first, n := int(idx[lead]), s[axis]
	if (lead > 0 && first > 0) || (trail > 0 && first+k < n) {
		return ir.Tensor{}, false
	}
	pads := make([]int, 2*len(s))
	pads[axis], pads[len(s)+axis] = lead-first, trail-(n-first-k)
	return x.Pad(pads, ir.PadConstant, float32(math.Copysign(0, -1))), true
}

// blockAlong is takeAlong of a contiguous run [a, a+m) of x's axis of n
// elements, when d = gcd(a, m, n) > 1, as a take of blocks: the axis is
// viewed as [n/d, d], the run is the blocks [a/d, (a+m)/d), and the
// masked sum over the axis costs n/d per output instead of n (Silero
// VAD's split of its STFT's 258 channels into halves summed 258 masked
// terms per element: 0.52 of its 0.69 ms of kernels on native). Each
// output is the same one element of x with -0s, as before.
func (c *importer) blockAlong(x ir.Tensor, axis int, idx []int64) (ir.Tensor, bool, *ir.Error) {
	s := x.Shape()
	n, m := s[axis], len(idx)
	if idx[0] < 0 || len(s)+2 > ir.MaxRank {
		return ir.Tensor{}, false, nil
	}
	a := int(idx[0])
	for j, v := range idx {
		if v != int64(a+j) {
			return ir.Tensor{}, false, nil
		}
	}
	d := gcd(gcd(a, m), n)
	if d <= 1 {
		return ir.Tensor{}, false, nil
	}
	split := append(append(append(ir.Shape{}, s[:axis]...), n/d, d), s[axis+1:]...)
	blocks := make([]int64, m/d)
	for j := range blocks {
		blocks[j] = int64(a/d + j)
	}
	y, err := c.takeAlong(reshape(x, split), axis, blocks)
	if err != nil {
		return ir.Tensor{}, false, err
	}
	return reshape(y, append(append(append(ir.Shape{}, s[:axis]...), m), s[axis+1:]...)), true, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func sliceOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s0 := v.shape()
	r := len(s0)
	var starts, ends, axes, steps []int64
	if c.opset < 10 {
		starts, _ = c.attrInts("starts")
		ends, _ = c.attrInts("ends")
		axes, _ = c.attrInts("axes")
	} else {
		var err *ir.Error
		if starts, err = c.ints(1, "starts"); err != nil {
			return nil, err
		}
		if ends, err = c.ints(2, "ends"); err != nil {
			return nil, err
		}
		if c.in(3) != nil {
			if axes, err = c.ints(3, "axes"); err != nil {
				return nil, err
			}
		}
		if c.in(4) != nil {
			if steps, err = c.ints(4, "steps"); err != nil {
				return nil, err
			}
		}
	}
	if axes == nil {
		for k := range starts {
			axes = append(axes, int64(k))
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || steps != nil && len(steps) != len(starts) {
		return nil, c.invalid("starts, ends, axes and steps have different lengths")
	}
	begin, step, out := make([]int, r), make([]int, r), append([]int{}, s0...)
	for k := range step {
		step[k] = 1
	}
	seen := make([]bool, r)
	for k := range starts {
		a, err := c.axisOf(axes[k], r)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, c.invalid("axis %d is sliced twice", a)
		}
		seen[a] = true
		st := int64(1)
		if steps != nil {
			st = steps[k]
		}
		if st == 0 {
			return nil, c.invalid("step 0")
		}
		d := int64(s0[a])
		clamp := func(x int64, lo, hi int64) int64 {
			if x < 0 {
				x += d
			}
			return min(max(x, lo), hi)
		}
		// The spec's clamps (Slice-13, which ONNX Runtime follows): a
		// start to [0, d] forward and [0, d-1] backward, an end to [0, d]
		// and [-1, d-1]. numpy's (the reference evaluator's) backward
		// start of -1 differs only below -d, where its slice is empty:
		// gpucc refused such a slice, which ONNX Runtime takes from 0.
		var b, e int64
		if st > 0 {
			b, e = clamp(starts[k], 0, d), clamp(ends[k], 0, d)
		} else {
			b, e = clamp(starts[k], 0, d-1), clamp(ends[k], -1, d-1)
		}
		// ceil(span/|step|) as (span-1)/|step| + 1: span is below d, so
		// nothing overflows, not even a step of ±2^63.
		n := int64(0)
		if st > 0 && e > b {
			n = (e-b-1)/st + 1
		} else if st < 0 && b > e {
			if st == math.MinInt64 {
				n = 1
			} else {
				n = (b-e-1)/-st + 1
			}
		}
		begin[a], step[a], out[a] = int(b), int(st), int(n)
	}
	if v.set {
		// A run-time tensor: takeAlong per sliced axis (the identity
		// slice of an axis moves nothing).
		y := v.rt
		for a := range out {
			if step[a] == 1 && begin[a] == 0 && out[a] == s0[a] {
				continue
			}
			idx := make([]int64, out[a])
			for j := range idx {
				idx[j] = int64(begin[a] + j*step[a])
			}
			var err *ir.Error
			if y, err = c.takeAlong(y, a, idx); err != nil {
				return nil, err
			}
		}
		return one(value{rt: y, set: true, isBool: v.isBool, isInt: v.isInt})
	}
	t := v.c
	str := strides(t.Shape)
	res, err := c.take(t, out, func(pos []int) int {
		j := 0
		for k, p := range pos {
			j += (begin[k] + p*step[k]) * str[k]
		}
		return j
	})
	if err != nil {
		return nil, err
	}
	return one(constValue(res))
}

func dropoutOp(c *importer) ([]value, *ir.Error) {
	if c.attrInt("is_test", 1) == 0 && c.opset < 7 {
		return nil, c.refuse("dropout in training mode")
	}
	if c.in(2) != nil {
		m, err := c.konst(2, "training_mode")
		if err != nil {
			return nil, err
		}
		if m.Len() != 1 || !m.Type.isInt() {
			return nil, c.invalid("training_mode is %v of shape %v, not one bool", m.Type, m.Shape)
		}
		if m.Int64[0] != 0 {
			// In training every element is kept with probability 1 -
			// ratio and scaled by 1/(1 - ratio): ratio 0 keeps them all,
			// x·1 exactly; any other ratio draws random numbers.
			ratio := 0.5
			if c.in(1) != nil {
				r, err := c.konst(1, "ratio")
				if err != nil {
					return nil, err
				}
				if r.Len() != 1 || r.Type.isInt() {
					return nil, c.invalid("ratio is %v of shape %v, not one float", r.Type, r.Shape)
				}
				ratio = r.at(0).f
			}
			if ratio != 0 {
				return nil, c.refuse("dropout in training mode with ratio %v draws random numbers, which gpucc does not", ratio)
			}
		}
	}
	if len(c.n.outputs) < 2 || c.opset < 12 { // before 12, the mask output was float32 and unread here
		return one(*c.in(0))
	}
	// Outside training every element is kept: the mask is all true.
	s := c.in(0).shape()
	m, err := c.newConst(Bool, s)
	if err != nil {
		return nil, err
	}
	for i := range m.Int64 {
		m.Int64[i] = 1
	}
	return []value{*c.in(0), constValue(m)}, nil
}

// concatRuntime is Concat where an input is computed at run time:
// concatTensors (control.go) of its inputs.
func (c *importer) concatRuntime() ([]value, *ir.Error) {
	var xs []ir.Tensor
	for k := 0; k < c.nin(); k++ {
		if c.in(k) == nil {
			continue
		}
		x, err := c.rtIn(k)
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	s0 := xs[0].Shape()
	axis, err := c.axisOf(c.attrInt("axis", 0), len(s0))
	if err != nil {
		return nil, err
	}
	for _, x := range xs {
		s := x.Shape()
		if len(s) != len(s0) {
			return nil, c.invalid("inputs of shapes %v and %v", s0, s)
		}
		for k := range s {
			if k != axis && s[k] != s0[k] {
				return nil, c.invalid("inputs of shapes %v and %v", s0, s)
			}
		}
	}
	y, err := c.concatTensors(xs, axis)
	if err != nil {
		return nil, err
	}
	return one(rtValue(y))
}

// splitOp is Split along an axis into the sizes of input 1 (opset 13),
// the split attribute (before), or equal parts (num_outputs, or the
// outputs' count): slices, folded on a constant, takeAlong at run time.
func splitOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := v.shape()
	if len(s) == 0 {
		return nil, c.invalid("a split of a scalar")
	}
	axis, err := c.axisOf(c.attrInt("axis", 0), len(s))
	if err != nil {
		return nil, err
	}
	var sizes []int64
	switch {
	case c.opset >= 13 && c.in(1) != nil:
		if sizes, err = c.ints(1, "split"); err != nil {
			return nil, err
		}
	case c.opset < 13 && c.attr("split") != nil:
		sizes, _ = c.attrInts("split")
	default:
		parts := int64(len(c.n.outputs))
		if a := c.attr("num_outputs"); a != nil && a.i != parts {
			return nil, c.invalid("num_outputs is %d, and the node has %d outputs", a.i, parts)
		}
		if parts < 1 {
			return nil, c.invalid("%d outputs", parts)
		}
		d := int64(s[axis])
		if parts > max(d, 1) {
			return nil, c.invalid("%d outputs of an axis of %d", parts, d)
		}
		each := int64(0) // ceil(d/parts), written so that it cannot overflow
		if d > 0 {
			each = (d-1)/parts + 1
		}
		for left := d; left > 0; left -= each {
			sizes = append(sizes, min(each, left))
		}
		if int64(len(sizes)) < parts { // opset 18's last chunks of ceil(d/parts) are empty: 3 of 4 is [2, 2, 0]
			return nil, c.refuse("an empty result (output %d of %d chunks of %d); gpucc's tensors are not empty", len(sizes), parts, each)
		}
	}
	if len(sizes) != len(c.n.outputs) { // the outputs' values would be dropped or missing
		return nil, c.invalid("%d split sizes for its %d outputs", len(sizes), len(c.n.outputs))
	}
	sum, ok := dimSum(int64(s[axis]), sizes...)
	if !ok || sum != int64(s[axis]) {
		return nil, c.invalid("split sizes %v do not add up to %d", sizes, s[axis])
	}
	var outs []value
	off := 0
	for _, n := range sizes {
		if !v.set {
			t := v.c
			out := append([]int{}, t.Shape...)
			out[axis] = int(n)
			st := strides(t.Shape)
			o := off
			r, err := c.take(t, out, func(pos []int) int {
				j := 0
				for k, p := range pos {
					if k == axis {
						p += o
					}
					j += p * st[k]
				}
				return j
			})
			if err != nil {
				return nil, err
			}
			outs = append(outs, constValue(r))
		} else {
			idx := make([]int64, n)
			for j := range idx {
				idx[j] = int64(off + j)
			}
			y, err := c.takeAlong(v.rt, axis, idx)
			if err != nil {
				return nil, err
			}
			outs = append(outs, value{rt: y, set: true, isBool: v.isBool, isInt: v.isInt})
		}
		off += int(n)
	}
	return outs, nil
}

// depthToSpaceOp and spaceToDepthOp are reshape, permute and reshape, as
// the reference computes them: views, no arithmetic.
func depthToSpaceOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	bs64 := c.attrInt("blocksize", 0)
	if len(s) != 4 || bs64 < 1 {
		return nil, c.invalid("input of shape %v with blocksize %d", s, bs64)
	}
	if bb, ok := dimProduct(int64(s[1]), bs64, bs64); !ok || s[1]%int(bb) != 0 {
		return nil, c.invalid("input of shape %v with blocksize %d: blocksize² does not divide the channels", s, bs64)
	}
	bs := int(bs64)
	b, ch, h, w := s[0], s[1], s[2], s[3]
	var y ir.Tensor
	switch mode := c.attrStr("mode", "DCR"); mode {
	case "DCR":
		y = x.Reshape(ir.Shape{b, bs, bs, ch / (bs * bs), h, w}).Permute(0, 3, 4, 1, 5, 2)
	case "CRD":
		y = x.Reshape(ir.Shape{b, ch / (bs * bs), bs, bs, h, w}).Permute(0, 1, 4, 2, 5, 3)
	default:
		return nil, c.invalid("mode %q", mode)
	}
	return one(rtValue(y.Reshape(ir.Shape{b, ch / (bs * bs), h * bs, w * bs})))
}

func spaceToDepthOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	bs64 := c.attrInt("blocksize", 0)
	if len(s) != 4 || bs64 < 1 || bs64 > int64(min(s[2], s[3])) || s[2]%int(bs64) != 0 || s[3]%int(bs64) != 0 {
		return nil, c.invalid("input of shape %v with blocksize %d", s, bs64)
	}
	bs := int(bs64) // at most H and W, so C·bs² is at most the input's count
	b, ch, h, w := s[0], s[1], s[2], s[3]
	y := x.Reshape(ir.Shape{b, ch, h / bs, bs, w / bs, bs}).Permute(0, 3, 5, 1, 2, 4)
	return one(rtValue(y.Reshape(ir.Shape{b, ch * bs * bs, h / bs, w / bs})))
}

// compressOp is Compress with a constant condition: the positions along
// the axis (of the flattened input without one) where it is true,
// takeAlong's exact selection.
func compressOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	cond, err := c.ints(1, "condition")
	if err != nil {
		return nil, err
	}
	axis := 0
	if c.attr("axis") == nil {
		x = reshape(x, ir.Shape{x.Shape().Len()})
	} else if axis, err = c.axisOf(c.attrInt("axis", 0), len(x.Shape())); err != nil {
		return nil, err
	}
	if len(cond) > x.Shape()[axis] {
		return nil, c.invalid("a condition of %d for an axis of %d", len(cond), x.Shape()[axis])
	}
	var idx []int64
	for j, b := range cond {
		if b != 0 {
			idx = append(idx, int64(j))
		}
	}
	y, err := c.takeAlong(x, axis, idx)
	if err != nil {
		return nil, err
	}
	return one(rtValue(y))
}

// tileOp is Tile with constant repeats: along each repeated axis, the
// positions j mod the axis's length (takeAlong).
func tileOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	reps, err := c.ints(1, "repeats")
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(reps) != len(s) {
		return nil, c.invalid("%d repeats for rank %d", len(reps), len(s))
	}
	// The result's shape, checked before any index table is made (a
	// [1024] by 2^20 asked 8 GB): each step's is at most the result's.
	out := make([]int, len(s))
	for a, r := range reps {
		if r < 1 {
			return nil, c.refuse("a repeat of %d (an empty result; gpucc's tensors are not empty)", r)
		}
		n, ok := dimProduct(c.l.MaxElements, int64(s[a]), r)
		if !ok {
			return nil, c.overLimit("MaxElements", "%d repeats of an axis of %d exceed the limit of %d elements per tensor", r, s[a], c.l.MaxElements)
		}
		out[a] = int(n)
	}
	if _, err := c.elements("the tiled tensor", out); err != nil {
		return nil, err
	}
	for a, r := range reps {
		if r == 1 {
			continue
		}
		idx := make([]int64, out[a])
		for j := range idx {
			idx[j] = int64(j % s[a])
		}
		if x, err = c.takeAlong(x, a, idx); err != nil {
			return nil, err
		}
	}
	return one(rtValue(x))
}

// floatRange folds a float32 Range as numpy's arange (ONNX's reference):
// max(ceil((limit - start)/delta), 0) elements, computed in float64 from
// the float32 operands, element i the float64 start + i·delta rounded
// once to float32.
func (c *importer) floatRange(start, limit, delta float32) ([]value, *ir.Error) {
	if delta == 0 || delta != delta || start != start || limit != limit {
		return nil, c.invalid("a range from %v to %v by %v", start, limit, delta)
	}
	n := math.Ceil((float64(limit) - float64(start)) / float64(delta))
	if n != n || n > float64(c.l.MaxElements) {
		return nil, c.overLimit("MaxElements", "a range from %v to %v by %v has more than the %d elements a tensor may hold", start, limit, delta, c.l.MaxElements)
	}
	r, err := c.newConst(Float32, []int{int(max(n, 0))})
	if err != nil {
		return nil, err
	}
	for i := range r.Float32 {
		r.Float32[i] = float32(float64(start) + float64(i)*float64(delta))
	}
	return one(constValue(r))
}
