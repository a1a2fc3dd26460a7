package ir_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestCrossEntropyGradient is TestCrossEntropy with grad's gradient.
func TestCrossEntropyGradient(t *testing.T) { crossEntropy(t, true) }

// TestLayerNormGradient checks grad's gradient of sum(w·LayerNorm(x, 1))
// against the float64 formula r·(w - mean(w) - ŷ·mean(w·ŷ)) per row (ŷ the
// normalised row, r = rsqrt(v + eps)), within (4k + 16)·ε·r·(|w| + mean|w| +
// |ŷ|·mean|w·ŷ|) + the forward bound's δ·r·mean|w|: each of the three
// terms carries a pairwise sum's k = log₂c + 2 roundings and a few
// products, scaled by r.
func TestLayerNormGradient(t *testing.T) {
	const eps = 1e-5
	for _, rc := range [][2]int{{2, 3}, {8, 64}} {
		r, c := rc[0], rc[1]
		xs, ws := irtest.Values(uint64(90+c), r*c, 3), irtest.Values(uint64(91+c), r*c, 2)
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{r, c}, xs).Add(b.Param("x", ir.Shape{r, c}, make([]float32, r*c)))
		b.Output("loss", x.LayerNorm(1, eps).Mul(b.Input(ir.Shape{r, c}, ws)).Sum())
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		got := gradients(t, g, "loss")["x"]
		mean, variance := moments64(xs, r, c)
		want, bound := make([]float64, r*c), make([]float64, r*c)
		k := math.Ceil(math.Log2(float64(c))) + 2
		for i := 0; i < r; i++ {
			rs := 1 / math.Sqrt(variance[i]+float64(float32(eps)))
			yh := make([]float64, c)
			mw, mwy, aw, awy := 0.0, 0.0, 0.0, 0.0
			for j := range yh {
				w := float64(ws[i*c+j])
				yh[j] = (float64(xs[i*c+j]) - mean[i]) * rs
				mw += w / float64(c)
				mwy += w * yh[j] / float64(c)
				aw += math.Abs(w) / float64(c)
				awy += math.Abs(w*yh[j]) / float64(c)
			}
			for j := range yh {
				w := float64(ws[i*c+j])
				want[i*c+j] = rs * (w - mw - yh[j]*mwy)
				bound[i*c+j] = (4*k+16)*eps32*rs*(math.Abs(w)+aw+math.Abs(yh[j])*awy) + 0x1p-149
			}
		}
		within(t, fmt.Sprintf("layer_norm' %dx%d", r, c), got, want, func(i int) float64 { return bound[i] })
	}
}
