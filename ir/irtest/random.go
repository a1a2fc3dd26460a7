package irtest

import (
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// Random returns a random valid graph of up to maxNodes nodes whose tensors
// stay small (at most 12×12), built from every op but broadcast and
// reshape. The same seed gives the same graph (named regression tests
// depend on it, so its choices never change).
func Random(seed uint64, maxNodes int) *ir.Graph { return random(seed, maxNodes, 12) }

// RandomViews is Random with broadcast and reshape among the ops, so
// tensors of rank 3 (at most 12×12×12) occur too.
func RandomViews(seed uint64, maxNodes int) *ir.Graph { return random(seed, maxNodes, 15) }

// RandomOps is RandomViews whose leaves hold Extremes (±3e38,
// subnormals, ±0, values that overflow) and whose nodes also apply every
// elementwise op of the op table, with tensor or scalar operands: the
// differential fuzzers reach overflow, underflow and NaN through it.
// Outputs may then be non-finite, which runners must report as an error.
func RandomOps(seed uint64, maxNodes int) *ir.Graph { return randomWith(seed, maxNodes, 15, true) }

// random draws each new node from the first ops cases below.
func random(seed uint64, maxNodes, ops int) *ir.Graph { return randomWith(seed, maxNodes, ops, false) }

func randomWith(seed uint64, maxNodes, ops int, extreme bool) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 3))
	b := ir.NewBuilder()
	dims := []int{1, 2, 3, 5, 8, 12}
	dim := func() int { return dims[r.IntN(len(dims))] }
	var ts []ir.Tensor
	values := func(seed uint64, n int) []float32 {
		if extreme {
			return Extremes(seed, n)
		}
		return Values(seed, n, 4)
	}
	scalar := func(v float32) float32 {
		if extreme && r.IntN(3) == 0 {
			return Extremes(r.Uint64(), 1)[0]
		}
		return v
	}
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
	var elementwise []ir.Op // every elementwise op of the table, for extreme graphs
	for _, op := range ir.Ops() {
		if op.IsElementwise() {
			elementwise = append(elementwise, op)
		}
	}
	n := 2 + r.IntN(maxNodes)
	for len(ts) < n {
		x := pick()
		s := x.Shape()
		var y ir.Tensor
		made := true
		if extreme && r.IntN(2) == 0 {
			op := elementwise[r.IntN(len(elementwise))]
			switch info := op.Info(); {
			case info.Args == 2:
				y = x.Apply(op, sameShape(s))
			case info.Scalar:
				y = x.ApplyScalar(op, scalar(float32(r.IntN(7)-3)/2))
			default:
				y = x.Apply(op)
			}
			ts = append(ts, y)
			continue
		}
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
