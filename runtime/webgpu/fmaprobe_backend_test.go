//go:build cgo && !js

package webgpu

import (
	"errors"
	"testing"

	"github.com/gpucc/gpucc/runtime/gpu"
)

// TestTakesFused: the fused twins are taken only where the FMA probe ran
// and passed every check, and never on wgpu's GL backend, whatever the
// probe saw there (gpu.BackendGL).
func TestTakesFused(t *testing.T) {
	pass := fmaProbe{KeepSafe: true, FMAFused: true, DivExact: true, Pairs: 1}
	for _, tc := range []struct {
		name    string
		p       fmaProbe
		err     error
		backend string
		want    bool
	}{
		{"vulkan", pass, nil, "vulkan", true},
		{"metal", pass, nil, "metal", true},
		{"gl", pass, nil, gpu.BackendGL, false},
		{"probe failed to run", pass, errors.New("no"), "vulkan", false},
		{"fma rounds twice", fmaProbe{KeepSafe: true, DivExact: true}, nil, "vulkan", false},
		{"a twin's quotient wrong", fmaProbe{KeepSafe: true, FMAFused: true}, nil, "vulkan", false},
	} {
		if got := takesFused(tc.p, tc.err, tc.backend); got != tc.want {
			t.Errorf("%s: takesFused = %v, want %v", tc.name, got, tc.want)
		}
	}
}
