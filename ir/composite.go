package ir

import (
	"math"
	"slices"
)

// Composites: the layers of small models, lowered by the Builder to the
// ops of the table (no IR op of their own), so that every pass, code
// generator and gradient rule applies to them unchanged and their results
// are cpuref's, bit for bit, on every backend. Each doc comment gives the
// exact sequence of float32 operations (design10 §4); the PyTorch fixture
// (bench/fixtures/digits.py) computes the same math.

// geluK is √(2/π) rounded to float32; geluC is 0.044715 rounded to float32.
var (
	geluK = float32(math.Sqrt(2 / math.Pi))
	geluC = float32(0.044715)
)

// GELU returns the tanh form of the Gaussian error linear unit,
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (PyTorch's
// gelu(approximate="tanh")), elementwise, as the float32 operations
//
//	u = ((x·x)·x)·0.044715 + x
//	y = (x·0.5) · (tanh(u·√(2/π)) + 1)
//
// with √(2/π) and 0.044715 rounded to float32. Where x³ overflows, tanh
// saturates and y is x (or -0 for negative x), with no NaN.
func (t Tensor) GELU() Tensor {
	u := t.Mul(t).Mul(t).MulScalar(geluC).Add(t)
	return t.MulScalar(0.5).Mul(u.MulScalar(geluK).Tanh().AddScalar(1))
}

// fail records a composite's error on t's builder (the first one wins)
// and returns a failed tensor.
func (t Tensor) fail(field, format string, args ...any) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	if t.b.err == nil {
		t.b.err = Errorf(CodeInvalidGraph, len(t.b.g.Nodes), field, format, args...)
	}
	return Tensor{t.b, -1}
}

// ok reports whether t can be built on (it belongs to a builder without
// an error).
func (t Tensor) ok() bool { return t.b != nil && t.b.err == nil && t.id >= 0 }

// axes returns the distinct axes of a rank-r tensor named by axes
// (negative ones count from the end; none means every axis) and the
// number of elements they reduce over, or an error.
func (t Tensor) axesOf(name string, axes []int) ([]int, int, bool) {
	s := t.Shape()
	if len(axes) == 0 {
		all := make([]int, len(s))
		for i := range all {
			all[i] = i
		}
		return all, s.Len(), true
	}
	seen := make([]bool, len(s))
	out := make([]int, 0, len(axes))
	n := 1
	for _, a := range axes {
		if a < -len(s) || a >= len(s) {
			t.fail("axes", "%s: axis %d is out of range for shape %v", name, a, s)
			return nil, 0, false
		}
		if a < 0 {
			a += len(s)
		}
		if seen[a] {
			t.fail("axes", "%s: axis %d is named twice", name, a)
			return nil, 0, false
		}
		seen[a] = true
		out = append(out, a)
		n *= s[a]
	}
	slices.Sort(out)
	return out, n, true
}

// Mean returns the mean over axes (every axis when none is given; negative
// axes count from the end): sum(t, axes, keepdims) / n, n the number of
// elements reduced, as one axis sum (the pairwise tree of SumAxes) and one
// correctly rounded division by float32(n). float32(n) is n exactly up to
// 2^24 (the default limits allow 2^20 elements); a larger n that is not a
// float32 rounds to the nearest one first.
// With keepdims the reduced axes stay, as 1.
func (t Tensor) Mean(keepdims bool, axes ...int) Tensor {
	if !t.ok() {
		return t
	}
	ax, n, ok := t.axesOf("mean", axes)
	if !ok {
		return Tensor{t.b, -1}
	}
	return t.SumAxes(keepdims, ax...).DivScalar(float32(n))
}

// Variance returns the population variance over axes (as Mean names them):
// c = t - Mean(true, axes), then Mean(keepdims, axes) of c·c. It is the
// two-pass form, never the cancelling E[x²] - E[x]².
func (t Tensor) Variance(keepdims bool, axes ...int) Tensor {
	if !t.ok() {
		return t
	}
	ax, _, ok := t.axesOf("variance", axes)
	if !ok {
		return Tensor{t.b, -1}
	}
	c := t.Sub(t.Mean(true, ax...))
	return c.Mul(c).Mean(keepdims, ax...)
}

// axis checks a single axis for the composites that take one.
func (t Tensor) axis(name string, axis int) (int, bool) {
	ax, _, ok := t.axesOf(name, []int{axis})
	if !ok {
		return 0, false
	}
	return ax[0], true
}

// Softmax returns the softmax of t along axis (negative counts from the
// end), with the maximum subtracted first so that exp cannot overflow:
//
//	e = exp(t - max(t, axis, keepdims))
//	y = e / sum(e, axis, keepdims)
//
// with MaxAxes and SumAxes along the axis, a broadcasting subtraction and
// division (correctly rounded), and the table's exp.
func (t Tensor) Softmax(axis int) Tensor {
	if !t.ok() {
		return t
	}
	a, ok := t.axis("softmax", axis)
	if !ok {
		return Tensor{t.b, -1}
	}
	e := t.Sub(t.MaxAxes(true, a)).Exp()
	return e.Div(e.SumAxes(true, a))
}

// LogSoftmax returns the log of the softmax of t along axis, computed as
//
//	s = t - max(t, axis, keepdims)
//	y = s - log(sum(exp(s), axis, keepdims))
//
// so that it stays finite where the softmax underflows to 0.
func (t Tensor) LogSoftmax(axis int) Tensor {
	if !t.ok() {
		return t
	}
	a, ok := t.axis("log_softmax", axis)
	if !ok {
		return Tensor{t.b, -1}
	}
	s := t.Sub(t.MaxAxes(true, a))
	return s.Sub(s.Exp().SumAxes(true, a).Log())
}

// CrossEntropy returns the mean cross-entropy of logits t ([N,C], one row
// per example) against targets onehot ([N,C]: integer labels as one-hot
// rows, or any rows of class probabilities), a scalar:
//
//	-sum(onehot · LogSoftmax(t, 1)) / N
//
// as one whole-tensor sum, a negation and a correctly rounded division by
// float32(N) (PyTorch's cross_entropy with reduction "mean"). Its gradient
// with respect to t is (softmax(t) - onehot)/N up to rounding. A row whose
// logits span more than the float32 range (x - max overflows to -Inf)
// gives 0·-Inf = NaN, which the runtime reports as a non-finite output.
func (t Tensor) CrossEntropy(onehot Tensor) Tensor {
	if !t.ok() {
		return t
	}
	s := t.Shape()
	if len(s) != 2 {
		return t.fail("a", "cross_entropy needs logits of shape [N,C], got %v", s)
	}
	if u := onehot.Shape(); onehot.ok() && onehot.b == t.b && !u.Equal(s) {
		return t.fail("b", "cross_entropy: targets of shape %v for logits of shape %v", u, s)
	}
	return onehot.Mul(t.LogSoftmax(1)).Sum().Neg().DivScalar(float32(s[0]))
}

// LayerNorm returns t normalised along axis, without gain or bias
// (PyTorch's layer_norm over the last dimensions, with eps added to the
// population variance), as
//
//	c = t - Mean(true, axis)
//	k = maximum(max(maximum(c, -c), axis, keepdims) · 2⁻⁴⁰, 1)
//	s = c / k
//	y = s · rsqrt(Mean(true, axis) of s·s + eps/(k·k))
//
// k scales a row whose largest |c| exceeds 2⁴⁰ down to a largest |s| of
// 2⁴⁰, so that s·s and its sum stay finite where c·c would overflow
// (from |c| ≈ 1.8e19 on), which made the variance +Inf and the row ±0. A
// row with every |c| ≤ 2⁴⁰ has k = 1, s = c and eps/(k·k) = eps exactly:
// its bits are those of the unscaled c · rsqrt(var + eps). Multiply by a
// gain and add a bias with Mul and Add for the affine form.
func (t Tensor) LayerNorm(axis int, eps float32) Tensor {
	if !t.ok() {
		return t
	}
	a, ok := t.axis("layer_norm", axis)
	if !ok {
		return Tensor{t.b, -1}
	}
	c := t.Sub(t.Mean(true, a))
	k := c.Maximum(c.Neg()).MaxAxes(true, a).MulScalar(0x1p-40).MaximumScalar(1)
	s := c.Div(k)
	kk := k.Mul(k)
	return s.Mul(s.Mul(s).Mean(true, a).Add(t.b.Full(kk.Shape(), eps).Div(kk)).Rsqrt())
}
