package cpuref_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// evalOne builds out = op(a, b) (b nil: a unary op) over inputs of dtype t
// and returns the output's value, or the run's error.
func evalOne(t *testing.T, op ir.Op, dt ir.DType, a, b []int64) (cpuref.Value, error) {
	t.Helper()
	bl := ir.NewBuilder()
	s := ir.Shape{len(a)}
	x := bl.TypedInput("a", dt, s, nil, a)
	var y ir.Tensor
	if b != nil {
		y = x.ApplyTo(ir.Bool, op, bl.TypedInput("b", dt, s, nil, b))
	} else {
		y = x.Apply(op)
	}
	bl.Output("y", y)
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatalf("%v of %v: %v", op, dt, err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		return cpuref.Value{}, err
	}
	return vals[g.Outputs[0].ID], nil
}

// TestIntegerRows: each integer row at its dtype's edges, as numpy and ONNX
// give them: add, sub and mul wrap in two's complement at ±2^31 and ±2^63
// and at the narrow types' edges; division truncates toward zero (MinInt /
// -1 wraps to MinInt); mod takes the divisor's sign; shifts of the width or
// more give 0; comparisons give bool.
func TestIntegerRows(t *testing.T) {
	const minI64, maxI64 = math.MinInt64, math.MaxInt64
	cases := []struct {
		op   ir.Op
		dt   ir.DType
		a, b int64
		want int64
	}{
		{ir.OpAdd, ir.I32, math.MaxInt32, 1, math.MinInt32},
		{ir.OpSub, ir.I32, math.MinInt32, 1, math.MaxInt32},
		{ir.OpMul, ir.I32, 65536, 65536, 0},
		{ir.OpMul, ir.I32, 65537, 65537, 131073},
		{ir.OpAdd, ir.I64, maxI64, 1, minI64},
		{ir.OpSub, ir.I64, minI64, 1, maxI64},
		{ir.OpMul, ir.I64, 1 << 62, 2, minI64},
		{ir.OpMul, ir.I64, maxI64, maxI64, 1},
		{ir.OpAdd, ir.U8, 250, 10, 4},
		{ir.OpSub, ir.U8, 0, 1, 255},
		{ir.OpMul, ir.U8, 16, 16, 0},
		{ir.OpAdd, ir.I8, 127, 1, -128},
		{ir.OpSub, ir.I8, -128, 1, 127},
		{ir.OpSub, ir.U32, 0, 1, 1<<32 - 1},
		{ir.OpMul, ir.U32, 1<<32 - 1, 1<<32 - 1, 1},
		{ir.OpDiv, ir.I32, -7, 2, -3},
		{ir.OpDiv, ir.I32, 7, -2, -3},
		{ir.OpDiv, ir.I32, math.MinInt32, -1, math.MinInt32},
		{ir.OpDiv, ir.I64, minI64, -1, minI64},
		{ir.OpDiv, ir.U32, 1<<32 - 1, 2, 1<<31 - 1},
		{ir.OpMod, ir.I32, -7, 2, 1},
		{ir.OpMod, ir.I32, 7, -2, -1},
		{ir.OpMod, ir.I32, -7, -2, -1},
		{ir.OpMod, ir.I64, minI64, -1, 0},
		{ir.OpMod, ir.U8, 255, 7, 3},
		{ir.OpNeg, ir.I32, math.MinInt32, 0, math.MinInt32},
		{ir.OpNeg, ir.I64, minI64, 0, minI64},
		{ir.OpNeg, ir.I8, -128, 0, -128},
		{ir.OpRelu, ir.I64, minI64, 0, 0},
		{ir.OpMaximum, ir.I64, minI64, maxI64, maxI64},
		{ir.OpMinimum, ir.U32, 0, 1<<32 - 1, 0},
		{ir.OpGreater, ir.I64, minI64, maxI64, 0},
		{ir.OpGreater, ir.U32, 1<<32 - 1, 0, 1},
		{ir.OpGreaterEqual, ir.I8, -128, -128, 1},
		{ir.OpEqual, ir.Bool, 1, 1, 1},
		{ir.OpEqual, ir.I64, maxI64, maxI64 - 1, 0},
		{ir.OpShiftLeft, ir.U8, 1, 8, 0},
		{ir.OpShiftLeft, ir.U8, 128, 1, 0},
		{ir.OpShiftLeft, ir.U8, 3, 7, 128},
		{ir.OpShiftRight, ir.U8, 255, 3, 31},
		{ir.OpShiftRight, ir.U8, 255, 200, 0},
		{ir.OpShiftLeft, ir.U32, 1, 31, 1 << 31},
		{ir.OpShiftLeft, ir.U32, 1, 32, 0},
		{ir.OpShiftRight, ir.U32, 1<<32 - 1, 31, 1},
		{ir.OpBitNot, ir.U8, 0, 0, 255},
		{ir.OpBitNot, ir.I32, 0, 0, -1},
		{ir.OpBitNot, ir.U32, 5, 0, 1<<32 - 6},
		{ir.OpBitAnd, ir.I64, -1, maxI64, maxI64},
		{ir.OpBitOr, ir.I8, -128, 127, -1},
		{ir.OpBitXor, ir.U32, 1<<32 - 1, 1, 1<<32 - 2},
		{ir.OpAnd, ir.Bool, 1, 0, 0},
		{ir.OpOr, ir.Bool, 1, 0, 1},
		{ir.OpXor, ir.Bool, 1, 1, 0},
		{ir.OpNot, ir.Bool, 0, 0, 1},
	}
	for _, c := range cases {
		var b []int64
		if c.op.Info().Args == 2 {
			b = []int64{c.b}
		}
		got, err := evalOne(t, c.op, c.dt, []int64{c.a}, b)
		if err != nil {
			t.Errorf("%v(%d, %d) of %v: %v", c.op, c.a, c.b, c.dt, err)
			continue
		}
		if got.I[0] != c.want {
			t.Errorf("%v(%d, %d) of %v = %d, want %d", c.op, c.a, c.b, c.dt, got.I[0], c.want)
		}
	}
}

// TestFaults: a run with no right answer fails with integer_fault naming
// the node, instead of returning a made-up value: division and modulo by
// zero of every integer dtype, casts of NaN, ±Inf and out-of-range floats to
// integers.
func TestFaults(t *testing.T) {
	for _, dt := range []ir.DType{ir.I32, ir.I64, ir.U8, ir.I8, ir.U32} {
		for _, op := range []ir.Op{ir.OpDiv, ir.OpMod} {
			_, err := evalOne(t, op, dt, []int64{5, 7}, []int64{1, 0})
			var e *ir.Error
			if !errors.As(err, &e) || e.Code != ir.CodeIntegerFault || e.Node != 2 {
				t.Errorf("%v of %v by zero: %v, want integer_fault at node 2", op, dt, err)
			}
		}
	}
	for _, c := range []struct {
		from ir.DType
		v    float32
		to   ir.DType
	}{
		{ir.F32, float32(math.NaN()), ir.I32}, {ir.F32, float32(math.Inf(1)), ir.I64}, {ir.F32, 2147483648, ir.I32},
		{ir.F32, 0x1p63, ir.I64}, {ir.F16, 256, ir.U8}, {ir.F16, -1, ir.U32}, {ir.BF16, 0x1p40, ir.I32}, {ir.F32, -129, ir.I8},
	} {
		b := ir.NewBuilder()
		// NaN and Inf are no input values: make them (0/0, 1/0) in the graph.
		var x ir.Tensor
		if c.v != c.v || math.IsInf(float64(c.v), 0) {
			num := float32(0)
			if c.v == c.v {
				num = 1
			}
			x = b.TypedInput("n", c.from, ir.Shape{1}, []float32{num}, nil).Div(b.TypedInput("z", c.from, ir.Shape{1}, []float32{0}, nil))
		} else {
			x = b.TypedInput("x", c.from, ir.Shape{1}, []float32{c.v}, nil)
		}
		b.Output("y", x.Cast(c.to))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cpuref.EvalTyped(g); !errors.Is(err, ir.ErrIntegerFault) {
			t.Errorf("cast of %v %v to %v: %v, want integer_fault", c.from, c.v, c.to, err)
		}
	}
}

// TestNarrowFloats: float16 and bfloat16 ops compute in float32 and round
// after each op: overflow to Inf at float16's 65520, subnormals kept and
// rounded (2^-25 ties to +0), NaN from 0/0, -0 kept.
func TestNarrowFloats(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	sub := float32(0x1p-24) // float16's least subnormal
	cases := []struct {
		op   ir.Op
		dt   ir.DType
		a, b float32
		want float32
	}{
		{ir.OpAdd, ir.F16, 65504, 16, float32(math.Inf(1))},
		{ir.OpAdd, ir.F16, 65504, 15.9375, 65504},
		{ir.OpMul, ir.F16, -65504, 2, float32(math.Inf(-1))},
		{ir.OpAdd, ir.F16, sub, sub, 0x1p-23},
		{ir.OpMul, ir.F16, sub, 0.5, 0},
		{ir.OpMul, ir.F16, 3 * sub, 0.5, 2 * sub}, // 1.5 ulp ties to the even 2
		{ir.OpMul, ir.F16, -sub, 0.5, negZero},
		{ir.OpAdd, ir.F16, negZero, negZero, negZero},
		{ir.OpSub, ir.F16, 1, 1, 0},
		{ir.OpDiv, ir.F16, 1, 3, ir.F16Round(1.0 / 3)},
		{ir.OpDiv, ir.F16, 0, 0, float32(math.NaN())},
		{ir.OpNeg, ir.F16, 0, 0, negZero},
		{ir.OpAdd, ir.BF16, 1, 0x1p-8, 1},                    // a tie to even
		{ir.OpAdd, ir.BF16, 1, 0x1p-8 + 0x1p-15, 1 + 0x1p-7}, // above the tie
		{ir.OpMul, ir.BF16, 0x1p127, 2, float32(math.Inf(1))},
		{ir.OpGreater, ir.F16, 1, negZero, 1},
		{ir.OpEqual, ir.F16, 0, negZero, 1},
	}
	for _, c := range cases {
		b := ir.NewBuilder()
		x := b.TypedInput("a", c.dt, ir.Shape{1}, []float32{c.a}, nil)
		var y ir.Tensor
		if c.op.Info().Args == 2 {
			y = x.ApplyTo(ir.Bool, c.op, b.TypedInput("b", c.dt, ir.Shape{1}, []float32{c.b}, nil))
		} else {
			y = x.Apply(c.op)
		}
		b.Output("y", y)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatalf("%v(%v, %v) of %v: %v", c.op, c.a, c.b, c.dt, err)
		}
		vals, err := cpuref.EvalTyped(g)
		if err != nil {
			t.Fatal(err)
		}
		got := vals[g.Outputs[0].ID]
		if got.DType == ir.Bool {
			if float32(got.I[0]) != c.want {
				t.Errorf("%v(%v, %v) of %v = %d, want %v", c.op, c.a, c.b, c.dt, got.I[0], c.want)
			}
			continue
		}
		if w := got.F[0]; math.Float32bits(w) != math.Float32bits(c.want) && !(w != w && c.want != c.want) {
			t.Errorf("%v(%v, %v) of %v = %v, want %v", c.op, c.a, c.b, c.dt, w, c.want)
		}
	}
}

// TestTypedSuite: every graph of irtest.Typed evaluates, each value within
// its dtype (integers in range, narrow floats rounded), and its float32
// nodes over float32 operands are Eval's bits.
func TestTypedSuite(t *testing.T) {
	for _, c := range irtest.Typed() {
		vals, err := cpuref.EvalTyped(c.Graph)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		for i, v := range vals {
			n := &c.Graph.Nodes[i]
			if v.DType != n.DType || v.Len() != n.Shape.Len() {
				t.Fatalf("%s: node %d (%v) gives %v of %d elements, want %v of %d", c.Name, i, n.Op, v.DType, v.Len(), n.DType, n.Shape.Len())
			}
			lo, hi := v.DType.Range()
			for k, x := range v.I {
				if x < lo || x > hi {
					t.Fatalf("%s: node %d (%v) element %d = %d, outside %v", c.Name, i, n.Op, k, x, v.DType)
				}
			}
			for k, x := range v.F {
				if x == x && !v.DType.Holds(x) {
					t.Fatalf("%s: node %d (%v) element %d = %v, not a %v", c.Name, i, n.Op, k, x, v.DType)
				}
			}
		}
	}
}

// narrowGrid is a float dtype's values as a sorted float64 grid, with the
// value past the largest finite one (2^16 for float16, 2^128 for bfloat16)
// standing for +Inf at both ends, so that the midpoint below it is the
// overflow threshold; bits gives each grid value's bit pattern's parity.
type narrowGrid struct {
	vals []float64
	even []bool
}

func newGrid(dec func(uint16) float32, maxBits uint16, past float64) narrowGrid {
	type e struct {
		v    float64
		even bool
	}
	var es []e
	for h := uint16(0); h <= maxBits; h++ {
		v := float64(dec(h))
		es = append(es, e{v, h%2 == 0})
		if h != 0 {
			es = append(es, e{-v, h%2 == 0})
		}
	}
	es = append(es, e{past, true}, e{-past, true})
	sort.Slice(es, func(i, j int) bool { return es[i].v < es[j].v })
	var g narrowGrid
	for _, x := range es {
		g.vals = append(g.vals, x.v)
		g.even = append(g.even, x.even)
	}
	return g
}

// round returns the correctly rounded value of an exact real q, given a
// float64 approximation q64 within a few of its ulps and cmp(m), the exact
// sign of q - m for a float64 m: the two grid values around q, then the
// side of their midpoint (ties to the even bit pattern). Beyond the largest
// finite value it is ±Inf.
func (g narrowGrid) round(q64 float64, cmp func(m float64) int) float64 {
	i := sort.SearchFloat64s(g.vals, q64) // g.vals[i-1] < q64 <= g.vals[i]
	i = max(1, min(i, len(g.vals)-1))
	for i > 1 && cmp(g.vals[i-1]) < 0 {
		i--
	}
	for i < len(g.vals)-1 && cmp(g.vals[i]) > 0 {
		i++
	}
	lo, hi := g.vals[i-1], g.vals[i]
	var r float64
	switch c := cmp(lo/2 + hi/2); {
	case cmp(lo) == 0:
		r = lo
	case cmp(hi) == 0:
		r = hi
	case c < 0:
		r = lo
	case c > 0:
		r = hi
	case g.even[i-1]:
		r = lo
	default:
		r = hi
	}
	if math.Abs(r) == g.vals[len(g.vals)-1] {
		return math.Copysign(math.Inf(1), r)
	}
	return r
}

func sign(x float64) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// TestDoubleRoundingExact proves, for float16 and bfloat16, that computing
// + − × ÷ in float32 and rounding to the narrow type gives the correctly
// rounded result of the exact operation, and √ too. The argument
// (Figueroa, "When is double rounding innocuous?", 1995): for a binary
// format of p bits and a wider one of q ≥ 2p + 2 bits, rounding the exact
// +, −, ×, ÷ or √ of p-bit operands to q bits and then to p bits equals
// rounding it to p bits once: float32's 24 bits are ≥ 2·11 + 2 (float16)
// and 2·8 + 2 (bfloat16). The exponent ranges need care too: float32 holds
// every float16 result exactly scaled (no float32 subnormal meets a float16
// normal), and bfloat16 shares float32's exponent range, so its subnormal
// results are float32 subnormals, rounded once by float32 at bfloat16's own
// quantum or finer. The test checks the claim against exact arithmetic:
// the reference rounds the exact result (float64 products and sums are
// exact here; a quotient and a root are placed against each candidate
// midpoint by an exact sign, a fused multiply-add), exhaustively for √ over
// all 65,536 bit patterns of each type, and for the binary ops over every
// pair of a 1,100-value set per type (1.2 million pairs: every subnormal
// edge, the largest values, powers of two and their neighbours, and random
// values of every magnitude), so the claim holds bit for bit, ties and
// overflow included.
func TestDoubleRoundingExact(t *testing.T) {
	types := []struct {
		dt      ir.DType
		dec     func(uint16) float32
		maxBits uint16
		past    float64
	}{
		{ir.F16, ir.F16Float, 0x7bff, 0x1p16},
		{ir.BF16, ir.BF16Float, 0x7f7f, 0x1p128},
	}
	n := 1100
	if testing.Short() {
		n = 400
	}
	for _, ty := range types {
		grid := newGrid(ty.dec, ty.maxBits, ty.past)
		// √ over every bit pattern.
		var all []float32
		for h := range 1 << 16 {
			if v := ty.dec(uint16(h)); !math.IsInf(float64(v), 0) && v == v {
				all = append(all, v)
			}
		}
		got := evalNarrow(t, ty.dt, ir.OpSqrt, all, nil)
		for k, a := range all {
			a64 := float64(a)
			var want float64
			if a64 < 0 {
				want = math.NaN()
			} else if a64 == 0 {
				want = a64
			} else {
				want = grid.round(math.Sqrt(a64), func(m float64) int {
					if m < 0 {
						return 1
					}
					return sign(a64 - m*m) // m·m exact: at most 24 bits
				})
			}
			check(t, ty.dt, "sqrt", a, 0, got[k], want)
		}
		// The binary ops over every pair of a large set.
		set := sampleSet(ty.dec, ty.maxBits, n)
		var as, bs []float32
		for _, a := range set {
			for _, b := range set {
				as, bs = append(as, a), append(bs, b)
			}
		}
		ops := []struct {
			op  ir.Op
			q64 func(a, b float64) float64   // float64's result: exact (+, − of float16, ×) or within an ulp
			cmp func(a, b, q, m float64) int // the exact sign of (a op b) - m
		}{
			{ir.OpAdd, func(a, b float64) float64 { return a + b }, sumSign(ty.dt, 1)},
			{ir.OpSub, func(a, b float64) float64 { return a - b }, sumSign(ty.dt, -1)},
			{ir.OpMul, func(a, b float64) float64 { return a * b }, func(_, _, q, m float64) int { return sign(q - m) }},
			{ir.OpDiv, func(a, b float64) float64 { return a / b },
				func(a, b, _, m float64) int { return sign(math.FMA(-m, b, a)) * pick(b < 0, -1, 1) }},
		}
		for _, o := range ops {
			got := evalNarrow(t, ty.dt, o.op, as, bs)
			for k := range as {
				a, b := float64(as[k]), float64(bs[k])
				q := o.q64(a, b)
				want := q // exact: ±0 by IEEE's sign rules, ±Inf and NaN from ±Inf, 0 or a division by 0
				if q == q && !math.IsInf(q, 0) && q != 0 {
					want = grid.round(q, func(m float64) int { return o.cmp(a, b, q, m) })
					if want == 0 {
						want = math.Copysign(0, q)
					}
				}
				check(t, ty.dt, o.op.String(), as[k], bs[k], got[k], want)
			}
		}
	}
}

// sumSign returns the exact sign of (a + s·b) - m: from float64 for
// float16, whose sums span at most 2^-24 to 2^17 (exact in 53 bits), and
// from a 400-bit big.Float for bfloat16, whose sums may span 2^-133 to
// 2^128.
func sumSign(dt ir.DType, s float64) func(a, b, q, m float64) int {
	if dt == ir.F16 {
		return func(_, _, q, m float64) int { return sign(q - m) }
	}
	return func(a, b, _, m float64) int {
		f := func(x float64) *big.Float { return new(big.Float).SetPrec(400).SetFloat64(x) }
		sum := new(big.Float).SetPrec(400).Add(f(a), f(s*b))
		return sum.Sub(sum, f(m)).Sign()
	}
}

func pick(c bool, a, b int) int {
	if c {
		return a
	}
	return b
}

func check(t *testing.T, dt ir.DType, op string, a, b, got float32, want float64) {
	t.Helper()
	g := float64(got)
	if g == want && math.Signbit(g) == math.Signbit(want) || g != g && want != want {
		return
	}
	t.Fatalf("%v %s(%v, %v) = %v, want %v (correctly rounded)", dt, op, a, b, got, want)
}

// sampleSet returns n values of a narrow format: its edges (subnormals, the
// least normal, the largest, powers of two and their neighbours) and
// random bit patterns, both signs.
func sampleSet(dec func(uint16) float32, maxBits uint16, n int) []float32 {
	r := rand.New(rand.NewPCG(uint64(maxBits), 5))
	var hs []uint16
	for _, h := range []uint16{0, 1, 2, 3, 0x3ff, 0x400, 0x401, 0x7f, 0x80, 0x81, maxBits, maxBits - 1, 0x3c00, 0x3f80, 0x3bff, 0x3c01} {
		hs = append(hs, h, h|0x8000)
	}
	for e := uint16(0); e < 0x7c00 && e <= maxBits; e += 0x400 {
		hs = append(hs, e, e+1, e-1)
	}
	for len(hs) < n {
		h := uint16(r.IntN(int(maxBits) + 1))
		if r.IntN(2) == 0 {
			h |= 0x8000
		}
		hs = append(hs, h)
	}
	var out []float32
	for _, h := range hs[:n] {
		if h&0x7fff <= maxBits {
			out = append(out, dec(h))
		}
	}
	return out
}

// evalNarrow evaluates op over narrow-typed inputs a (and b) by EvalTyped.
func evalNarrow(t *testing.T, dt ir.DType, op ir.Op, a, b []float32) []float32 {
	t.Helper()
	bl := ir.NewBuilder()
	s := ir.Shape{len(a)}
	x := bl.TypedInput("a", dt, s, a, nil)
	var y ir.Tensor
	if b != nil {
		y = x.Apply(op, bl.TypedInput("b", dt, s, b, nil))
	} else {
		y = x.Apply(op)
	}
	bl.Output("y", y)
	g, err := bl.Build(ir.Limits{MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	return vals[g.Outputs[0].ID].F
}

// TestGather: ONNX's Gather at run time: rows and columns of any dtype at
// int32 and int64 indices, negative ones from the end, a scalar index
// dropping the axis; an index outside [-d, d) fails the run with
// invalid_input naming it, reading nothing out of bounds.
func TestGather(t *testing.T) {
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.I64, ir.Shape{3, 2}, nil, []int64{10, 11, 20, 21, math.MaxInt64, math.MinInt64})
	h := b.TypedInput("h", ir.F16, ir.Shape{2, 3}, []float32{1, 2, 3, 0.5, 0.25, float32(math.Copysign(0, -1))}, nil)
	rows := b.TypedInput("rows", ir.I64, ir.Shape{2, 2}, nil, []int64{2, -3, -1, 1})
	col := b.TypedInput("col", ir.I32, ir.Shape{}, nil, []int64{-1})
	b.Output("rows", x.Gather(rows, 0))
	b.Output("col", h.Gather(col, 1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	r := vals[g.Outputs[0].ID]
	if want := []int64{math.MaxInt64, math.MinInt64, 10, 11, math.MaxInt64, math.MinInt64, 20, 21}; !g.Nodes[g.Outputs[0].ID].Shape.Equal(ir.Shape{2, 2, 2}) || !slices.Equal(r.I, want) {
		t.Errorf("rows = %v %v, want [2 2 2] %v", g.Nodes[g.Outputs[0].ID].Shape, r.I, want)
	}
	c := vals[g.Outputs[1].ID]
	if !g.Nodes[g.Outputs[1].ID].Shape.Equal(ir.Shape{2}) || c.DType != ir.F16 || c.F[0] != 3 || math.Float32bits(c.F[1]) != 1<<31 {
		t.Errorf("col = %v %v %v, want float16 [3 -0]", g.Nodes[g.Outputs[1].ID].Shape, c.DType, c.F)
	}
	for _, bad := range []int64{3, -4, math.MaxInt64, math.MinInt64} {
		g.Nodes[g.Input("rows")].Ints = []int64{0, bad, 1, 2}
		var e *ir.Error
		if _, err := cpuref.EvalTyped(g); !errors.As(err, &e) || e.Code != ir.CodeInvalidInput || !strings.Contains(e.Msg, "index") {
			t.Errorf("index %d of 3 rows: %v, want invalid_input naming the index", bad, err)
		}
	}
	// float32 data gathers too (the graph is typed by its indices).
	b = ir.NewBuilder()
	f := b.Input(ir.Shape{4}, []float32{1, 2, 3, 4})
	b.Output("y", f.Gather(b.TypedInput("i", ir.I32, ir.Shape{3}, nil, []int64{3, 3, -4}), 0))
	if g, err = b.Build(ir.Limits{}); err != nil {
		t.Fatal(err)
	}
	if vals, err = cpuref.EvalTyped(g); err != nil || !slices.Equal(vals[g.Outputs[0].ID].F, []float32{4, 4, 1}) {
		t.Errorf("float32 gather: %v %v", vals, err)
	}
}

// TestGatherElements: ONNX's GatherElements at run time: each element of
// int64 data at its own position with the axis coordinate its index,
// indices smaller than the data in the other dimensions, negative ones
// from the end, the extremes unchanged; an index outside [-d, d) fails the
// run with invalid_input naming it and its element.
func TestGatherElements(t *testing.T) {
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.I64, ir.Shape{3, 2}, nil, []int64{10, 11, 20, 21, math.MaxInt64, math.MinInt64})
	rows := b.TypedInput("rows", ir.I64, ir.Shape{2, 2}, nil, []int64{2, -3, -1, 1})
	cols := b.TypedInput("cols", ir.I32, ir.Shape{3, 1}, nil, []int64{1, -2, -1})
	b.Output("rows", x.GatherElements(rows, 0))
	b.Output("cols", x.GatherElements(cols, -1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range [][]int64{{math.MaxInt64, 11, math.MaxInt64, 21}, {11, 20, math.MinInt64}} {
		if got := vals[g.Outputs[k].ID].I; !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", g.Outputs[k].Name, got, want)
		}
	}
	for _, bad := range []int64{3, -4, math.MaxInt64, math.MinInt64} {
		g.Nodes[g.Input("rows")].Ints = []int64{0, 1, bad, 2}
		var e *ir.Error
		if _, err := cpuref.EvalTyped(g); !errors.As(err, &e) || e.Code != ir.CodeInvalidInput || !strings.Contains(e.Msg, fmt.Sprintf("index %d (element 2)", bad)) {
			t.Errorf("index %d of 3 rows: %v, want invalid_input naming the index and its element", bad, err)
		}
	}
	b = ir.NewBuilder()
	f := b.TypedInput("f", ir.F32, ir.Shape{2, 2}, []float32{1, float32(math.Copysign(0, -1)), float32(math.NaN()), 4}, nil)
	b.Output("y", f.GatherElements(b.TypedInput("i", ir.I64, ir.Shape{2, 2}, nil, []int64{1, 1, 0, 1}), 1))
	if g, err = b.Build(ir.Limits{NonFinite: true}); err != nil {
		t.Fatal(err)
	}
	vals, err = cpuref.EvalTyped(g)
	if y := vals[g.Outputs[0].ID].F; err != nil || math.Float32bits(y[0]) != 1<<31 || y[2] == y[2] || y[3] != 4 {
		t.Errorf("float32 gather_elements: %v %v, want [-0 -0 NaN 4]", y, err)
	}
}
