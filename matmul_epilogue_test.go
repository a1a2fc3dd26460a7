package gpucc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// geluMatmul is x·w + bias then GELU by erf, x·(1 + erf(x/√2))/2: ViT's
// MLP linear with its activation as the epilogue, on sides that leave
// partial tiles, or that every tile below divides (the lean kernel).
func geluMatmul(m, k, n int) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{m, k}, irtest.Values(61, m*k, 2))
	w := b.Input(ir.Shape{k, n}, irtest.Values(62, k*n, 1))
	bias := b.Input(ir.Shape{n}, irtest.Values(63, n, 1))
	y := x.MatMul(w).Add(bias)
	e := y.DivScalar(1.4142135).Apply(ir.OpErf)
	b.Output("y", y.Mul(e.AddScalar(1)).MulScalar(0.5))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g
}

// TestMatmulEpilogueLoop: with wgsl.MatmulEpilogueLoop on, a matmul tile
// whose unrolled epilogue would be long (GELU: an exact erf and division
// an output) renders it once in a loop over the thread's outputs, in the
// scalar, vec4, staged and lean kernels, and gives cpuref's bits on
// lavapipe; a bias and relu stay unrolled. Off (the default), GELU's stays
// unrolled.
func TestMatmulEpilogueLoop(t *testing.T) {
	// Off by default (wgsl.MatmulEpilogueLoop): GELU's epilogue unrolled.
	g := geluMatmul(65, 68, 132)
	tile, _ := passes.ParseTile("64x128/8x8k8v4")
	if src := emitOne(t, g, tile); strings.Contains(src, "for (var r = 0u;") {
		t.Fatalf("the GELU epilogue is looped with wgsl.MatmulEpilogueLoop off")
	}
	defer func(on bool) { wgsl.MatmulEpilogueLoop = on }(wgsl.MatmulEpilogueLoop)
	wgsl.MatmulEpilogueLoop = true
	t.Run("webgpu", testMatmulEpilogueLoop) // bench/device.sh's exact suite runs TestMatmul*/webgpu on the driver
}

// emitOne returns the WGSL of g's one kernel under tile.
func emitOne(t *testing.T, g *ir.Graph, tile ir.Tile) string {
	t.Helper()
	p, _, err := passes.Compile(g, passes.Options{Tile: &tile, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
	if err != nil {
		t.Fatal(err)
	}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	return shaders[0].Source
}

func testMatmulEpilogueLoop(t *testing.T) {
	type shape struct{ m, k, n int }
	for _, c := range []struct {
		tile   string
		shapes []shape
	}{
		{"64x64/8x8k8", []shape{{65, 68, 132}}},
		{"64x128/8x8k8v4", []shape{{65, 68, 132}}},
		{"64x128/8x8k8v4s2", []shape{{65, 68, 132}}},
		{"64x128/8x8k8v4s2l", []shape{{65, 68, 132}, {128, 24, 256}}},
	} {
		tile, err := passes.ParseTile(c.tile)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.tile, func(t *testing.T) {
			rt := open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = &tile })
			for _, s := range c.shapes {
				g := geluMatmul(s.m, s.k, s.n)
				t.Run(fmt.Sprintf("%dx%dx%d", s.m, s.k, s.n), func(t *testing.T) {
					p, _, err := passes.Compile(g, passes.Options{Tile: &tile, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
					if err != nil {
						t.Fatal(err)
					}
					shaders, err := wgsl.Target{}.Emit(p)
					if err != nil {
						t.Fatal(err)
					}
					if len(shaders) != 1 || p.Program().Kernels[0].Tile != tile {
						t.Fatalf("%d kernels, the first with tile %+v; want the matmul and its epilogue in one of tile %+v", len(shaders), p.Program().Kernels[0].Tile, tile)
					}
					if !strings.Contains(shaders[0].Source, "for (var r = 0u;") {
						t.Fatalf("the GELU epilogue is unrolled:\n%s", shaders[0].Source)
					}
					checkRun(t, rt, g)
				})
			}
		})
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{65, 68}, irtest.Values(1, 65*68, 1))
	w := b.Input(ir.Shape{68, 132}, irtest.Values(2, 68*132, 1))
	b.Output("y", x.MatMul(w).Add(b.Input(ir.Shape{132}, irtest.Values(3, 132, 1))).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tile, _ := passes.ParseTile("64x128/8x8k8v4")
	p, _, err := passes.Compile(g, passes.Options{Tile: &tile, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
	if err != nil {
		t.Fatal(err)
	}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(shaders[0].Source, "for (var r = 0u;") {
		t.Errorf("a bias and relu epilogue is looped; it should stay unrolled")
	}
}
