package backend

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestTypedBytes: every dtype's values at its limits encode at the dtype's
// width, little-endian, and decode to the same values (float bits
// included: -0, subnormals, ±Inf, NaN).
func TestTypedBytes(t *testing.T) {
	floats := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, 0x1p-24, -0x1p-14, 65504, float32(math.Inf(1)),
		float32(math.Inf(-1)), float32(math.NaN()), 3e38, -0x1p-149}
	for _, dt := range ir.DTypes() {
		var f []float32
		var i []int64
		if dt.IsFloat() {
			for _, v := range floats {
				f = append(f, dt.Round(v))
			}
		} else {
			lo, hi := dt.Range()
			i = []int64{lo, hi, 0, 1, lo + 1, hi - 1, hi / 2}
		}
		b := TypedBytes(dt, f, i)
		if n := max(len(f), len(i)); len(b) != n*dt.Size() {
			t.Fatalf("%v: %d bytes for %d values", dt, len(b), n)
		}
		gf, gi := TypedValues(dt, b)
		if !slices.Equal(gi, i) {
			t.Errorf("%v: ints %v, want %v", dt, gi, i)
		}
		for k := range f {
			if math.Float32bits(gf[k]) != math.Float32bits(f[k]) {
				t.Errorf("%v: value %d decodes to %#x, want %#x", dt, k, math.Float32bits(gf[k]), math.Float32bits(f[k]))
			}
		}
	}
	// The layout itself: little-endian at the dtype's width.
	if b := TypedBytes(ir.I64, nil, []int64{math.MinInt64}); !bytes.Equal(b, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}) {
		t.Errorf("int64 MIN: % x", b)
	}
	if b := TypedBytes(ir.I8, nil, []int64{-1, -128}); !bytes.Equal(b, []byte{0xff, 0x80}) {
		t.Errorf("int8: % x", b)
	}
	if b := TypedBytes(ir.F16, []float32{-0x1p-24}, nil); !bytes.Equal(b, []byte{0x01, 0x80}) {
		t.Errorf("float16 -2^-24: % x", b)
	}
	if b := TypedBytes(ir.BF16, []float32{1}, nil); !bytes.Equal(b, []byte{0x80, 0x3f}) {
		t.Errorf("bfloat16 1: % x", b)
	}
}
