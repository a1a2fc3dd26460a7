//go:build !js

package tune

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir/irtest"
)

// TestValuesAreIrtests: the tuner's operands are irtest.Values, bit for
// bit, as they were when the tuner called it (the tables committed under
// tables/ were checked on them).
func TestValuesAreIrtests(t *testing.T) {
	for _, tt := range []struct {
		seed  uint64
		n     int
		scale float32
	}{{0, 1, 1}, {7, 100, 1}, {31*64 + 64, 4096, 1}, {17*128 + 3, 999, 0.5}} {
		got, want := values(tt.seed, tt.n, tt.scale), irtest.Values(tt.seed, tt.n, tt.scale)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("values(%d, %d, %v)[%d] = %v, irtest.Values gives %v", tt.seed, tt.n, tt.scale, i, got[i], want[i])
			}
		}
	}
}
