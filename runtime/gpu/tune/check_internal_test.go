//go:build !js

package tune

import (
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
)

// TestCheckRejectsWhatNoBoundAdmits: the tuner's check of a candidate's
// output takes cpuref's bits as exact and measures any other finite
// value's error against Σ|a·b|; it rejects, in either mode, an infinite
// or NaN element and a nonzero one where every product is 0 (Σ|a·b| = 0,
// so the sum is 0). Before, each of those was left out of MaxRelErr, and
// a fast candidate with such wrong elements could pass and win.
func TestCheckRejectsWhatNoBoundAdmits(t *testing.T) {
	// One row of four outputs over K = 16: element 1's products are all 0.
	pr := &problem{s: Shape{M: 1, K: 16, N: 4}, rows: []int{0},
		ref: [][]float32{{1, 0, -0.5, 3}}, ref64: [][]float64{{1 + 0x1p-30, 0, -0.5, 3}}, abs: [][]float64{{4, 0, 2, 3}}}
	bound := wgsl.FastErrorBound(16)
	for _, c := range []struct {
		name  string
		at    int
		v     float32
		exact bool
		err   bool
		rel   float64 // the largest relative error expected
	}{
		{"cpuref's bits", 0, 1, true, false, 0x1p-30 / 4},
		{"an ulp off, within the bound", 0, math.Nextafter32(1, 2), false, false, (0x1p-23 - 0x1p-30) / 4},
		{"finite, past the bound", 0, 2, false, false, (1 - 0x1p-30) / 4},
		{"+Inf", 0, float32(math.Inf(1)), false, true, 0},
		{"-Inf", 2, float32(math.Inf(-1)), false, true, 0x1p-30 / 4},
		{"NaN", 3, float32(math.NaN()), false, true, 0x1p-30 / 4},
		{"the least subnormal where the sum is 0", 1, 0x1p-149, false, true, 0x1p-30 / 4},
		{"-0 where the sum is 0", 1, float32(math.Copysign(0, -1)), false, false, 0x1p-30 / 4},
	} {
		y := append([]float32(nil), pr.ref[0]...)
		y[c.at] = c.v
		var res Result
		pr.check(y, &res)
		if res.Exact != c.exact || (res.Err != "") != c.err || res.Checked != 4 || res.MaxRelErr != c.rel {
			t.Errorf("%s: exact %v, error %q, checked %d, relative error %g (want %v, error %v, 4, %g)",
				c.name, res.Exact, res.Err, res.Checked, res.MaxRelErr, c.exact, c.err, c.rel)
		}
		if c.err && !strings.Contains(res.Err, "outside any error bound") {
			t.Errorf("%s: error %q", c.name, res.Err)
		}
		if within := res.MaxRelErr <= bound; !c.err && within != (c.rel <= bound) {
			t.Errorf("%s: relative error %g against the bound %g", c.name, res.MaxRelErr, bound)
		}
	}
}
