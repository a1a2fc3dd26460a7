package ir_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// selectsEdges are the operands where a selecting op could break its
// claim: both zeros, both infinities, NaNs of both signs and several
// payloads, subnormals and the normal range's ends.
var selectsEdges = []uint32{
	0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xffc00123, 0x7fc00456,
	0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000,
	0x3f800001, 0xbf800001, 0x40490fdb,
}

// TestSelects checks ir.OpInfo.Selects on every row that claims it: the
// result is always one of the two arguments' bits, the first NaN when
// either is one; the op is associative, and commutative when neither
// argument is a NaN (so a reduction over it has the same bits in any
// grouping and order, given the first NaN). It also checks that no row
// without the claim is among the reductions' combining ops by accident:
// add, which rounds, must fail it.
func TestSelects(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	vals := append([]uint32{}, selectsEdges...)
	for range 40 {
		vals = append(vals, r.Uint32())
	}
	f := math.Float32frombits
	isNaN := func(u uint32) bool { return u&0x7fffffff > 0x7f800000 }
	holds := func(op ir.Op) string {
		bin := func(a, b uint32) uint32 { return math.Float32bits(cpuref.Binary(op, f(a), f(b))) }
		for _, a := range vals {
			for _, b := range vals {
				got := bin(a, b)
				switch {
				case isNaN(a) && got != a, !isNaN(a) && isNaN(b) && got != b:
					return "does not return the first NaN"
				case got != a && got != b:
					return "returns neither argument"
				case !isNaN(a) && !isNaN(b) && got != bin(b, a):
					return "is not commutative"
				}
				for _, c := range vals[:len(vals)/2] {
					if bin(bin(a, b), c) != bin(a, bin(b, c)) {
						return "is not associative"
					}
				}
			}
		}
		return ""
	}
	n := 0
	for _, op := range ir.Ops() {
		info := op.Info()
		if !info.Selects {
			continue
		}
		n++
		if info.Args != 2 || info.Expr == nil {
			t.Errorf("%v claims Selects but is not a binary elementwise op", op)
			continue
		}
		if why := holds(op); why != "" {
			t.Errorf("%v claims Selects but %s", op, why)
		}
	}
	if n < 2 {
		t.Errorf("%d ops claim Selects, want at least maximum and minimum", n)
	}
	if holds(ir.OpAdd) == "" {
		t.Error("the Selects check passes add, so it cannot tell a selecting op from another")
	}
}
