package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestXMathPairs: division and the unary ops that ir/xmath.go defines by
// float steps (sqrt, rsqrt, exp, log, sigmoid, tanh) over irtest.DivPairs, about 340,000
// random, near-midpoint, subnormal, exponent-sweep and edge pairs, give
// cpuref's bits on every backend: webgpu runs ir's float definitions
// (lavapipe here; on the H200 through `bench/device.sh exact`), native and
// wasm the hardware's IEEE division and square root. NaNs compare as the
// runtime's quiet NaN; on webgpu a value may be cpuref.EvalFlushed's.
func TestXMathPairs(t *testing.T) {
	as, bs := irtest.DivPairs(7, 1<<17)
	lim := ir.Limits{NonFinite: true, MaxOps: 1 << 30}
	g := func() *ir.Graph {
		b := ir.NewBuilder()
		x := b.NamedInput("a", ir.Shape{len(as)}, make([]float32, len(as)))
		y := b.NamedInput("b", ir.Shape{len(bs)}, make([]float32, len(bs)))
		b.Output("div", x.Div(y))
		b.Output("sqrt", x.Sqrt())
		b.Output("rsqrt", x.Rsqrt())
		b.Output("sigmoid", x.Apply(ir.OpSigmoid))
		b.Output("tanh", x.Tanh())
		b.Output("exp", x.Exp())
		b.Output("log", x.Log())
		g, err := b.Build(lim)
		if err != nil {
			t.Fatal(err)
		}
		g.Nodes[g.Input("a")].Data, g.Nodes[g.Input("b")].Data = as, bs // ±Inf and NaN: after Build's finite check
		return g
	}()
	want, flushed := cpuref.Eval(g), cpuref.EvalFlushed(g)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) { o.Limits = lim })
			res, err := rt.Run(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range g.Outputs {
				got, bad, fl := res.Outputs[o.Name].Data, 0, 0
				for i, w := range want[o.ID] {
					gb, wb := canonicalBits(got[i]), canonicalBits(w)
					if gb == wb {
						continue
					}
					if be == "webgpu" && gb == canonicalBits(flushed[o.ID][i]) {
						fl++
						continue
					}
					if bad++; bad <= 5 {
						t.Errorf("%s(%#08x, %#08x) = %#08x, cpuref %#08x", o.Name, math.Float32bits(as[i]), math.Float32bits(bs[i]), gb, wb)
					}
				}
				if bad > 5 {
					t.Errorf("%s: %d of %d differ", o.Name, bad, len(got))
				}
				if fl > 0 {
					t.Logf("%s: %d values are cpuref.EvalFlushed's", o.Name, fl)
				}
			}
		})
	}
}

// canonicalBits is v's bits, every NaN as the runtime's quiet NaN.
func canonicalBits(v float32) uint32 {
	if v != v {
		return gpucc.QuietNaN
	}
	return math.Float32bits(v)
}
