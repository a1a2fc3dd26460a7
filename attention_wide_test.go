package gpucc_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// wideTileVariants are the online tiles that fill the device's workgroup
// storage (the w flag) which TestAttentionWideTiles checks, and
// bench/device.sh times.
var wideTileVariants = []wgsl.OnlineTile{wide(wgsl.DefaultOnlineTile), wide(wgsl.OnlineTile{Rows: 8, Slices: 32}),
	wide(allFlags(16, 16)), wide(halfTwo(8, 32)), wide(rowBlock(allFlags(8, 16), 2, true))}

// wide is tile t with the w flag.
func wide(t wgsl.OnlineTile) wgsl.OnlineTile {
	t.Wide = true
	return t
}

// TestAttentionWideTiles: on webgpu, whose runtime plans the online
// kernel for its device's workgroup storage (lavapipe grants 32 KiB:
// runtime/webgpu's TestStorageReachesAttention), the tiles that fill it give cpuref's bits: d 128's
// sub-tiles of 32 keys (16 under WebGPU's default) and 8x32 at d 128
// (which the default cannot hold), over partial blocks and workgroups,
// causal, -Inf padding, leading -Inf blocks, a row all -Inf (NaN), dense
// -Inf masks, extremes, odd heads, the split order in parts (3 and 4) and,
// in the full tier, 2048 keys at d 64 and 128, causal, with and without 4
// parts.
func TestAttentionWideTiles(t *testing.T) {
	checkOnlineTiles(t, wideTileVariants, 4)
}

// spanTileVariants are the online tiles that stage two or four key
// blocks at once (bN) which TestAttentionSpanTiles checks, and
// bench/device.sh times: with the device's storage (w), the span in one
// sub-tile (d 64) or in sub-tiles of a block (d 128 on lavapipe's 32 KiB),
// and without it, in sub-tiles of a block or less (16 keys at d 128).
var spanTileVariants = []wgsl.OnlineTile{span(wide(wgsl.DefaultOnlineTile), 2), span(wide(allFlags(16, 16)), 2),
	span(wide(halfTwo(8, 32)), 2), span(wide(rowBlock(allFlags(8, 16), 2, true)), 2), span(wide(wgsl.DefaultOnlineTile), 4),
	span(wgsl.DefaultOnlineTile, 2), span(allFlags(32, 8), 2)}

// span is tile t staging n key blocks at once.
func span(t wgsl.OnlineTile, n int) wgsl.OnlineTile {
	t.Span = n
	return t
}

// TestAttentionSpanTiles: on webgpu, the tiles that stage several key
// blocks at once give cpuref's bits over TestAttentionWideTiles' cases:
// spans cut short by T (33, 67, 70, 77, 100, 130 and 261 keys: a partial
// block, a whole block and a partial one, no whole span), causal, -Inf
// padding and dense masks, a row all -Inf (NaN), leading -Inf blocks,
// extremes, the split order (parts of one span, of two blocks where the
// span is four, and cut short at T) and, in the full tier, 2048 keys.
func TestAttentionSpanTiles(t *testing.T) {
	checkOnlineTiles(t, spanTileVariants, 4)
}

// checkOnlineTiles runs the wide and span tiles' cases on
// webgpu under each of tiles (under -short a share of them: 1 in every).
func checkOnlineTiles(t *testing.T, tiles []wgsl.OnlineTile, every int) {
	if !slices.Contains(backends, "webgpu") {
		t.Skip("webgpu is not among the backends")
	}
	onlineFrom(t, 1)
	defer func(old wgsl.OnlineTile) { wgsl.AttentionOnlineTile = old }(wgsl.AttentionOnlineTile)
	cases := []partsCase{
		{irtest.AttentionCase{Name: "keys261-d64-lead-off", S: 5, T: 261, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskLead, NonFinite: true}, 0},
		{irtest.AttentionCase{Name: "keys256-in-2-d64-causal", S: 40, T: 256, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}, 2},
		{irtest.AttentionCase{Name: "seq130-d128-causal", S: 130, T: 130, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskCausal}, 0},
		{irtest.AttentionCase{Name: "seq67-d128-padding", B: 2, S: 67, T: 67, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskPadding, NonFinite: true}, 0},
		{irtest.AttentionCase{Name: "seq-block+1-d64-causal", H: 2, S: 33, T: 33, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}, 0},
		{irtest.AttentionCase{Name: "rows29-keys100-d128-dense", S: 29, T: 100, D: 128, E: 128, Scale: 0.125, Mask: irtest.MaskDense, NonFinite: true}, 0},
		{irtest.AttentionCase{Name: "row-off-70-d100", S: 4, T: 70, D: 100, E: 100, Scale: 0.1, Mask: irtest.MaskRowOff, NonFinite: true}, 0},
		{irtest.AttentionCase{Name: "lead-off-100", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead, NonFinite: true}, 0},
		{irtest.AttentionCase{Name: "extremes-70-d128", H: 2, S: 5, T: 70, D: 128, E: 128, Scale: 0.125, Extremes: true}, 0},
		{irtest.AttentionCase{Name: "odd-d12-e7", S: 19, T: 77, D: 12, E: 7, Scale: 0.3}, 0},
		{irtest.AttentionCase{Name: "keys96-in-3-d128-padding", B: 2, S: 9, T: 96, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskPadding, NonFinite: true}, 3},
		{irtest.AttentionCase{Name: "keys130-in-4-d128-causal", S: 40, T: 130, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskCausal}, 4},
	}
	if !testing.Short() {
		for _, d := range []int{64, 128} {
			for _, parts := range []int{0, 4} {
				cases = append(cases, partsCase{irtest.AttentionCase{Name: fmt.Sprintf("keys2048-d%d-causal-parts%d", d, parts), S: 2048, T: 2048, D: d, E: d, Scale: 0.125, Mask: irtest.MaskCausal}, parts})
			}
		}
	}
	runPartsTiles(t, tiles, cases, every, 1600)
}

// partsRefs holds each case's expected values once (partsExpected): the tile
// tests run a case under every tile, and cpuref's reference at 2048 keys
// took longer than the kernels (the H100 ran 18 of the full tier's tests
// in 200 s on 2026-12-05, computing it again for each tile).
var partsRefs sync.Map // partsKey -> gpucctest.Ref

// partsKey is what a case's reference depends on: the case, its seed, and
// the orders the IR picks (ir.AttentionSplit, ir.AttentionOnlineFrom); the
// tile, a WGSL schedule, does not change it.
type partsKey struct {
	partsCase
	seed              uint64
	split, onlineFrom int
}

func partsExpected(c partsCase, seed uint64, g *ir.Graph) gpucctest.Ref {
	k := partsKey{c, seed, ir.AttentionSplit, ir.AttentionOnlineFrom}
	if r, ok := partsRefs.Load(k); ok {
		return r.(gpucctest.Ref)
	}
	r := expectedOf(g)
	partsRefs.Store(k, r)
	return r
}

// partsCase is an attention case and the parts of its split order
// (ir.AttentionSplit; 0 for the online order).
type partsCase struct {
	irtest.AttentionCase
	parts int
}

// runPartsTiles checks each case on webgpu under each of tiles, the cases
// under -short a share of every (tileShare), case k's values seeded
// seed+k.
func runPartsTiles(t *testing.T, tiles []wgsl.OnlineTile, cases []partsCase, every int, seed uint64) {
	for j, tile := range tiles {
		t.Run("webgpu/"+tile.String(), func(t *testing.T) {
			wgsl.AttentionOnlineTile = tile
			rt := open(t, "webgpu", func(o *gpucc.Options) {
				o.Limits = ir.Limits{NonFinite: true, MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
			})
			for k, c := range cases {
				if !tileShare(j, k, every) {
					continue
				}
				t.Run(c.Name, func(t *testing.T) {
					splitParts(t, c.parts)
					g := c.Graph(seed + uint64(k))
					checkAgainst(t, rt, g, partsExpected(c, seed+uint64(k), g))
				})
			}
		})
	}
}
