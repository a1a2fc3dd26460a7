package onnx

import (
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// BatchNormalization in inference mode after a Conv folds into the
// convolution at import: the Conv's weight and bias become
//
//	s[m]     = scale[m] / √(var[m] + eps)                 (float64)
//	W'[m, …] = float32(W[m, …] · s[m])                    (one rounding)
//	b'[m]    = float32((b[m] - mean[m]) · s[m] + B[m])    (float64, one rounding)
//
// with every float64 operation rounded on its own (explicit conversions,
// so that no platform fuses a multiply-add), and the graph computes
// conv2d(x, W') + b': one kernel, the bias fused as its epilogue. The
// fold is done here, once, in Go, so that every backend sees the same
// folded constants and gives the same bits.
//
// Why at import and not as a pass over the IR: the importer sees the
// BatchNormalization node itself (its mode, epsilon and constant inputs)
// and the Conv that feeds it, where a pass would have to recognise the
// composition (sub, mul, div, sqrt, add) after other rewrites; and the
// protocol has no batch-norm op, so a hand-written graph has nothing to
// fold.
//
// The folded result differs from the unfolded composition's bits. With
// K = C/group·kH·kW products per output, u = 2^-24 and M = |s|·(Σ|x·W| +
// |b| + |mean|) + |B|, the folded output is within (K+3)·u·M of the
// model's exact value (to first order: W' and b' carry one rounding each,
// the K products and K adds one each, the bias add one) and the
// unfolded composition within (K+6)·u·M (its conv, bias add, sub, mul,
// div, √ and var+eps each round), so the two differ by at most
// (2K+9)·u·M; TestBatchNormFold checks the three bounds.
//
// The fold applies when the Conv's output feeds only that
// BatchNormalization (not a graph output, no other consumer), the
// BatchNormalization is in inference mode with only its first output
// used, the Conv's W and B and the four normalization inputs are float32
// constants known at the Conv, and every folded value is finite.
// Options.KeepBatchNorm turns it off.

// batchNormFold is a folded BatchNormalization: the node's index (its
// output then names the Conv's) and the folded weight and bias.
type batchNormFold struct {
	node int
	w, b *Tensor
}

// foldBatchNorm returns the fold of the BatchNormalization that the
// current Conv node (weight w [M, …], bias b [M] or nil) feeds, or false
// when the fold does not apply. The folded constants count against the
// storage limit.
func (c *importer) foldBatchNorm(w, b *Tensor) (batchNormFold, bool, *ir.Error) {
	f, ok := c.batchNormOf(w, b)
	if !ok {
		return f, false, nil
	}
	fw, err := c.newConst(Float32, w.Shape)
	if err != nil {
		return f, false, err
	}
	fb, err := c.newConst(Float32, []int{w.Shape[0]})
	if err != nil {
		return f, false, err
	}
	copy(fw.Float32, f.w.Float32)
	copy(fb.Float32, f.b.Float32)
	f.w, f.b = fw, fb
	return f, true, nil
}

// batchNormOf is foldBatchNorm before the storage is counted.
func (c *importer) batchNormOf(w, b *Tensor) (batchNormFold, bool) {
	if c.keepBN || c.graph == nil || len(c.n.outputs) != 1 || w.Type != Float32 || len(w.Shape) < 1 || b != nil && b.Type != Float32 {
		return batchNormFold{}, false
	}
	out := c.n.outputs[0]
	g := c.graph
	if slices.ContainsFunc(g.outputs, func(v valueInfo) bool { return v.name == out }) {
		return batchNormFold{}, false
	}
	// Every reader of out follows the Conv: one before it would have
	// failed its import (out undefined there), so all of out's readers
	// are its later ones.
	r := c.readers(g).of(out)
	if r.n != 1 || r.last <= c.idx {
		return batchNormFold{}, false
	}
	bn := r.last
	n := &g.nodes[bn]
	if n.opType != "BatchNormalization" || n.outputs == nil || n.outputs[0] == "" || n.domain != "" && n.domain != "ai.onnx" || n.inputs[0] != out || len(n.inputs) != 5 || c.opset < rules["BatchNormalization"].since {
		return batchNormFold{}, false
	}
	for k, o := range n.outputs {
		if k > 0 && o != "" {
			return batchNormFold{}, false
		}
	}
	eps := float32(1e-5)
	for _, a := range n.attrs {
		switch {
		case a.ref != "" || a.other != "":
			return batchNormFold{}, false
		case a.name == "epsilon":
			eps = a.f
		case a.name == "training_mode":
			if a.i != 0 {
				return batchNormFold{}, false
			}
		case a.name != "momentum":
			return batchNormFold{}, false // refused where the node is imported
		}
	}
	m := w.Shape[0]
	var p [4][]float32 // scale, B, mean, var
	for k := range p {
		v := c.vals[n.inputs[1+k]]
		if v == nil || v.c == nil || v.c.Type != Float32 || !slices.Equal(v.c.Shape, []int{m}) {
			return batchNormFold{}, false
		}
		p[k] = v.c.Float32
	}
	if b != nil && !slices.Equal(b.Shape, []int{m}) {
		return batchNormFold{}, false
	}
	fw := &Tensor{Type: Float32, Shape: slices.Clone(w.Shape), Float32: make([]float32, len(w.Float32))}
	fb := &Tensor{Type: Float32, Shape: []int{m}, Float32: make([]float32, m)}
	per := len(w.Float32) / m
	for ch := range m {
		s := float64(p[0][ch]) / math.Sqrt(float64(float64(p[3][ch])+float64(eps)))
		for i := ch * per; i < (ch+1)*per; i++ {
			fw.Float32[i] = float32(float64(w.Float32[i]) * s)
		}
		bias := 0.0
		if b != nil {
			bias = float64(b.Float32[ch])
		}
		d := float64(bias - float64(p[2][ch]))
		fb.Float32[ch] = float32(float64(d*s) + float64(p[1][ch]))
	}
	for _, t := range []*Tensor{fw, fb} {
		for _, v := range t.Float32 {
			if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
				return batchNormFold{}, false
			}
		}
	}
	return batchNormFold{node: bn, w: fw, b: fb}, true
}
