package irtest

import (
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// IntExtremes returns n deterministic values of integer or bool dtype t:
// its least and greatest values, their neighbours, -1, 0, 1, 2 and
// random values of every magnitude, so that arithmetic wraps at ±2^31 and
// ±2^63 and divisors are small.
func IntExtremes(t ir.DType, seed uint64, n int) []int64 {
	r := rand.New(rand.NewPCG(seed, 31))
	lo, hi := t.Range()
	edges := []int64{lo, hi, lo + 1, hi - 1, -1, 0, 1, 2, 3, -7, hi / 2, lo / 2}
	out := make([]int64, n)
	for i := range out {
		var v int64
		switch r.IntN(3) {
		case 0:
			v = edges[r.IntN(len(edges))]
		case 1:
			v = int64(r.IntN(9) - 4)
		default:
			v = int64(r.Uint64()) >> r.IntN(64)
		}
		if v < lo || v > hi {
			v = t.Wrap(v)
		}
		if v < lo { // uint64's carrier: 2^63 and up are not its values
			v &= math.MaxInt64
		}
		out[i] = v
	}
	return out
}

// NonZero returns v with every 0 replaced by 1: divisors.
func NonZero(v []int64) []int64 {
	out := append([]int64(nil), v...)
	for i, x := range out {
		if x == 0 {
			out[i] = 1
		}
	}
	return out
}

// FloatExtremes returns n deterministic values of float dtype t: Extremes
// rounded to t, with t's own edges mixed in (its largest finite value, its
// least normal and subnormals, ±0), all finite.
func FloatExtremes(t ir.DType, seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 37))
	var edges []float32 // the narrow formats' own edges: subnormals, the least normal, the largest, 1/3
	switch t {
	case ir.F16:
		for _, h := range []uint16{0x0001, 0x03ff, 0x0400, 0x7bff, 0x3c00, 0x3555, 0x8001, 0xfbff} {
			edges = append(edges, ir.F16Float(h))
		}
	case ir.BF16:
		for _, h := range []uint16{0x0001, 0x007f, 0x0080, 0x7f7f, 0x3f80, 0x3eab, 0x8001, 0xff7f} {
			edges = append(edges, ir.BF16Float(h))
		}
	}
	out := make([]float32, n)
	x := Extremes(seed, n)
	for i := range out {
		v := t.Round(x[i])
		if len(edges) > 0 && r.IntN(3) == 0 {
			v = edges[r.IntN(len(edges))]
		}
		if math.IsInf(float64(v), 0) || v != v {
			v = t.Round(float32(r.IntN(9) - 4))
		}
		out[i] = v
	}
	return out
}

// TypedInput adds an input of dtype t and shape s holding deterministic
// extremes of t (IntExtremes, FloatExtremes).
func TypedInput(b *ir.Builder, t ir.DType, s ir.Shape, seed uint64) ir.Tensor {
	if t.IsFloat() {
		return b.TypedInput("", t, s, FloatExtremes(t, seed, s.Len()), nil)
	}
	return b.TypedInput("", t, s, nil, IntExtremes(t, seed, s.Len()))
}

// Typed returns graphs of every dtype through every op that takes it:
// each elementwise op of the table (binary ones with divisors kept away
// from zero), its comparisons to bool, reductions and views, casts between
// every pair of dtypes (floats cast to integers only from values inside the
// range), where on every dtype, and the logical and bitwise rows. Each
// output's reference is cpuref.EvalTyped; the graphs hold no run that has
// no answer (TypedFaults has those).
func Typed() []Case { return typedOf(ir.DTypes(), ir.DTypes()) }

// typedOf is Typed's graphs of each dtype of ts, cast to each of casts.
func typedOf(ts, casts []ir.DType) []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	s := ir.Shape{3, 7}
	for _, t := range ts {
		// x and y: t's extremes, y kept away from 0 as a divisor.
		operands := func(b *ir.Builder) (x, y ir.Tensor) {
			x = TypedInput(b, t, s, uint64(t)*10+1)
			y = TypedInput(b, t, s, uint64(t)*10+2)
			if !t.IsFloat() && t != ir.Bool {
				y = b.TypedInput("", t, s, nil, NonZero(IntExtremes(t, uint64(t)*10+2, s.Len())))
			}
			return x, y
		}
		var ops []ir.Op
		for _, op := range ir.Ops() {
			info := op.Info()
			if info.Elementwise && info.ScalarOf == 0 && !info.Types.Cond && info.Types.Out != ir.OutNode && info.Types.In.Has(t) {
				ops = append(ops, op)
			}
		}
		for lo := 0; lo < len(ops); lo += 12 { // within the default 16 outputs
			add("typed/"+t.String()+"/elementwise-"+itoa(lo/12), func(b *ir.Builder) {
				x, y := operands(b)
				for _, op := range ops[lo:min(lo+12, len(ops))] {
					if op.Info().Args == 1 {
						b.Output(op.Info().Wire, x.Apply(op))
					} else {
						b.Output(op.Info().Wire, x.ApplyTo(ir.Bool, op, y))
					}
				}
			})
		}
		add("typed/"+t.String()+"/moves", func(b *ir.Builder) {
			x, y := operands(b)
			for _, op := range ir.Ops() {
				if op.IsReduction() && op.Info().Types.In.Has(t) {
					b.Output(op.Info().Wire+"-rows", x.ApplyShaped(op, ir.Shape{3, 1}))
					b.Output(op.Info().Wire+"-all", x.ApplyShaped(op, ir.Shape{}))
				}
			}
			b.Output("transpose", x.T())
			b.Output("broadcast", x.Reshape(ir.Shape{3, 1, 7}).Broadcast(ir.Shape{3, 2, 7}))
			c := TypedInput(b, ir.Bool, s, uint64(t)*10+3)
			b.Output("where", c.Where(x, y))
			rows := b.TypedInput("", ir.I64, ir.Shape{4}, nil, []int64{2, -1, 0, -3})
			cols := b.TypedInput("", ir.I32, ir.Shape{2, 2}, nil, []int64{6, -7, 0, 3})
			b.Output("gather-rows", x.Gather(rows, 0))
			b.Output("gather-cols", x.Gather(cols, -1))
			along := b.TypedInput("", ir.I64, ir.Shape{2, 3}, nil, []int64{0, -1, 6, -7, 3, 2})
			b.Output("gather-elements", x.GatherElements(along, 1))
		})
		cs = append(cs, typedScatter(t))
		add("typed/"+t.String()+"/cast", func(b *ir.Builder) {
			x, _ := operands(b)
			for _, to := range casts {
				src := x
				if t.IsFloat() && !to.IsFloat() && to != ir.Bool {
					src = b.TypedInput("", t, s, castable(t, to, uint64(t)*100+uint64(to), s.Len()), nil)
				}
				b.Output("cast-"+to.String(), src.Cast(to))
			}
		})
	}
	return cs
}

// castable returns n values of float dtype from, each a value of it that
// casts to integer dtype to without leaving its range.
func castable(from, to ir.DType, seed uint64, n int) []float32 {
	lo, hi := to.Range()
	out := FloatExtremes(from, seed, n)
	for i, v := range out {
		if _, ok := ir.FloatToInt(to, v); !ok {
			w := from.Round(float32(math.Mod(float64(v), float64(min(hi, 1<<20)))))
			if _, ok := ir.FloatToInt(to, w); !ok {
				w = from.Round(float32(lo))
			}
			out[i] = w
		}
	}
	return out
}

// RandomTyped returns a random valid graph of up to maxNodes nodes over
// every dtype: leaves of random dtypes holding their extremes, and ops of
// the table drawn from a shuffled deck, each applied to operands of a
// dtype its type rule takes (cast to it when none is at hand), so that a
// new row or dtype is generated without an edit here. Integer divisions
// may meet a zero and float-to-integer casts a value out of range: the
// reference then fails with integer_fault, and a backend must fail alike.
// Tensors stay at rank ≤ 2 and 60 elements.
func RandomTyped(seed uint64, maxNodes int) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 41))
	b := ir.NewBuilder()
	shapes := []ir.Shape{{1}, {5}, {3, 4}, {4, 3}, {2, 5}, {6, 10}}
	dtypes := ir.DTypes()
	ts := []ir.Tensor{}
	leaf := func(t ir.DType, s ir.Shape) ir.Tensor {
		var x ir.Tensor
		switch {
		case r.IntN(5) > 0:
			x = TypedInput(b, t, s, r.Uint64())
		case t.IsFloat():
			x = b.FullOf(t, s, FloatExtremes(t, r.Uint64(), 1)[0], 0)
		default:
			x = b.FullOf(t, s, 0, IntExtremes(t, r.Uint64(), 1)[0])
		}
		ts = append(ts, x)
		return x
	}
	// find returns a tensor of dtype t and shape s: one made before, a cast
	// of one of shape s, or a new leaf.
	find := func(t ir.DType, s ir.Shape) ir.Tensor {
		var same []ir.Tensor
		for _, k := range r.Perm(len(ts)) {
			if ts[k].Shape().Equal(s) {
				if ts[k].DType() == t {
					return ts[k]
				}
				same = append(same, ts[k])
			}
		}
		if len(same) > 0 && r.IntN(2) == 0 {
			c := same[0].Cast(t)
			ts = append(ts, c)
			return c
		}
		return leaf(t, s)
	}
	var deck []ir.Op
	for _, op := range ir.Ops() {
		info := op.Info()
		if info.Args > 0 && info.ScalarOf == 0 && (info.Elementwise || info.View || op.IsReduction() || info.Types.Index) && info.Types.In != ir.F32Only {
			deck = append(deck, op)
		}
	}
	leaf(dtypes[r.IntN(len(dtypes))], shapes[r.IntN(len(shapes))])
	var hand []ir.Op
	n := 2 + r.IntN(maxNodes)
	for len(ts) < n {
		if len(hand) == 0 {
			hand = append(hand, deck...)
			r.Shuffle(len(hand), func(i, j int) { hand[i], hand[j] = hand[j], hand[i] })
		}
		op := hand[0]
		hand = hand[1:]
		info := op.Info()
		var ok []ir.DType
		for _, t := range dtypes {
			if info.Types.In.Has(t) {
				ok = append(ok, t)
			}
		}
		t := ok[r.IntN(len(ok))]
		x := ts[r.IntN(len(ts))]
		if x.DType() != t || r.IntN(3) == 0 {
			x = find(t, x.Shape())
		}
		s := x.Shape()
		var y ir.Tensor
		switch {
		case op == ir.OpGatherElements:
			if len(s) == 0 {
				continue
			}
			idx := make([]int64, s.Len()) // x's shape, along the last axis
			d := s[len(s)-1]
			for k := range idx {
				idx[k] = int64(r.IntN(2*d) - d)
			}
			y = x.GatherElements(b.TypedInput("", ir.I64, s, nil, idx), -1)
		case op == ir.OpScatterND || op == ir.OpScatterElements:
			if len(s) == 0 {
				continue
			}
			y = randomScatter(r, b, op, x, find)
		case info.Types.Index:
			if len(x.Shape()) == 0 {
				continue
			}
			d := x.Shape()[0]
			idx := make([]int64, 1+r.IntN(4))
			for k := range idx {
				idx[k] = int64(r.IntN(2*d) - d) // inside [-d, d)
			}
			y = x.ApplyAttrs(op, []int{0}, b.TypedInput("", ir.I64, ir.Shape{len(idx)}, nil, idx))
		case op == ir.OpCast:
			to := dtypes[r.IntN(len(dtypes))]
			if t.IsFloat() && to.IsInt() && r.IntN(8) > 0 {
				// Mostly values inside to's range: clamped to it first.
				lo, hi := to.Range()
				h := float32(hi) / 2
				for math.IsInf(float64(t.Round(h)), 0) { // float16 ends at 65504
					h /= 2
				}
				l := t.Round(max(float32(lo)/2, -h))
				h = t.Round(h)
				x = x.Maximum(b.FullOf(t, s, l, 0)).Minimum(b.FullOf(t, s, h, 0))
			}
			y = x.Cast(to)
		case info.Types.Cond:
			y = find(ir.Bool, s).Where(x, find(t, s))
		case op.IsReduction():
			target := ir.Shape{}
			if len(s) == 2 && r.IntN(2) == 0 {
				target = ir.Shape{s[0], 1}
			}
			y = x.ApplyShaped(op, target)
		case op == ir.OpBroadcast:
			y = x.Broadcast(append(ir.Shape{2}, s...))
		case op == ir.OpReshape:
			y = x.Reshape(ir.Shape{s.Len()})
		case op == ir.OpTranspose:
			if len(s) != 2 {
				continue
			}
			y = x.T()
		case op == ir.OpPermute:
			perm := make([]int, len(s))
			for d := range perm {
				perm[d] = len(s) - 1 - d
			}
			attrs, _ := ir.PackAttrs(op, map[string][]int{"perm": perm})
			y = x.ApplyAttrs(op, attrs)
		case info.Args == 1:
			y = x.Apply(op)
		case (op == ir.OpDiv || op == ir.OpMod) && !t.IsFloat() && r.IntN(8) > 0:
			// Mostly a divisor without zeros: where(d == 0, 1, d).
			d := find(t, s)
			one := b.FullOf(t, s, 0, 1)
			y = x.ApplyTo(ir.Bool, op, d.Apply(ir.OpEqual, b.FullOf(t, s, 0, 0)).Where(one, d))
		default:
			y = x.ApplyTo(ir.Bool, op, find(t, s))
		}
		ts = append(ts, y)
	}
	for i := range min(len(ts), 1+r.IntN(4)) {
		b.Output("out"+itoa(i), ts[len(ts)-1-i])
	}
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic("irtest: random typed graph invalid: " + err.Error())
	}
	return g
}
