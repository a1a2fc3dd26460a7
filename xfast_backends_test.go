package gpucc_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// fastPathInputs are rows of 1024 floats that keep exp, tanh and sigmoid
// on their fast paths (ir.FastPaths) in most vec4s and warps, and off them
// in some: ordinary values at several scales, the floats next to each
// path's bounds and to tanh's branch point, exp's halfway points (where k
// rounds away from zero), sigmoid's inputs whose divisor's significand is
// all ones (the reciprocal's one exception), subnormals, the paths'
// constant tails among ordinary values, and the edges (±Inf, NaN) in a
// few rows only.
func fastPathInputs() []float32 {
	r := rand.New(rand.NewPCG(35, 1))
	const rows, cols = 64, 1024
	out := make([]float32, 0, rows*cols)
	near := func(v float32, d int) float32 {
		return math.Float32frombits(uint32(int32(math.Float32bits(v)) + int32(d)))
	}
	for row := range rows {
		for len(out) < (row+1)*cols {
			var v float32
			switch row % 8 {
			case 0:
				v = (r.Float32()*2 - 1) * 3
			case 1: // ordinary, and the paths' constant tails (a mask's -Inf, saturated tanh)
				v = (r.Float32()*2 - 1) * 3
				if r.IntN(6) == 0 {
					inf := float32(math.Inf(1))
					v = []float32{-inf, inf, -1e30, 1e30, -200, 200, -20, 20, -105, 95, -9.1, 9.1}[r.IntN(12)]
				}
			case 2:
				v = (r.Float32()*2 - 1) * 12
			case 3:
				v = (r.Float32()*2 - 1) * 100
			case 4: // bounds: ±86.5, ±9.1, ±0.625
				v = near([]float32{86.5, 9.1, 0.625, -86.5, -9.1, -0.625}[r.IntN(6)], r.IntN(9)-4)
			case 5: // exp's halfway points and sigmoid's all-ones divisors
				k := float32(r.IntN(240)-120) + 0.5
				v = near(float32(float64(k)/math.Log2E), r.IntN(33)-16)
				if r.IntN(4) == 0 {
					v = near(math.Float32frombits(0x33c0f784), r.IntN(1<<16))
				}
			case 6: // subnormals and tiny
				v = math.Float32frombits(r.Uint32() & 0x80ffffff)
			case 7: // the edges, everywhere in the row
				e := irtest.Edges()
				v = e[r.IntN(len(e))]
			}
			out = append(out, v)
		}
	}
	return out
}

// TestFastPathsBackends: exp, tanh, sigmoid, GELU's tanh form, softmax and
// log-softmax (whose rows kernels call exp per leaf, not per vec4) over
// fastPathInputs give cpuref's bits on every backend (on webgpu a value
// may be cpuref.EvalFlushed's), with the fast paths allowed
// (wgsl.FastPaths, GPUCC_FAST_PATHS=on; off by default until a GPU driver
// has run this test): webgpu takes them where its probe passed, as on
// lavapipe (runtime/webgpu's TestFastPathsChoice). The C targets never
// take them (their kernels call the table's bodies; ir's TestFastPathsC
// proves the bodies in C), nor does the page's WebGPU or WebGL2.
func TestFastPathsBackends(t *testing.T) {
	defer func(old bool) { wgsl.FastPaths = old }(wgsl.FastPaths)
	wgsl.FastPaths = true
	xs := fastPathInputs()
	lim := ir.Limits{NonFinite: true, MaxOps: 1 << 30}
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{len(xs) / 1024, 1024}, make([]float32, len(xs)))
	b.Output("exp", x.Exp())
	b.Output("tanh", x.Tanh())
	b.Output("sigmoid", x.Apply(ir.OpSigmoid))
	b.Output("gelu", x.MulScalar(0.5).Mul(x.Add(x.Mul(x).Mul(x).MulScalar(0.044715)).MulScalar(0.7978846).Tanh().AddScalar(1)))
	b.Output("softmax", x.Softmax(1))
	b.Output("logsoftmax", x.LogSoftmax(1))
	g, err := b.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[g.Input("x")].Data = xs
	want, flushed := cpuref.Eval(g), cpuref.EvalFlushed(g)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) { o.Limits = lim })
			res, err := rt.Run(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range g.Outputs {
				got, bad := res.Outputs[o.Name].Data, 0
				for i, w := range want[o.ID] {
					gb := canonicalBits(got[i])
					if gb == canonicalBits(w) || be == "webgpu" && gb == canonicalBits(flushed[o.ID][i]) {
						continue
					}
					if bad++; bad <= 5 {
						t.Errorf("%s at %d (x %#08x) = %#08x, cpuref %#08x", o.Name, i, math.Float32bits(xs[i]), gb, canonicalBits(w))
					}
				}
				if bad > 5 {
					t.Errorf("%s: %d of %d differ", o.Name, bad, len(got))
				}
			}
		})
	}
}
