package gpucc_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestRowKnobs: the rows kernels' benchmark knobs change their schedule,
// never their bits: random row graphs (softmax-like max/exp/sum/div chains,
// layer norms) at 1024 leaves a row (the benchmarks' width, partials apart
// from the leaves) and 4096 (the groups' values in red), with each setting
// of wgsl.RowRootOnce, against cpuref on webgpu.
func TestRowKnobs(t *testing.T) {
	rt := open(t, "webgpu")
	defer func(v bool) { wgsl.RowRootOnce = v }(wgsl.RowRootOnce)
	for _, once := range []bool{true, false} {
		wgsl.RowRootOnce = once
		for _, s := range []ir.Shape{{3, 1024}, {2, 4096}} {
			for seed := range 2 {
				g, _ := irtest.RandomRows(uint64(seed), s)
				t.Run(fmt.Sprintf("once=%t/%v/%d", once, s, seed), func(t *testing.T) { checkRun(t, rt, g) })
			}
		}
	}
}
