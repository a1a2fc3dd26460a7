package ir_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// divRowExpr is DivRowFast over a and b with the divisor's parts computed
// from b, as a rows kernel computes them (once a row), and +0 where b is
// not normal (DivRowOK: the kernel then divides every leaf of the row).
func divRowExpr() *ir.X {
	b := ir.Arg(1)
	fast := ir.Call(ir.DivRowFast, ir.Arg(0), b, ir.Call(ir.DivRowB, b), ir.Call(ir.DivRowY, b),
		ir.Call(ir.DivRowHi, b), ir.Call(ir.DivRowLo, b), ir.Call(ir.DivRowE, b))
	return ir.If(ir.Call(ir.DivRowOK, b).Eq(ir.F(1)), fast, ir.F(0)) // the caller's check, once a row
}

// TestDivRowFast: division's fast path for a shared divisor gives div's
// bits or +0 (the caller then divides), never anything else, on division's
// random, hard and edge pairs (irtest.DivPairs), evaluated unflushed and
// flushed; +0 exactly where an operand or the quotient is not normal (or
// rounds up to the least normal from below); and
// each divisor of a row of softmax-like numerators (exp of random x - max,
// in (0, 1]) over sums from 1 to 2^10 and layer norm's scale 1.
func TestDivRowFast(t *testing.T) {
	n := 1 << 18
	if !testing.Short() {
		n = 1 << 20
	}
	as, bs := irtest.DivPairs(1, n)
	for _, b := range []float32{1, 1.5, 3, 1023.75, 1024, 0x1p-126, 0x1.fffffep127} {
		for i := 0; i < 4096; i++ {
			a := float32(math.Exp(-float64(i) / 256))
			as, bs = append(as, a, -a, a*0x1p-100, a*0x1p100), append(bs, b, b, b, b)
		}
	}
	fast, div := divRowExpr(), ir.OpDiv.Info().Expr
	got, want := make([]float32, len(as)), make([]float32, len(as))
	normal := func(v float32) bool {
		e := math.Float32bits(v) >> 23 & 0xff
		return e != 0 && e != 0xff
	}
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(fast, got, as, bs, flush)
		cpuref.EvalXSlice(div, want, as, bs, flush)
		bad, hits := 0, 0
		for i := range as {
			common := normal(as[i]) && normal(bs[i]) && normal(want[i])
			// a quotient below the least normal that rounds up to it is
			// div's subnormal path: the fast path leaves it to div too
			edge := math.Float32bits(want[i])&0x7fffffff == 0x00800000
			ok := same(got[i], want[i]) && common || math.Float32bits(got[i]) == 0 && (!common || edge)
			if !ok {
				if bad++; bad <= 10 {
					t.Errorf("%#08x / %#08x flush=%v: fast %#08x, div %#08x", math.Float32bits(as[i]), math.Float32bits(bs[i]), flush,
						math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
			if common {
				hits++
			}
		}
		t.Logf("flush=%v: %d pairs, %d on the fast path", flush, len(as), hits)
	}
}

// TestDivRowFastCounts logs the expression nodes a numerator costs on the
// fast path and through div: float arithmetic, u32 operations, selects,
// compares (bitcasts aside, which cost nothing).
func TestDivRowFastCounts(t *testing.T) {
	count := func(x *ir.X) (fl, u, sel, cmp int) {
		for _, n := range x.Nodes() {
			switch {
			case n.Arithmetic():
				fl++
			case n.Op == ir.XSelect:
				sel++
			case n.Op == ir.XGt || n.Op == ir.XGe || n.Op == ir.XEq || n.Op == ir.XULt || n.Op == ir.XUEq:
				cmp++
			case n.Op == ir.XUAdd || n.Op == ir.XUSub || n.Op == ir.XAnd || n.Op == ir.XOr || n.Op == ir.XXor || n.Op == ir.XShl || n.Op == ir.XShr:
				u++
			}
		}
		return
	}
	for _, f := range []*ir.Func{ir.DivRowFast, ir.DivFn} {
		fl, u, sel, cmp := count(f.Body)
		t.Logf("%s: %d float, %d u32, %d selects, %d compares", f.Name, fl, u, sel, cmp)
	}
}

// TestMaxNeg: ir.MaxNeg is maximum(x, neg(x)) on every float32 input of
// the sweep (all 2^32 with GPUCC_XMATH_ALL=1), unflushed and flushed.
func TestMaxNeg(t *testing.T) {
	step := uint64(4093)
	if exhaustive() {
		step = 1
	}
	var xs []float32
	for _, e := range irtest.Edges() {
		xs = append(xs, e)
	}
	for b := uint64(0); b < 1<<32; b += step {
		xs = append(xs, math.Float32frombits(uint32(b)))
		if len(xs) == 1<<20 || b+step >= 1<<32 {
			checkMaxNeg(t, xs)
			xs = xs[:0]
		}
	}
}

func checkMaxNeg(t *testing.T, xs []float32) {
	t.Helper()
	x := ir.Arg(0)
	ref := ir.OpMaximum.Info().Expr
	neg := make([]float32, len(xs))
	cpuref.EvalXSlice(ir.OpNeg.Info().Expr, neg, xs, xs, false)
	got, want := make([]float32, len(xs)), make([]float32, len(xs))
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(ir.Call(ir.MaxNeg, x), got, xs, xs, flush)
		cpuref.EvalXSlice(ref, want, xs, neg, flush)
		for i := range xs {
			if !same(got[i], want[i]) {
				t.Fatalf("max_neg(%#08x) flush=%v: %#08x, maximum(x, neg x) %#08x", math.Float32bits(xs[i]), flush, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// TestDivByOne: ir.DivByOne(a) is div(a, 1) on every float32 of the sweep
// (all 2^32 with GPUCC_XMATH_ALL=1), unflushed and flushed.
func TestDivByOne(t *testing.T) {
	step := uint64(4093)
	if exhaustive() {
		step = 1
	}
	xs := irtest.Edges()
	one := make([]float32, 1<<20)
	for i := range one {
		one[i] = 1
	}
	check := func(xs []float32) {
		got, want := make([]float32, len(xs)), make([]float32, len(xs))
		for _, flush := range []bool{false, true} {
			cpuref.EvalXSlice(ir.Call(ir.DivByOne, ir.Arg(0)), got, xs, xs, flush)
			cpuref.EvalXSlice(ir.OpDiv.Info().Expr, want, xs, one[:len(xs)], flush)
			for i := range xs {
				if !same(got[i], want[i]) {
					t.Fatalf("div_one(%#08x) flush=%v: %#08x, div %#08x", math.Float32bits(xs[i]), flush, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
	check(xs)
	xs = nil
	for b := uint64(0); b < 1<<32; b += step {
		xs = append(xs, math.Float32frombits(uint32(b)))
		if len(xs) == 1<<20 || b+step >= 1<<32 {
			check(xs)
			xs = xs[:0]
		}
	}
}
