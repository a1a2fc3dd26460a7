package irtest

import (
	"github.com/gpucc/gpucc/ir"
)

// Typed16 returns the graphs of int16 and uint16, the device's dtypes
// beyond protocol v1's (ir.DeviceDTypes: native, wasm and webgpu compute
// them; graph-v1 names neither, so the page's tests do not run them):
// every op over each and its casts to every device dtype (as Typed),
// casts to each from every device dtype, their limits (wrap-around at
// ±2^15 and 2^16, MIN / -1, shifts by the width, a sum of 9000 leaves
// wrapping, which a workgroup reduces on webgpu) and their runs with no
// answer (division by zero, casts out of range). Each is cpuref's to
// check against, as Typed's are.
func Typed16() []Case {
	var device []ir.DType // uint64's casts are TypedU64's: a negative int16 has no uint64 value
	for _, t := range ir.AllDTypes() {
		if ir.DeviceDTypes.Has(t) && t != ir.U64 {
			device = append(device, t)
		}
	}
	wide := []ir.DType{ir.I16, ir.U16}
	cs := typedOf(wide, device)
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	s := ir.Shape{3, 7}
	for _, from := range device {
		add("typed/"+from.String()+"/cast-16", func(b *ir.Builder) {
			for _, to := range wide {
				x := TypedInput(b, from, s, uint64(from)*100+uint64(to))
				if from.IsFloat() {
					x = b.TypedInput("", from, s, castable(from, to, uint64(from)*100+uint64(to), s.Len()), nil)
				}
				b.Output("cast-"+to.String(), x.Cast(to))
			}
		})
	}
	for _, t := range wide {
		lo, hi := t.Range()
		add("limits/"+t.String()+"-wrap", func(b *ir.Builder) { intWrap(b, t) })
		add("limits/"+t.String()+"-edges", func(b *ir.Builder) {
			// The range's edges through casts: float32 values just inside
			// truncate to them, and int64 values past them wrap.
			f := b.TypedInput("f", ir.F32, ir.Shape{6}, []float32{float32(hi) + 0.99, float32(lo) - 0.99, -0.99, 0.99, -0x1p-149, float32(hi) - 0.5}, nil)
			b.Output("from-float", f.Cast(t))
			w := b.TypedInput("w", ir.I64, ir.Shape{6}, nil, []int64{hi + 1, lo - 1, 1 << 16, -(1 << 16), 1<<62 + 5, -1 << 63})
			b.Output("from-int64", w.Cast(t))
			x := b.TypedInput("x", t, ir.Shape{5}, nil, []int64{lo, hi, 257, 2049, 2051})
			b.Output("to-float16", x.Minimum(b.FullOf(t, ir.Shape{5}, 0, min(hi, 65504))).Cast(ir.F16)) // 65535 is past float16's range
			b.Output("to-bfloat16", x.Cast(ir.BF16))
			b.Output("to-int8", x.Cast(ir.I8))
			b.Output("to-uint32", x.Cast(ir.U32))
			b.Output("eq", x.ApplyTo(ir.Bool, ir.OpEqual, b.FullOf(t, ir.Shape{5}, 0, hi)))
		})
		add("limits/"+t.String()+"-wide-sum", func(b *ir.Builder) {
			v := make([]int64, 2*9000)
			for k := range v {
				v[k] = []int64{hi, lo, hi - 1, 1}[k%4]
			}
			x := b.TypedInput("x", t, ir.Shape{2, 9000}, nil, v)
			b.Output("sum", x.ApplyShaped(ir.OpSum, ir.Shape{2, 1}))
			b.Output("max", x.ApplyShaped(ir.OpMax, ir.Shape{2, 1}))
		})
	}
	return cs
}

// Typed16Faults returns int16's and uint16's runs with no answer:
// division and modulo by zero, casts from float32 past their range.
func Typed16Faults() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"fault/" + name, must(b)})
	}
	for _, t := range []ir.DType{ir.I16, ir.U16} {
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
	}{{"32768-to-int16", ir.I16, 32768}, {"-32769-to-int16", ir.I16, -32769}, {"65536-to-uint16", ir.U16, 65536}, {"-1-to-uint16", ir.U16, -1}} {
		add("cast-"+c.name, func(b *ir.Builder) {
			x := b.TypedInput("x", ir.F32, ir.Shape{3}, []float32{0, c.v, 1}, nil)
			b.Output("y", x.Cast(c.to))
		})
	}
	return cs
}
