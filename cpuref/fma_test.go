package cpuref

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestFMA: fma32 is x·y + z rounded once, as math/big computes it exactly
// and rounds it to 24 bits (ties to even, subnormals on their grid), on
// random triples and on triples whose exact value lies next to a float32
// midpoint, where rounding through float64 first goes wrong.
func TestFMA(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	fin := func() float32 {
		b := r.Uint32()
		if b&0x7f800000 == 0x7f800000 {
			b &^= 0x40000000
		}
		return math.Float32frombits(b)
	}
	near := func() float32 { // significands near 1 and exponents near each other
		return math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(120+r.IntN(16))<<23 | r.Uint32()&0x80000000)
	}
	for i := range 1 << 18 {
		var x, y, z float32
		switch i % 3 {
		case 0:
			x, y, z = fin(), fin(), fin()
		case 1:
			x, y, z = near(), near(), near()
		default: // z cancels x·y's upper half: the midpoint cases
			x, y = near(), near()
			p := float64(x) * float64(y)
			z = -float32(p)
			if r.IntN(2) == 0 {
				z = math.Float32frombits(math.Float32bits(z) + uint32(r.IntN(3)) - 1)
			}
		}
		want := exactFMA(x, y, z)
		got := fma32(x, y, z)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("fma32(%#08x, %#08x, %#08x) = %#08x, want %#08x", math.Float32bits(x), math.Float32bits(y), math.Float32bits(z), math.Float32bits(got), math.Float32bits(want))
		}
	}
	// the double rounding: x·y + z = 1 + 2^-24 + 2^-70 rounds to 1 + 2^-24
	// in float64 (a float32 midpoint), then to 1 (even); once, to 1 + 2^-23
	x, y, z := float32(1+0x1p-23), float32(1-0x1p-24), float32(0x1p-47+0x1p-70)
	if float32(float64(x)*float64(y)+float64(z)) != 1 {
		t.Fatal("the double-rounding case no longer rounds twice through float64")
	}
	if got := fma32(x, y, z); got != 1+0x1p-23 {
		t.Errorf("fma32 at a double-rounding midpoint: %x, want %x", got, float32(1+0x1p-23))
	}
	for _, c := range [][3]float32{{float32(math.Inf(1)), 0, 1}, {float32(math.Inf(1)), 1, float32(math.Inf(-1))}, {2, 3, float32(math.Inf(-1))}, {0x1p100, 0x1p100, 1}} {
		got, want := fma32(c[0], c[1], c[2]), float32(math.FMA(float64(c[0]), float64(c[1]), float64(c[2])))
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Errorf("fma32(%g, %g, %g) = %g, want %g", c[0], c[1], c[2], got, want)
		}
	}
}

// exactFMA rounds x·y + z (finite) to float32 with math/big.
func exactFMA(x, y, z float32) float32 {
	s := new(big.Float).SetPrec(400).Mul(big.NewFloat(float64(x)), big.NewFloat(float64(y)))
	s.Add(s, big.NewFloat(float64(z)))
	f, _ := s.Float32()
	return f
}
