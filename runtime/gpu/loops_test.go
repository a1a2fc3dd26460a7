//go:build !js

package gpu

import (
	"encoding/binary"
	"testing"
)

// loopWGSL counts the iterations of two nested loops whose trip counts
// come from a uniform, so that no compiler can unroll or fold them.
const loopWGSL = `
struct Params { outer: u32, inner: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: Params;
@compute @workgroup_size(1)
fn main() {
	var c = 0u;
	for (var i = 0u; i < p.outer; i++) {
		for (var j = 0u; j < p.inner; j++) {
			c = c + 1u;
		}
	}
	out[0] = c;
}
`

// TestSoftwareLoopBudget measures the loop limit behind wgsl.LoopBudget:
// Mesa's llvmpipe (lavapipe and its GL driver) stops every loop of an
// invocation once about 65535 iterations have run in all, where a loop
// entered for n iterations costs n+1. Loops within the budget must run
// whole on every adapter; on a software adapter the test also logs where
// the count stops (and fails if it is not where the budget assumes).
func TestSoftwareLoopBudget(t *testing.T) {
	d := openDevice(t)
	pl, err := d.Compile(loopWGSL, "main", []BindingKind{Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Release()
	out, err := d.NewBuffer(4, "count")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	count := func(outer, inner uint32) uint32 {
		pb := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, outer), inner)
		u, err := d.NewUniform(pb, "trips")
		if err != nil {
			t.Fatal(err)
		}
		defer u.Release()
		if err := d.Run([]Dispatch{{Pipeline: pl, Buffers: []*Buffer{out, u}, Groups: [3]uint32{1, 1, 1}}}); err != nil {
			t.Fatal(err)
		}
		var r [4]byte
		if err := d.ReadBytes(out, r[:]); err != nil {
			t.Fatal(err)
		}
		return binary.LittleEndian.Uint32(r[:])
	}
	const budget = 65535 // wgsl.LoopBudget (which imports nothing of this package)
	for _, c := range []struct{ outer, inner uint32 }{
		{1, budget - 3},       // cost 2 + (budget-2)
		{21844, 1},            // cost 21845 + 2·21844 = budget - 2
		{3, budget/3 - 4},     // nested
		{budget/2 - 1, 0},     // an empty inner loop still costs 1
		{2, budget/2 - 2},     // cost 3 + 2·(budget/2-1)
		{100, budget/100 - 3}, // many short entries
	} {
		cost := uint64(c.outer+1) + uint64(c.outer)*uint64(c.inner+1)
		want := c.outer * c.inner
		if c.inner == 0 {
			want = 0
		}
		if cost > budget {
			t.Fatalf("case %+v costs %d, over the budget: fix the table", c, cost)
		}
		if got := count(c.outer, c.inner); got != want {
			t.Errorf("%d×%d loops (cost %d ≤ %d) counted %d", c.outer, c.inner, cost, budget, got)
		}
	}
	if d.Info().Software {
		got := count(1, 70000)
		t.Logf("%s: a loop of 70000 iterations ran %d", d.Info(), got)
		if got == 70000 {
			t.Logf("this software adapter has no loop limit")
		}
	}
}
