package ir_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// trigInputs returns n float32s spread over every exponent (a stride over
// the bit patterns) and, for sin, cos and tan, the 9 floats around each of
// 4096 multiples of π/2 below TrigMax, where the reduction cancels most,
// with the worst of them below 2^17·π/2 (52516.434: |x - 33433·π/2| ≈ 1.6e-8).
func trigInputs(n int, nearHalfPi bool) []float32 {
	var xs []float32
	step := uint32((1 << 32) / uint64(n))
	for b := uint64(0); b < 1<<32; b += uint64(step) {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	if nearHalfPi {
		r := rand.New(rand.NewPCG(1, 2))
		for range 4096 {
			k := r.IntN(131000) + 1
			x := float32(float64(k) * math.Pi / 2)
			for d := -4; d <= 4; d++ {
				xs = append(xs, math.Float32frombits(uint32(int32(math.Float32bits(x))+int32(d))))
			}
		}
		xs = append(xs, 52516.434, -52516.434, ir.TrigMax, math.Nextafter32(ir.TrigMax, 0))
	}
	return xs
}

// TestTrigAccuracy measures the ops of xtrig.go against float64 math over
// 2^18 inputs each (2^22 without -short; and the hard cases of sin, cos
// and tan's reduction): within 2 ULP everywhere but where the full tier
// found more (2026-12-06: tan 2.063 at ±1.0977783 and ±13733, asin 2.232
// near ±0.5, asinh 2.107 near ±0.5 and ±1.1; the short tier's inputs
// reach none of them); NaN, infinities and signed zeros as math's, NaN
// from TrigMax on for sin, cos and tan.
func TestTrigAccuracy(t *testing.T) {
	bound := map[ir.Op]float64{ir.OpTan: 2.07, ir.OpAsin: 2.24, ir.OpAsinh: 2.11}
	n := 1 << 18
	if !testing.Short() {
		n = 1 << 22
	}
	for _, op := range []ir.Op{ir.OpSin, ir.OpCos, ir.OpTan, ir.OpAsin, ir.OpAcos, ir.OpAtan, ir.OpSinh, ir.OpCosh, ir.OpAsinh, ir.OpAcosh, ir.OpAtanh} {
		r := op.Info()
		xs := trigInputs(n, op == ir.OpSin || op == ir.OpCos || op == ir.OpTan)
		got := make([]float32, len(xs))
		cpuref.EvalXSlice(r.Expr, got, xs, nil, false)
		worst, bad := 0.0, 0
		if bound[op] == 0 {
			bound[op] = 2
		}
		for i, x := range xs {
			d := ulps(got[i], r.F64(float64(x), 0))
			if d > bound[op] {
				if bad++; bad <= 5 {
					t.Errorf("%v(%g) = %g, float64 %g: %.3g ULP", op, x, got[i], r.F64(float64(x), 0), d)
				}
			}
			worst = max(worst, d)
		}
		t.Logf("%v: worst %.3f ULP over %d inputs", op, worst, len(xs))
	}
}

// TestPowSpecialValues: pow's special cases are C's (math.Pow's), bit for
// bit up to NaN payloads, and an integer exponent |n| ≤ 64 gives the bits
// of ONNX Pow's constant exponents (repeated squaring in float32, of 1/x
// for n < 0), so a folded and a run-time exponent agree.
func TestPowSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	vals := []float32{0, negZero, 1, -1, 0.5, -0.5, 2, -2, 3, -3, 64, -64, 65, -65, 1.5, -1.5, inf, -inf, nan,
		1e-45, -1e-45, 3.4028235e38, -3.4028235e38, 16777216, 16777217, -16777216, 0.999999, 1.0000001}
	pow := ir.OpPow.Info().Expr
	for _, x := range vals {
		for _, y := range vals {
			got := cpuref.EvalX(pow, x, y, false)
			want := math.Pow(float64(x), float64(y))
			ok := ulps(got, want) <= 2+max(2*math.Abs(math.Log(math.Abs(want))), math.Abs(float64(y))) || got != got && want != want || ulps(got, want) == 0
			if want == 0 || math.IsInf(want, 0) || float64(float32(want)) != want && math.Abs(want) < 1e-38 {
				ok = float32(want) == got && math.Signbit(want) == math.Signbit(float64(got)) || ulps(got, want) <= 2
			}
			if !ok {
				t.Errorf("pow(%g, %g) = %g (%#08x), C's %g", x, y, got, math.Float32bits(got), want)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		x := float32(r.NormFloat64() * 3)
		if r.IntN(4) == 0 {
			x = math.Float32frombits(r.Uint32())
		}
		n := r.IntN(129) - 64
		want := squaring(x, n)
		got := cpuref.EvalX(pow, x, float32(n), false)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("pow(%g, %d) = %g (%#08x), repeated squaring %g (%#08x)", x, n, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// squaring is onnx.powOp's x^n for a constant n, in float32.
func squaring(x float32, n int) float32 {
	if n == 0 {
		return 1
	}
	base := x
	if n < 0 {
		base, n = 1/x, -n
	}
	var p float32
	have := false
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			if have {
				p *= base
			} else {
				p, have = base, true
			}
		}
		if n > 1 {
			base *= base
		}
	}
	return p
}
