package codegen_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// hardFloats are operands at the limits of float32 arithmetic on a
// machine that flushes: zeros, subnormals (the least, the largest, halves
// and odd ones), the least normals, the 2^-100 bound of exact_add's fast
// path, products' underflow bounds (2^-63, 2^-75), ordinary values, the
// largest finite, ±Inf and NaN, each with both signs.
func hardFloats() []float32 {
	bits := []uint32{0, 1, 2, 3, 5, 0x1ff, 0x3fffff, 0x400000, 0x400001, 0x7ffffe, 0x7fffff,
		0x800000, 0x800001, 0x8fffff, 0xffffff, 0x1000000, 0x0d7fffff, 0x0d800000, 0x0d800001,
		0x0c000000, 0x0e000000, 0x1f800000, 0x1f800001, 0x20000000, 0x1a000000, 0x1a400001, 0x19ffffff,
		0x2a000000, 0x33800000, 0x34000000, 0x3f000000, 0x3f800000, 0x3f800001, 0x3fffffff, 0x40490fdb,
		0x3dcccccd, 0x42c80000, 0x5f000000, 0x7f000000, 0x7f7fffff, 0x7f800000, 0x7fc00000}
	var out []float32
	for _, b := range bits {
		out = append(out, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	return out
}

// randomFloats returns n floats whose exponents gather where flushing
// matters: a quarter subnormal, half with a biased exponent below 80, the
// rest anywhere.
func randomFloats(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		var e uint32
		switch k := r.IntN(4); {
		case k == 0:
			e = 0
		case k < 3:
			e = r.Uint32N(80)
		default:
			e = r.Uint32N(256)
		}
		out[i] = math.Float32frombits(r.Uint32()&0x80000000 | e<<23 | r.Uint32()&0x7fffff)
	}
	return out
}

// sameBits compares like the typed outputs do: NaN's sign and payload are
// the hardware's.
func sameBits(x, y float32) bool {
	if x != x && y != y {
		return true
	}
	return math.Float32bits(x) == math.Float32bits(y)
}

// TestExactArithmetic: add, sub and mul through codegen.Exact, evaluated
// as a flushing GPU computes (cpuref.EvalX with flush: subnormal operands
// and results of float arithmetic, and operands of comparisons, read as
// zero), give cpuref's bits: every pair of hardFloats and 2^18 random
// pairs gathered near the subnormal range, a quarter subnormal, and as
// many products across the subnormal range and sums of near opposites. Without
// Exact the same evaluation departs from cpuref (the H200's wrong
// numbers), which the test checks too, so it cannot pass vacuously.
func TestExactArithmetic(t *testing.T) {
	hard := hardFloats()
	var a, b []float32
	for _, x := range hard {
		for _, y := range hard {
			a, b = append(a, x), append(b, y)
		}
	}
	r := rand.New(rand.NewPCG(32, 2))
	n := 1 << 18
	if testing.Short() {
		n = 1 << 16
	}
	a, b = append(a, randomFloats(r, n)...), append(b, randomFloats(r, n)...)
	for range n { // products from 2^-154 to 2^-124, across the subnormal range; sums of near opposites
		ea := r.Uint32N(128)
		eb := max(0, int(128-ea)-26+r.IntN(29))
		x := math.Float32frombits(r.Uint32()&0x80000000 | ea<<23 | r.Uint32()&0x7fffff)
		y := math.Float32frombits(r.Uint32()&0x80000000 | uint32(eb)<<23 | r.Uint32()&0x7fffff)
		near := math.Float32frombits(math.Float32bits(x) ^ 0x80000000 + r.Uint32N(64) - 32)
		a, b = append(a, x, x), append(b, y, near)
	}
	for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul} {
		x := op.Info().Expr
		checkExact(t, op.String(), x, a, b, true)
	}
}

// TestExactRows: every float row with an expression (ir.OpInfo.Expr:
// div, sqrt, exp, log, tanh, erf, the comparisons, relu, the scalar forms
// …) through codegen.Exact gives cpuref's bits on a flushing machine over
// every pair of hardFloats and random operands near the subnormal range.
func TestExactRows(t *testing.T) {
	hard := hardFloats()
	var a, b []float32
	for _, x := range hard {
		for _, y := range hard {
			a, b = append(a, x), append(b, y)
		}
	}
	r := rand.New(rand.NewPCG(32, 3))
	a, b = append(a, randomFloats(r, 4096)...), append(b, randomFloats(r, 4096)...)
	flushes := 0
	for _, op := range ir.Ops() {
		x := op.Info().Expr
		if x == nil {
			continue
		}
		if checkExact(t, op.String(), x, a, b, false) {
			flushes++
		}
	}
	if flushes < 10 {
		t.Errorf("only %d rows depart from cpuref when flushed: the flushing evaluation is not what it was", flushes)
	}
}

// checkExact checks Exact(x) flushed against x exact over the pairs, and
// reports whether x flushed departs from it (must: it has to).
func checkExact(t *testing.T, name string, x *ir.X, a, b []float32, must bool) bool {
	t.Helper()
	want := make([]float32, len(a))
	got := make([]float32, len(a))
	flushed := make([]float32, len(a))
	cpuref.EvalXSlice(x, want, a, b, false)
	cpuref.EvalXSlice(codegen.Exact(x), got, a, b, true)
	cpuref.EvalXSlice(x, flushed, a, b, true)
	bad, departs := 0, false
	for i := range want {
		if !sameBits(got[i], want[i]) {
			if bad++; bad <= 5 {
				t.Errorf("%s(%g [%08x], %g [%08x]) flushed through Exact = %g [%08x], cpuref %g [%08x]", name,
					a[i], math.Float32bits(a[i]), b[i], math.Float32bits(b[i]),
					got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
		departs = departs || !sameBits(flushed[i], want[i])
	}
	if must && !departs {
		t.Errorf("%s flushed without Exact gives cpuref's bits on every pair: the test does not bite", name)
	}
	return departs
}
