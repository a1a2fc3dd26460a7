package cpuref

import "github.com/gpucc/gpucc/ir"

// Pad returns pad of x (row-major over p.In): each output element is x at,
// per axis d, p.Src(d, o[d]), or p.Value where one of those is -1
// (ir.Pad.Sources). It only copies: no value is rounded or flushed.
func Pad(x []float32, p ir.Pad) []float32 {
	out := make([]float32, p.Out.Len())
	for i, j := range p.Sources() {
		if j < 0 {
			out[i] = p.Value
		} else {
			out[i] = x[j]
		}
	}
	return out
}
