//go:build !js

package gpu

import (
	"slices"
	"testing"
	"time"
)

// TestNap: a wait's 20 µs nap is a fraction of a millisecond, the median
// of 15 (time.Sleep's was 1.08 ms here, so that every wait on lavapipe
// and every long wait on a GPU overshot by a millisecond or more).
// Lenient, since the machine may be loaded: the old nap never came
// under 1 ms.
func TestNap(t *testing.T) {
	var took []time.Duration
	for range 15 {
		t0 := time.Now()
		nap(20 * time.Microsecond)
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	if m := took[len(took)/2]; m >= 700*time.Microsecond {
		t.Errorf("a 20 µs nap took %v (median of 15; all %v)", m, took)
	}
	if maxNap(false) > 200*time.Microsecond || maxNap(true) < maxNap(false) {
		t.Errorf("naps up to %v on hardware, %v on a software adapter", maxNap(false), maxNap(true))
	}
}
