package passes

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestSplitAttention: under SplitSums, an attention in the split order
// becomes a kernel of its parts (Blocks = Parts, one part a workgroup)
// and a combine kernel that runs the epilogue; without SplitSums, or
// without the split order, it stays one kernel. Every program gives the
// graph's cpuref bits (NaN rows included), so the two kernels are the
// order's own steps.
func TestSplitAttention(t *testing.T) {
	old := ir.AttentionSplit
	t.Cleanup(func() { ir.AttentionSplit = old })
	lim := ir.Limits{MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40, NonFinite: true}
	cases := []struct {
		c     irtest.AttentionCase
		parts int // under AttentionSplit 3
	}{
		{irtest.AttentionCase{Name: "causal-130", H: 2, S: 130, T: 130, D: 16, E: 16, Scale: 0.25, Mask: irtest.MaskCausal}, 3},
		{irtest.AttentionCase{Name: "padding-70", B: 2, S: 9, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskPadding, NonFinite: true}, 3},
		{irtest.AttentionCase{Name: "row-off-70", S: 4, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true}, 3},
		{irtest.AttentionCase{Name: "cross-5x100", H: 3, S: 5, T: 100, D: 4, E: 6, Scale: 1}, 2},
		{irtest.AttentionCase{Name: "one-block-32", S: 7, T: 32, D: 4, E: 4, Scale: 1}, 0},
	}
	// Epilogues that read q itself (a residual) and a transposed view.
	residual := func(b *ir.Builder) *ir.Graph {
		q := b.Input(ir.Shape{2, 40, 8}, irtest.Values(1, 640, 2))
		k := b.Input(ir.Shape{2, 70, 8}, irtest.Values(2, 1120, 2))
		v := b.Input(ir.Shape{2, 70, 8}, irtest.Values(3, 1120, 2))
		w := b.Input(ir.Shape{2, 8, 40}, irtest.Values(4, 640, 2))
		y := q.Attention(k, v, b.Full(ir.Shape{}, float32(math.Copysign(0, -1))), 0.5, true)
		b.Output("y", y.Add(q).Mul(w.Permute(0, 2, 1)))
		g, err := b.Build(lim)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	type graphCase struct {
		name  string
		g     *ir.Graph
		parts int
	}
	var all []graphCase
	for _, tc := range cases {
		all = append(all, graphCase{tc.c.Name, tc.c.Graph(7), tc.parts})
	}
	all = append(all, graphCase{"residual-view-70", residual(ir.NewBuilder()), 3})
	for _, tc := range all {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			for _, split := range []int{0, 3} {
				ir.AttentionSplit = split
				want := cpuref.Eval(g) // the order's own bits
				for _, sums := range []bool{false, true} {
					p, _, err := Compile(g, Options{SplitSums: sums, Limits: lim})
					if err != nil {
						t.Fatalf("split %d, SplitSums %v: %v", split, sums, err)
					}
					prog := p.Program()
					parts, combines := 0, 0
					for _, k := range prog.Kernels {
						if k.Kind == ir.KernelAttention && k.Blocks > 1 {
							parts = k.Blocks
							if a := ir.AttentionKernel(&k); !k.Shape.Equal(a.PartsShape()) {
								t.Errorf("parts kernel shape %v, want %v", k.Shape, a.PartsShape())
							}
						}
						if k.Kind == ir.KernelAttentionCombine {
							combines++
						}
					}
					wantParts := 0
					if split > 0 && sums {
						wantParts = tc.parts
					}
					if parts != wantParts || combines != min(wantParts, 1) {
						t.Errorf("split %d, SplitSums %v: parts %d and %d combines, want %d:\n%s", split, sums, parts, combines, wantParts, prog)
					}
					got := cpuref.RunProgram(prog)
					for _, o := range g.Outputs {
						w, v := want[o.ID], got[o.Name]
						if len(w) != len(v) {
							t.Fatalf("%s: %d values, want %d", o.Name, len(v), len(w))
						}
						for i := range w {
							if math.Float32bits(w[i]) != math.Float32bits(v[i]) {
								t.Fatalf("split %d, SplitSums %v: %s[%d] = %v (%#x), want %v (%#x)", split, sums, o.Name, i, v[i], math.Float32bits(v[i]), w[i], math.Float32bits(w[i]))
							}
						}
					}
				}
			}
		})
	}
}
