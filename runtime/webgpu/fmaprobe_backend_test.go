//go:build cgo && !js

package webgpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
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

// TestRowsTakeNear: a rows kernel's division by its row's divisor takes
// the row's correctly rounded reciprocal (ir.DivRowNear) exactly where the
// device's fma was probed fused, so that the row tests on such a driver
// (the H100's: TestRowDivision, TestRowKnobs) run it; nowhere else.
func TestRowsTakeNear(t *testing.T) {
	d := openDevice(t)
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4, 256}, make([]float32, 1024))
	b.Output("y", x.Softmax(1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	near := false
	for _, s := range compiled(t, d, g).shaders {
		near = near || strings.Contains(s.Source, codegen.FuncName(ir.DivRowNear)+"(")
	}
	if want := d.fused() && wgsl.RowDivNear; near != want {
		t.Errorf("softmax's division by the row's reciprocal: %v, want %v (the device's fma fused: %v)", near, want, d.fused())
	}
	t.Logf("%s: fused %v, the row's reciprocal %v", d.adapter, d.fused(), near)
}
