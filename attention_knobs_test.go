package gpucc_test

import (
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestAttentionOrderInCacheKey: a process that compiles an attention in
// the full-row order and then, with ir.AttentionOnlineFrom lowered, the
// same structure again gets the online order's kernel, not the cached
// full-row one. The order is picked from the shapes when code is
// generated and is not in the program's key, so wgsl.Config must name it:
// without it the second run gave the full-row kernel's bits, 3 ulps from
// cpuref's online order (TestAttentionOnlineTiles in a whole-package run,
// 2026-12-04).
func TestAttentionOrderInCacheKey(t *testing.T) {
	if !slices.Contains(backends, "webgpu") {
		t.Skip("webgpu is not among the backends")
	}
	c := irtest.AttentionCase{Name: "seq130-d64-causal", S: 130, T: 130, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}
	rt := open(t, "webgpu", func(o *gpucc.Options) {
		o.Limits = ir.Limits{NonFinite: true, MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
	})
	checkNonFinite(t, rt, c.Graph(7)) // full-row order, now in the code cache
	onlineFrom(t, 1)
	checkNonFinite(t, rt, c.Graph(8)) // the same structure, other values: the online order
}
