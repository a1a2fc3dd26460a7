package onnx_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

// bnModel is a Conv (x [2,3,6,6], W [4,3,3,3], B, pads 1) followed by a
// BatchNormalization in inference mode with constant parameters, and
// the values it was built from. extra adds the conv's output as a
// second graph output; attrs are the BatchNormalization's.
type bnModel struct {
	x, w, b, scale, bias, mean, vr []float32
	eps                            float32
}

func newBNModel(seed uint64) bnModel {
	r := rand.New(rand.NewPCG(seed, 5))
	u := func(n int, lo, hi float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = lo + (hi-lo)*r.Float32()
		}
		return v
	}
	return bnModel{x: u(2*3*6*6, -2, 2), w: u(4*3*3*3, -1, 1), b: u(4, -1, 1), scale: u(4, -3, 3),
		bias: u(4, -1, 1), mean: u(4, -1, 1), vr: u(4, 0.01, 4), eps: 1e-3}
}

func (m bnModel) onnx(convOutput bool, bnAttrs ...msg) []byte {
	outs := []msg{valueInfo("y")}
	if convOutput {
		outs = append(outs, valueInfo("c"))
	}
	return model(15, graph([]msg{
		node("Conv", "conv", []string{"x", "w", "b"}, []string{"c"}, attrInts("pads", 1, 1, 1, 1)),
		node("BatchNormalization", "bn", []string{"c", "s", "bb", "m", "v"}, []string{"y"}, append([]msg{attrFloat("epsilon", m.eps)}, bnAttrs...)...),
	}, []msg{floats("w", []int64{4, 3, 3, 3}, m.w...), floats("b", []int64{4}, m.b...), floats("s", []int64{4}, m.scale...),
		floats("bb", []int64{4}, m.bias...), floats("m", []int64{4}, m.mean...), floats("v", []int64{4}, m.vr...)},
		[]msg{valueInfo("x", 2, 3, 6, 6)}, outs))
}

// load imports the model with x's data filled in.
func (m bnModel) load(t *testing.T, doc []byte, opts onnx.Options) *ir.Graph {
	t.Helper()
	g, err := onnx.Load(bytes.NewReader(doc), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range g.Nodes {
		if g.Nodes[i].Op == ir.OpInput && g.Nodes[i].Name == "x" {
			g.Nodes[i].Data = m.x
		}
	}
	return g
}

func hasOp(g *ir.Graph, op ir.Op) bool {
	for _, n := range g.Nodes {
		if n.Op == op {
			return true
		}
	}
	return false
}

// TestBatchNormFold: a BatchNormalization in inference mode after a Conv
// folds into the convolution's weight and bias at import: one conv kernel
// with its bias fused, no √ or division left, identical bits on every
// backend; the folded output is within (K+3)·u·M of the exact value, the
// unfolded within (K+6)·u·M and the two within (2K+9)·u·M (bnfold.go);
// and the fold does not apply where the Conv's output is used elsewhere,
// in training mode, or with KeepBatchNorm.
func TestBatchNormFold(t *testing.T) {
	for seed := range uint64(4) {
		m := newBNModel(seed)
		folded := m.load(t, m.onnx(false), onnx.Options{})
		kept := m.load(t, m.onnx(false), onnx.Options{KeepBatchNorm: true})
		if hasOp(folded, ir.OpSqrt) || hasOp(folded, ir.OpDiv) || !hasOp(kept, ir.OpSqrt) {
			t.Fatalf("folded graph:\n%s\nkept graph:\n%s", folded, kept)
		}
		// The folded weight is bnfold.go's formula, bit for bit.
		for _, n := range folded.Nodes {
			if n.Op != ir.OpConv2D {
				continue
			}
			got := folded.Nodes[n.Args[1]].Data
			for i, w := range m.w {
				o := i / 27
				s := float64(m.scale[o]) / math.Sqrt(float64(m.vr[o])+float64(m.eps))
				if want := float32(float64(w) * s); i >= len(got) || math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("seed %d: folded weight %d is not float32(W·s) = %v:\n%s", seed, i, want, folded)
				}
			}
		}
		p, _, err := passes.Compile(folded, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Program().Kernels) != 1 || p.Program().Kernels[0].Kind != ir.KernelConv {
			t.Errorf("want one conv kernel with the folded bias fused, got:\n%s", p)
		}
		yf, yk := cpuref.Eval(folded)[folded.Outputs[0].ID], cpuref.Eval(kept)[kept.Outputs[0].ID]
		// The exact value and M, in float64 (exact enough: 2^-52 against 2^-24).
		const u, k = 0x1p-24, 27
		worst := [3]float64{}
		at := 0
		for n := range 2 {
			for o := range 4 {
				s := float64(m.scale[o]) / math.Sqrt(float64(m.vr[o])+float64(m.eps))
				for oh := range 6 {
					for ow := range 6 {
						var sum, abs float64
						for ci := range 3 {
							for kh := range 3 {
								for kw := range 3 {
									ih, iw := oh-1+kh, ow-1+kw
									if ih < 0 || ih >= 6 || iw < 0 || iw >= 6 {
										continue
									}
									p := float64(m.x[((n*3+ci)*6+ih)*6+iw]) * float64(m.w[((o*3+ci)*3+kh)*3+kw])
									sum, abs = sum+p, abs+math.Abs(p)
								}
							}
						}
						exact := s*(sum+float64(m.b[o])-float64(m.mean[o])) + float64(m.bias[o])
						bound := math.Abs(s)*(abs+math.Abs(float64(m.b[o]))+math.Abs(float64(m.mean[o]))) + math.Abs(float64(m.bias[o]))
						for j, d := range []float64{math.Abs(float64(yf[at]) - exact), math.Abs(float64(yk[at]) - exact), math.Abs(float64(yf[at]) - float64(yk[at]))} {
							lim := []float64{k + 3, k + 6, 2*k + 9}[j] * u * bound
							if !(d <= lim) {
								t.Errorf("seed %d [%d]: %s differs by %g, over the bound %g", seed, at, []string{"folded from exact", "unfolded from exact", "folded from unfolded"}[j], d, lim)
							}
							worst[j] = max(worst[j], d/(u*bound))
						}
						at++
					}
				}
			}
		}
		t.Logf("seed %d: worst |error|/(u·M): folded %.2f, unfolded %.2f, between them %.2f (bounds %d, %d, %d)", seed, worst[0], worst[1], worst[2], k+3, k+6, 2*k+9)
		if seed == 0 {
			for _, b := range gpucctest.Backends {
				t.Run(b, func(t *testing.T) { gpucctest.CheckRun(t, gpucctest.Open(t, b), folded) })
			}
		}
	}
	m := newBNModel(9)
	for _, tt := range []struct {
		name string
		g    *ir.Graph
	}{
		{"conv output also a graph output", m.load(t, m.onnx(true), onnx.Options{})},
		{"training mode", m.load(t, m.onnx(false, attrInt("training_mode", 1)), onnx.Options{})},
	} {
		if !hasOp(tt.g, ir.OpSqrt) {
			t.Errorf("%s: folded, want the composition:\n%s", tt.name, tt.g)
		}
	}
}
