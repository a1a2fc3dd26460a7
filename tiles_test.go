package gpucc_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestMatmulTilesExact runs matmuls under every tile the tiling pass
// chooses from, with each operand plain or read transposed in place, on
// shapes that leave partial tiles (odd, prime, narrow), and checks the
// bits against cpuref: a tile, and the order a tile stages its operands
// in, never changes a result.
func TestMatmulTilesExact(t *testing.T) {
	tiles := []ir.Tile{passes.TileLarge, passes.TileWide, passes.TileMedium, passes.TileSmall, passes.TileFallback,
		{BM: 16, BN: 16, TM: 1, TN: 1, BK: 16, Vector: 1}, // narrow: an output of 16 columns
		{BM: 32, BN: 8, TM: 1, TN: 1, BK: 16, Vector: 1},
		{BM: 8, BN: 32, TM: 1, TN: 1, BK: 16, Vector: 1},
	}
	shapes := [][3]int{{37, 19, 23}, {64, 33, 16}, {16, 130, 12}, {132, 8, 128}}
	for _, tile := range tiles {
		tile := tile
		t.Run(fmt.Sprintf("%dx%d_%dx%d_k%d_v%d", tile.BM, tile.BN, tile.TM, tile.TN, tile.BK, tile.Vector), func(t *testing.T) {
			rt := open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = &tile })
			for _, s := range shapes {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					m, k, n := s[0], s[1], s[2]
					b := ir.NewBuilder()
					operand := func(seed uint64, rows, cols int, transposed bool) ir.Tensor {
						if transposed {
							return b.Input(ir.Shape{cols, rows}, irtest.Values(seed, rows*cols, 1)).T()
						}
						return b.Input(ir.Shape{rows, cols}, irtest.Values(seed, rows*cols, 1))
					}
					b.Output("y", operand(1, m, k, tr[0]).MatMul(operand(2, k, n, tr[1])).Relu())
					g, err := b.Build(ir.Limits{})
					if err != nil {
						t.Fatal(err)
					}
					t.Run(fmt.Sprintf("%dx%dx%d_t%v%v", m, k, n, tr[0], tr[1]), func(t *testing.T) { checkRun(t, rt, g) })
				}
			}
		})
	}
}
