package digits

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// CNNParams are the small CNN's parameters: a 3×3 convolution of the 8×8
// image to 8 channels (cw, cb; padding 1), relu, 2×2 max pooling to
// 8×4×4, and a dense layer of those 128 values to 10 logits (w, b).
var CNNParams = []string{"cw", "cb", "w", "b"}

// CNNShapes are the shapes of CNNParams.
var CNNShapes = map[string]ir.Shape{"cw": {8, 1, 3, 3}, "cb": {1, 8, 1, 1}, "w": {128, 10}, "b": {10}}

// CNNInit returns the CNN's initial parameters: each uniform in
// ±1/√fan_in (PyTorch's default bound for Conv2d and Linear), from a
// xorshift32 stream seeded with seed, so that training is reproducible.
func CNNInit(seed uint32) map[string][]float32 {
	x := seed*2654435761 + 1
	next := func() float64 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return float64(x>>8)/(1<<23) - 1 // [-1, 1)
	}
	fanIn := map[string]float64{"cw": 9, "cb": 9, "w": 128, "b": 128}
	out := map[string][]float32{}
	for _, name := range CNNParams {
		v := make([]float32, CNNShapes[name].Len())
		for i := range v {
			v[i] = float32(next() / math.Sqrt(fanIn[name]))
		}
		out[name] = v
	}
	return out
}

// cnnLogits builds the CNN on x (pixels, [n,64]) with params p.
func cnnLogits(x ir.Tensor, n int, p map[string]ir.Tensor) ir.Tensor {
	img := x.MulScalar(scale).Reshape(ir.Shape{n, 1, 8, 8})
	h := img.Conv2D(p["cw"], map[string][]int{"pads": {1, 1, 1, 1}}).Add(p["cb"]).Relu()
	h = h.MaxPool2D(map[string][]int{"kernel_shape": {2, 2}, "strides": {2, 2}})
	return h.Reshape(ir.Shape{n, 128}).MatMul(p["w"]).Add(p["b"])
}

// CNNTrainGraph is the CNN's training graph on rows [lo,hi) of d, as
// TrainGraph is the MLP's.
func CNNTrainGraph(d *Data, lo, hi int, params map[string][]float32) (*ir.Graph, error) {
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{hi - lo, 64}, d.Pixels[64*lo:64*hi])
	onehot := make([]float32, 10*(hi-lo))
	for i, l := range d.Labels[lo:hi] {
		onehot[10*i+l] = 1
	}
	y := b.NamedInput("onehot", ir.Shape{hi - lo, 10}, onehot)
	p := map[string]ir.Tensor{}
	for _, name := range CNNParams {
		p[name] = b.Param(name, CNNShapes[name], params[name])
	}
	b.Output("loss", cnnLogits(x, hi-lo, p).CrossEntropy(y))
	return b.Build(ir.Limits{})
}

// CNNClassifier is the CNN as the page runs it, with Classifier's
// contract: input "x" [n,64] of pixels, output "probs" [n,10].
func CNNClassifier(n int, params map[string][]float32) (*ir.Graph, error) {
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{n, 64}, make([]float32, 64*n))
	p := map[string]ir.Tensor{}
	for _, name := range CNNParams {
		p[name] = b.Input(CNNShapes[name], params[name])
	}
	b.Output("probs", cnnLogits(x, n, p).Softmax(-1))
	return b.Build(ir.Limits{})
}
