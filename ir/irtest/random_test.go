package irtest_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// CorpusSeeds is how many RandomOps seeds (of maxNodes 12) the fuzzers'
// seed corpora hold; TestRandomOpsCoversTheTable checks that they reach
// every op. 32 graphs stopped reaching conv2d when the table grew to 45
// ops (about 5 draws an op); 64 give each op at least 4 (2026-12-02).
const corpusSeeds = 64

// TestRandomOpsCoversTheTable: the graphs RandomOps makes for the fuzzers'
// seed corpora (FuzzDecode, FuzzCompile, FuzzBackends; FuzzPipeline draws
// from any seed) apply every op of the table, views of views and numpy
// broadcasts that stretch a dim of 1.
func TestRandomOpsCoversTheTable(t *testing.T) {
	count := map[ir.Op]int{}
	viewOfView, numpy := 0, 0
	for seed := range corpusSeeds {
		g := irtest.RandomOps(uint64(seed), 12)
		for _, n := range g.Nodes {
			count[n.Op]++
			if n.Op.IsView() && g.Nodes[n.Args[0]].Op.IsView() {
				viewOfView++
			}
			if n.Op == ir.OpBroadcast && !ir.IsSuffix(g.Nodes[n.Args[0]].Shape, n.Shape) {
				numpy++ // a dim of 1 stretched: numpy's rule beyond protocol v1's
			}
		}
	}
	for _, op := range ir.Ops() {
		if count[op] == 0 {
			t.Errorf("%v: in none of %d RandomOps graphs", op, corpusSeeds)
		}
	}
	if viewOfView == 0 {
		t.Error("no view of a view")
	}
	if numpy == 0 {
		t.Error("no broadcast that stretches a dim of 1")
	}
	t.Logf("op counts: %v", count)
}

// TestRandomOpsValid: RandomOps' graphs of many sizes build (it panics
// otherwise) and encode and decode unchanged.
func TestRandomOpsValid(t *testing.T) {
	for seed := range 300 {
		g := irtest.RandomOps(uint64(seed), 1+seed%40)
		back, err := ir.DecodeBytes(ir.Encode(g), ir.Limits{})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, g)
		}
		if back.String() != g.String() {
			t.Fatalf("seed %d: round trip changed the graph", seed)
		}
	}
}
