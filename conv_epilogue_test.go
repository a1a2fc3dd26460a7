package gpucc_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// hardSwishConv is a convolution with partial tiles on both sides of the
// GEMM (81 pixels, 40 channels), then a bias and hard-swish,
// x·min(max(x + 3, 0), 6) / 6: PP-OCRv4's epilogue, about 60 lines of
// WGSL an output, which SwiftShader compiled for 5-12 s a kernel unrolled
// over an 8×8 register tile.
func hardSwishConv() *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1, 16, 9, 9}, irtest.Values(51, 16*81, 2))
	w := b.Input(ir.Shape{40, 16, 3, 3}, irtest.Values(52, 40*16*9, 1))
	bias := b.Input(ir.Shape{40, 1, 1}, irtest.Values(53, 40, 1))
	y := x.Conv2D(w, map[string][]int{"pads": {1, 1, 1, 1}}).Add(bias)
	s := ir.Shape{1, 40, 9, 9}
	clip := y.AddScalar(3).Maximum(b.Full(s, 0)).Minimum(b.Full(s, 6))
	b.Output("y", y.Mul(clip).DivScalar(6))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g
}

// TestConvEpilogueLoop: a GEMM tile whose unrolled epilogue would be long
// renders it once in a loop over the thread's outputs, and gives cpuref's
// bits on lavapipe with 8×8 and 4×4 register tiles, as the unrolled
// epilogue of a 1×1 tile does; a bias and relu stay unrolled.
func TestConvEpilogueLoop(t *testing.T) {
	g := hardSwishConv()
	for _, tile := range []ir.Tile{
		{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 1}, // PP-OCRv4's 1×1 convolutions' tile
		{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 1},
		{BM: 8, BN: 8, TM: 1, TN: 1, BK: 8, Vector: 1}, // one output a thread: unrolled
	} {
		t.Run(itoa(tile.TM)+"x"+itoa(tile.TN), func(t *testing.T) {
			p, _, err := passes.Compile(g, passes.Options{Tile: &tile, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
			if err != nil {
				t.Fatal(err)
			}
			shaders, err := wgsl.Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(shaders) != 1 {
				t.Fatalf("%d kernels, want the conv and its epilogue in one", len(shaders))
			}
			looped := strings.Contains(shaders[0].Source, "for (var r = 0u;")
			if want := tile.TM*tile.TN > 1; looped != want {
				t.Fatalf("epilogue looped %v, want %v:\n%s", looped, want, shaders[0].Source)
			}
			checkRun(t, open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = &tile }), g)
		})
	}
	c := irtest.ConvCase{Name: "bias-relu", N: 1, C: 16, H: 9, W: 9, M: 40, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}}
	tile := ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 1}
	p, _, err := passes.Compile(c.Graph(1), passes.Options{Tile: &tile, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
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
