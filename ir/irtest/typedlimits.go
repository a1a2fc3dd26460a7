package irtest

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// TypedLimits returns typed graphs at the limits every backend must meet
// with the reference's bits (issue 32): integer add, sub, mul and neg
// wrapping at ±2^31, ±2^63 and the narrow widths, MIN / -1 and MIN % -1,
// shifts by the width; float16 and bfloat16 subnormals, the largest
// finite values, -0 and casts from integers that round; float-to-integer
// casts at the edge of the range; negative gather indices; a scalar. Each graph
// computes (no fault) and every output is finite: TypedNonFinite holds the
// runs that give ±Inf and NaN, TypedFaults those with no answer.
func TypedLimits() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"limits/" + name, must(b)})
	}
	for _, t := range []ir.DType{ir.I32, ir.I64, ir.U8, ir.I8, ir.U32} {
		add(t.String()+"-wrap", func(b *ir.Builder) { intWrap(b, t) })
	}
	for _, t := range []ir.DType{ir.F16, ir.BF16} {
		var v []float32
		switch t {
		case ir.F16: // 2^-24, the least normal, 65504, 1+2^-10, their negatives
			for _, h := range []uint16{0x0001, 0x0400, 0x7bff, 0x3c01, 0x8001, 0x8400, 0xfbff, 0x3555} {
				v = append(v, ir.F16Float(h))
			}
		case ir.BF16:
			for _, h := range []uint16{0x0001, 0x0080, 0x7f7f, 0x3f81, 0x8001, 0x8080, 0xff7f, 0x3eab} {
				v = append(v, ir.BF16Float(h))
			}
		}
		add(t.String()+"-edges", func(b *ir.Builder) {
			x := b.TypedInput("x", t, ir.Shape{8}, v, nil)
			half := b.FullOf(t, ir.Shape{8}, 0.5, 0)
			zero := b.FullOf(t, ir.Shape{8}, 0, 0)
			b.Output("half", x.Mul(half)) // subnormals halve to a tie: even, ±0
			b.Output("sub-self", x.Sub(x))
			b.Output("neg-zero", zero.Neg())
			b.Output("neg", x.Neg())
			b.Output("sqrt", x.Maximum(zero).Sqrt())
			b.Output("div", half.Div(x.Sub(half))) // 0.5/(x-0.5)
			b.Output("max", x.Maximum(zero.Neg()))
			b.Output("sum", x.Apply(ir.OpSum))
			b.Output("float", x.Cast(ir.F32))
			if t == ir.F16 {
				b.Output("other", x.Cast(ir.BF16))
			} else { // within float16's range: past it is TypedNonFinite's
				b.Output("other", x.Minimum(b.FullOf(t, ir.Shape{8}, 65280, 0)).Maximum(b.FullOf(t, ir.Shape{8}, -65280, 0)).Cast(ir.F16))
			}
			b.Output("int8", x.Maximum(b.FullOf(t, ir.Shape{8}, -100, 0)).Minimum(b.FullOf(t, ir.Shape{8}, 100, 0)).Cast(ir.I8))
			b.Output("bool", x.Cast(ir.Bool))
		})
	}
	add("int-to-float-ties", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.I64, ir.Shape{6}, nil, []int64{1<<31 + 1<<23 + 1, 1<<24 + 1, -(1<<24 + 3), 1 << 62, math.MinInt64, 2049})
		b.Output("f32", x.Cast(ir.F32))
		b.Output("bf16", x.Cast(ir.BF16))
		b.Output("f16", x.Maximum(b.FullOf(ir.I64, ir.Shape{6}, 0, -65504)).Minimum(b.FullOf(ir.I64, ir.Shape{6}, 0, 65519)).Cast(ir.F16))
	})
	add("float-to-int-edges", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F32, ir.Shape{6}, []float32{2147483520, -2147483648, -0.99, 0.99, -0x1p-149, 255.9}, nil)
		b.Output("i32", x.Cast(ir.I32))
		b.Output("i64", x.Cast(ir.I64))
		y := b.TypedInput("y", ir.F32, ir.Shape{3}, []float32{9.2233715e18, -0x1p63, -0.5}, nil)
		b.Output("i64-edges", y.Cast(ir.I64))
		z := b.TypedInput("z", ir.F32, ir.Shape{4}, []float32{-0.99, 255.9, 0, 4294967040}, nil)
		b.Output("u8", z.Minimum(b.FullOf(ir.F32, ir.Shape{4}, 255.9, 0)).Cast(ir.U8))
		b.Output("u32", z.Cast(ir.U32))
	})
	add("gather-negative", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.I64, ir.Shape{3, 2}, nil, []int64{math.MinInt64, 1, 2, 3, 4, math.MaxInt64})
		idx := b.TypedInput("idx", ir.I32, ir.Shape{4}, nil, []int64{-3, 2, -1, 0})
		b.Output("rows", x.Gather(idx, 0))
		b.Output("cols", x.Gather(b.TypedInput("c", ir.I64, ir.Shape{2}, nil, []int64{-2, 1}), 1))
	})
	add("scalar", func(b *ir.Builder) { // rank 0 (the IR has no empty tensors)
		x := b.TypedInput("x", ir.I64, ir.Shape{}, nil, []int64{math.MinInt64})
		b.Output("y", x.Add(x).Cast(ir.F16))
		b.Output("sum", x.Apply(ir.OpSum))
	})
	return cs
}

// TypedNonFinite returns typed graphs whose outputs hold ±Inf or NaN: a
// float16 or bfloat16 overflow, 0/0, an integer cast past float16's
// range. A host that allows non-finite values (ir.Limits.NonFinite) gets
// the reference's values; any other gets non_finite_output.
func TypedNonFinite() []Case {
	var cs []Case
	for _, t := range []ir.DType{ir.F16, ir.BF16} {
		b := ir.NewBuilder()
		big := float32(65504)
		if t == ir.BF16 {
			big = ir.BF16Float(0x7f7f)
		}
		x := b.TypedInput("x", t, ir.Shape{4}, []float32{big, -big, 0, 1}, nil)
		b.Output("twice", x.Add(x))             // ±Inf
		b.Output("nan", x.Sub(x).Div(x.Sub(x))) // 0/0
		b.Output("inv", b.FullOf(t, ir.Shape{4}, 1, 0).Div(x))
		cs = append(cs, Case{"nonfinite/" + t.String(), must(b)})
	}
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.I64, ir.Shape{3}, nil, []int64{65520, math.MaxInt64, -65520})
	b.Output("f16", x.Cast(ir.F16))
	cs = append(cs, Case{"nonfinite/int64-to-float16", must(b)})
	return cs
}

// TypedFaults returns typed graphs whose run has no right answer, each
// failing at one node: an integer division or modulo by zero
// (integer_fault), a float-to-integer cast of NaN, ±Inf or a value out of
// range (integer_fault), a gather index outside its axis (invalid_input).
func TypedFaults() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"fault/" + name, must(b)})
	}
	for _, t := range []ir.DType{ir.I32, ir.I64, ir.U8} {
		for _, op := range []ir.Op{ir.OpDiv, ir.OpMod} {
			add(t.String()+"-"+op.String()+"-zero", func(b *ir.Builder) {
				x := b.TypedInput("x", t, ir.Shape{3}, nil, []int64{1, 2, 3})
				y := b.TypedInput("y", t, ir.Shape{3}, nil, []int64{1, 0, 1})
				b.Output("ok", x.Add(y))
				b.Output("q", x.Apply(op, y))
			})
		}
	}
	for _, c := range []struct {
		name string
		to   ir.DType
		v    float32
	}{{"2^31-to-int32", ir.I32, 0x1p31}, {"2^63-to-int64", ir.I64, 0x1p63}, {"-1-to-uint8", ir.U8, -1},
		{"256-to-uint8", ir.U8, 256}, {"-129-to-int8", ir.I8, -129}, {"2^32-to-uint32", ir.U32, 0x1p32}} {
		add("cast-"+c.name, func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F32, ir.Shape{3}, []float32{0, c.v, 1}, nil)
			b.Output("y", x.Cast(c.to))
		})
	}
	add("cast-nan-to-int64", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F16, ir.Shape{2}, []float32{0, 1}, nil)
		b.Output("y", x.Div(x.Sub(x.Sub(x))).Sub(x).Cast(ir.I64)) // 0/0 - 0 is NaN
	})
	add("cast-inf-to-int32", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F16, ir.Shape{2}, []float32{65504, 1}, nil)
		b.Output("y", x.Add(x).Cast(ir.I32))
	})
	for _, idx := range []int64{3, -4, math.MaxInt64, math.MinInt64} {
		add("gather-index-"+itoa64(idx), func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F32, ir.Shape{3, 2}, []float32{1, 2, 3, 4, 5, 6}, nil)
			i := b.TypedInput("i", ir.I64, ir.Shape{3}, nil, []int64{0, idx, 1})
			b.Output("y", x.Gather(i, 0))
		})
		add("gather-elements-index-"+itoa64(idx), func(b *ir.Builder) {
			x := b.TypedInput("x", ir.I8, ir.Shape{2, 3}, nil, []int64{1, 2, 3, 4, 5, 6})
			i := b.TypedInput("i", ir.I32, ir.Shape{2, 2}, nil, []int64{0, -3, 2, max(min(idx, math.MaxInt32), math.MinInt32)})
			b.Output("ok", x.Add(x))
			b.Output("y", x.GatherElements(i, 1))
		})
	}
	return cs
}

// itoa64 formats v in decimal.
func itoa64(v int64) string {
	if v < 0 {
		return "minus" + itoa64u(uint64(-(v+1))+1)
	}
	return itoa64u(uint64(v))
}

func itoa64u(u uint64) string {
	if u < 10 {
		return string(rune('0' + u))
	}
	return itoa64u(u/10) + string(rune('0'+u%10))
}

// TypedScalarForms returns, per float dtype and scalar form of the table
// that takes it (add_scalar, …), a graph applying it to the dtype's
// extremes with scalars 3, -0.5, -0 and the dtype's least subnormal:
// ONNX's importer makes them of a constant operand. Outputs may be ±Inf
// or NaN.
func TypedScalarForms() []Case {
	var cs []Case
	for _, t := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		tiny := map[ir.DType]float32{ir.F32: 0x1p-149, ir.F16: 0x1p-24, ir.BF16: ir.BF16Float(1)}[t]
		for _, op := range ir.Ops() {
			if op.Info().ScalarOf == 0 || !op.Info().Types.In.Has(t) {
				continue
			}
			b := ir.NewBuilder()
			x := TypedInput(b, t, ir.Shape{16}, uint64(t)+500)
			for k, s := range []float32{3, -0.5, float32(math.Copysign(0, -1)), tiny} {
				b.Output(itoa(k), x.ApplyScalar(op, s))
			}
			cs = append(cs, Case{"scalar-forms/" + t.String() + "/" + op.String(), must(b)})
		}
	}
	return cs
}

// TypedMixed returns typed graphs that hold float32 rows only the float32
// kernels compute (matmul, conv2d, maxpool2d): a backend's typed code runs
// them in stages, values crossing at their dtype's width. An embedding
// lookup by int64 ids feeding a matmul, bias and relu, then float16 and
// bool; a uint8 image cast to float32 through conv2d and maxpool2d and
// back to uint8; kinds alternating five times; and runs with no answer
// after a float32 stage (a cast of a matmul's result out of int8's range;
// in graph order a fault before another that a typed stage run earlier
// meets first).
func TypedMixed() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"mixed/" + name, must(b)})
	}
	add("embedding-matmul", func(b *ir.Builder) {
		table := b.TypedInput("table", ir.F32, ir.Shape{10, 4}, Values(1, 40, 2), nil)
		ids := b.TypedInput("ids", ir.I64, ir.Shape{6}, nil, []int64{3, -1, 0, 9, -10, 3})
		w := b.TypedInput("w", ir.F32, ir.Shape{4, 3}, Values(2, 12, 1), nil)
		bias := b.TypedInput("bias", ir.F32, ir.Shape{3}, Values(3, 3, 1), nil)
		h := table.Gather(ids, 0).MatMul(w).Add(bias).Relu()
		b.Output("h", h)
		b.Output("half", h.Cast(ir.F16))
		b.Output("pos", h.ApplyTo(ir.Bool, ir.OpGreater, b.FullOf(ir.F32, ir.Shape{6, 3}, 0.25, 0)))
		b.Output("sum", h.Cast(ir.BF16).Apply(ir.OpSum))
	})
	add("uint8-conv", func(b *ir.Builder) {
		img := b.TypedInput("img", ir.U8, ir.Shape{1, 1, 6, 6}, nil, IntExtremes(ir.U8, 5, 36))
		w := b.TypedInput("w", ir.F32, ir.Shape{2, 1, 3, 3}, Values(4, 18, 1), nil)
		y := img.Cast(ir.F32).MulScalar(1.0/255).Conv2D(w, map[string][]int{"pads": {1, 1, 1, 1}})
		y = y.Relu().MaxPool2D(map[string][]int{"kernel_shape": {2, 2}, "strides": {2, 2}})
		b.Output("y", y)
		b.Output("u8", y.MulScalar(64).Minimum(b.FullOf(ir.F32, ir.Shape{1, 2, 3, 3}, 255, 0)).Cast(ir.U8))
	})
	add("alternating", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F32, ir.Shape{3, 3}, Values(5, 9, 4), nil)
		m := b.TypedInput("m", ir.I32, ir.Shape{3, 3}, nil, IntExtremes(ir.I32, 6, 9))
		y := x.MatMul(x)                                     // float
		k := y.Cast(ir.I32).Add(m)                           // typed: wraps
		z := k.Cast(ir.F32).MulScalar(0x1p-30).MatMul(x).T() // float
		w := z.Cast(ir.F16).Neg().Cast(ir.F32).MatMul(x)     // typed, then float
		b.Output("k", k)
		b.Output("z", z)
		b.Output("w", w.Cast(ir.I64))
	})
	add("fault-after-matmul", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F32, ir.Shape{2, 2}, []float32{10, 2, 3, 4}, nil)
		b.Output("y", x.MatMul(x).Cast(ir.I8))              // 106 fits, 112 fits, 46... 10·10+2·3 = 106; 3·2+4·4 = 22; 10·2+2·4 = 28; 3·10+4·3 = 42
		b.Output("z", x.MatMul(x).MulScalar(2).Cast(ir.I8)) // 212: outside int8
	})
	add("fault-order", func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F32, ir.Shape{2, 2}, []float32{10, 2, 3, 4}, nil)
		big := x.MatMul(x).MulScalar(2).Cast(ir.I8) // a later stage, an earlier node: the reference's fault
		n := b.TypedInput("n", ir.I32, ir.Shape{2}, nil, []int64{1, 2})
		d := b.TypedInput("d", ir.I32, ir.Shape{2}, nil, []int64{1, 0})
		b.Output("big", big)
		b.Output("q", n.Div(d)) // the first stage's fault
	})
	return cs
}

// intWrap adds the outputs of integer dtype t at its limits: add, sub,
// mul, div, mod, max, neg and bitnot of its least and greatest values
// wrapping, MIN / -1, a sum, shifts by 0, 1, the width and past it, casts
// to float32 and bfloat16, a comparison.
func intWrap(b *ir.Builder, t ir.DType) {
	lo, hi := t.Range()
	x := b.TypedInput("x", t, ir.Shape{8}, nil, []int64{hi, lo, lo, lo, hi, -1 & hi, 7 & hi, 0})
	y := b.TypedInput("y", t, ir.Shape{8}, nil, NonZero([]int64{1, -1 & hi, 2, 1, hi, lo, 3, hi}))
	for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMod, ir.OpMaximum, ir.OpNeg, ir.OpBitNot} {
		switch {
		case !op.Info().Types.In.Has(t): // the row does not take t (neg of uint8)
		case op.Info().Args == 1:
			b.Output(op.String(), x.Apply(op))
		default:
			b.Output(op.String(), x.Apply(op, y))
		}
	}
	b.Output("sum", x.Apply(ir.OpSum))
	if ir.OpShiftLeft.Info().Types.In.Has(t) { // shifts by 0, 1, the width and past it
		w := b.TypedInput("w", t, ir.Shape{8}, nil, []int64{0, 1, int64(t.Bits() - 1), int64(t.Bits()), int64(t.Bits() + 1), 2, min(hi, 64), 3})
		b.Output("shl", x.Apply(ir.OpShiftLeft, w))
		b.Output("shr", x.Apply(ir.OpShiftRight, w))
	}
	b.Output("float", x.Cast(ir.F32))
	b.Output("bfloat", x.Cast(ir.BF16))
	b.Output("gt", x.ApplyTo(ir.Bool, ir.OpGreater, y))
}
