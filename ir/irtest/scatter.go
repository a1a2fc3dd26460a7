package irtest

import (
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// scatterReductions are the reductions a scatter of dtype t takes: all of
// them (bool's are numpy's or and and).
var scatterReductions = []ir.ScatterReduction{ir.ScatterNone, ir.ScatterAdd, ir.ScatterMul, ir.ScatterMax, ir.ScatterMin}

// typedScatter is Typed's graph of the scatters of dtype t: scatter_nd by
// rows and by elements and scatter_elements along each axis, with every
// reduction, negative indices and indices that repeat (so that order
// decides none and the narrow floats' rounding).
func typedScatter(t ir.DType) Case {
	b := ir.NewBuilder()
	x := TypedInput(b, t, ir.Shape{3, 7}, uint64(t)*10+5)
	rows := b.TypedInput("", ir.I64, ir.Shape{4, 1}, nil, []int64{2, -1, 0, 2})
	elems := b.TypedInput("", ir.I32, ir.Shape{3, 2}, nil, []int64{1, -7, 1, 0, 2, 6})
	along := b.TypedInput("", ir.I64, ir.Shape{2, 3}, nil, []int64{0, -1, 6, -7, 3, 0})
	down := b.TypedInput("", ir.I32, ir.Shape{4, 2}, nil, []int64{0, 1, -3, 2, 2, 2, 0, -1})
	for _, r := range scatterReductions {
		b.Output("nd-rows-"+r.String(), x.ScatterND(rows, TypedInput(b, t, ir.Shape{4, 7}, uint64(t)*10+6), r))
		b.Output("nd-elements-"+r.String(), x.ScatterND(elems, TypedInput(b, t, ir.Shape{3}, uint64(t)*10+7), r))
		b.Output("elements-1-"+r.String(), x.ScatterElements(along, TypedInput(b, t, ir.Shape{2, 3}, uint64(t)*10+8), 1, r))
	}
	b.Output("elements-0", x.ScatterElements(down, TypedInput(b, t, ir.Shape{4, 2}, uint64(t)*10+9), -2, ir.ScatterAdd))
	return Case{"typed/" + t.String() + "/scatter", must(b)}
}

// randomScatter applies scatter op to x (of dtype t, rank ≥ 1) in a random
// graph: indices inside [-d, d) with repeats, updates found of t.
func randomScatter(r *rand.Rand, b *ir.Builder, op ir.Op, x ir.Tensor, find func(ir.DType, ir.Shape) ir.Tensor) ir.Tensor {
	s := x.Shape()
	red := scatterReductions[r.IntN(len(scatterReductions))]
	if op == ir.OpScatterElements {
		idx := make([]int64, s.Len()) // x's shape, along the first axis
		d := s[0]
		for k := range idx {
			idx[k] = int64(r.IntN(2*d) - d)
		}
		return x.ScatterElements(b.TypedInput("", ir.I64, s, nil, idx), find(x.DType(), s), 0, red)
	}
	n := 1 + r.IntN(4) // rows of the first axis
	idx := make([]int64, n)
	for k := range idx {
		idx[k] = int64(r.IntN(2*s[0]) - s[0])
	}
	us := append(ir.Shape{n}, s[1:]...)
	return x.ScatterND(b.TypedInput("", ir.I32, ir.Shape{n, 1}, nil, idx), find(x.DType(), us), red)
}

// ScatterLimits returns scatters at the limits, each output against the
// reference: int64 and int32 add and mul wrapping, max and min at the
// ends of the range, -0 against +0, float16 subnormals and rounding after
// each update, bool's or and and, a scalar update, a uint64 add that
// passes 2^63 and wraps back into the carrier, and (built with
// ir.Limits{NonFinite: true}: run them under that policy) NaN payloads
// and -Inf meeting max, min, add and the last-wins rule.
func ScatterLimits() []Case {
	var cs []Case
	add := func(name string, nonFinite bool, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		l := ir.Limits{NonFinite: nonFinite}
		g, err := b.Build(l)
		if err != nil {
			panic("irtest: " + err.Error())
		}
		cs = append(cs, Case{"scatter/" + name, g})
	}
	for _, t := range []ir.DType{ir.I64, ir.I32, ir.U8, ir.I8, ir.U32} {
		lo, hi := t.Range()
		add(t.String()+"-wrap", false, func(b *ir.Builder) {
			x := b.TypedInput("x", t, ir.Shape{4}, nil, []int64{hi, lo, 0, -1 & hi})
			i := b.TypedInput("i", ir.I64, ir.Shape{6, 1}, nil, []int64{0, 0, 1, -3, 3, 2})
			u := b.TypedInput("u", t, ir.Shape{6}, nil, []int64{hi, 1, lo, -1 & hi, 2, hi})
			for _, r := range scatterReductions {
				b.Output(r.String(), x.ScatterND(i, u, r))
			}
		})
	}
	add("uint64-carrier", false, func(b *ir.Builder) {
		// 2^62 + 2^62 passes 2^63, + 2^63 more wraps past 2^64 to 0: the
		// carrier holds the result (no fault), as a sum's wrap does.
		x := b.TypedInput("x", ir.U64, ir.Shape{2}, nil, []int64{1 << 62, 5})
		i := b.TypedInput("i", ir.I64, ir.Shape{3, 1}, nil, []int64{0, 0, 0})
		u := b.TypedInput("u", ir.U64, ir.Shape{3}, nil, []int64{1 << 62, 1 << 62, 1 << 62})
		b.Output("add", x.ScatterND(i, u, ir.ScatterAdd))
		b.Output("max", x.ScatterND(i, u, ir.ScatterMax))
	})
	add("bool", false, func(b *ir.Builder) {
		x := b.TypedInput("x", ir.Bool, ir.Shape{4}, nil, []int64{0, 1, 0, 1})
		i := b.TypedInput("i", ir.I32, ir.Shape{5}, nil, []int64{0, 0, 1, 2, -1})
		u := b.TypedInput("u", ir.Bool, ir.Shape{5}, nil, []int64{1, 1, 0, 0, 1})
		for _, r := range scatterReductions {
			b.Output(r.String(), x.ScatterElements(i, u, 0, r))
		}
	})
	add("float16-round", false, func(b *ir.Builder) {
		// 1 + 2^-11 + 2^-11: each addition rounds to even (1), where the
		// sum of the updates first would give 1 + 2^-10.
		x := b.TypedInput("x", ir.F16, ir.Shape{3}, []float32{1, ir.F16Float(0x0001), float32(math.Copysign(0, -1))}, nil)
		i := b.TypedInput("i", ir.I64, ir.Shape{6, 1}, nil, []int64{0, 0, 1, 1, 2, 2})
		u := b.TypedInput("u", ir.F16, ir.Shape{6}, []float32{0x1p-11, 0x1p-11, ir.F16Float(0x0001), ir.F16Float(0x8003), 0, float32(math.Copysign(0, -1))}, nil)
		for _, r := range scatterReductions {
			b.Output(r.String(), x.ScatterND(i, u, r))
		}
	})
	add("float32-zeros", false, func(b *ir.Builder) {
		x := b.TypedInput("x", ir.F32, ir.Shape{2, 2}, []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, -3e38}, nil)
		i := b.TypedInput("i", ir.I64, ir.Shape{2, 2}, nil, []int64{0, 1, -1, 1})
		u := b.TypedInput("u", ir.F32, ir.Shape{2, 2}, []float32{float32(math.Copysign(0, -1)), 0, -3e38, 0x1p-149}, nil)
		for _, r := range scatterReductions {
			b.Output(r.String(), x.ScatterElements(i, u, 1, r))
		}
		s := b.TypedInput("s", ir.I32, ir.Shape{2}, nil, []int64{-1, 0}) // one element: a scalar update
		b.Output("scalar", x.ScatterND(s, b.TypedInput("v", ir.F32, ir.Shape{}, []float32{7}, nil), ir.ScatterNone))
	})
	add("nan", true, func(b *ir.Builder) {
		nan1 := math.Float32frombits(0x7fc00001)
		nan2 := math.Float32frombits(0xffc00002)
		inf := float32(math.Inf(-1))
		x := b.TypedInput("x", ir.F32, ir.Shape{4}, []float32{nan1, 1, inf, 2}, nil)
		i := b.TypedInput("i", ir.I64, ir.Shape{6, 1}, nil, []int64{0, 1, 1, 2, 3, 3})
		u := b.TypedInput("u", ir.F32, ir.Shape{6}, []float32{nan2, nan2, 5, 7, inf, nan1}, nil)
		for _, r := range scatterReductions {
			b.Output(r.String(), x.ScatterND(i, u, r))
		}
	})
	return cs
}

// ScatterFaults returns scatters whose indices leave their dimension (the
// first past the end, the first before -d, the int64 and int32 extremes,
// in a later index row of several): each run fails with invalid_input;
// and a uint64 add that ends at 2^63, which has no carrier (unsupported).
func ScatterFaults() []Case {
	var cs []Case
	for _, v := range []int64{3, -4, math.MaxInt64, math.MinInt64, math.MaxInt32 + 1} {
		b := ir.NewBuilder()
		x := b.TypedInput("x", ir.F32, ir.Shape{3, 2}, []float32{1, 2, 3, 4, 5, 6}, nil)
		i := b.TypedInput("i", ir.I64, ir.Shape{3, 1}, nil, []int64{0, -3, v})
		b.Output("ok", x.Add(x))
		b.Output("nd", x.ScatterND(i, b.TypedInput("u", ir.F32, ir.Shape{3, 2}, []float32{7, 8, 9, 10, 11, 12}, nil), ir.ScatterAdd))
		cs = append(cs, Case{"scatter-fault/nd-" + itoa64(v), must(b)})
		b = ir.NewBuilder()
		y := b.TypedInput("x", ir.I64, ir.Shape{2, 3}, nil, []int64{1, 2, 3, 4, 5, 6})
		j := b.TypedInput("i", ir.I32, ir.Shape{2, 2}, nil, []int64{0, -3, 2, max(min(v, math.MaxInt32), math.MinInt32)})
		b.Output("y", y.ScatterElements(j, b.TypedInput("u", ir.I64, ir.Shape{2, 2}, nil, []int64{9, 9, 9, 9}), 1, ir.ScatterNone))
		cs = append(cs, Case{"scatter-fault/elements-" + itoa64(v), must(b)})
	}
	b := ir.NewBuilder() // a uint64 sum of 2^63: no carrier, refused (unsupported)
	x := b.TypedInput("x", ir.U64, ir.Shape{2}, nil, []int64{1 << 62, 5})
	i := b.TypedInput("i", ir.I32, ir.Shape{2}, nil, []int64{0, -1})
	b.Output("y", x.ScatterElements(i, b.TypedInput("u", ir.U64, ir.Shape{2}, nil, []int64{1 << 62, 1}), 0, ir.ScatterAdd))
	return append(cs, Case{"scatter-fault/uint64-2^63", must(b)})
}

// RandomScatters returns a random graph of three scatters in a chain over
// one dtype of the compiled targets (ir.DeviceDTypes): data of rank 1 to
// 3, scatter_nd of index rows of 1 to rank components and scatter_elements
// along a random axis, each with a random reduction, indices inside
// [-d, d) with repeats, updates holding the dtype's extremes.
func RandomScatters(seed uint64) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 43))
	var dts []ir.DType
	for _, t := range ir.DTypes() {
		if ir.DeviceDTypes.Has(t) {
			dts = append(dts, t)
		}
	}
	t := dts[r.IntN(len(dts))]
	b := ir.NewBuilder()
	s := make(ir.Shape, 1+r.IntN(3))
	for d := range s {
		s[d] = 1 + r.IntN(5)
	}
	x := TypedInput(b, t, s, r.Uint64())
	idx := func(sh ir.Shape, bound func(e int) int) ir.Tensor {
		v := make([]int64, sh.Len())
		for e := range v {
			d := bound(e)
			v[e] = int64(r.IntN(2*d) - d)
		}
		dt := ir.I64
		if r.IntN(2) == 0 {
			dt = ir.I32
		}
		return b.TypedInput("", dt, sh, nil, v)
	}
	for range 3 {
		red := scatterReductions[r.IntN(len(scatterReductions))]
		if r.IntN(2) == 0 {
			k := 1 + r.IntN(len(s))
			rows := ir.Shape{1 + r.IntN(6)}
			if r.IntN(3) == 0 {
				rows = append(rows, 2)
			}
			i := idx(append(append(ir.Shape{}, rows...), k), func(e int) int { return s[e%k] })
			x = x.ScatterND(i, TypedInput(b, t, append(append(ir.Shape{}, rows...), s[k:]...), r.Uint64()), red)
			continue
		}
		ax := r.IntN(len(s))
		is := make(ir.Shape, len(s))
		for d := range is {
			is[d] = 1 + r.IntN(s[d])
		}
		is[ax] = 1 + r.IntN(6)
		i := idx(is, func(int) int { return s[ax] })
		x = x.ScatterElements(i, TypedInput(b, t, is, r.Uint64()), ax, red)
	}
	b.Output("y", x)
	return must(b)
}
