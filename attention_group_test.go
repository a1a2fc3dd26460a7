package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// groupedGraph is grouped-query attention as ONNX's Attention and Hugging
// Face's repeat_kv write it: 4 query heads over 2 key and value heads,
// each repeated twice by reshape(broadcast(reshape(x))) ([1,2,T,D] as
// [1,2,1,T,D], broadcast to [1,2,2,T,D], merged to [1,4,T,D]), q read
// through a permute view of [1,S,4,D], with a mask of shape ms (nil: none)
// and causal.
func groupedGraph(t *testing.T, S, T int, ms ir.Shape, causal bool) *ir.Graph {
	t.Helper()
	const H, G, D, E = 4, 2, 8, 6
	b := ir.NewBuilder()
	q := b.Input(ir.Shape{1, S, H, D}, irtest.Values(1, S*H*D, 2)).Permute(0, 2, 1, 3)
	repeat := func(x ir.Tensor) ir.Tensor {
		s := x.Shape()
		return x.Reshape(ir.Shape{1, G, 1, s[2], s[3]}).Broadcast(ir.Shape{1, G, H / G, s[2], s[3]}).Reshape(ir.Shape{1, H, s[2], s[3]})
	}
	k := repeat(b.Input(ir.Shape{1, G, T, D}, irtest.Values(2, G*T*D, 2)))
	v := repeat(b.Input(ir.Shape{1, G, T, E}, irtest.Values(3, G*T*E, 2)))
	mask := b.Full(ir.Shape{}, float32(math.Copysign(0, -1)))
	if ms != nil {
		mask = b.Input(ms, irtest.Values(4, ms.Len(), 3))
	}
	b.Output("y", q.Attention(k, v, mask, 0.35, causal))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGroupAttention: grouped-query attention whose keys and values are
// repeated head by head (groupedGraph) is rewritten by ir.GroupAttention
// (which ir.FuseAttention, so every ONNX import, runs) to read each
// shared head in place: a rank-5 attention over [1,2,2,...] with k and v
// broadcast (stride 0), no copy kernel. Each case gives the repeated
// graph's bits in cpuref and cpuref's bits on every backend: a mask per
// head (split into groups), per query row and key (broadcast to every
// head), of rank 3, none with causal, and a single query row (a decoding
// step). The plan loses the two copy kernels that wrote the repeated k
// and v, and their bytes.
func TestGroupAttention(t *testing.T) {
	cases := []struct {
		name   string
		S, T   int
		mask   ir.Shape
		causal bool
	}{
		{"head-mask", 3, 5, ir.Shape{1, 4, 3, 5}, false},
		{"row-mask", 3, 5, ir.Shape{3, 5}, false},
		{"rank3-mask", 3, 5, ir.Shape{4, 1, 5}, false},
		{"causal", 6, 6, nil, true},
		{"one-row", 1, 9, ir.Shape{1, 1, 1, 9}, false},
	}
	rt := open(t, "cpu")
	for _, c := range cases {
		g := groupedGraph(t, c.S, c.T, c.mask, c.causal)
		gg := ir.GroupAttention(g)
		t.Run(c.name, func(t *testing.T) {
			rank := 0
			for _, n := range gg.Nodes {
				if n.Op == ir.OpAttention {
					rank = len(n.Shape)
				}
			}
			if rank != 5 {
				t.Fatalf("the grouped attention has rank %d, want 5 (read in place)", rank)
			}
			want, got := cpuref.Eval(g)[g.Outputs[0].ID], cpuref.Eval(gg)[gg.Outputs[0].ID]
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v grouped, %v repeated", i, got[i], want[i])
				}
			}
			before, err := rt.Compile(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			defer before.Release()
			after, err := rt.Compile(context.Background(), gg)
			if err != nil {
				t.Fatal(err)
			}
			defer after.Release()
			cb, ca := passes.ProgramCost(before.Plan().Program), passes.ProgramCost(after.Plan().Program)
			if after.Kernels() != before.Kernels()-2 || ca.BytesWritten >= cb.BytesWritten {
				t.Errorf("%d kernels writing %d bytes, repeated %d writing %d: want the 2 copies gone", after.Kernels(), ca.BytesWritten, before.Kernels(), cb.BytesWritten)
			}
			t.Logf("%d kernels, %d bytes written; repeated: %d kernels, %d bytes", after.Kernels(), ca.BytesWritten, before.Kernels(), cb.BytesWritten)
		})
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			for _, c := range cases {
				g := ir.GroupAttention(groupedGraph(t, c.S, c.T, c.mask, c.causal))
				t.Run(c.name, func(t *testing.T) { checkRun(t, rt, g) })
			}
		})
	}
}
