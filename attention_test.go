package gpucc_test

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// attentionGraph is the fixture's attention block: softmax(q·kᵀ·scale, 1)·v,
// then LayerNorm along axis 1 without gain or bias.
func attentionGraph(t testing.TB, fx *digitsFixture) *ir.Graph {
	t.Helper()
	a := fx.Attention
	s := ir.Shape{a.Seq, a.D}
	b := ir.NewBuilder()
	q := b.NamedInput("q", s, a.Inputs["q"].f32(t))
	k := b.NamedInput("k", s, a.Inputs["k"].f32(t))
	v := b.NamedInput("v", s, a.Inputs["v"].f32(t))
	b.Output("y", q.MatMul(k.T()).MulScalar(a.Scale).Softmax(1).MatMul(v).LayerNorm(1, a.Eps))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAttentionFixture runs the attention block (sequence 256, d 64) on
// every backend: the output is within fixtureBound of PyTorch's float64
// result, and bit-identical to cpuref on every backend (a GPU that flushes
// subnormals may return cpuref.EvalFlushed's value instead).
func TestAttentionFixture(t *testing.T) {
	fx := loadDigitsFixture(t)
	g := attentionGraph(t, fx)
	want := fx.Attention.Float64.Out.f64(t)
	bound := fixtureBound(want, fx.Attention.Float32.Out.f64(t))
	ref := cpuref.Eval(g)[g.Outputs[0].ID]
	r, diff := withinFixture(t, "attention", ref, want, bound)
	t32, vs32 := 0.0, 0.0
	for i, w := range fx.Attention.Float32.Out.f64(t) {
		t32 = max(t32, abs64(w-want[i]))
		vs32 = max(vs32, abs64(float64(ref[i])-w))
	}
	t.Logf("attention: largest |gpucc − torch float64| %.3g (%.3g of the bound); |torch float32 − float64| %.3g; |gpucc − torch float32| %.3g", diff, r, t32, vs32)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			exe, err := rt.Compile(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			res, err := exe.Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			// bit for bit, a GPU's flushed subnormals aside (cpuref's one
			// stated departure: exp underflows to subnormals here)
			compare(t, rt, g, map[string][]float32{"y": ref}, map[string][]float32{"y": res.Outputs["y"].Data})
		})
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
