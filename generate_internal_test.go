package gpucc

import (
	"math"
	"testing"
)

// ForgetCache makes d give every step an empty cache: a decoder whose
// cache is broken, which the fixture's tokens must tell apart.
func ForgetCache(d *Decoder) { d.forget = true }

// HostCache makes d keep its cache on the host, as on a backend that
// keeps no typed outputs on the device.
func HostCache(d *Decoder, on bool) { d.host = on }

// TestArgmax: numpy's argmax, ties to the lowest index, the first NaN
// wins, -Inf rows and a one-element row.
func TestArgmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		v    []float32
		want int64
	}{
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{5}, 0},
		{[]float32{-inf, -inf, -inf}, 0},
		{[]float32{-inf, -1, -inf}, 1},
		{[]float32{0, float32(math.Copysign(0, -1)), 0}, 0},
		{[]float32{float32(math.Copysign(0, -1)), 0}, 0},
		{[]float32{1, nan, 7, nan}, 1},
		{[]float32{1, 2, inf, inf}, 2},
		{[]float32{-3, -2, -2.0000002}, 1},
	} {
		if got := argmax(c.v); got != c.want {
			t.Errorf("argmax(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}
