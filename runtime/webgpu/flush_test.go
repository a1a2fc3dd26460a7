//go:build cgo && !js

package webgpu

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestTypedFlushRisk: on a hardware adapter the typed kernels refuse
// float32 and bfloat16 arithmetic (the H200 flushed its subnormals) and
// keep float16, integer rows and casts.
func TestTypedFlushRisk(t *testing.T) {
	b := ir.NewBuilder()
	f := b.TypedInput("f", ir.F32, ir.Shape{4}, []float32{1e-39, 1, 2, 3}, nil)
	h := b.TypedInput("h", ir.BF16, ir.Shape{4}, []float32{1, 2, 3, 4}, nil)
	q := b.TypedInput("q", ir.F16, ir.Shape{4}, []float32{1, 2, 3, 4}, nil)
	k := b.TypedInput("k", ir.I64, ir.Shape{4}, nil, []int64{1, 2, 3, 4})
	b.Output("f", f.Apply(ir.OpMul, f))
	b.Output("h", h.Apply(ir.OpAdd, h))
	b.Output("q", q.Apply(ir.OpMul, q))
	b.Output("k", k.Apply(ir.OpAdd, k))
	b.Output("c", f.Cast(ir.I32))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"f": true, "h": true}
	for _, o := range g.Outputs {
		if err := typedFlushRisk(g, int(o.ID), true); err != nil {
			t.Errorf("%s on a software adapter: %v", o.Name, err)
		}
		if err := typedFlushRisk(g, int(o.ID), false); (err != nil) != want[o.Name] {
			t.Errorf("%s: %v, want refused %v", o.Name, err, want[o.Name])
		}
	}
}
