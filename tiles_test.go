package gpucc_test

import (
	"context"
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
		// deep k-steps, one output a thread: the rule's single and narrow
		// tiles for K ≥ passes.DeepK, and the H100 table's thin ones
		{BM: 16, BN: 16, TM: 1, TN: 1, BK: 64, Vector: 1},
		{BM: 8, BN: 32, TM: 1, TN: 1, BK: 64, Vector: 1},
		{BM: 8, BN: 16, TM: 1, TN: 1, BK: 128, Vector: 1},
		{BM: 32, BN: 16, TM: 2, TN: 1, BK: 64, Vector: 1},
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

// stagedTiles are the staged vec4 kernel's tiles (ir.Tile.Stages) the
// H200 visits compare with the rule's (bench/device.sh's matmul suite):
// one and two workgroup buffers, the rule's large and wide shapes, register
// tiles of 8×16 (128 and 256 threads), a one-row tile, a k-step of 4, and
// the double-buffered kernel's options (l, u, w), whose guards go where the
// shape divides the tile.
// Each fits WebGPU's default 16 KiB of workgroup memory, what the webgpu
// backend plans tiles for (tune.PlanStorage). The built-in tables' tiles
// are among them (runtime/gpu/tune/tables: the H100's lean 128x128/8x16
// and 64x64/4x4k16, and the latter unrolled with warp blocks). (The
// H100's thin scalar tiles are the plain kernel's: TestMatmulTilesExact.)
var stagedTiles = []string{"128x128/8x8k16v4s1", "128x128/8x8k8v4s2", "64x128/8x8k8v4s2", "128x128/8x16k8v4s2",
	"128x256/8x16k4v4s2", "32x64/4x4k16v4s2", "64x64/8x4k4v4s2",
	// the double-buffered kernel's options (ir.Tile.Opts): lean, unroll, warp, alone and together
	"64x128/8x8k8v4s2l", "64x128/8x8k8v4s2luw", "128x128/8x8k8v4s2lw", "32x64/4x4k16v4s2lu", "64x64/8x4k4v4s2w", "64x64/8x4k4v4s2u",
	"64x64/8x4k4v4s2l",                                                // l with a thread past the tile's last vec4 of A (64 of them, 128 threads)
	"128x128/8x16k8v4s2l", "64x64/4x4k16v4s2l", "64x64/4x4k16v4s2luw"} // the H100 table's (2026-12-06)

// TestMatmulStagedExact runs the staged vec4 kernel under each of
// stagedTiles on shapes that leave every kind of partial tile: sides of
// 1, 3, 63, 64, 65, 129 and 132 outputs, k of 4, 5, 63, 65 and 132 (a partial
// last k-tile, a single one, one past a whole one), then sides that every
// tile divides, each operand plain or
// read transposed in place with the side it is read along a multiple of
// four (else the tile falls back to the scalar kernel, which
// TestMatmulTilesExact covers), and checks the bits against cpuref.
func TestMatmulStagedExact(t *testing.T) {
	type shape struct {
		m, k, n int
		ta, tb  bool
	}
	shapes := []shape{
		{1, 132, 68, false, false}, {63, 68, 132, false, false}, {129, 4, 64, false, false},
		{64, 65, 68, true, false}, {132, 5, 4, true, false}, {4, 63, 132, true, false},
		{65, 68, 63, false, true}, {129, 8, 3, false, true},
		{68, 132, 65, true, true},
		// every side a multiple of every tile's: the lean kernel's unguarded loads, stores and epilogue
		{128, 24, 256, false, false}, {256, 16, 128, true, true},
	}
	for _, name := range stagedTiles {
		tile, err := passes.ParseTile(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			rt := open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = &tile })
			for _, s := range shapes {
				b := ir.NewBuilder()
				operand := func(seed uint64, rows, cols int, transposed bool) ir.Tensor {
					if transposed {
						return b.Input(ir.Shape{cols, rows}, irtest.Values(seed, rows*cols, 1)).T()
					}
					return b.Input(ir.Shape{rows, cols}, irtest.Values(seed, rows*cols, 1))
				}
				b.Output("y", operand(1, s.m, s.k, s.ta).MatMul(operand(2, s.k, s.n, s.tb)).Relu())
				g, err := b.Build(ir.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprintf("%dx%dx%d_t%v%v", s.m, s.k, s.n, s.ta, s.tb), func(t *testing.T) {
					exe, err := rt.Compile(context.Background(), g)
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range exe.Plan().Program.Kernels {
						if k.Kind == ir.KernelMatmul && k.Tile != tile {
							t.Fatalf("the matmul ran with tile %+v, not %+v", k.Tile, tile)
						}
					}
					checkRun(t, rt, g)
				})
			}
		})
	}
}
