// Package eval64 evaluates gpucc graphs in float64 by each op's exact-math
// meaning: what a graph means, as opposed to the float32 bits that
// package cpuref defines and every backend reproduces.
//
// An elementwise op is its row's ir.OpInfo.F64 (math.Exp for exp, a/b for
// div, math.Max for maximum, …), a reduction combines its leaves with its
// row's F64 (in any order: float64 is the stand-in for exact arithmetic
// here, not a definition of bits), matmul and conv2d sum float64
// products (a padded tap is 0), maxpool2d is math.Max over a window's
// taps inside x, views
// move values and life is the same 0/1 rule as cpuref's. Inputs are their
// float32 data widened exactly, unless Eval is given other values.
//
// It is a package of its own, not part of cpuref, so that nothing mistakes
// it for the reference: its results are what the accuracy measurement
// compares cpuref's against, and what grad's float64 gradient checks
// differentiate by finite differences. It needs only the op table.
package eval64

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// Eval evaluates every node of a validated graph in float64 and returns
// the values, indexed by node id. inputs, when it holds a node's id, gives
// that input node's values instead of its data (the same element count);
// it may be nil. The graph is float32's (a typed graph has no float64
// meaning here: Eval panics on one).
func Eval(g *ir.Graph, inputs map[ir.NodeID][]float64) [][]float64 {
	vals := make([][]float64, len(g.Nodes))
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.DType != ir.F32 || n.Op.Info().Typed {
			panic(fmt.Sprintf("eval64: node %d (%v) is %v: only float32 graphs have a float64 meaning", i, n.Op, n.DType))
		}
		vals[i] = node(g, i, vals, inputs)
	}
	return vals
}

// Widen returns x as float64 values (exactly).
func Widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func node(g *ir.Graph, i int, vals [][]float64, inputs map[ir.NodeID][]float64) []float64 {
	n := &g.Nodes[i]
	info := n.Op.Info()
	arg := func(k int) []float64 { return vals[n.Args[k]] }
	argShape := func(k int) ir.Shape { return g.Nodes[n.Args[k]].Shape }
	out := make([]float64, n.Shape.Len())
	switch {
	case info.Elementwise:
		a := arg(0)
		for k := range out {
			b := float64(n.Scalar)
			if len(n.Args) == 2 {
				b = arg(1)[k]
			}
			out[k] = info.F64(a[k], b)
		}
		return out
	case info.Kernel == ir.KernelReduce:
		return reduce(info.F64, arg(0), argShape(0), n.Shape)
	}
	switch n.Op {
	case ir.OpInput:
		if v, ok := inputs[ir.NodeID(i)]; ok {
			if len(v) != len(out) {
				panic(fmt.Sprintf("eval64: input %d has %d values, want %d", i, len(v), len(out)))
			}
			return v
		}
		return Widen(n.Data)
	case ir.OpFull:
		for k := range out {
			out[k] = float64(n.Scalar)
		}
	case ir.OpTranspose: // the last two axes swapped, per matrix
		s := argShape(0)
		rows, cols := s[len(s)-2], s[len(s)-1]
		a := arg(0)
		for z := 0; z < len(a); z += rows * cols {
			for r := range rows {
				for c := range cols {
					out[z+c*rows+r] = a[z+r*cols+c]
				}
			}
		}
	case ir.OpMatmul: // per matrix of the batch, its dimensions broadcast
		sa, sb := argShape(0), argShape(1)
		m, kk, nn := sa[len(sa)-2], sa[len(sa)-1], sb[len(sb)-1]
		batch := n.Shape[:len(n.Shape)-2]
		a := make([]float64, batch.Len()*m*kk)
		broadcast(a, arg(0), sa, append(slices.Clone(batch), m, kk))
		b := make([]float64, batch.Len()*kk*nn)
		broadcast(b, arg(1), sb, append(slices.Clone(batch), kk, nn))
		for z := range batch.Len() {
			a, b, out := a[z*m*kk:], b[z*kk*nn:], out[z*m*nn:]
			for r := range m {
				for c := range nn {
					var acc float64
					for p := range kk {
						acc += a[r*kk+p] * b[p*nn+c]
					}
					out[r*nn+c] = acc
				}
			}
		}
	case ir.OpConv2D:
		conv2d(out, arg(0), arg(1), ir.Conv2DOf(argShape(0), argShape(1), n.Attrs))
	case ir.OpConvTranspose2D:
		convTranspose2d(out, arg(0), arg(1), ir.ConvTranspose2DOf(argShape(0), argShape(1), n.Attrs))
	case ir.OpResize2D:
		resize2d(out, arg(0), ir.Resize2DOf(argShape(0), n.Attrs))
	case ir.OpMaxPool2D:
		maxpool2d(out, arg(0), ir.Pool2DOf(argShape(0), n.Attrs))
	case ir.OpMaxPool2DGrad:
		maxpool2dGrad(out, arg(0), arg(1), ir.Pool2DOf(argShape(0), n.Attrs))
	case ir.OpPermute:
		a := arg(0)
		for i, j := range ir.PermuteSources(argShape(0), n.Op.Attr(n.Attrs, "perm")) {
			out[i] = a[j]
		}
	case ir.OpAttention: // softmax(q·kᵀ·scale + mask)·v, exactly in float64
		attention(out, arg(0), arg(1), arg(2), arg(3), ir.AttentionOf([]ir.Shape{argShape(0), argShape(1), argShape(2), argShape(3)}, n.Attrs))
	case ir.OpPad: // a copy, as cpuref's
		a, p := arg(0), ir.PadOf(argShape(0), n.Attrs)
		for i, j := range p.Sources() {
			if j < 0 {
				out[i] = float64(p.Value)
			} else {
				out[i] = a[j]
			}
		}
	case ir.OpBroadcast:
		broadcast(out, arg(0), argShape(0), n.Shape)
	case ir.OpReshape:
		copy(out, arg(0))
	case ir.OpLife:
		life(out, arg(0), n.Shape[0], n.Shape[1])
	default:
		panic("eval64: no float64 evaluation of op " + n.Op.String())
	}
	return out
}

// strides returns the row-major strides of s.
func strides(s ir.Shape) []int {
	st := make([]int, len(s))
	k := 1
	for d := len(s) - 1; d >= 0; d-- {
		st[d] = k
		k *= s[d]
	}
	return st
}

// broadcast writes numpy's broadcast_to of x (shape xs, right-aligned with
// s; each of its dims equal to s's or 1) into out (shape s). A trailing
// suffix, the IR's older rule, is the special case of no dims of 1.
func broadcast(out, x []float64, xs, s ir.Shape) {
	off := len(s) - len(xs)
	xst := strides(xs)
	for i := range out {
		rem, src := i, 0
		for d := len(s) - 1; d >= off; d-- {
			idx := rem % s[d]
			rem /= s[d]
			if xs[d-off] != 1 {
				src += idx * xst[d-off]
			}
		}
		out[i] = x[src]
	}
}

// reduce combines the elements of x (shape xs) with f into the target
// shape s: [] reduces every element; otherwise s has xs's rank and is 1
// along the reduced axes (keepdims).
func reduce(f func(a, b float64) float64, x []float64, xs, s ir.Shape) []float64 {
	out := make([]float64, s.Len())
	seen := make([]bool, len(out))
	ost := strides(s)
	for i, v := range x {
		o := 0
		if len(s) > 0 {
			rem := i
			for d := len(xs) - 1; d >= 0; d-- {
				idx := rem % xs[d]
				rem /= xs[d]
				if s[d] != 1 {
					o += idx * ost[d]
				}
			}
		}
		if seen[o] {
			out[o] = f(out[o], v)
		} else {
			out[o], seen[o] = v, true
		}
	}
	return out
}

// life is one toroidal Game of Life step of an [h,w] grid (cells alive
// where x > 0), as cpuref.Life.
func life(out, x []float64, h, w int) {
	for r := range h {
		for c := range w {
			live := 0
			for dr := -1; dr <= 1; dr++ {
				for dc := -1; dc <= 1; dc++ {
					if (dr != 0 || dc != 0) && x[(r+dr+h)%h*w+(c+dc+w)%w] > 0 {
						live++
					}
				}
			}
			if live == 3 || live == 2 && x[r*w+c] > 0 {
				out[r*w+c] = 1
			}
		}
	}
}

// conv2d writes the convolution of x and w (geometry c) into out: float64
// products, summed in cpuref's order.
func conv2d(out, x, w []float64, c ir.Conv2D) {
	at := 0
	for n := range c.N {
		for m := range c.M {
			c0 := m / c.MG * c.CG
			for oh := range c.OH {
				for ow := range c.OW {
					var acc float64
					for ci := range c.CG {
						for kh := range c.KH {
							ih := oh*c.SH - c.PT + kh*c.DH
							for kw := range c.KW {
								iw := ow*c.SW - c.PL + kw*c.DW
								xv := 0.0
								if ih >= 0 && ih < c.H && iw >= 0 && iw < c.W {
									xv = x[((n*c.C+c0+ci)*c.H+ih)*c.W+iw]
								}
								acc += xv * w[((m*c.CG+ci)*c.KH+kh)*c.KW+kw]
							}
						}
					}
					out[at] = acc
					at++
				}
			}
		}
	}
}

// convTranspose2d writes the transposed convolution of x and w (geometry
// c) into out: float64 products, summed in cpuref's order.
func convTranspose2d(out, x, w []float64, c ir.ConvTranspose2D) {
	at := 0
	for n := range c.N {
		for m := range c.M {
			c0, mm := m/c.MG*c.CG, m%c.MG
			for oh := range c.OH {
				for ow := range c.OW {
					var acc float64
					for ci := range c.CG {
						for kh := range c.KH {
							th := oh + c.PT - kh*c.DH
							if th < 0 || th%c.SH != 0 || th/c.SH >= c.H {
								continue
							}
							for kw := range c.KW {
								tw := ow + c.PL - kw*c.DW
								if tw < 0 || tw%c.SW != 0 || tw/c.SW >= c.W {
									continue
								}
								acc += x[((n*c.C+c0+ci)*c.H+th/c.SH)*c.W+tw/c.SW] * w[(((c0+ci)*c.MG+mm)*c.KH+kh)*c.KW+kw]
							}
						}
					}
					out[at] = acc
					at++
				}
			}
		}
	}
}

// resize2d writes the resize of x (geometry r) into out: the same taps
// and float32 weights as cpuref, in float64.
func resize2d(out, x []float64, r ir.Resize2D) {
	at := 0
	for nc := range r.N * r.C {
		xc := x[nc*r.H*r.W:]
		for oh := range r.OH {
			for ow := range r.OW {
				row := func(h int) float64 {
					if !r.Cols.Linear() {
						return xc[h*r.W+r.Cols.I0[ow]]
					}
					return float64(r.Cols.W0[ow])*xc[h*r.W+r.Cols.I0[ow]] + float64(r.Cols.W1[ow])*xc[h*r.W+r.Cols.I1[ow]]
				}
				if !r.Rows.Linear() {
					out[at] = row(r.Rows.I0[oh])
				} else {
					out[at] = float64(r.Rows.W0[oh])*row(r.Rows.I0[oh]) + float64(r.Rows.W1[oh])*row(r.Rows.I1[oh])
				}
				at++
			}
		}
	}
}

// maxpool2d writes the max of each window's taps inside x (math.Max, so
// NaN wins and -0 < +0) into out.
func maxpool2d(out, x []float64, c ir.Pool2D) {
	at := 0
	for nc := range c.N * c.C {
		for oh := range c.OH {
			for ow := range c.OW {
				acc := math.Inf(-1)
				for kh := range c.KH {
					ih := oh*c.SH - c.PT + kh*c.DH
					for kw := range c.KW {
						iw := ow*c.SW - c.PL + kw*c.DW
						if ih >= 0 && ih < c.H && iw >= 0 && iw < c.W {
							acc = math.Max(acc, x[(nc*c.H+ih)*c.W+iw])
						}
					}
				}
				out[at] = acc
				at++
			}
		}
	}
}

// maxpool2dGrad writes maxpool2d_grad of x and g into out: each window's
// g added to its selected tap (the first with the window's maximum, as
// cpuref selects), windows in order.
func maxpool2dGrad(out, x, g []float64, c ir.Pool2D) {
	clear(out)
	at := 0
	for nc := range c.N * c.C {
		for oh := range c.OH {
			for ow := range c.OW {
				acc, sel := math.Inf(-1), -1
				for kh := range c.KH {
					ih := oh*c.SH - c.PT + kh*c.DH
					for kw := range c.KW {
						iw := ow*c.SW - c.PL + kw*c.DW
						if ih >= 0 && ih < c.H && iw >= 0 && iw < c.W {
							m := math.Max(acc, x[(nc*c.H+ih)*c.W+iw])
							if sel < 0 || math.Float64bits(m) != math.Float64bits(acc) {
								sel = (nc*c.H+ih)*c.W + iw
							}
							acc = m
						}
					}
				}
				if sel >= 0 {
					out[sel] += g[at]
				}
				at++
			}
		}
	}
}

// attention is OpAttention's float64 meaning: per query row, the scores
// q·kᵀ·scale + mask (-Inf past the diagonal when causal), their softmax
// (exp(t − max) over its sum; NaN for a row of -Inf), times v.
func attention(out, q, k, v, mask []float64, a ir.Attention) {
	S, T, D, E := a.S, a.T, a.D, a.E
	m := make([]float64, a.Batch.Len()*S*T)
	broadcast(m, mask, a.MaskShape, a.Scores())
	t := make([]float64, T)
	for z := range a.Batch.Len() {
		for i := range S {
			mx := math.Inf(-1)
			for j := range T {
				var acc float64
				for d := range D {
					acc += q[(z*S+i)*D+d] * k[(z*T+j)*D+d]
				}
				t[j] = acc*float64(a.Scale) + m[(z*S+i)*T+j]
				if a.Causal && j > i {
					t[j] = math.Inf(-1)
				}
				mx = max(mx, t[j])
			}
			var l float64
			for j := range T {
				t[j] = math.Exp(t[j] - mx)
				l += t[j]
			}
			for e := range E {
				var o float64
				for j := range T {
					o += t[j] * v[(z*T+j)*E+e]
				}
				out[(z*S+i)*E+e] = o / l
			}
		}
	}
}
