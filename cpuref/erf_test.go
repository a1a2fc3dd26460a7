package cpuref_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// erfBound is erf's stated error (cpuref's accuracy table).
const erfBound = 1.042

// ulpsF64 is |got - want| in float32 ULPs at want (2⁻¹⁴⁹ below the normal
// range), as bench/accuracy measures.
func ulpsF64(got float32, want float64) float64 {
	if float64(got) == want || float32(want) == got && math.IsInf(float64(got), 0) {
		return 0
	}
	_, e := math.Frexp(want)
	return math.Abs(float64(got)-want) / math.Ldexp(1, max(e-24, -149))
}

// TestErf checks erf's special values (±0, subnormals, ±Inf, NaN, the
// saturation point) and, over dense windows of consecutive floats around
// each edge of its polynomial regions (0.875, 1.75, 2.5, 3.9192059), tiny
// inputs and a spread over every exponent, that no input is further than
// the stated bound from float64's math.Erf.
func TestErf(t *testing.T) {
	erf := func(x float32) float32 { return cpuref.Unary(ir.OpErf, x, 0) }
	bits := math.Float32bits
	f := math.Float32frombits
	specials := []struct{ in, want uint32 }{
		{0, 0}, {0x80000000, 0x80000000}, // ±0
		{0x7f800000, 0x3f800000}, {0xff800000, 0xbf800000}, // ±Inf → ±1
		{0x407ad445, 0x3f800000}, {0x407ad444, 0x3f7fffff}, // the saturation point and the float below it
		{0x7f7fffff, 0x3f800000},
		{1, 1}, {0x80000001, 0x80000001}, // 2⁻¹⁴⁹·(1 + 0.128) rounds to 2⁻¹⁴⁹
	}
	for _, s := range specials {
		if got := bits(erf(f(s.in))); got != s.want {
			t.Errorf("erf(%#08x) = %#08x, want %#08x", s.in, got, s.want)
		}
	}
	if got := erf(float32(math.NaN())); got == got {
		t.Errorf("erf(NaN) = %v, want NaN", got)
	}
	var inputs []uint32
	for _, edge := range []float32{0.875, 1.75, 2.5, f(0x407ad445), 0.858} {
		for d := -4096; d <= 4096; d++ {
			inputs = append(inputs, uint32(int64(bits(edge))+int64(d)))
		}
	}
	for b := uint32(0); b < 0x00a00000; b += 997 { // subnormals and the smallest normals
		inputs = append(inputs, b)
	}
	for b := uint32(0); b < 0x7f800000; b += 65521 { // every exponent
		inputs = append(inputs, b)
	}
	worst, worstX := 0.0, uint32(0)
	for _, b := range inputs {
		for _, sign := range []uint32{0, 0x80000000} {
			x := f(b | sign)
			got, want := erf(x), math.Erf(float64(x))
			if -erf(-x) != got && !(got == 0 && erf(-x) == 0) {
				t.Fatalf("erf(%v) = %v but erf(%v) = %v: not odd", x, got, -x, erf(-x))
			}
			if e := ulpsF64(got, want); e > worst {
				worst, worstX = e, b|sign
			}
		}
	}
	if worst > erfBound {
		t.Errorf("erf(%#08x) is %.3f ULP from float64, over the stated %.3f", worstX, worst, erfBound)
	}
	t.Logf("%d inputs, max %.3f ULP at %#08x", 2*len(inputs), worst, worstX)
}
