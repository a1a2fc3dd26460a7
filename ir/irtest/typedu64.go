package irtest

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// TypedU64 returns uint64's graphs that compute (uint64 is a device dtype,
// ir.DeviceDTypes, carried in int64 and of [0, 2^63-1] only; graph-v1 does
// not name it): every arithmetic, comparison and bitwise row on operands
// whose results stay within the carrier (2^63-1 + 0, 2^31 × 2^31, 2^62 +
// (2^62-1), shifts by 0, 62, 63 and 64), the reductions (a 9000-leaf sum
// webgpu reduces by workgroup), the views and gathers, where, and casts to
// every device dtype and from each (its non-negative values, floats
// truncated within the range).
func TypedU64() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"typed/uint64/" + name, must(b)})
	}
	const hi = math.MaxInt64
	in := func(b *ir.Builder, v ...int64) ir.Tensor {
		return b.TypedInput("", ir.U64, ir.Shape{len(v)}, nil, v)
	}
	add("arith", func(b *ir.Builder) {
		x := in(b, hi-1, 0, 1<<62, 1<<32, 1<<31, 7, hi, 3)
		y := in(b, 1, hi, 1<<62-1, 1<<32, 1<<31, 7, 0, 2)
		b.Output("add", x.Add(y))
		b.Output("sub", x.Maximum(y).Sub(x.Minimum(y)))
		b.Output("mul", in(b, 1<<31, 1<<32-1, 3, hi, 0, 1<<20, 2, 1).Mul(in(b, 1<<31, 1<<31, 1<<61, 1, hi, 1<<40, 1<<61, hi)))
		d := in(b, 1, hi, 2, 7, 1<<32, 3, hi-1, 5)
		b.Output("div", x.Div(d))
		b.Output("mod", x.Apply(ir.OpMod, d))
		b.Output("max", x.Maximum(y))
		b.Output("min", x.Minimum(y))
		b.Output("gt", x.ApplyTo(ir.Bool, ir.OpGreater, y))
		b.Output("eq", x.ApplyTo(ir.Bool, ir.OpEqual, y))
		b.Output("and", x.Apply(ir.OpBitAnd, y))
		b.Output("or", x.Apply(ir.OpBitOr, y))
		b.Output("xor", x.Apply(ir.OpBitXor, y))
		s := in(b, 0, 1, 62, 63, 64, 65, 32, 31)
		b.Output("shl", in(b, 1, 1, 1, 0, 1, 1, 1<<30, 1).Apply(ir.OpShiftLeft, s))
		b.Output("shr", x.Apply(ir.OpShiftRight, s))
	})
	add("moves", func(b *ir.Builder) {
		v := make([]int64, 21)
		for k := range v {
			v[k] = []int64{hi, 0, 1, 1 << 62, 1<<63 - 2, 1 << 32, 12345}[k%7]
		}
		x := b.TypedInput("x", ir.U64, ir.Shape{3, 7}, nil, v)
		small := b.TypedInput("s", ir.U64, ir.Shape{3, 7}, nil, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 1 << 40})
		b.Output("sum-rows", small.ApplyShaped(ir.OpSum, ir.Shape{3, 1}))
		b.Output("sum-all", small.ApplyShaped(ir.OpSum, ir.Shape{}))
		b.Output("max-rows", x.ApplyShaped(ir.OpMax, ir.Shape{3, 1}))
		b.Output("max-all", x.ApplyShaped(ir.OpMax, ir.Shape{}))
		b.Output("transpose", x.T())
		b.Output("broadcast", x.Reshape(ir.Shape{3, 1, 7}).Broadcast(ir.Shape{3, 2, 7}))
		c := TypedInput(b, ir.Bool, ir.Shape{3, 7}, 64)
		b.Output("where", c.Where(x, small))
		b.Output("gather-rows", x.Gather(b.TypedInput("", ir.I64, ir.Shape{4}, nil, []int64{2, -1, 0, -3}), 0))
		b.Output("gather-elements", x.GatherElements(b.TypedInput("", ir.I64, ir.Shape{2, 3}, nil, []int64{0, -1, 6, -7, 3, 2}), 1))
	})
	add("wide-sum", func(b *ir.Builder) {
		v := make([]int64, 2*9000)
		for k := range v {
			v[k] = []int64{1 << 40, 1<<50 + 3, 0, 1<<32 - 1}[k%4]
		}
		x := b.TypedInput("x", ir.U64, ir.Shape{2, 9000}, nil, v)
		b.Output("sum", x.ApplyShaped(ir.OpSum, ir.Shape{2, 1}))
		b.Output("max", x.ApplyShaped(ir.OpMax, ir.Shape{2, 1}))
		// 9000 leaves of 2^51 pass 2^63 at the 4096th and wrap, as
		// numpy's uint64 does, to 808 × 2^51: a sum in the carrier.
		w := make([]int64, 9000)
		for k := range w {
			w[k] = 1 << 51
		}
		b.Output("wrapped", b.TypedInput("w", ir.U64, ir.Shape{1, 9000}, nil, w).ApplyShaped(ir.OpSum, ir.Shape{1, 1}))
	})
	add("cast-to", func(b *ir.Builder) {
		x := in(b, hi, 0, 1, 1<<62, 1<<32+1, 255, 65535, 1<<31, 1<<24+1, 1<<31+1<<23+1, 2049)
		for _, to := range ir.AllDTypes() {
			if ir.DeviceDTypes.Has(to) {
				src := x
				if to == ir.F16 { // within float16's range: past it is ±Inf
					src = x.Minimum(b.FullOf(ir.U64, ir.Shape{11}, 0, 65504))
				}
				b.Output("cast-"+to.String(), src.Cast(to))
			}
		}
	})
	for _, from := range ir.AllDTypes() {
		if !ir.DeviceDTypes.Has(from) || from == ir.U64 {
			continue
		}
		add("cast-from-"+from.String(), func(b *ir.Builder) {
			s := ir.Shape{3, 7}
			var x ir.Tensor
			if from.IsFloat() {
				x = b.TypedInput("", from, s, castable(from, ir.U64, uint64(from)+900, s.Len()), nil)
				x = x.Maximum(b.FullOf(from, s, 0, 0)) // non-negative: a negative truncates below the range
			} else {
				v := IntExtremes(from, uint64(from)+900, s.Len())
				for k := range v {
					if v[k] < 0 {
						v[k] = -(v[k] + 1) // non-negative, each bit pattern's complement
					}
				}
				x = b.TypedInput("", from, s, nil, v)
			}
			b.Output("cast", x.Cast(ir.U64))
		})
	}
	return cs
}

// TypedU64Faults returns uint64's runs with no answer in its carrier: a
// result of 2^63 or more from each row that can give one (add, sub below
// 0, mul, shl, bitnot, a cast of a negative integer, a sum), refused by
// name (unsupported), division by zero (integer_fault), and a float cast
// past the range (integer_fault).
func TypedU64Faults() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"fault/uint64-" + name, must(b)})
	}
	const hi = math.MaxInt64
	for _, c := range []struct {
		name string
		op   ir.Op
		x, y []int64
	}{
		{"add", ir.OpAdd, []int64{1, hi, 2}, []int64{1, 1, 2}},
		{"sub", ir.OpSub, []int64{5, 0, 9}, []int64{1, 1, 2}},
		{"mul", ir.OpMul, []int64{3, 1 << 32, 2}, []int64{3, 1 << 31, 2}},
		{"shl", ir.OpShiftLeft, []int64{1, 1, 1}, []int64{1, 63, 2}},
		{"div-zero", ir.OpDiv, []int64{1, 2, 3}, []int64{1, 0, 1}},
		{"mod-zero", ir.OpMod, []int64{1, 2, 3}, []int64{1, 0, 1}},
	} {
		add(c.name, func(b *ir.Builder) {
			x := b.TypedInput("x", ir.U64, ir.Shape{3}, nil, c.x)
			y := b.TypedInput("y", ir.U64, ir.Shape{3}, nil, c.y)
			b.Output("ok", x.Maximum(y))
			b.Output("r", x.Apply(c.op, y))
		})
	}
	add("bitnot", func(b *ir.Builder) {
		b.Output("r", b.TypedInput("x", ir.U64, ir.Shape{2}, nil, []int64{hi, 0}).Apply(ir.OpBitNot))
	})
	add("cast-negative", func(b *ir.Builder) {
		b.Output("r", b.TypedInput("x", ir.I64, ir.Shape{3}, nil, []int64{0, 5, -1}).Cast(ir.U64))
	})
	add("cast-2^63", func(b *ir.Builder) {
		b.Output("r", b.TypedInput("x", ir.F32, ir.Shape{2}, []float32{1, 0x1p63}, nil).Cast(ir.U64))
	})
	add("sum", func(b *ir.Builder) {
		b.Output("r", b.TypedInput("x", ir.U64, ir.Shape{2, 2}, nil, []int64{1, 2, hi, 1}).ApplyShaped(ir.OpSum, ir.Shape{2, 1}))
	})
	add("wide-sum", func(b *ir.Builder) { // 12000 leaves of 2^50: 1.46 × 2^63, which webgpu reduces by workgroup
		v := make([]int64, 12000)
		for k := range v {
			v[k] = 1 << 50
		}
		b.Output("r", b.TypedInput("x", ir.U64, ir.Shape{1, 12000}, nil, v).ApplyShaped(ir.OpSum, ir.Shape{1, 1}))
	})
	return cs
}
