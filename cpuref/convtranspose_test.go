package cpuref_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// smallInts returns n random integers in [-3, 3] as float32: every
// product and partial sum of a few thousand of them is exact, so any
// summation order gives the same bits.
func smallInts(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(7) - 3)
	}
	return v
}

// TestConvTransposeScatter: on exact integer data, conv_transpose2d equals
// ONNX's definition, each x[n,c,ih,iw]·w[c,mm,kh,kw] scattered into the
// full output at (ih·sH + kh·dH, iw·sW + kw·dW), then cropped by the pads
// (and extended by output_padding), over random and edge geometries.
func TestConvTransposeScatter(t *testing.T) {
	cases := irtest.ConvTransposeEdges()
	for s := range 60 {
		cases = append(cases, irtest.RandomConvTranspose(uint64(s)))
	}
	for i, tc := range cases {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		attrs, err := ir.PackAttrs(ir.OpConvTranspose2D, tc.Attrs())
		if err != nil {
			t.Fatal(err)
		}
		g := max(tc.Group, 1)
		xs, ws := ir.Shape{tc.N, tc.C, tc.H, tc.W}, ir.Shape{tc.C, tc.M / g, tc.KH, tc.KW}
		c := ir.ConvTranspose2DOf(xs, ws, attrs)
		x, w := smallInts(r, xs.Len()), smallInts(r, ws.Len())
		want := make([]float32, c.N*c.M*c.OH*c.OW)
		for n := range c.N {
			for ch := range c.C {
				for ih := range c.H {
					for iw := range c.W {
						for mm := range c.MG {
							m := ch/c.CG*c.MG + mm
							for kh := range c.KH {
								for kw := range c.KW {
									oh, ow := ih*c.SH+kh*c.DH-c.PT, iw*c.SW+kw*c.DW-c.PL
									if oh < 0 || oh >= c.OH || ow < 0 || ow >= c.OW {
										continue
									}
									want[((n*c.M+m)*c.OH+oh)*c.OW+ow] += x[((n*c.C+ch)*c.H+ih)*c.W+iw] * w[((ch*c.MG+mm)*c.KH+kh)*c.KW+kw]
								}
							}
						}
					}
				}
			}
		}
		if diff := cmp.Diff(want, cpuref.ConvTranspose2D(x, w, c)); diff != "" {
			t.Errorf("%d %+v: (-scatter +cpuref)\n%s", i, tc, diff)
		}
	}
}

// TestConvTransposeIsConv2DInputGradient: conv_transpose2d of dY with
// conv2d's own weight, strides, pads, dilations and group, and
// output_padding (H + pT + pB - (kH-1)·dH - 1) mod sH, is conv2d's
// adjoint: <conv2d(x, w), dy> = <x, conv_transpose2d(dy, w)> exactly on
// integer data, over random conv2d geometries. This is the mapping the
// row's comment states for conv2d's input gradient.
func TestConvTransposeIsConv2DInputGradient(t *testing.T) {
	for s := range 60 {
		cc := irtest.RandomConv(uint64(s))
		r := rand.New(rand.NewPCG(uint64(s), 2))
		ca, err := ir.PackAttrs(ir.OpConv2D, cc.Attrs())
		if err != nil {
			t.Fatal(err)
		}
		g := max(cc.Group, 1)
		xs, ws := ir.Shape{cc.N, cc.C, cc.H, cc.W}, ir.Shape{cc.M, cc.C / g, cc.KH, cc.KW}
		c := ir.Conv2DOf(xs, ws, ca)
		x, w := smallInts(r, xs.Len()), smallInts(r, ws.Len())
		y := cpuref.Conv2D(x, w, c)
		dy := smallInts(r, len(y))
		ta, err := ir.PackAttrs(ir.OpConvTranspose2D, map[string][]int{
			"strides": {c.SH, c.SW}, "pads": {c.PT, c.PL, c.PB, c.PR}, "dilations": {c.DH, c.DW}, "group": {c.Group},
			"output_padding": {(c.H + c.PT + c.PB - (c.KH-1)*c.DH - 1) % c.SH, (c.W + c.PL + c.PR - (c.KW-1)*c.DW - 1) % c.SW}})
		if err != nil {
			t.Fatal(err)
		}
		ys := c.Out()
		out, serr := ir.InferShape(0, ir.OpConvTranspose2D, []ir.Shape{ys, ws}, ta)
		if serr != nil || !out.Equal(xs) {
			t.Fatalf("%+v: conv_transpose2d of dY %v gives %v (%v), want x's shape %v", cc, ys, out, serr, xs)
		}
		dx := cpuref.ConvTranspose2D(dy, w, ir.ConvTranspose2DOf(ys, ws, ta))
		var lhs, rhs float64
		for i := range y {
			lhs += float64(y[i]) * float64(dy[i])
		}
		for i := range x {
			rhs += float64(x[i]) * float64(dx[i])
		}
		if lhs != rhs || math.IsNaN(lhs) {
			t.Errorf("%+v: <conv2d(x,w), dy> = %v, <x, conv_transpose2d(dy,w)> = %v", cc, lhs, rhs)
		}
	}
}
