package gpucc_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// splitParts sets ir.AttentionSplit (the split order's parts) for the
// rest of the test.
func splitParts(t testing.TB, n int) {
	old := ir.AttentionSplit
	ir.AttentionSplit = n
	t.Cleanup(func() { ir.AttentionSplit = old })
}

// TestAttentionSplit: with ir.AttentionSplit 3, every online attention of
// two blocks or more runs in the split order (ir/attention.go), and every
// backend gives cpuref's bits: 33 keys in parts of 32 and 1, 100 in 64
// and 36, 130 in 64, 64 and 2, 70 in 32, 32 and 6; d 64 and 128, causal
// (whose later parts are wholly -Inf for the first rows), a -Inf padding
// mask, a fully masked row (NaN), a row's first parts all -Inf, extremes,
// cross attention, odd heads, heads read through a view, and a residual
// (q added to the output: an operand the combine reads after the parts).
func TestAttentionSplit(t *testing.T) {
	onlineFrom(t, 1)
	splitParts(t, 3)
	bl := ir.AttentionBlock
	var cases []irtest.AttentionCase
	for _, s := range []int{bl + 1, 130} {
		for _, d := range []int{64, 128} {
			sc := float32(1 / math.Sqrt(float64(d)))
			cases = append(cases,
				irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d%d-causal", s, d), H: 2, S: s, T: s, D: d, E: d, Scale: sc, Mask: irtest.MaskCausal},
				irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d%d-padding", s, d), B: 2, S: s, T: s, D: d, E: d, Scale: sc, Mask: irtest.MaskPadding, NonFinite: true})
		}
	}
	cases = append(cases,
		irtest.AttentionCase{Name: "row-off-70", S: 4, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true},
		irtest.AttentionCase{Name: "lead-off-100", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead, NonFinite: true},
		irtest.AttentionCase{Name: "dense-67", S: 6, T: 67, D: 8, E: 3, Scale: 0.125, Mask: irtest.MaskDense, NonFinite: true},
		irtest.AttentionCase{Name: "extremes-70", H: 2, S: 5, T: 70, D: 8, E: 8, Scale: 0.125, Extremes: true},
		irtest.AttentionCase{Name: "cross-5x100", B: 1, H: 3, S: 5, T: 100, D: 4, E: 6, Scale: 1},
		irtest.AttentionCase{Name: "odd-d12-e7", S: 19, T: 77, D: 12, E: 7, Scale: 0.3},
		irtest.AttentionCase{Name: "heads-view-50", B: 2, H: 2, S: 17, T: 50, D: 8, E: 8, Scale: 0.35355338, HeadsInView: true, Mask: irtest.MaskCausal},
		irtest.AttentionCase{Name: "residual-70", S: 5, T: 70, D: 8, E: 8, Scale: 0.5, Residual: true})
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) {
				o.Limits = ir.Limits{NonFinite: true, MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
			})
			for k, c := range cases {
				t.Run(c.Name, func(t *testing.T) { checkNonFinite(t, rt, c.Graph(uint64(1400+k))) })
			}
		})
	}
}

// TestAttentionSplitInCacheKey: a process that compiles an attention in
// the online order and then, with ir.AttentionSplit set, the same
// structure again gets the split order's kernel, not the cached online
// one (wgsl.Config names the knob; the program's key does not).
func TestAttentionSplitInCacheKey(t *testing.T) {
	if !slices.Contains(backends, "webgpu") {
		t.Skip("webgpu is not among the backends")
	}
	onlineFrom(t, 1)
	c := irtest.AttentionCase{Name: "seq130-d64", S: 130, T: 130, D: 64, E: 64, Scale: 0.125}
	rt := open(t, "webgpu", func(o *gpucc.Options) {
		o.Limits = ir.Limits{NonFinite: true, MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
	})
	checkNonFinite(t, rt, c.Graph(7)) // the online order, now in the code cache
	splitParts(t, 3)
	checkNonFinite(t, rt, c.Graph(8)) // the same structure, other values: the split order
}

// splitTileVariants are online tiles TestAttentionSplitTiles runs the
// split order under: each is cut to G groups of its rows and slices or
// fewer (wgsl's onlineSplitPlan), Half dropped.
var splitTileVariants = []wgsl.OnlineTile{
	wgsl.DefaultOnlineTile, {Rows: 16, Slices: 16}, allFlags(16, 16), rowBlock(allFlags(8, 16), 2, true),
	{Rows: 16, Slices: 16, RowBlock: 2}, halfTwo(8, 32), allFlags(32, 8),
}

// TestAttentionSplitTiles: on webgpu, the split order's kernel (the parts
// side by side, a group of threads each, combined through workgroup
// memory) gives cpuref's bits under each of splitTileVariants, with
// parts whose keys end at T (64 keys in 2 parts, 96 in 3, 128 in 4) and
// parts cut short by T (100 in 64 and 36, 130 in 64, 64 and 2, a row's
// whole first part -Inf), causal, -Inf masks, a fully masked row, d 12
// to 128, and 29 query rows with a row block; without -short, 2048 keys
// in 4 parts at d 64 and 128, causal.
func TestAttentionSplitTiles(t *testing.T) {
	if !slices.Contains(backends, "webgpu") {
		t.Skip("webgpu is not among the backends")
	}
	onlineFrom(t, 1)
	defer func(old wgsl.OnlineTile) { wgsl.AttentionOnlineTile = old }(wgsl.AttentionOnlineTile)
	cases := []partsCase{
		{irtest.AttentionCase{Name: "keys64-in-2-d64-causal", H: 2, S: 64, T: 64, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}, 3},
		{irtest.AttentionCase{Name: "keys96-in-3-d128-padding", B: 2, S: 9, T: 96, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskPadding, NonFinite: true}, 3},
		{irtest.AttentionCase{Name: "keys128-in-4-d64-dense", S: 21, T: 128, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskDense, NonFinite: true}, 4},
		{irtest.AttentionCase{Name: "keys100-in-2-lead-off", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead, NonFinite: true}, 3},
		{irtest.AttentionCase{Name: "keys130-in-3-d64-causal", S: 130, T: 130, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}, 3},
		{irtest.AttentionCase{Name: "row-off-70", S: 4, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true}, 8},
		{irtest.AttentionCase{Name: "odd-d12-e7", S: 19, T: 77, D: 12, E: 7, Scale: 0.3}, 2},
		{irtest.AttentionCase{Name: "rows29-keys100-d64-dense", B: 2, S: 29, T: 100, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskDense, NonFinite: true}, 4},
	}
	if !testing.Short() {
		for _, d := range []int{64, 128} {
			cases = append(cases, partsCase{irtest.AttentionCase{Name: fmt.Sprintf("keys2048-in-4-d%d-causal", d), S: 2048, T: 2048, D: d, E: d, Scale: 0.125, Mask: irtest.MaskCausal}, 4})
		}
	}
	runPartsTiles(t, splitTileVariants, cases, 3, 1500)
}
