package irtest

import (
	"math"
	"math/rand/v2"
)

// The operands that prove ir's division and square root (ir/xmath.go)
// bit for bit: ir's oracle tests and the backends' pairs test draw them.

// Edges are the float32 values every sweep includes, both signs: zeros,
// the subnormal and normal limits, powers of two and their neighbours,
// ±Inf and NaNs.
func Edges() []float32 {
	var out []float32
	for _, b := range []uint32{0, 1, 2, 3, 0x7fffff, 0x400000, 0x400001, 0x3fffff, 0x800000, 0x800001, 0xffffff, 0x1000000,
		0x3f800000, 0x3f800001, 0x3f7fffff, 0x40000000, 0x3fffffff, 0x40800000, 0x3e800000, 0x7f7fffff, 0x7f000000, 0x7effffff,
		0x7f800000, 0x7f800001, 0x7fc00000, 0x7fffffff, 0x5f800000, 0x1f800000, 0x00ffffff} {
		out = append(out, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	return out
}

// DivPairs returns n random pairs and the hard ones: quotients next to
// midpoints (a = b·q rounded, and its neighbours), every exponent pair
// with all-ones, power-of-two and alternating significands (overflow,
// underflow and subnormal results), subnormal numerators and
// denominators, subnormal quotients at exact ties (odd multiples of
// 2^-150), and the edges against each other.
func DivPairs(seed uint64, n int) (as, bs []float32) {
	r := rand.New(rand.NewPCG(seed, 35))
	add := func(a, b float32) { as, bs = append(as, a), append(bs, b) }
	fin := func(b uint32) float32 {
		if b&0x7f800000 == 0x7f800000 {
			b &^= 0x40000000
		}
		return math.Float32frombits(b)
	}
	for range n {
		add(fin(r.Uint32()), fin(r.Uint32()))
	}
	for range n / 8 {
		b, q := fin(r.Uint32()), fin(r.Uint32()&0xbfffffff)
		ab := math.Float32bits(b * q)
		for d := -2; d <= 2; d++ {
			add(math.Float32frombits(ab+uint32(d)), b)
		}
	}
	for range n / 16 {
		add(math.Float32frombits(r.Uint32()&0x807fffff), fin(r.Uint32()))
		add(fin(r.Uint32()), math.Float32frombits(r.Uint32()&0x807fffff))
		// an odd multiple of 2^-150 (a tie between two subnormals) times b,
		// rounded, and its neighbours, divided by b: quotients at and next to
		// the ties
		b := math.Float32frombits(r.Uint32()&0x7fffff | uint32(1+r.IntN(253))<<23 | r.Uint32()&0x80000000)
		ab := math.Float32bits(float32(float64(2*r.IntN(1<<(1+r.IntN(23)))+1) * 0x1p-150 * float64(b)))
		for d := -2; d <= 2; d++ {
			add(math.Float32frombits(ab+uint32(d)), b)
		}
	}
	m := []uint32{0, 1, 0x7fffff, 0x400000, 0x555555, 0x2aaaaa}
	for ea := uint32(0); ea < 255; ea++ {
		for eb := uint32(0); eb < 255; eb++ {
			i, j := r.IntN(len(m)), r.IntN(len(m))
			add(math.Float32frombits(ea<<23|m[i]), math.Float32frombits(eb<<23|m[j]|r.Uint32()&0x80000000))
		}
	}
	e := Edges()
	for _, a := range e {
		for _, b := range e {
			add(a, b)
		}
	}
	return as, bs
}
