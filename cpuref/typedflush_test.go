package cpuref_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestEvalTypedFlushed: EvalTypedFlushed flushes the subnormal results of a
// typed graph's float32 nodes over float32 operands (what a GPU's float32
// island may do) and of nothing else: a bfloat16 product below 2^-126 and
// an int64 sum keep EvalTyped's values.
func TestEvalTypedFlushed(t *testing.T) {
	b := ir.NewBuilder()
	tiny := []float32{0x1p-65, -0x1p-65, 3}
	x := b.TypedInput("x", ir.F32, ir.Shape{3}, tiny, nil)
	h := b.TypedInput("h", ir.BF16, ir.Shape{3}, tiny, nil)
	i := b.TypedInput("i", ir.I64, ir.Shape{3}, nil, []int64{1, 2, 3})
	b.Output("f32", x.Mul(x))
	b.Output("bf16", h.Mul(h))
	b.Output("i64", i.Add(i))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exact, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	flushed, err := cpuref.EvalTypedFlushed(g)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ir.NodeID{}
	for _, o := range g.Outputs {
		out[o.Name] = o.ID
	}
	if f, e := flushed[out["f32"]].F, exact[out["f32"]].F; f[0] != 0 || f[1] != 0 || e[0] != 0x1p-130 || e[1] != 0x1p-130 || f[2] != 9 {
		t.Errorf("float32 x*x: flushed %v, exact %v; want [0 0 9] and [2^-130 2^-130 9]", f, e)
	}
	if f, e := flushed[out["bf16"]].F, exact[out["bf16"]].F; math.Float32bits(f[0]) != math.Float32bits(e[0]) || e[0] != 0x1p-130 {
		t.Errorf("bfloat16 h*h: flushed %v, exact %v; want both 2^-130 first", f, e)
	}
	if f := flushed[out["i64"]].I; len(f) != 3 || f[2] != 6 {
		t.Errorf("int64 i+i: flushed %v, want [2 4 6]", f)
	}
}
