package irtest

import (
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// Random returns a random valid graph of up to maxNodes nodes whose tensors
// stay small (at most 12×12), built from the seed's ops (add, sub, mul,
// their scalar forms, relu, positive, transpose, matmul, sum, life) over
// ordinary values. The same seed gives the same graph (named regression
// tests depend on it, so its choices never change); RandomOps covers the
// whole op table.
func Random(seed uint64, maxNodes int) *ir.Graph { return random(seed, maxNodes, 12) }

// RandomViews is Random with broadcast and reshape among the ops, so
// tensors of rank 3 (at most 12×12×12) occur too.
func RandomViews(seed uint64, maxNodes int) *ir.Graph { return random(seed, maxNodes, 15) }

// random draws each new node from the first ops cases below. Its choices
// are frozen: named regressions (passes.TestRegressions,
// host.TestBackendRegressions) and the stored fuzz corpora name graphs by
// seed. New ops reach the fuzzers through RandomOps, which asks the table.
func random(seed uint64, maxNodes, ops int) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 3))
	b := ir.NewBuilder()
	dims := []int{1, 2, 3, 5, 8, 12}
	dim := func() int { return dims[r.IntN(len(dims))] }
	var ts []ir.Tensor
	values := func(seed uint64, n int) []float32 { return Values(seed, n, 4) }
	scalar := func(v float32) float32 { return v }
	leaf := func() ir.Tensor {
		s := ir.Shape{dim(), dim()}
		if r.IntN(4) == 0 {
			return b.Full(s, scalar(float32(r.IntN(9)-4)/2))
		}
		return b.Input(s, values(r.Uint64(), s.Len()))
	}
	ts = append(ts, leaf())
	pick := func() ir.Tensor { return ts[r.IntN(len(ts))] }
	// sameShape finds or makes a tensor of shape s.
	sameShape := func(s ir.Shape) ir.Tensor {
		for _, k := range r.Perm(len(ts)) {
			if ts[k].Shape().Equal(s) {
				return ts[k]
			}
		}
		if r.IntN(3) == 0 {
			return b.Full(s, scalar(float32(r.IntN(9)-4)/4))
		}
		return b.Input(s, values(r.Uint64(), s.Len()))
	}
	n := 2 + r.IntN(maxNodes)
	for len(ts) < n {
		x := pick()
		s := x.Shape()
		var y ir.Tensor
		made := true
		switch r.IntN(ops) {
		case 0:
			y = x.Add(sameShape(s))
		case 1:
			y = x.Sub(sameShape(s))
		case 2:
			y = x.Mul(sameShape(s))
		case 3:
			y = x.AddScalar(float32(r.IntN(7)-3) / 2)
		case 4:
			y = x.MulScalar(float32(r.IntN(7)-3) / 3)
		case 5:
			y = x.Relu()
		case 6:
			y = x.Positive()
		case 7:
			made = len(s) == 2
			if made {
				y = x.T()
			}
		case 8:
			made = len(s) == 2
			if made {
				w := sameShape(ir.Shape{s[1], dim()})
				if r.IntN(2) == 0 {
					w = sameShape(ir.Shape{dim(), s[1]}).T()
				}
				y = x.MatMul(w)
			}
		case 9:
			y = x.Sum()
		case 10:
			made = len(s) == 2
			if made {
				y = x.Positive().Life()
			}
		case 11:
			y = x.SubScalar(1).Mul(x)
		case 12: // a trailing broadcast, as a bias add
			switch {
			case r.IntN(3) == 0:
				y = x.Sum().Broadcast(s).Mul(x)
			case len(s) < 3:
				big := append(ir.Shape{dim()}, s...)
				y = sameShape(big).Add(x.Broadcast(big))
			default:
				made = false
			}
		case 13: // reshape: flatten, or fold a flat tensor into two dimensions
			switch {
			case len(s) == 1 && s[0]%2 == 0:
				y = x.Reshape(ir.Shape{2, s[0] / 2})
			case len(s) == 1:
				made = false
			default:
				y = x.Reshape(ir.Shape{s.Len()})
			}
		case 14: // a broadcast of a view, which fusion may have to materialise
			made = len(s) == 2
			if made {
				y = x.T().Broadcast(ir.Shape{dim(), s[1], s[0]}).MulScalar(2)
			}
		}
		if !made {
			continue
		}
		ts = append(ts, y)
	}
	outs := 1 + r.IntN(3)
	for i := 0; i < outs; i++ {
		b.Output("out"+itoa(i), ts[len(ts)-1-r.IntN(min(len(ts), 4))])
	}
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic("irtest: random graph invalid: " + err.Error())
	}
	return g
}

// RandomOps returns a random valid graph of up to maxNodes nodes that
// applies the ops of the op table, walked through ir.Ops(), so a new row
// is generated without an edit here: every op but the leaves, tensor and
// scalar forms, views (also of views, so strided operands occur), and
// whatever targets a Shaped op's shape rule accepts. Its leaves hold
// Extremes (±3e38, subnormals, ±0, values that overflow) and some scalar
// operands too, so the differential fuzzers reach overflow, underflow and
// NaN through it; outputs may be non-finite, which runners must report as
// an error. Ops are drawn from a shuffled deck of the whole table, so a
// graph of n nodes applies min(n, number of ops) distinct ones. Tensors
// stay at rank ≤ 3 and 1,728 elements.
func RandomOps(seed uint64, maxNodes int) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 19))
	b := ir.NewBuilder()
	dims := []int{1, 2, 3, 5, 8, 12}
	dim := func() int { return dims[r.IntN(len(dims))] }
	scalar := func() float32 {
		if r.IntN(3) == 0 {
			return Extremes(r.Uint64(), 1)[0]
		}
		return float32(r.IntN(7)-3) / 2
	}
	leaf := func(s ir.Shape) ir.Tensor {
		if r.IntN(4) == 0 {
			return b.Full(s, scalar())
		}
		return b.Input(s, Extremes(r.Uint64(), s.Len()))
	}
	ts := []ir.Tensor{leaf(ir.Shape{dim(), dim()})}
	// like finds or makes a tensor of shape s: sometimes the transpose of
	// one of the reversed shape, so operands are strided.
	like := func(s ir.Shape) ir.Tensor {
		if len(s) == 2 && r.IntN(4) == 0 {
			return leaf(ir.Shape{s[1], s[0]}).T()
		}
		for _, k := range r.Perm(len(ts)) {
			if ts[k].Shape().Equal(s) {
				return ts[k]
			}
		}
		return leaf(s)
	}
	var deck []ir.Op
	for _, op := range ir.Ops() {
		if op.Info().Args > 0 && !op.Info().Typed { // float32 graphs: RandomTyped draws the typed rows
			deck = append(deck, op)
		}
	}
	var views []ir.Op
	for _, op := range deck {
		if op.IsView() {
			views = append(views, op)
		}
	}
	var hand []ir.Op
	n := 2 + r.IntN(maxNodes)
	for len(ts) < n {
		if len(hand) == 0 {
			hand = append(hand, deck...)
			r.Shuffle(len(hand), func(i, j int) { hand[i], hand[j] = hand[j], hand[i] })
		}
		op := hand[0]
		hand = hand[1:]
		// An op that fits none of the tensors so far gets a fresh 2-D
		// leaf, which every op of the table takes.
		x := ts[r.IntN(len(ts))]
		if r.IntN(2) == 0 { // chains: views of views, prologues of reductions
			x = ts[len(ts)-1-r.IntN(min(len(ts), 3))]
		}
		y, ok := applyRandom(r, op, x, like, dim, scalar)
		if !ok {
			y, ok = applyRandom(r, op, leaf(ir.Shape{dim(), dim()}), like, dim, scalar)
		}
		if !ok {
			continue
		}
		ts = append(ts, y)
		if op.IsView() && r.IntN(2) == 0 { // a view of a view: strides compose
			if z, ok := applyRandom(r, views[r.IntN(len(views))], y, like, dim, scalar); ok {
				ts = append(ts, z)
			}
		}
	}
	outs := 1 + r.IntN(3)
	for i := 0; i < outs; i++ {
		b.Output("out"+itoa(i), ts[len(ts)-1-r.IntN(min(len(ts), 4))])
	}
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic("irtest: random graph invalid: " + err.Error())
	}
	return g
}

// maxRandomElements bounds RandomOps' tensors (12×12×12).
const maxRandomElements = 12 * 12 * 12

// applyRandom applies op to x and operands or a target that op's row's
// shape rule accepts, or reports false when none of the candidates fits.
func applyRandom(r *rand.Rand, op ir.Op, x ir.Tensor, like func(ir.Shape) ir.Tensor, dim func() int, scalar func() float32) (ir.Tensor, bool) {
	info := op.Info()
	s := x.Shape()
	fits := func(out ir.Shape) bool { return len(out) <= 3 && out.Len() <= maxRandomElements }
	switch {
	case len(info.Attrs) > 0: // attributed ops (conv2d, …) have their own generators
		gen, ok := attributed[op]
		if !ok {
			return ir.Tensor{}, false
		}
		return gen(r, x, like)
	case info.Scalar:
		return x.ApplyScalar(op, scalar()), true
	case info.Shaped:
		for _, k := range r.Perm(len(targets)) {
			if t := targets[k](s, dim); t != nil && !t.Equal(s) && fits(t) && ir.CheckTarget(0, op, s, t) == nil {
				return x.ApplyShaped(op, t), true
			}
		}
		return ir.Tensor{}, false
	case info.Args == 1:
		if out, err := ir.InferShape(0, op, []ir.Shape{s}, nil); err != nil || !fits(out) {
			return ir.Tensor{}, false
		}
		return x.Apply(op), true
	}
	// Two arguments: the second of a shape from the candidates (an
	// elementwise op's operands broadcast by numpy's rule, which the
	// Builder lowers to broadcast nodes).
	for _, k := range r.Perm(len(seconds)) {
		u := seconds[k](s, dim)
		if u == nil {
			continue
		}
		out, err := ir.InferShape(0, op, []ir.Shape{s, u}, nil)
		if b, ok := ir.BroadcastShape(s, u); info.Elementwise && ok {
			out, err = b, nil
		}
		if err == nil && fits(out) {
			return x.Apply(op, like(u)), true
		}
	}
	return ir.Tensor{}, false
}

// seconds propose the second argument's shape from the first's s (nil:
// none): s itself, a trailing suffix (a bias row), s with a dim of 1
// (numpy's broadcast of one operand), s with a dim of 1 widened (both
// operands broadcast), a matmul's right operand.
var seconds = []func(s ir.Shape, dim func() int) ir.Shape{
	func(s ir.Shape, _ func() int) ir.Shape { return s },
	func(s ir.Shape, dim func() int) ir.Shape {
		if len(s) == 0 {
			return nil
		}
		t := append(ir.Shape{}, s...)
		t[dim()%len(s)] = 1
		return t
	},
	func(s ir.Shape, dim func() int) ir.Shape {
		for i, d := range s {
			if d == 1 {
				t := append(ir.Shape{}, s...)
				t[i] = dim()
				return t
			}
		}
		return nil
	},
	func(s ir.Shape, _ func() int) ir.Shape {
		if len(s) == 0 {
			return nil
		}
		return s[1:]
	},
	func(s ir.Shape, dim func() int) ir.Shape {
		if len(s) != 2 {
			return nil
		}
		return ir.Shape{s[1], dim()}
	},
}

// targets propose a Shaped op's target from its argument's shape s (nil:
// none): a new leading dim (a broadcast), a dim of 1 made wider, s with
// one or every dim reduced to 1 (keepdims reductions), [] (a whole
// reduction), s flattened, and a flat tensor folded in two.
var targets = []func(s ir.Shape, dim func() int) ir.Shape{
	func(s ir.Shape, dim func() int) ir.Shape { return append(ir.Shape{dim()}, s...) },
	func(s ir.Shape, dim func() int) ir.Shape {
		for i, d := range s {
			if d == 1 {
				t := append(ir.Shape{}, s...)
				t[i] = dim()
				return t
			}
		}
		return nil
	},
	func(s ir.Shape, dim func() int) ir.Shape {
		if len(s) == 0 {
			return nil
		}
		t := append(ir.Shape{}, s...)
		t[dim()%len(s)] = 1
		return t
	},
	func(s ir.Shape, _ func() int) ir.Shape {
		t := make(ir.Shape, len(s))
		for i := range t {
			t[i] = 1
		}
		return t
	},
	func(ir.Shape, func() int) ir.Shape { return ir.Shape{} },
	func(s ir.Shape, _ func() int) ir.Shape { return ir.Shape{s.Len()} },
	func(s ir.Shape, _ func() int) ir.Shape {
		if n := s.Len(); n%2 == 0 {
			return ir.Shape{2, n / 2}
		}
		return nil
	},
}

// attributed generates, for each op with attributes, a node over x (or a
// view of it) with random attributes that its shape rule accepts.
var attributed = map[ir.Op]func(r *rand.Rand, x ir.Tensor, like func(ir.Shape) ir.Tensor) (ir.Tensor, bool){
	ir.OpMaxPool2D: func(r *rand.Rand, x ir.Tensor, _ func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		switch {
		case len(s) == 0:
			x = x.Reshape(ir.Shape{1, 1, 1, 1})
		case len(s) != 4:
			x = x.Reshape(ir.Shape{1, 1, s.Len() / s[len(s)-1], s[len(s)-1]})
		}
		s = x.Shape()
		kh, kw := 1+r.IntN(min(3, s[2])), 1+r.IntN(min(3, s[3]))
		y := x.MaxPool2D(map[string][]int{"kernel_shape": {kh, kw}, "pads": {r.IntN(kh), r.IntN(kw), r.IntN(kh), r.IntN(kw)},
			"strides": {1 + r.IntN(2), 1 + r.IntN(2)}})
		return y, y.Shape() != nil
	},
	ir.OpMaxPool2DGrad: func(r *rand.Rand, x ir.Tensor, like func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		switch {
		case len(s) == 0:
			x = x.Reshape(ir.Shape{1, 1, 1, 1})
		case len(s) != 4:
			x = x.Reshape(ir.Shape{1, 1, s.Len() / s[len(s)-1], s[len(s)-1]})
		}
		s = x.Shape()
		kh, kw := 1+r.IntN(min(3, s[2])), 1+r.IntN(min(3, s[3]))
		a := map[string][]int{"kernel_shape": {kh, kw}, "pads": {r.IntN(kh), r.IntN(kw), r.IntN(kh), r.IntN(kw)},
			"strides": {1 + r.IntN(2), 1 + r.IntN(2)}}
		y := x.MaxPool2D(a).Shape()
		if y == nil {
			return ir.Tensor{}, false
		}
		d := x.MaxPool2DGrad(like(y), a)
		return d, d.Shape() != nil
	},
	ir.OpPermute: func(r *rand.Rand, x ir.Tensor, _ func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		if len(x.Shape()) == 0 {
			return ir.Tensor{}, false
		}
		return x.Permute(r.Perm(len(x.Shape()))...), true
	},
	ir.OpConv2D: func(r *rand.Rand, x ir.Tensor, like func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		switch {
		case len(s) == 0:
			x = x.Reshape(ir.Shape{1, 1, 1, 1})
		case len(s) != 4: // x as one image of one channel: a reshape, read in place
			x = x.Reshape(ir.Shape{1, 1, s.Len() / s[len(s)-1], s[len(s)-1]})
		}
		s = x.Shape()
		pads := []int{r.IntN(3), r.IntN(3), r.IntN(3), r.IntN(3)}
		kh, kw := 1+r.IntN(min(3, s[2]+pads[0]+pads[2])), 1+r.IntN(min(3, s[3]+pads[1]+pads[3]))
		g := 1
		if s[1] > 1 && r.IntN(2) == 0 {
			g = s[1] // depthwise
		}
		m := g * (1 + r.IntN(2))
		w := like(ir.Shape{m, s[1] / g, kh, kw})
		y := x.Conv2D(w, map[string][]int{"pads": pads, "strides": {1 + r.IntN(2), 1 + r.IntN(2)}, "group": {g}})
		if out := y.Shape(); out == nil || out.Len() > maxRandomElements {
			return ir.Tensor{}, false
		}
		return y, true
	},
}
