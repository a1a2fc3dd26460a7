//go:build !js

package tune_test

import (
	"fmt"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

var (
	devOnce sync.Once
	dev     *gpu.Device
	devErr  error
)

func device(t testing.TB) *gpu.Device {
	t.Helper()
	devOnce.Do(func() { dev, devErr = gpu.Open(gpu.Options{AllowSoftware: true}) })
	if devErr != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatalf("GPUCC_REQUIRE_WEBGPU is set but Open failed: %v", devErr)
		}
		t.Skipf("no WebGPU device: %v", devErr)
	}
	return dev
}

// sameBits fails t unless got is cpuref's result for p, bit for bit.
func sameBits(t *testing.T, p *ir.Program, got map[string][]float32) {
	t.Helper()
	for name, want := range cpuref.RunProgram(p) {
		g := got[name]
		if len(g) != len(want) {
			t.Fatalf("%s: %d elements, want %d", name, len(g), len(want))
		}
		for i := range want {
			if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v (%#08x), cpuref %v (%#08x)", name, i, g[i], math.Float32bits(g[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
}

// TestMatmulLongK runs [1,K]×[K,1] matmuls across the K where Mesa's
// llvmpipe used to stop the k loop (43,690 on the 32×32 tile; see
// wgsl.LoopBudget), bit-exact against cpuref; with GPUCC_LONG set, also
// up to the 1M elements the default limits allow, where the tiling pass
// must deepen the k-step.
func TestMatmulLongK(t *testing.T) {
	d := device(t)
	ks := []int{43689, 43690, 43691, 65535, 65536, 65537}
	if os.Getenv("GPUCC_LONG") != "" {
		// 65534 whole 16-deep k-tiles fit the budget; one more must
		// deepen. Each takes lavapipe about 20 s on one core.
		ks = append(ks, 65534*16, 65534*16+16, 1<<20)
	}
	for _, k := range ks {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			for _, ones := range []bool{true, false} {
				a, b := irtest.Values(uint64(k), k, 1), irtest.Values(uint64(k)+1, k, 1)
				if ones {
					for i := range a {
						a[i], b[i] = 1, 1
					}
				}
				bl := ir.NewBuilder()
				bl.Output("y", bl.Input(ir.Shape{1, k}, a).MatMul(bl.Input(ir.Shape{k, 1}, b)))
				g, err := bl.Build(ir.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				p, _, err := passes.Compile(g, tune.PassOptions(d))
				if err != nil {
					t.Fatal(err)
				}
				kn := p.Program().Kernels[0]
				if c := wgsl.LoopCost(&kn); c > wgsl.LoopBudget {
					t.Fatalf("tile %+v costs %d loop iterations, over %d", kn.Tile, c, wgsl.LoopBudget)
				}
				got, err := tune.Exec(d, p)
				if err != nil {
					t.Fatal(err)
				}
				if ones && got["y"][0] != float32(k) {
					t.Fatalf("all-ones sum over K=%d = %v", k, got["y"][0])
				}
				sameBits(t, p.Program(), got)
			}
		})
	}
}

// TestLongKRefused: a K that no tile's k-step can fit within the loop
// budget is refused with limit_exceeded by a workgroup backend's tiling,
// never run short.
func TestLongKRefused(t *testing.T) {
	k := 1 << 23
	bl := ir.NewBuilder()
	bl.Output("y", bl.Input(ir.Shape{1, k}, make([]float32, k)).MatMul(bl.Input(ir.Shape{k, 1}, make([]float32, k))))
	lim := ir.Limits{MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40}
	g, err := bl.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = passes.Compile(g, passes.Options{Limits: lim, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
	var e *ir.Error
	if !asIR(err, &e) || e.Code != ir.CodeLimitExceeded {
		t.Fatalf("got %v, want limit_exceeded", err)
	}
	// A CPU backend's program (no workgroup limits) is not refused.
	if _, _, err := passes.Compile(g, passes.Options{Limits: lim}); err != nil {
		t.Fatal(err)
	}
}

// TestDeepen: the k-step deepens exactly where 16-deep k-tiles would run
// past the loop budget.
func TestDeepen(t *testing.T) {
	for _, c := range []struct{ k, bk int }{{65534 * 16, 16}, {65534*16 + 15, 16}, {65534*16 + 16, 32}, {1 << 20, 32}} {
		bl := ir.NewBuilder()
		bl.Output("y", bl.Input(ir.Shape{1, c.k}, make([]float32, c.k)).MatMul(bl.Input(ir.Shape{c.k, 1}, make([]float32, c.k))))
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := passes.Compile(g, passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
		if err != nil {
			t.Fatal(err)
		}
		kn := p.Program().Kernels[0]
		if kn.Tile.BK != c.bk || wgsl.LoopCost(&kn) > wgsl.LoopBudget {
			t.Errorf("K=%d: tile %+v (loop cost %d), want BK=%d", c.k, kn.Tile, wgsl.LoopCost(&kn), c.bk)
		}
		if _, err := (wgsl.Target{}).Emit(p); err != nil {
			t.Errorf("K=%d: %v", c.k, err)
		}
	}
}
