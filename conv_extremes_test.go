package gpucc_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestConvTilesExtremes is TestMatmulTilesExtremes for the WGSL
// convolutions: convTileCases (padding, strides, dilation, groups,
// depthwise) under the rule (the window kernel for the depthwise ones)
// and under GEMM tiles forced to each way a thread finds its pixels, one
// buffer and two, on x from irtest.Extremes and w the same times 2⁻¹³⁰,
// bit for bit against cpuref; x's first channel of the first image is
// -2⁻¹⁴⁰ (its products round to ±0) and w's first filter -0.
func TestConvTilesExtremes(t *testing.T) {
	t.Run("webgpu", testConvTilesExtremes) // bench/device.sh's exact suite runs TestConv*/webgpu on the driver
}

func testConvTilesExtremes(t *testing.T) {
	tiles := []*ir.Tile{nil, // the rule
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1},           // one column a thread
		{BM: 128, BN: 8, TM: 8, TN: 4, BK: 8, Vector: 1},            // several
		{BM: 40, BN: 12, TM: 4, TN: 4, BK: 8, Vector: 1},            // neither
		{BM: 8, BN: 8, TM: 1, TN: 1, BK: 8, Vector: 1},              // the fallback
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 8, Vector: 1, Stages: 2}, // double-buffered
		{BM: 40, BN: 12, TM: 4, TN: 4, BK: 8, Vector: 1, Stages: 2},
	}
	for ti, tile := range tiles {
		if testing.Short() && ti != 0 && ti != 3 && ti != 5 {
			continue // the rule, "neither" and a double-buffered tile
		}
		name := "rule"
		if tile != nil {
			name = fmt.Sprintf("%dx%d-%dx%d-k%d-s%d", tile.BM, tile.BN, tile.TM, tile.TN, tile.BK, tile.Stages)
		}
		t.Run(name, func(t *testing.T) {
			rt := open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = tile })
			for i, c := range convTileCases {
				g := max(c.Group, 1)
				xv := irtest.Extremes(uint64(4000+2*i), c.N*c.C*c.H*c.W)
				wv := smallExtremes(uint64(4001+2*i), c.M*c.C/g*c.KH*c.KW)
				for j := range c.H * c.W {
					xv[j] = -0x1p-140
				}
				for j := range c.C / g * c.KH * c.KW {
					wv[j] = float32(math.Copysign(0, -1))
				}
				b := ir.NewBuilder()
				b.Output("y", b.Input(ir.Shape{c.N, c.C, c.H, c.W}, xv).Conv2D(b.Input(ir.Shape{c.M, c.C / g, c.KH, c.KW}, wv), c.Attrs()))
				gr, err := b.Build(ir.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				refFinite(t, gr)
				t.Run(c.Name, func(t *testing.T) { checkRun(t, rt, gr) })
			}
		})
	}
}
