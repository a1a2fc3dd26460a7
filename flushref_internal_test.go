package gpucc

import (
	"math"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// flushRef is cpuref's value of a graph's first output and the value
// cpuref.EvalFlushed gives it. WGSL lets a GPU flush subnormal operands
// and results (cpuref's package doc), and NVIDIA's Vulkan driver does: on
// the H100 on 2026-12-05, relu(a*b+c) of three least subnormals gave 0
// where cpuref gives 1e-45. A webgpu result may be either value, element
// by element; every other backend must give cpuref's. (The external tests
// use gpucctest.Compare, which this package's tests cannot import.)
type flushRef struct{ want, flushed []float32 }

func refOf(g *ir.Graph) flushRef {
	id := g.Outputs[0].ID
	return flushRef{cpuref.Eval(g)[id], cpuref.EvalFlushed(g)[id]}
}

// mismatch returns the first index at which got, from backend be, is
// neither value's bits (webgpu) or not cpuref's (the others); -1 if none.
func (r flushRef) mismatch(be string, got []float32) int {
	for i, w := range r.want {
		b := math.Float32bits(got[i])
		if b != math.Float32bits(w) && (be != "webgpu" || b != math.Float32bits(r.flushed[i])) {
			return i
		}
	}
	return -1
}
