package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/eval64"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestConvRandom: random convolutions (sizes, strides, pads up to beyond
// the kernel, dilations, groups, depthwise) with their fused bias, relu
// and residual epilogues give cpuref's bits on every backend.
func TestConvRandom(t *testing.T) {
	checkRandom(t, func(seed int) (any, *ir.Graph) {
		c := irtest.RandomConv(uint64(seed))
		return c, c.Graph(uint64(1000 + seed))
	})
}

// checkRandom runs 40 random cases (8 with -short) on every backend
// against cpuref: gen makes seed's case, returning what to log and its
// graph.
func checkRandom(t *testing.T, gen func(seed int) (any, *ir.Graph)) {
	n := 40
	if testing.Short() {
		n = 8
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				c, g := gen(seed)
				t.Run(itoa(seed), func(t *testing.T) {
					t.Logf("%+v", c)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

// checkOneKernel: g compiles to one kernel of kind writing outputs
// outputs (an op and its fused epilogue).
func checkOneKernel(t *testing.T, name string, g *ir.Graph, kind ir.KernelKind, outputs int) {
	t.Helper()
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Program().Kernels) != 1 || p.Program().Kernels[0].Kind != kind || len(p.Program().Kernels[0].Outputs) != outputs {
		t.Errorf("%s: want one %v kernel writing %d outputs, got:\n%s", name, kind, outputs, p)
	}
}

// TestConvEpilogueFuses: a convolution, its per-channel bias, relu and a
// residual add are one kernel, as matmul's epilogues are.
func TestConvEpilogueFuses(t *testing.T) {
	for _, c := range irtest.ConvEdges() {
		checkOneKernel(t, c.Name, c.Graph(1), ir.KernelConv, 3)
	}
}

// TestPoolRandom: random max poolings (with a fused epilogue), average
// poolings (the conv2d composite, with and without count_include_pad) and
// global average poolings give cpuref's bits on every backend.
func TestPoolRandom(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 6
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				c := irtest.RandomPool(uint64(seed))
				g := c.Graph(uint64(2000 + seed))
				t.Run(itoa(seed), func(t *testing.T) {
					t.Logf("%+v", c)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

// convTileCases are convolutions large enough that the WGSL kernels cut
// them into several tiles with partial ones at every edge: pixels, output
// channels, k-tiles (K not a multiple of the k-step), and for the window
// kernel rows and columns of the plane; with strides, dilations,
// asymmetric padding, groups, a channel multiplier and a one-channel
// input.
var convTileCases = []irtest.ConvCase{
	{Name: "3x3-pad1", N: 2, C: 20, H: 13, W: 13, M: 40, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}},
	{Name: "strided-dilated", N: 1, C: 7, H: 23, W: 19, M: 24, KH: 3, KW: 5, Strides: []int{2, 1}, Dilations: []int{1, 2}, Pads: []int{2, 0, 1, 3}},
	{Name: "groups", N: 2, C: 12, H: 11, W: 9, M: 18, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}, Group: 3},
	{Name: "1x1", N: 3, C: 33, H: 7, W: 9, M: 70, KH: 1, KW: 1},
	{Name: "kernel-as-input", N: 2, C: 5, H: 6, W: 7, M: 9, KH: 6, KW: 7},
	{Name: "depthwise-wide", N: 2, C: 6, H: 40, W: 140, M: 6, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}, Group: 6},
	{Name: "depthwise-strided", N: 1, C: 4, H: 37, W: 41, M: 8, KH: 5, KW: 3, Strides: []int{2, 3}, Dilations: []int{2, 1}, Pads: []int{3, 1, 2, 0}, Group: 4},
	{Name: "one-channel", N: 2, C: 1, H: 30, W: 30, M: 10, KH: 5, KW: 5, Pads: []int{2, 2, 2, 2}},
}

// TestConvTiles: the tiled WGSL convolutions give cpuref's bits over
// convTileCases, with the tiling pass's own tiles, with the window
// kernel's under a 64-thread limit, and with GEMM tiles forced (for the
// depthwise cases too) that cover each way a thread finds its pixels: one
// column a thread (threads a multiple of BM), several (BM a multiple of
// threads) and neither; and with every tile of passes.ConvLadder, and the
// rule that steps down it (the default) and the rule's own tiles
// (Options.KeepConvTile).
func TestConvTiles(t *testing.T) {
	forced := []ir.Tile{
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1}, // 256 threads, one column each
		{BM: 16, BN: 64, TM: 1, TN: 8, BK: 32, Vector: 1}, // 128 threads over 16 columns, deep k
		{BM: 128, BN: 8, TM: 8, TN: 4, BK: 8, Vector: 1},  // 32 threads over 128 columns
		{BM: 40, BN: 12, TM: 4, TN: 4, BK: 8, Vector: 1},  // 30 threads over 40 columns
		{BM: 8, BN: 8, TM: 1, TN: 1, BK: 8, Vector: 1},    // the fallback
	}
	// The double-buffered GEMM (Stages 2) under each way of finding pixels,
	// each within 16 KiB with its two buffers.
	for _, st := range []ir.Tile{{BM: 64, BN: 64, TM: 4, TN: 4, BK: 8, Vector: 1}, {BM: 16, BN: 64, TM: 1, TN: 8, BK: 16, Vector: 1},
		forced[2], forced[3], {BM: 16, BN: 16, TM: 1, TN: 1, BK: 16, Vector: 1}} {
		st.Stages = 2
		forced = append(forced, st)
	}
	for _, l := range passes.ConvLadder { // spreadConv's tiles (the rule's default)
		if !slices.Contains(forced, l) {
			forced = append(forced, l)
		}
	}
	type variant struct {
		name string
		opt  func(*gpucc.Options)
		want func(c ir.Conv2D, got ir.Tile) bool // the kernel the variant means to run
	}
	variants := []variant{{"rule", func(*gpucc.Options) {}, nil},
		{"keep", func(o *gpucc.Options) { o.Passes.KeepConvTile = true }, nil},
		{"64-threads", func(o *gpucc.Options) { o.Passes.MaxInvocations, o.Passes.MaxWorkgroupStorage = 64, 16384 },
			func(c ir.Conv2D, got ir.Tile) bool { return got.BM/got.TM*got.BN <= 64 }}}
	for _, tile := range forced {
		variants = append(variants, variant{fmt.Sprintf("%dx%d-%dx%d-k%d-s%d", tile.BM, tile.BN, tile.TM, tile.TN, tile.BK, tile.Stages),
			func(o *gpucc.Options) { o.Passes.Tile = &tile },
			func(_ ir.Conv2D, got ir.Tile) bool {
				return got.BM == tile.BM && got.BN == tile.BN && got.TM == tile.TM && got.TN == tile.TN && got.Stages == tile.Stages
			}})
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			rt := open(t, "webgpu", v.opt)
			var o gpucc.Options
			v.opt(&o)
			popts := o.Passes
			popts.MaxInvocations, popts.MaxWorkgroupStorage = max(popts.MaxInvocations, 256), max(popts.MaxWorkgroupStorage, 16384)
			if o.Passes.MaxInvocations > 0 {
				popts.MaxInvocations = o.Passes.MaxInvocations
			}
			for i, c := range convTileCases {
				g := c.Graph(uint64(3000 + i))
				t.Run(c.Name, func(t *testing.T) {
					p, _, err := passes.Compile(g, popts)
					if err != nil {
						t.Fatal(err)
					}
					k := p.Program().Kernels[0]
					geo := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
					if v.want != nil && !v.want(geo, k.Tile) {
						t.Fatalf("tile %+v is not the variant's", k.Tile)
					}
					t.Logf("tile %+v", k.Tile)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

// TestConvFast: under Options.Fast the WGSL convolutions (the implicit
// GEMM, the window kernel) say they are inexact, with
// wgsl.FastErrorBound of their taps, and meet it against float64
// (eval64): |y − Σ x·w| ≤ bound·Σ |x·w| at every output. It logs the
// largest error seen, in units of 2⁻²⁴·Σ |x·w| (at most the taps).
func TestConvFast(t *testing.T) {
	rt := open(t, "webgpu", func(o *gpucc.Options) { o.Fast = true })
	for _, c := range []irtest.ConvCase{
		{Name: "3x3", N: 2, C: 32, H: 20, W: 20, M: 48, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}},
		{Name: "depthwise", N: 2, C: 16, H: 30, W: 30, M: 16, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}, Group: 16},
	} {
		t.Run(c.Name, func(t *testing.T) {
			b := ir.NewBuilder()
			g := max(c.Group, 1)
			x := b.Input(ir.Shape{c.N, c.C, c.H, c.W}, irtest.Values(1, c.N*c.C*c.H*c.W, 2))
			w := b.Input(ir.Shape{c.M, c.C / g, c.KH, c.KW}, irtest.Values(2, c.M*c.C/g*c.KH*c.KW, 1))
			b.Output("y", x.Conv2D(w, c.Attrs()))
			gr, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := rt.Run(context.Background(), gr)
			if err != nil {
				t.Fatal(err)
			}
			taps := c.C / g * c.KH * c.KW
			if res.Exact || res.ErrorBound != wgsl.FastErrorBound(taps) {
				t.Fatalf("Exact %v, ErrorBound %v; want false, %v", res.Exact, res.ErrorBound, wgsl.FastErrorBound(taps))
			}
			y := res.Outputs["y"].Data
			abs := func(v []float32) []float64 {
				out := eval64.Widen(v)
				for i := range out {
					out[i] = math.Abs(out[i])
				}
				return out
			}
			id := gr.Outputs[0].ID
			want := eval64.Eval(gr, nil)[id]
			mag := eval64.Eval(gr, map[ir.NodeID][]float64{0: abs(gr.Nodes[0].Data), 1: abs(gr.Nodes[1].Data)})[id]
			worst := 0.0
			for i, v := range want {
				d := math.Abs(float64(y[i]) - v)
				if d > res.ErrorBound*mag[i] {
					t.Fatalf("y[%d] = %v, float64 %v: off by more than %v·%v", i, y[i], v, res.ErrorBound, mag[i])
				}
				if mag[i] > 0 {
					worst = max(worst, d/mag[i]/0x1p-24)
				}
			}
			t.Logf("%s on %s: largest error %.3g·2⁻²⁴·Σ|x·w| (bound %d·2⁻²⁴)", c.Name, rt.Backend(), worst, taps)
		})
	}
}
