package ir

import "math"

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
