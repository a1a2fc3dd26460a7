package gpucc_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestXTrigBackends: pow and the trigonometric and hyperbolic ops of
// ir/xtrig.go give cpuref's bits on every backend over irtest's extremes,
// values of every scale, floats around multiples of π/2 up to TrigMax
// (where sin, cos and tan's reduction cancels most) and their bounds, and
// pow over pairs of them and integer exponents up to ±65.
func TestXTrigBackends(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var as, bs []float32
	add := func(a, b float32) { as, bs = append(as, a), append(bs, b) }
	ex := irtest.Extremes(5, 4096)
	for i, x := range ex {
		add(x, ex[(i*7+3)%len(ex)])
	}
	for range 4096 {
		add(float32(r.NormFloat64()*math.Pow(10, float64(r.IntN(9)-4))), float32(r.IntN(131)-65))
		add(float32(r.Float64()*2-1), float32(r.NormFloat64()*3))
		x := float32(float64(r.IntN(131000)) * math.Pi / 2)
		add(math.Float32frombits(math.Float32bits(x)+uint32(r.IntN(5))), float32(r.Float64()*1500+1))
	}
	for _, x := range []float32{ir.TrigMax, math.Nextafter32(ir.TrigMax, 0), 52516.434, 1, -1, 0.5, 1500, 88, 89.5, float32(math.Inf(1)), float32(math.NaN())} {
		add(x, -x)
		add(-x, x)
	}
	lim := ir.Limits{NonFinite: true, MaxOps: 1 << 32}
	b := ir.NewBuilder()
	x := b.NamedInput("a", ir.Shape{len(as)}, make([]float32, len(as)))
	y := b.NamedInput("b", ir.Shape{len(bs)}, make([]float32, len(bs)))
	b.Output("pow", x.Apply(ir.OpPow, y))
	for _, op := range []ir.Op{ir.OpSin, ir.OpCos, ir.OpTan, ir.OpAsin, ir.OpAcos, ir.OpAtan, ir.OpSinh, ir.OpCosh, ir.OpAsinh, ir.OpAcosh, ir.OpAtanh} {
		b.Output(op.String(), x.Apply(op))
	}
	g, err := b.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[g.Input("a")].Data, g.Nodes[g.Input("b")].Data = as, bs // ±Inf and NaN: after Build's finite check
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
						t.Errorf("%s(%g, %g) = %#08x, cpuref %#08x", o.Name, as[i], bs[i], gb, wb)
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
