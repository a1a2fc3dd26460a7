package cpuref

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// MaxPool2DGrad returns maxpool2d_grad of x and g (row-major, geometry c
// of maxpool2d over x; g of its output's shape) in the reference order
// (see the package doc).
func MaxPool2DGrad(x, g []float32, c ir.Pool2D) []float32 { return exact.maxpool2dGrad(x, g, c, nil) }

// maxpool2dGrad is MaxPool2DGrad that checks stop (when not nil) before
// each output row of the forward and returns early, the rest zero, once
// it reports true. It scatters: dx starts at +0 and, for each window in
// (n, c, oh, ow) order, dx at the window's selected tap becomes dx + g
// there, which adds each element's contributions in (oh, ow) ascending
// order, as the kernels' gather does.
func (ar arith) maxpool2dGrad(x, g []float32, c ir.Pool2D, stop func() bool) []float32 {
	maximum := compile(ir.OpMaximum.Info().Expr)
	dx := make([]float32, len(x))
	at := 0
	for nc := range c.N * c.C {
		xc, dc := x[nc*c.H*c.W:], dx[nc*c.H*c.W:]
		for oh := range c.OH {
			if stop != nil && stop() {
				return dx
			}
			for ow := range c.OW {
				acc, sel := float32(math.Inf(-1)), -1
				for kh := range c.KH {
					ih := oh*c.SH - c.PT + kh*c.DH
					for kw := range c.KW {
						iw := ow*c.SW - c.PL + kw*c.DW
						if ih >= 0 && ih < c.H && iw >= 0 && iw < c.W {
							m := maximum.run(acc, xc[ih*c.W+iw], ar)
							if sel < 0 || math.Float32bits(m) != math.Float32bits(acc) {
								sel = ih*c.W + iw
							}
							acc = m
						}
					}
				}
				if sel >= 0 {
					dc[sel] = ar.add(dc[sel], g[at])
				}
				at++
			}
		}
	}
	return dx
}
