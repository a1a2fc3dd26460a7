package onnx

import (
	"math"
	"slices"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// einsumOp is Einsum: each operand's axes named by a letter (an ellipsis
// names its leading broadcast axes), the output's letters given after "->"
// or, without one, the letters used once, in alphabetical order after the
// ellipsis's. A letter repeated within one operand takes its diagonal. The
// value is numpy's: every operand's elements multiplied over the union of
// the letters (numpy's broadcast), then summed over the letters the output
// does not name, in the operands' own dtype (float64 in float64, an
// integer wrapping) by mul and the sum's reference tree: the products
// themselves are numpy's, the order of the sum the reference's.
func einsumOp(c *importer) ([]value, *ir.Error) {
	eq := strings.ReplaceAll(c.attrStr("equation", ""), " ", "")
	n := c.nin()
	if n == 0 {
		return nil, c.invalid("Einsum needs an input")
	}
	lhs, out, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != n {
		return nil, c.invalid("equation %s names %d operands, the node has %d", ir.Quote(eq), len(terms), n)
	}
	dt := c.typedIn()
	xs := make([]ir.Tensor, n)
	for k := range xs {
		var err *ir.Error
		if dt == ir.F32 {
			xs[k], err = c.rtIn(k)
		} else {
			xs[k], err = c.typedOperand(k, dt)
		}
		if err != nil {
			return nil, err
		}
	}
	// The ellipsis: as many broadcast axes as the widest operand's rank
	// beyond its letters, named by characters no equation uses.
	ell := 0
	for k, term := range terms {
		if strings.Contains(term, "...") {
			ell = max(ell, len(xs[k].Shape())-(len(term)-3))
		}
	}
	ellNames := make([]byte, ell)
	for i := range ellNames {
		ellNames[i] = byte('0' + i) // digits are not einsum letters
	}
	labels := make([][]byte, n)
	count := map[byte]int{}
	for k, term := range terms {
		r := len(xs[k].Shape())
		pre, post, has := strings.Cut(term, "...")
		var l []byte
		if has {
			m := r - len(pre) - len(post)
			if m < 0 || m > ell || strings.Contains(post, "...") {
				return nil, c.invalid("operand %d of rank %d does not fit %s", k, r, ir.Quote(term))
			}
			l = append(append(append(l, pre...), ellNames[ell-m:]...), post...)
		} else {
			l = []byte(term)
		}
		if len(l) != r {
			return nil, c.invalid("operand %d has rank %d, its term %s names %d axes", k, r, ir.Quote(term), len(l))
		}
		for _, b := range l {
			if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9') {
				return nil, c.invalid("equation %s: %q is not a letter", ir.Quote(eq), b)
			}
			count[b]++
		}
		labels[k] = l
	}
	var outL []byte
	if explicit {
		pre, post, has := strings.Cut(out, "...")
		outL = []byte(pre)
		if has {
			outL = append(append(outL, ellNames...), post...)
		} else {
			outL = []byte(out)
		}
	} else {
		outL = append(outL, ellNames...)
		var once []byte
		for b, m := range count {
			if m == 1 && (b < '0' || b > '9') {
				once = append(once, b)
			}
		}
		slices.Sort(once)
		outL = append(outL, once...)
	}
	for i, b := range outL {
		if count[b] == 0 || slices.Index(outL, b) != i {
			return nil, c.invalid("equation %s: output letter %q is not an operand's, or named twice", ir.Quote(eq), b)
		}
	}
	// Diagonals first: a letter twice in one operand.
	for k := range xs {
		for {
			i, j := repeated(labels[k])
			if i < 0 {
				break
			}
			s := xs[k].Shape()
			if s[i] != s[j] {
				return nil, c.invalid("operand %d's diagonal %q has sizes %d and %d", k, labels[k][i], s[i], s[j])
			}
			xs[k] = diagonal(c, xs[k], i, j)
			labels[k] = slices.Delete(slices.Clone(labels[k]), j, j+1)
		}
	}
	// The union: the output's letters, then the summed ones.
	union := slices.Clone(outL)
	size := map[byte]int{}
	for k, l := range labels {
		for a, b := range l {
			d := xs[k].Shape()[a]
			if e, ok := size[b]; ok && e != d && e != 1 && d != 1 {
				return nil, c.invalid("letter %q has sizes %d and %d", b, e, d)
			}
			if d != 1 || size[b] == 0 {
				size[b] = max(size[b], d)
			}
			if !slices.Contains(union, b) {
				union = append(union, b)
			}
		}
	}
	if len(union) > ir.MaxRank {
		return nil, c.refuse("equation %s spans %d letters; gpucc's tensors have rank %d at most", ir.Quote(eq), len(union), ir.MaxRank)
	}
	full := make(ir.Shape, len(union))
	for a, b := range union {
		full[a] = size[b]
	}
	var prod ir.Tensor
	for k, x := range xs {
		// x's axes in union order, then a 1 for each letter it lacks.
		var perm []int
		shape := make(ir.Shape, len(union))
		for a, b := range union {
			shape[a] = 1
			if p := slices.Index(labels[k], b); p >= 0 {
				perm = append(perm, p)
				shape[a] = x.Shape()[p]
			}
		}
		if !slices.IsSorted(perm) {
			x = x.Permute(perm...)
		}
		x = reshape(x, shape)
		if !shape.Equal(full) {
			x = x.Broadcast(full)
		}
		if k == 0 {
			prod = x
		} else {
			prod = prod.Mul(x)
		}
	}
	if len(union) > len(outL) {
		var axes []int
		for a := len(outL); a < len(union); a++ {
			axes = append(axes, a)
		}
		if len(outL) == 0 {
			axes = nil // the whole tensor: a scalar
		}
		prod = prod.SumAxes(false, axes...)
	}
	return one(rtValue(prod))
}

// repeated returns the first pair of positions of one letter in l, or -1.
func repeated(l []byte) (int, int) {
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[i] == l[j] {
				return i, j
			}
		}
	}
	return -1, -1
}

// diagonal returns x's diagonal over axes i < j (of one size d): x with
// axis j removed, element [.., p, ..] = x[.., p, .., p, ..], as
// sum_j(where(eye, x, identity)) in x's dtype (every other term is the
// sum's identity, -0 or 0, so the sum is the element exactly).
func diagonal(c *importer, x ir.Tensor, i, j int) ir.Tensor {
	s := x.Shape()
	d := s[i]
	eyeShape := make(ir.Shape, len(s))
	for a := range eyeShape {
		eyeShape[a] = 1
	}
	eyeShape[i], eyeShape[j] = d, d
	bits := make([]int64, d*d)
	for p := range d {
		bits[p*d+p] = 1
	}
	dt := x.DType()
	bcast := func(t ir.Tensor) ir.Tensor {
		t = t.Reshape(eyeShape)
		if !eyeShape.Equal(s) {
			t = t.Broadcast(s)
		}
		return t
	}
	if dt == ir.F32 { // mask(eye, x): x where eye is 1, -0 elsewhere
		ones := make([]float32, len(bits))
		for k, b := range bits {
			ones[k] = float32(b)
		}
		return bcast(c.b.TypedInput("", ir.F32, ir.Shape{d, d}, ones, nil)).Apply(ir.OpMask, x).SumAxes(false, j)
	}
	negZero := math.Copysign(0, -1)
	fill := c.b.FullOf(dt, s, float32(negZero), 0)
	if dt == ir.F64 {
		fill = c.b.FullOf(dt, s, 0, ir.F64Bits(negZero))
	}
	return bcast(c.b.TypedInput("", ir.Bool, ir.Shape{d, d}, nil, bits)).Where(x, fill).SumAxes(false, j)
}
