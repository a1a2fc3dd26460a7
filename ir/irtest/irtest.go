// Package irtest provides graphs for tests: a suite covering every op and
// the edge shapes, and a generator of random valid graphs for differential
// testing and fuzzing. Every backend's tests run the same graphs.
package irtest

import (
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// Case is one named test graph.
type Case struct {
	Name  string
	Graph *ir.Graph
}

// Values returns n deterministic values in [-scale, scale], with some exact
// zeros, negative zeros and small integers mixed in.
func Values(seed uint64, n int, scale float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		switch r.IntN(10) {
		case 0:
			out[i] = 0
		case 1:
			out[i] = float32(math.Copysign(0, -1))
		case 2:
			out[i] = float32(r.IntN(7) - 3)
		default:
			out[i] = (r.Float32()*2 - 1) * scale
		}
	}
	return out
}

// Extremes returns n deterministic finite values that reach every corner
// of float32: ±0, subnormals (down to ±2⁻¹⁴⁹), the smallest normals,
// ±3e38 and the largest finite values, values near 1 and near the
// overflow and underflow thresholds of exp, mixed with random finite bit
// patterns. Graphs of them overflow, underflow and hit ties.
func Extremes(seed uint64, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 2, 3, -3, 0.625, 9.1, -9.1,
		math.Float32frombits(1), -math.Float32frombits(1), math.Float32frombits(0x00000100), 1e-40, -1e-40,
		math.Float32frombits(0x00800000), -math.Float32frombits(0x00800000), 3e38, -3e38,
		math.MaxFloat32, -math.MaxFloat32, 88.72, 89, -87.3, -103.9, -104.5, 1e-7, -1e-7, 1 + 0x1p-23, 1 - 0x1p-24}
	r := rand.New(rand.NewPCG(seed, 13))
	out := make([]float32, n)
	for i := range out {
		switch r.IntN(3) {
		case 0:
			out[i] = special[r.IntN(len(special))]
		case 1:
			out[i] = (r.Float32()*2 - 1) * 4
		default:
			b := r.Uint32()
			if b&0x7f800000 == 0x7f800000 { // Inf or NaN: keep it finite
				b &^= 0x40000000
			}
			out[i] = math.Float32frombits(b)
		}
	}
	return out
}

// Grid returns an h×w grid of 0/1 cells, about a third alive.
func Grid(seed uint64, h, w int) []float32 {
	r := rand.New(rand.NewPCG(seed, 11))
	out := make([]float32, h*w)
	for i := range out {
		if r.IntN(3) == 0 {
			out[i] = 1
		}
	}
	return out
}

func must(b *ir.Builder) *ir.Graph {
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic("irtest: " + err.Error())
	}
	return g
}

// Suite returns graphs covering every op, the seed's example and edge
// shapes: one element, odd sizes, 65,537 elements, 1×1 life, non-square and
// transposed matmuls, intermediates that overflow and are masked again,
// negative zero and subnormal values, and broadcasts and reshapes (Views).
func Suite() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	add("seed", func(b *ir.Builder) {
		x := b.Input(ir.Shape{3}, []float32{-2, 3, 4})
		y := b.Input(ir.Shape{3}, []float32{10, 20, 30})
		b.Output("values", x.Mul(y).Relu())
	})
	for _, n := range []int{1, 7, 64, 65, 1000, 65537} {
		n := n
		add("elementwise/"+itoa(n), func(b *ir.Builder) {
			x := b.Input(ir.Shape{n}, Values(1, n, 3))
			y := b.Input(ir.Shape{n}, Values(2, n, 5))
			z := b.Input(ir.Shape{n}, Values(3, n, 7))
			b.Output("add", x.Add(y))
			b.Output("sub", x.Sub(y))
			b.Output("fma-shaped", x.Mul(y).Add(z))
			b.Output("scalars", x.AddScalar(0.1).SubScalar(-2.5).MulScalar(1.0/3))
			b.Output("relu", x.Sub(z).Relu())
			b.Output("positive", y.Positive())
			b.Output("sum", x.Mul(y).Sub(z).Sum())
		})
	}
	add("sum/plain-odd", func(b *ir.Builder) {
		b.Output("s", b.Input(ir.Shape{3, 333}, Values(4, 999, 1000)).Sum())
	})
	add("sum/scalar", func(b *ir.Builder) {
		b.Output("s", b.Input(ir.Shape{}, []float32{2.5}).Sum())
	})
	add("sum/large", func(b *ir.Builder) {
		b.Output("s", b.Input(ir.Shape{1 << 20}, Values(5, 1<<20, 1)).Sum())
	})
	add("sum/transposed", func(b *ir.Builder) {
		b.Output("s", b.Input(ir.Shape{17, 31}, Values(6, 17*31, 100)).T().Sum())
	})
	for _, mkn := range [][3]int{{1, 1, 1}, {3, 5, 7}, {64, 64, 64}, {65, 33, 129}, {130, 200, 70}} {
		m, k, n := mkn[0], mkn[1], mkn[2]
		add("matmul/"+itoa(m)+"x"+itoa(k)+"x"+itoa(n), func(b *ir.Builder) {
			a := b.Input(ir.Shape{m, k}, Values(7, m*k, 2))
			w := b.Input(ir.Shape{k, n}, Values(8, k*n, 2))
			bias := b.Input(ir.Shape{m, n}, Values(9, m*n, 1))
			b.Output("mm", a.MatMul(w))
			b.Output("epilogue", a.MatMul(w).Add(bias).Relu())
		})
	}
	add("matmul/transposed", func(b *ir.Builder) {
		a := b.Input(ir.Shape{37, 19}, Values(10, 37*19, 2))
		w := b.Input(ir.Shape{23, 37}, Values(11, 23*37, 2))
		b.Output("tt", w.T().T().MatMul(a))
		b.Output("t", a.T().MatMul(w.T()))
	})
	add("transpose", func(b *ir.Builder) {
		x := b.Input(ir.Shape{5, 9}, Values(12, 45, 4))
		b.Output("t", x.T())
		b.Output("tt", x.T().T())
		b.Output("t-relu", x.T().Relu())
	})
	add("permute", func(b *ir.Builder) {
		x := b.Input(ir.Shape{2, 3, 4}, Values(30, 24, 4))
		h := b.Input(ir.Shape{1, 5, 3, 4}, Values(31, 60, 4))
		b.Output("021", x.Permute(0, 2, 1))
		b.Output("210", x.Permute(2, 1, 0))
		b.Output("120-201", x.Permute(1, 2, 0).Permute(2, 0, 1)) // the identity, composed
		b.Output("heads", h.Permute(0, 2, 1, 3))
		b.Output("heads-exp", h.Exp().Permute(0, 2, 1, 3).AddScalar(1))
		b.Output("sum-of-permuted", x.Permute(2, 0, 1).SumAxes(false, 2))
		b.Output("permuted-broadcast", x.Broadcast(ir.Shape{2, 2, 3, 4}).Permute(3, 1, 0, 2).Mul(b.Input(ir.Shape{4, 2, 2, 3}, Values(32, 48, 2))))
		b.Output("matmul-of-permuted", x.Permute(0, 2, 1).Reshape(ir.Shape{8, 3}).MatMul(b.Input(ir.Shape{3, 2}, Values(33, 6, 2))))
	})
	for _, hw := range [][2]int{{1, 1}, {2, 2}, {7, 7}, {96, 96}, {5, 13}} {
		h, w := hw[0], hw[1]
		add("life/"+itoa(h)+"x"+itoa(w), func(b *ir.Builder) {
			g := b.Input(ir.Shape{h, w}, Grid(13, h, w))
			b.Output("next", g.Life())
			b.Output("gen3", g.Life().Life().Life())
		})
	}
	add("overflow-masked", func(b *ir.Builder) {
		x := b.Input(ir.Shape{4}, []float32{3e38, -3e38, 1e30, 2})
		big := x.MulScalar(10) // ±Inf in the middle
		b.Output("positive", big.Positive())
		b.Output("relu-of-neg", big.MulScalar(-1).Sub(big).Positive())
	})
	add("negative-zero", func(b *ir.Builder) {
		nz := float32(math.Copysign(0, -1))
		x := b.Input(ir.Shape{4}, []float32{nz, 0, nz, 1})
		y := b.Input(ir.Shape{4}, []float32{nz, nz, 0, -1})
		b.Output("add", x.Add(y))
		b.Output("mul", x.Mul(y))
		b.Output("relu", x.Relu())
		b.Output("sum", x.Sum())
		b.Output("sum-neg", b.Full(ir.Shape{4}, nz).Add(x.Sub(x).MulScalar(-1).Sub(x.Sub(x))).Sum())
	})
	add("subnormal", func(b *ir.Builder) {
		tiny := math.Float32frombits(0x00000100)
		x := b.Input(ir.Shape{4}, []float32{tiny, -tiny, 1e-38, 3})
		b.Output("scaled", x.MulScalar(0.5).AddScalar(0))
		b.Output("product", x.Mul(x))
	})
	add("fulls-and-constants", func(b *ir.Builder) {
		c := b.Full(ir.Shape{3, 3}, 0.1)
		x := b.Input(ir.Shape{3, 3}, Values(14, 9, 1))
		b.Output("const", c.MulScalar(3).Sum())
		b.Output("mixed", x.Add(c).MatMul(c.Relu()))
		b.Output("life-of-full", c.Life())
	})
	add("many-inputs", func(b *ir.Builder) {
		acc := b.Input(ir.Shape{33}, Values(15, 33, 1))
		for i := 0; i < 12; i++ {
			acc = acc.Mul(b.Input(ir.Shape{33}, Values(uint64(16+i), 33, 1.5))).AddScalar(0.25)
		}
		b.Output("y", acc)
	})
	cs = append(cs, Views()...)
	cs = append(cs, Reductions()...)
	cs = append(cs, Ops()...)
	cs = append(cs, Convs()...)
	cs = append(cs, Pools()...)
	cs = append(cs, Composites()...)
	cs = append(cs, Rows()...)
	return append(cs, LargeMatmuls()...)
}

// Views returns graphs of broadcasts and reshapes: bias adds (vec4-able and
// odd lengths), scalar broadcasts, views read by matmul, life and sum,
// chains that mix a transpose with a broadcast or reshape (strides, or a
// copy where none express them), numpy broadcasts of both operands over
// extreme values, and a kernel at the binding limit.
func Views() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	for _, mn := range [][2]int{{8, 16}, {7, 5}, {300, 64}} {
		m, n := mn[0], mn[1]
		add("broadcast/bias-"+itoa(m)+"x"+itoa(n), func(b *ir.Builder) {
			x := b.Input(ir.Shape{m, n}, Values(30, m*n, 3))
			bias := b.Input(ir.Shape{n}, Values(31, n, 1))
			b.Output("y", x.Add(bias.Broadcast(ir.Shape{m, n})).Relu())
			b.Output("sub", x.Sub(bias.Broadcast(ir.Shape{m, n})))
			b.Output("scalar", x.Mul(b.Input(ir.Shape{}, []float32{-1.5}).Broadcast(ir.Shape{m, n})))
		})
	}
	add("broadcast/matmul-epilogue", func(b *ir.Builder) {
		x := b.Input(ir.Shape{9, 4}, Values(32, 36, 2))
		w := b.Input(ir.Shape{4, 12}, Values(33, 48, 2))
		bias := b.Input(ir.Shape{12}, Values(34, 12, 1))
		b.Output("y", x.MatMul(w).Add(bias.Broadcast(ir.Shape{9, 12})).Relu())
	})
	add("broadcast/rank3-and-outputs", func(b *ir.Builder) {
		x := b.Input(ir.Shape{3, 4}, Values(35, 12, 2))
		b.Output("b3", x.Broadcast(ir.Shape{2, 3, 4}))
		b.Output("sum", x.Broadcast(ir.Shape{5, 3, 4}).Sum())
		b.Output("full", b.Full(ir.Shape{4}, 0.5).Broadcast(ir.Shape{3, 4}).Add(x))
	})
	add("broadcast/read-by-matmul-and-life", func(b *ir.Builder) {
		row := b.Input(ir.Shape{6}, Values(36, 6, 2))
		w := b.Input(ir.Shape{6, 5}, Values(37, 30, 2))
		b.Output("mm", row.Broadcast(ir.Shape{4, 6}).MatMul(w))
		b.Output("ones", b.Full(ir.Shape{1, 4}, 1).MatMul(row.Broadcast(ir.Shape{4, 6})))
		b.Output("life", b.Input(ir.Shape{7}, Grid(38, 1, 7)).Broadcast(ir.Shape{7, 7}).Life())
	})
	add("reshape", func(b *ir.Builder) {
		x := b.Input(ir.Shape{6, 4}, Values(39, 24, 2))
		w := b.Input(ir.Shape{6, 3}, Values(40, 18, 2))
		b.Output("flat", x.Reshape(ir.Shape{24}))
		b.Output("mm", x.Reshape(ir.Shape{4, 6}).MatMul(w))
		b.Output("t-of-reshape", x.Reshape(ir.Shape{3, 8}).T().Relu())
		b.Output("reshape-of-t", x.T().Reshape(ir.Shape{2, 12}).MulScalar(3))
		b.Output("life", x.Reshape(ir.Shape{8, 3}).Life())
		b.Output("scalar", x.Sum().Reshape(ir.Shape{1, 1}))
	})
	add("views/mixed", func(b *ir.Builder) {
		x := b.Input(ir.Shape{5, 3}, Values(41, 15, 2))
		v := b.Input(ir.Shape{4}, Values(42, 4, 2))
		b.Output("broadcast-of-t", x.T().Broadcast(ir.Shape{2, 3, 5}).AddScalar(1))
		b.Output("t-of-broadcast", v.Broadcast(ir.Shape{3, 4}).T().MulScalar(2))
		b.Output("mm-of-t-broadcast", v.Broadcast(ir.Shape{5, 4}).T().MatMul(x))
		b.Output("t-of-broadcast-out", v.Broadcast(ir.Shape{3, 4}).T())
	})
	// Strided reads and numpy broadcasting (the views helper's block), over
	// extreme values: ±0, subnormals and values up to ±MaxFloat32, kept
	// finite (outputs must be) by the operands they meet. unit is
	// Extremes with every |v| > 1 replaced by 1/v: subnormals included.
	unit := func(seed uint64, n int) []float32 {
		v := Extremes(seed, n)
		for i, x := range v {
			if x > 1 || x < -1 {
				v[i] = 1 / x
			}
		}
		return v
	}
	scaled := func(seed uint64, n int) []float32 { // Extremes / 64: sums of 24 stay finite
		v := Extremes(seed, n)
		for i := range v {
			v[i] /= 64
		}
		return v
	}
	add("views/strides", func(b *ir.Builder) {
		x := b.Input(ir.Shape{4, 6}, scaled(43, 24))
		v := b.Input(ir.Shape{6}, unit(44, 6))
		w := b.Input(ir.Shape{3, 4}, Values(45, 12, 2))
		y := b.Input(ir.Shape{4, 6}, Values(48, 24, 2))
		b.Output("reshape-of-broadcast", v.Broadcast(ir.Shape{4, 6}).Reshape(ir.Shape{2, 2, 6}).Add(x.Reshape(ir.Shape{2, 2, 6})))
		b.Output("flat-broadcast", v.Broadcast(ir.Shape{4, 6}).Reshape(ir.Shape{24}).Mul(x.Reshape(ir.Shape{24})))
		b.Output("reshape-of-t", x.T().Reshape(ir.Shape{3, 2, 4}).Sub(x.Reshape(ir.Shape{3, 2, 4})))
		b.Output("split-of-t", x.T().Reshape(ir.Shape{3, 2, 1, 4}).Relu())
		b.Output("t-t", x.T().T().Reshape(ir.Shape{6, 4}).Add(x.Reshape(ir.Shape{6, 4})))
		b.Output("t-of-reshape-of-t", x.T().Reshape(ir.Shape{2, 12}).Reshape(ir.Shape{12, 2}).T().MulScalar(-1))
		b.Output("t-broadcast-reshape", w.T().Broadcast(ir.Shape{2, 4, 3}).Reshape(ir.Shape{8, 3}).Add(x.Reshape(ir.Shape{8, 3})))
		b.Output("materialised-broadcast", v.Broadcast(ir.Shape{2, 6}).Reshape(ir.Shape{12}).Broadcast(ir.Shape{2, 12}).Add(x.Reshape(ir.Shape{2, 12})))
		u := b.Input(ir.Shape{8}, unit(46, 8))
		b.Output("vec4-broadcast", u.Broadcast(ir.Shape{3, 8}).Reshape(ir.Shape{3, 2, 4}).Add(b.Input(ir.Shape{3, 2, 4}, Extremes(47, 24))))
		b.Output("sum-of-strided", x.T().Reshape(ir.Shape{3, 8}).Sum())
		b.Output("mm-of-reshape-of-t", y.T().Reshape(ir.Shape{4, 6}).MatMul(y.T()))
	})
	for _, n := range []int{5, 16} { // odd rows, and rows of whole vec4s
		add("broadcast/numpy-"+itoa(n), func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, n}, Extremes(uint64(50+n), 4*n))
			row := b.Input(ir.Shape{n}, unit(uint64(51+n), n))
			col := b.Input(ir.Shape{4, 1}, unit(uint64(52+n), 4))
			one := b.Input(ir.Shape{1, n}, unit(uint64(53+n), n))
			s := b.Input(ir.Shape{}, []float32{-3e38})
			t := b.Input(ir.Shape{n, 4}, Extremes(uint64(54+n), 4*n))
			negZero := b.Input(ir.Shape{}, []float32{float32(math.Copysign(0, -1))})
			b.Output("bias", x.Add(row))
			b.Output("bias-a", row.Sub(x))
			b.Output("outer", col.Mul(one))
			b.Output("outer-sum", col.Add(row))
			b.Output("scalar", s.Mul(row).Maximum(x))
			b.Output("scalar-b", x.Div(negZero.Sub(col).Sub(col).MaximumScalar(1)))
			b.Output("both-and-t", t.T().Add(col).Minimum(one.Mul(t.T())))
			b.Output("chain", x.Mul(col).Add(row).Sub(one).Relu().Mul(s.Neg().Minimum(row)))
			b.Output("sum", col.Mul(row).Sum())
		})
	}
	add("broadcast/rank3", func(b *ir.Builder) {
		a := b.Input(ir.Shape{3, 1, 5}, Extremes(60, 15))
		c := b.Input(ir.Shape{4, 1}, unit(61, 4))
		d := b.Input(ir.Shape{3, 4, 1}, unit(62, 12))
		b.Output("a-c", a.Add(c))
		b.Output("c-a", c.Sub(a))
		b.Output("three", a.Mul(c).Maximum(d))
		b.Output("to-4d", a.Broadcast(ir.Shape{2, 3, 4, 5}).Add(d.Reshape(ir.Shape{1, 3, 4, 1})))
		b.Output("mm", c.Mul(b.Input(ir.Shape{1, 6}, Values(63, 6, 2))).T().MatMul(c.Reshape(ir.Shape{4, 1}).Mul(b.Input(ir.Shape{1, 2}, Values(64, 2, 2)))))
	})
	// At the binding limit: seven reads (the same buffer under two strides
	// is two) and one output bind 8 buffers, WebGPU's default limit.
	add("broadcast/binding-limit", func(b *ir.Builder) {
		m := b.Input(ir.Shape{3, 7}, Extremes(65, 21))
		acc := m.Add(b.Input(ir.Shape{7}, unit(66, 7)))
		acc = acc.Mul(b.Input(ir.Shape{3, 1}, unit(67, 3)))
		acc = acc.Sub(b.Input(ir.Shape{1, 7}, unit(68, 7)))
		acc = acc.Maximum(b.Input(ir.Shape{}, []float32{1e-40}))
		sq := b.Input(ir.Shape{7, 3}, unit(69, 21))
		acc = acc.Add(sq.T()).Add(sq.Reshape(ir.Shape{3, 7}))
		b.Output("y", acc)
		b.Output("over", acc.Mul(b.Input(ir.Shape{3, 1}, unit(70, 3))))
	})
	return cs
}

// Reductions returns sums and maxes over axes: every axis of 2-D and 3-D
// tensors, several axes, keepdims both ways, reduced lengths of 1, 2, 3,
// 255, 256 and 257, long rows (a million leaves), strided (transposed)
// arguments, fused prologues and epilogues, and rows that overflow to ±Inf, hold NaN, ±0
// and subnormals or tie, masked where the result is not finite.
func Reductions() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	add("reduce/2d", func(b *ir.Builder) {
		x := b.Input(ir.Shape{5, 7}, Values(70, 35, 4))
		b.Output("sum0", x.SumAxes(false, 0))
		b.Output("sum1", x.SumAxes(true, 1))
		b.Output("sum-1", x.SumAxes(false, -1))
		b.Output("sum01", x.SumAxes(true, 0, 1))
		b.Output("max0", x.MaxAxes(true, 0))
		b.Output("max1", x.MaxAxes(false, 1))
		b.Output("max-all", x.MaxAxes(false))
		b.Output("none", x.SumAxes(false, -2).MaxAxes(true))
	})
	for _, keep := range []bool{false, true} {
		name := "reduce/3d"
		if keep {
			name += "-keepdims"
		}
		add(name, func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 4, 5}, Values(71, 60, 4))
			for _, axes := range [][]int{{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {2, 0, 1}} {
				name := ""
				for _, a := range axes {
					name += itoa(a)
				}
				b.Output("sum"+name, x.SumAxes(keep, axes...))
				b.Output("max"+name, x.MaxAxes(keep, axes...))
			}
			b.Output("all", x.SumAxes(keep))
		})
	}
	for _, n := range []int{1, 2, 3, 255, 256, 257} {
		add("reduce/rows-"+itoa(n), func(b *ir.Builder) {
			x := b.Input(ir.Shape{6, n}, Values(uint64(72+n), 6*n, 100))
			y := b.Input(ir.Shape{n, 6}, Values(uint64(73+n), 6*n, 100))
			b.Output("sum", x.SumAxes(false, 1))
			b.Output("max", x.MaxAxes(true, 1))
			b.Output("cols", y.SumAxes(false, 0))
			b.Output("cols-max", y.MaxAxes(false, 0))
			b.Output("prologue", x.Mul(x).AddScalar(-1).SumAxes(true, 1))
			b.Output("transposed", y.T().SumAxes(false, 1))
			// epilogues: a mean, an rsqrt of a variance-like sum plus a
			// kept-shape input, a max times itself
			bias := b.Input(ir.Shape{6, 1}, Values(uint64(77+n), 6, 1))
			b.Output("mean", x.SumAxes(true, 1).MulScalar(1/float32(n)))
			b.Output("rsqrt", x.Mul(x).SumAxes(true, 1).MulScalar(1/float32(n)).Add(bias.Mul(bias)).AddScalar(1e-5).Rsqrt())
			m := y.MaxAxes(true, 0)
			b.Output("max-epilogue", m.Mul(m).Neg())
		})
	}
	add("reduce/long-rows", func(b *ir.Builder) {
		n := 349525 // 3n is just under the element limit
		x := b.Input(ir.Shape{3, n}, Values(74, 3*n, 1))
		b.Output("sum", x.SumAxes(false, 1))
		b.Output("max", x.MaxAxes(false, -1))
		b.Output("prologue", x.MulScalar(3).Relu().SumAxes(true, 1))
		b.Output("epilogue", x.Mul(x).SumAxes(true, 1).MulScalar(1/float32(n)).AddScalar(1e-5).Rsqrt())
		whole := b.Input(ir.Shape{1, 1 << 20}, Values(76, 1<<20, 1))
		b.Output("one-row", whole.SumAxes(true, 1))
		b.Output("one-row-max", whole.MaxAxes(false, 1))
		b.Output("one-row-epilogue", whole.SumAxes(true).MulScalar(0x1p-20).Exp())
	})
	add("reduce/long-columns", func(b *ir.Builder) {
		n := 1<<16 + 3
		x := b.Input(ir.Shape{n, 3}, Values(75, 3*n, 1))
		b.Output("sum", x.SumAxes(false, 0))
		b.Output("max", x.MaxAxes(true, 0))
	})
	// Clang 14 -O3 -msimd128 never finished the wasm of this max's 16-leaf
	// tree with maximum inlined (FuzzBackends found it).
	add("reduce/max-12", func(b *ir.Builder) {
		b.Output("m", b.Input(ir.Shape{12, 1}, Values(78, 12, 5)).MaxAxes(false))
	})
	add("reduce/extremes", func(b *ir.Builder) {
		big, tiny := float32(3e38), math.Float32frombits(3)
		nz := float32(math.Copysign(0, -1))
		x := b.Input(ir.Shape{6, 4}, []float32{
			big, big, big, big, // +Inf
			-big, -big, -big, -big, // -Inf
			big, -big, big, -big, // 0 by the tree, not by a running sum
			big, big, -big, -big, // Inf + -Inf: NaN
			nz, nz, nz, nz, // -0
			tiny, -tiny, tiny, 1e-39, // subnormals
		})
		s := x.SumAxes(false, 1)
		b.Output("clamped", s.MinimumScalar(math.MaxFloat32).MaximumScalar(-math.MaxFloat32).Positive())
		b.Output("sign", s.Neg().Positive())
		b.Output("rows-2-4-5", s.Mul(b.Input(ir.Shape{6}, []float32{0, 0, 1, 0, 1, 1})).Positive())
		b.Output("max", x.MaxAxes(false, 1).MulScalar(0.5))
		b.Output("max-cols", x.MaxAxes(false, 0).MulScalar(0.25))
		z := b.Input(ir.Shape{3, 2}, []float32{nz, 0, nz, nz, 0, nz})
		b.Output("zeros-max", z.MaxAxes(false, 1))
		b.Output("zeros-sum", z.SumAxes(false, 1))
		b.Output("zeros-max-all", z.MaxAxes(false))
		ties := b.Input(ir.Shape{2, 4}, []float32{3, 1, 3, 3, -2, -2, -5, -2})
		b.Output("ties", ties.MaxAxes(true, 1))
		// NaN made in the prologue (Inf - Inf): the max of a row holding
		// one is NaN, which positive turns into 0 where 5 would give 1.
		w := b.Input(ir.Shape{2, 3}, []float32{5, big, 1, 5, 2, 1})
		nan := w.MulScalar(10).Sub(w.MulScalar(10)).Add(w)
		b.Output("nan-max", nan.MaxAxes(false, 1).Positive())
		b.Output("nan-sum", nan.SumAxes(false, 1).Positive())
	})
	// Every reduction of the op table, whatever it combines by, over every
	// target of a 3-D tensor, a long row and a long column, with a
	// prologue and an epilogue: a new reduction row is in the suite (and
	// so on every backend, against cpuref) without a line here.
	for _, op := range ir.Ops() {
		if !op.IsReduction() {
			continue
		}
		name := op.Info().Wire
		add("reduce/table/"+name, func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 4, 5}, Values(80, 60, 4))
			for _, target := range []ir.Shape{{}, {1, 4, 5}, {3, 1, 5}, {3, 4, 1}, {1, 1, 5}, {1, 4, 1}, {3, 1, 1}, {1, 1, 1}} {
				b.Output(name+"-to-"+shapeName(target), x.ApplyShaped(op, target))
			}
			row := b.Input(ir.Shape{2, 257}, Values(81, 2*257, 100))
			b.Output(name+"-row", row.ApplyShaped(op, ir.Shape{2, 1}))
			col := b.Input(ir.Shape{257, 2}, Values(82, 2*257, 100))
			b.Output(name+"-column", col.ApplyShaped(op, ir.Shape{1, 2}))
			b.Output(name+"-prologue-epilogue", x.Mul(x).AddScalar(-1).ApplyShaped(op, ir.Shape{3, 4, 1}).MulScalar(0.5).Neg())
		})
	}
	return cs
}

// Ops returns graphs of the elementwise ops beyond the seed's (div,
// maximum, minimum and their scalar forms, neg, exp, log, tanh, sqrt,
// rsqrt) over Extremes, each operand clamped with maximum and minimum into
// the op's domain so that every output is finite: subnormal and extreme
// results included, and exp's underflow to 0.
func Ops() []Case {
	var cs []Case
	for _, n := range []int{1, 67, 4096} {
		b := ir.NewBuilder()
		v := b.Input(ir.Shape{n}, Extremes(uint64(60+n), n))
		w := b.Input(ir.Shape{n}, Extremes(uint64(61+n), n))
		abs := v.Maximum(v.Neg())
		b.Output("neg", v.Neg())
		b.Output("maximum", v.Maximum(w))
		b.Output("minimum", v.Minimum(w))
		b.Output("max-min-scalar", v.MaximumScalar(-1).MinimumScalar(float32(math.Copysign(0, -1))))
		b.Output("exp", v.MinimumScalar(88.5).Exp())
		b.Output("log", abs.MaximumScalar(math.Float32frombits(1)).Log())
		b.Output("tanh", v.Tanh())
		b.Output("sqrt", abs.Sqrt())
		b.Output("rsqrt", abs.MaximumScalar(math.Float32frombits(1)).Rsqrt())
		b.Output("div", v.Div(w.Maximum(w.Neg()).MaximumScalar(1)))
		b.Output("div-small", v.MinimumScalar(1).MaximumScalar(-1).Div(abs.MaximumScalar(1e-30)))
		b.Output("div-scalar", v.MinimumScalar(1e30).MaximumScalar(-1e30).DivScalar(-1e-3))
		b.Output("div-subnormal", v.MinimumScalar(1e-30).MaximumScalar(-1e-30).DivScalar(3e8))
		b.Output("chain", v.MinimumScalar(10).Exp().AddScalar(1).Log().Tanh().Mul(w.Tanh()).Sum())
		cs = append(cs, Case{"ops/" + itoa(n), must(b)})
		// The ONNX import's ops: sigmoid (saturating to 0 where e^-v
		// overflows), comparisons, and where as two masks and an add.
		b = ir.NewBuilder()
		v = b.Input(ir.Shape{n}, Extremes(uint64(60+n), n))
		w = b.Input(ir.Shape{n}, Extremes(uint64(61+n), n))
		b.Output("sigmoid", v.Apply(ir.OpSigmoid))
		b.Output("greater", v.Apply(ir.OpGreater, w))
		b.Output("greater-equal", v.Apply(ir.OpGreaterEqual, v.Maximum(w)))
		b.Output("equal", v.Apply(ir.OpEqual, v.Minimum(w)))
		c := v.Apply(ir.OpGreater, w)
		b.Output("where", c.Apply(ir.OpMask, v).Add(c.Neg().AddScalar(1).Apply(ir.OpMask, w)))
		b.Output("floor", v.Apply(ir.OpFloor))
		b.Output("ceil", v.Apply(ir.OpCeil))
		b.Output("round", v.Apply(ir.OpRound))
		b.Output("erf", v.Apply(ir.OpErf))
		b.Output("erf-near-saturation", v.MinimumScalar(4).MaximumScalar(-4).Apply(ir.OpErf))
		b.Output("round-halves", v.MinimumScalar(1e4).MaximumScalar(-1e4).Apply(ir.OpRound).MulScalar(0.5).Apply(ir.OpRound))
		b.Output("floor-fractions", v.MinimumScalar(1e4).MaximumScalar(-1e4).MulScalar(0.37).Apply(ir.OpFloor))
		b.Output("ceil-fractions", v.MinimumScalar(1e4).MaximumScalar(-1e4).MulScalar(0.37).Apply(ir.OpCeil))
		cs = append(cs, Case{"onnx-ops/" + itoa(n), must(b)})
	}
	// ir/xtrig.go's ops, a graph each, over extremes and over values where
	// their branches meet (pow's exponents also small integers and halves).
	const n = 4096
	for _, op := range []ir.Op{ir.OpPow, ir.OpSin, ir.OpCos, ir.OpTan, ir.OpAsin, ir.OpAcos, ir.OpAtan, ir.OpSinh, ir.OpCosh, ir.OpAsinh, ir.OpAcosh, ir.OpAtanh} {
		b := ir.NewBuilder()
		v := b.Input(ir.Shape{n}, Extremes(uint64(62+op), n))
		w := b.Input(ir.Shape{n}, Values(uint64(63+op), n, 4))
		if op == ir.OpPow {
			e := b.Input(ir.Shape{n}, Values(uint64(64+op), n, 70)).Apply(ir.OpRound).MulScalar(0.5)
			b.Output("extremes", v.Apply(op, w))
			b.Output("integers", w.Apply(op, e))
		} else {
			b.Output("extremes", v.Apply(op))
			b.Output("values", w.Apply(op))
		}
		cs = append(cs, Case{"xtrig/" + op.String(), must(b)})
	}
	return cs
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// LargeMatmuls returns matmuls big enough for the vec4 kernel, with every
// transposition and edge tiles in both directions.
func LargeMatmuls() []Case {
	var cs []Case
	for _, c := range []struct {
		m, k, n int
		ta, tb  bool
	}{{128, 128, 128, false, false}, {256, 132, 260, false, false}, {132, 64, 136, true, false}, {200, 96, 128, false, true}, {136, 40, 132, true, true}} {
		b := ir.NewBuilder()
		var a, w ir.Tensor
		if c.ta {
			a = b.Input(ir.Shape{c.k, c.m}, Values(20, c.m*c.k, 2)).T()
		} else {
			a = b.Input(ir.Shape{c.m, c.k}, Values(20, c.m*c.k, 2))
		}
		if c.tb {
			w = b.Input(ir.Shape{c.n, c.k}, Values(21, c.k*c.n, 2)).T()
		} else {
			w = b.Input(ir.Shape{c.k, c.n}, Values(21, c.k*c.n, 2))
		}
		bias := b.Input(ir.Shape{c.m, c.n}, Values(22, c.m*c.n, 1))
		b.Output("y", a.MatMul(w).Add(bias).Relu())
		b.Output("mm", a.MatMul(w))
		name := "matmul-vec4/" + itoa(c.m) + "x" + itoa(c.k) + "x" + itoa(c.n)
		if c.ta {
			name += "-ta"
		}
		if c.tb {
			name += "-tb"
		}
		cs = append(cs, Case{name, must(b)})
	}
	return cs
}
