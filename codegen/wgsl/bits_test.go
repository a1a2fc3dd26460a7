package wgsl

import (
	"strings"
	"testing"
)

// TestBitsOpaqueNonFinite: a non-finite constant (the quiet NaN of a row's
// division by one, ±Inf) is rendered opaque, through params.zero, since
// Tint refuses it as a constant expression; a finite one stays a constant.
func TestBitsOpaqueNonFinite(t *testing.T) {
	for _, b := range []uint32{0x7fc00000, 0x7f800000, 0xff800000, 0x7f800001, 0xffffffff} {
		if s := Lang.Bits(b); !strings.Contains(s, "params.zero") {
			t.Errorf("Bits(%#08x) = %s: a constant expression Tint refuses", b, s)
		}
	}
	for _, b := range []uint32{0, 0x80000000, 0x3f800000, 0x7f7fffff, 0x00000001, 0xff7fffff} {
		if s := Lang.Bits(b); strings.Contains(s, "params.zero") {
			t.Errorf("Bits(%#08x) = %s: a finite constant made opaque", b, s)
		}
	}
}
