package digits

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestCNNClassifier: the CNN classifier has the page's contract and
// computes, for a digit-like image, the probabilities of the same layers
// evaluated by hand in float64 (within float32 rounding), with CNNInit's
// parameters.
func TestCNNClassifier(t *testing.T) {
	p := CNNInit(1)
	for _, name := range CNNParams {
		bound := float32(1 / math.Sqrt(map[string]float64{"cw": 9, "cb": 9, "w": 128, "b": 128}[name]))
		for _, v := range p[name] {
			if !(v >= -bound && v < bound) {
				t.Fatalf("%s holds %v, outside ±%v", name, v, bound)
			}
		}
	}
	g, err := CNNClassifier(1, p)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 64)
	for i := range x {
		x[i] = float32((i*7 + i/8*3) % 17)
	}
	if err := g.SetInput("x", x); err != nil {
		t.Fatal(err)
	}
	got := cpuref.Eval(g)[g.Outputs[0].ID]
	if g.Outputs[0].Name != "probs" || !g.Nodes[g.Outputs[0].ID].Shape.Equal(ir.Shape{1, 10}) {
		t.Fatalf("output %s %v, want probs [1 10]", g.Outputs[0].Name, g.Nodes[g.Outputs[0].ID].Shape)
	}
	// float64 reference: conv (pad 1) + bias, relu, 2×2 max pool, dense, softmax.
	var pooled [8][4][4]float64
	for c := range 8 {
		for i := range 4 {
			for j := range 4 {
				best := math.Inf(-1)
				for di := range 2 {
					for dj := range 2 {
						y, xx := 2*i+di, 2*j+dj
						s := float64(p["cb"][c])
						for ki := range 3 {
							for kj := range 3 {
								yi, xj := y+ki-1, xx+kj-1
								if yi >= 0 && yi < 8 && xj >= 0 && xj < 8 {
									s += float64(p["cw"][9*c+3*ki+kj]) * float64(x[8*yi+xj]) / 16
								}
							}
						}
						best = math.Max(best, math.Max(s, 0))
					}
				}
				pooled[c][i][j] = best
			}
		}
	}
	logits := make([]float64, 10)
	for k := range 10 {
		logits[k] = float64(p["b"][k])
		for c := range 8 {
			for i := range 4 {
				for j := range 4 {
					logits[k] += pooled[c][i][j] * float64(p["w"][10*(16*c+4*i+j)+k])
				}
			}
		}
	}
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, v)
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(v - m)
	}
	for k, v := range logits {
		want := math.Exp(v-m) / sum
		if d := math.Abs(float64(got[k]) - want); d > 1e-5 {
			t.Errorf("probs[%d] = %v, float64 %v (|diff| %.3g)", k, got[k], want, d)
		}
	}
}
