package c

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
)

// TestSelectOrder checks selectOrder's claim: over sets of leaves with no
// NaN, a fold by the C comparison from the op's identity ends, when it
// ends at a nonzero value, at the op's own value over the leaves (cpuref,
// folding by the op's row) bit for bit; and each op there selects.
func TestSelectOrder(t *testing.T) {
	edges := []uint32{0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x3f800000, 0xbf800000,
		0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000}
	r := rand.New(rand.NewPCG(24, 2))
	pick := func() float32 {
		if r.IntN(3) == 0 {
			return math.Float32frombits(edges[r.IntN(len(edges))])
		}
		return math.Float32frombits(r.Uint32() &^ (r.Uint32N(2) << 23)) // some exponents all ones: NaNs
	}
	for op, order := range selectOrder {
		if !op.Info().Selects {
			t.Errorf("%v has a comparison but does not select", op)
		}
		ident := float32(math.Inf(-1)) // the identity of a fold by maximum (max_reduce's)
		if order == "<" {
			ident = float32(math.Inf(1))
		}
		fast := 0
		for range 200000 {
			n := 1 + r.IntN(6)
			want, got := ident, ident
			nan := false
			for range n {
				x := pick()
				nan = nan || x != x
				want = cpuref.Binary(op, want, x)
				if order == ">" && x > got || order == "<" && x < got {
					got = x
				}
			}
			if nan || got == 0 {
				continue // folded again by the op itself
			}
			fast++
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%v: the %s fold gave %#08x, the op %#08x", op, order, math.Float32bits(got), math.Float32bits(want))
			}
		}
		if fast < 10000 {
			t.Errorf("%v: only %d sets took the fast fold", op, fast)
		}
	}
}
