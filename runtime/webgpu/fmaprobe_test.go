//go:build cgo && !js

package webgpu

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestFMAProbe runs the probe on the device: Keep must hold (every
// kernel's products keep their rounding; lavapipe and the H200 were seen to
// keep it); whether fma() is fused decides the fused kernels, and a device
// whose fma rounds twice also gives wrong quotients through the fused
// twin (so the probe's verdict matters).
func TestFMAProbe(t *testing.T) {
	d := openDevice(t)
	if d.fmaErr != nil {
		t.Fatalf("the probe did not run: %v", d.fmaErr)
	}
	p := d.fma
	t.Logf("%s: %v, fused kernels %v", d.adapter, p, p.Fused())
	if !p.KeepSafe {
		t.Errorf("%s contracts through Keep: %v", d.adapter, p)
	}
	if p.Pairs < 4096 {
		t.Errorf("%d pairs probed, want 4096", p.Pairs)
	}
	if !p.FMAFused && p.Fused() {
		t.Errorf("fused kernels on a device whose fma rounds twice: %v", p)
	}
	if !p.FMAFused && p.DivExact {
		t.Logf("note: fma rounds twice, yet the fused twin gave every probe quotient right")
	}
	if strings.Contains(d.adapter.Vendor, "NVIDIA") && !p.BareContracts {
		t.Logf("note: NVIDIA did not contract the bare a * b + a (it did on 2026-12-01)")
	}
}

// TestJudgeProbe: the verdict from outputs as a fused device, lavapipe, a
// device contracting through Keep and one wrong quotient would give them.
func TestJudgeProbe(t *testing.T) {
	a, b := probePairs()
	n := len(a)
	device := func(fusedFMA, keepContracts bool) []float32 {
		out := make([]float32, wgsl.ProbeOutputs*n)
		for i := range n {
			prod := float32(float64(a[i]) * float64(b[i]))
			once := float32(math.FMA(float64(a[i]), float64(b[i]), float64(a[i])))
			out[wgsl.ProbeKeep*n+i] = prod + a[i]
			if keepContracts {
				out[wgsl.ProbeKeep*n+i] = once
			}
			out[wgsl.ProbeBare*n+i] = once
			if fusedFMA {
				out[wgsl.ProbeErr*n+i] = float32(math.FMA(float64(a[i]), float64(b[i]), -float64(prod)))
			}
			out[wgsl.ProbeDiv*n+i] = a[i] / b[i]
		}
		return out
	}
	t.Setenv("GPUCC_FMA", "")
	fused := judgeProbe(a, b, device(true, false))
	if !fused.Fused() || !fused.BareContracts {
		t.Errorf("a fused device: %v, Fused() %v", fused, fused.Fused())
	}
	if p := judgeProbe(a, b, device(false, false)); p.Fused() || !p.KeepSafe {
		t.Errorf("fma rounded twice: %v, Fused() %v", p, p.Fused())
	}
	if p := judgeProbe(a, b, device(true, true)); p.Fused() || p.KeepSafe {
		t.Errorf("contracting through Keep: %v, Fused() %v", p, p.Fused())
	}
	out := device(true, false)
	out[wgsl.ProbeDiv*n+n-1] = math.Nextafter32(out[wgsl.ProbeDiv*n+n-1], 0)
	if p := judgeProbe(a, b, out); p.Fused() || p.DivExact {
		t.Errorf("one quotient an ulp off: %v, Fused() %v", p, p.Fused())
	}
	t.Setenv("GPUCC_FMA", "off")
	if fused.Fused() {
		t.Error("GPUCC_FMA=off took the fused kernels")
	}
}

// TestKeepContractsRefused: a device whose probe saw a product contracted
// through Keep compiles nothing (ir.CodeUnsupported), rather than give
// other bits than cpuref's.
func TestKeepContractsRefused(t *testing.T) {
	d := openDevice(t)
	saved := d.fma
	defer func() { d.fma = saved }()
	d.fma.KeepSafe = false
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{8}, make([]float32, 8))
	b.Output("y", x.Mul(x).Add(x))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Compile(context.Background(), program(t, g), &backend.Stats{})
	var be *backend.Error
	if !errors.As(err, &be) || be.Code != ir.CodeUnsupported || !strings.Contains(err.Error(), "Keep") {
		t.Fatalf("Compile on a device contracting through Keep: %v, want unsupported naming Keep", err)
	}
}

// TestFusedKernelsCompile: the fused target's kernels (fusedGraphs'
// divisions in rows and elementwise kernels) compile on the device, whatever
// its probe said (their bits are checked where the probe lets them run:
// the exact suite on the H200).
func TestFusedKernelsCompile(t *testing.T) {
	d := openDevice(t)
	for _, build := range []func(x ir.Tensor) ir.Tensor{
		func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
		func(x ir.Tensor) ir.Tensor { return x.Tanh() },
		func(x ir.Tensor) ir.Tensor { return x.Div(x.AddScalar(3)) },
	} {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{4, 1024}, make([]float32, 4096))
		b.Output("y", build(x))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		shaders, err := wgsl.Target{Fused: true}.Emit(program(t, g).IR)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, err := d.acquire(shaders)
		if err != nil {
			t.Fatal(err)
		}
		d.unref(ps)
	}
}
