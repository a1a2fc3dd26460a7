package irtest_test

import (
	"errors"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
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
		if count[op] == 0 && !op.Info().Typed { // typed rows: TestRandomTypedCoversTheTable
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

// TestRandomTypedCoversTheTable: 64 RandomTyped graphs hold every dtype
// and every op whose type rule takes more than float32, each a value of
// the row's dtypes, and cpuref evaluates them or fails with integer_fault.
func TestRandomTypedCoversTheTable(t *testing.T) {
	ops, dts := map[ir.Op]int{}, map[ir.DType]int{}
	faults := 0
	for seed := range uint64(64) {
		g := irtest.RandomTyped(seed, 24)
		for _, n := range g.Nodes {
			ops[n.Op]++
			dts[n.DType]++
		}
		if _, err := cpuref.EvalTyped(g); err != nil {
			if !errors.Is(err, ir.ErrIntegerFault) {
				t.Fatalf("seed %d: %v", seed, err)
			}
			faults++
		}
	}
	for _, op := range ir.Ops() {
		if op.Info().Types.In != ir.F32Only && op.Info().ScalarOf == 0 && ops[op] == 0 {
			t.Errorf("%v: in none of 64 RandomTyped graphs", op)
		}
	}
	for _, dt := range ir.DTypes() {
		if dts[dt] == 0 {
			t.Errorf("%v: in none of 64 RandomTyped graphs", dt)
		}
	}
	t.Logf("%d of 64 graphs fail with integer_fault; dtypes %v", faults, dts)
}
