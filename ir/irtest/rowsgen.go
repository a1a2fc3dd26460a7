package irtest

import (
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// RandomRows returns a random composition of exp, sum, max and div over
// the rows of an input of shape [rows…, cols] (rank 2 or 3: the seed
// picks), with the reductions over the last axis, keepdims or not, and
// their results broadcast back over the rows' leaves along whatever
// leading and middle axes the shape has; sometimes a second input of the
// same shape. Its outputs are one per-leaf value computed from the rest
// (never the input or a bare broadcast) and, sometimes, one per-row value
// that the first depends on.
//
// Under the rows rule (see package passes) every such graph whose rows
// have 2 to passes.RowLeaves leaves compiles to exactly one kernel:
// Reduces reports whether that kernel reduces anything (the outputs
// depend on a reduction).
func RandomRows(seed uint64, shape ir.Shape) (g *ir.Graph, reduces bool) {
	r := rand.New(rand.NewPCG(seed, 21))
	b := ir.NewBuilder()
	rank := len(shape)
	keep := append(ir.Shape(nil), shape...)
	keep[rank-1] = 1
	type value struct {
		t    ir.Tensor
		red  bool   // depends on a reduction
		op   bool   // per-leaf and computed (not an input or a bare broadcast)
		deps uint64 // the row values it depends on, by index
	}
	leaves := []value{{t: b.Input(shape, Values(seed, shape.Len(), 4))}}
	if r.IntN(3) == 0 {
		leaves = append(leaves, value{t: b.Input(shape, Values(seed+1, shape.Len(), 2))})
	}
	var rows []value       // per-row values, of shape keep
	leaf := func() value { // the latest half the time: chains grow deep
		if r.IntN(2) == 0 {
			return leaves[len(leaves)-1]
		}
		return leaves[r.IntN(len(leaves))]
	}
	back := func(v value) value { return value{t: v.t.Broadcast(shape), red: v.red, deps: v.deps} }
	row := func(t ir.Tensor, deps uint64) value { // a new row value
		return value{t: t, red: true, deps: deps | 1<<len(rows)}
	}
	for n := 3 + r.IntN(8); n > 0; n-- {
		k := r.IntN(6)
		if len(rows) == 0 && r.IntN(2) == 0 {
			k = 1 // reduce early
		}
		switch {
		case k == 0: // exp of a leaf, or of a row value
			if len(rows) > 0 && r.IntN(4) == 0 {
				v := rows[r.IntN(len(rows))]
				rows = append(rows, row(v.t.Exp(), v.deps))
				continue
			}
			v := leaf()
			leaves = append(leaves, value{t: v.t.Exp(), red: v.red, op: true, deps: v.deps})
		case k <= 2: // a reduction over the rows, keepdims or read back to [rows…, 1]
			v := leaf()
			red := v.t.SumAxes(r.IntN(2) == 0, rank-1)
			if r.IntN(2) == 0 {
				red = v.t.MaxAxes(r.IntN(2) == 0, rank-1)
			}
			if len(red.Shape()) < rank {
				red = red.Reshape(keep)
			}
			rows = append(rows, row(red, v.deps))
		case k <= 4 && len(rows) > 0: // a leaf divided by a row value broadcast back, or the reverse
			v, w := leaf(), back(rows[r.IntN(len(rows))])
			if r.IntN(2) == 0 {
				v, w = w, v
			}
			leaves = append(leaves, value{t: v.t.Div(w.t), red: v.red || w.red, op: true, deps: v.deps | w.deps})
		case len(rows) > 1 && r.IntN(2) == 0: // two row values
			v, w := rows[r.IntN(len(rows))], rows[r.IntN(len(rows))]
			rows = append(rows, row(v.t.Div(w.t), v.deps|w.deps))
		default: // two leaves
			v, w := leaf(), leaf()
			leaves = append(leaves, value{t: v.t.Div(w.t), red: v.red || w.red, op: true, deps: v.deps | w.deps})
		}
	}
	var out value
	for i := len(leaves) - 1; i >= 0; i-- {
		if leaves[i].op {
			out = leaves[i]
			break
		}
	}
	if !out.op {
		out = value{t: leaves[0].t.Exp(), op: true}
	}
	b.Output("leaf", out.t)
	reduces = out.red
	// A row value the leaf output depends on, so that every kernel feeds
	// the leaf output's (the rule merges producers with consumers, and
	// reductions over the same rows with each other; not unrelated kernels).
	for i := len(rows) - 1; i >= 0 && r.IntN(2) == 0; i-- {
		if out.deps&(1<<i) != 0 {
			b.Output("row", rows[i].t)
			break
		}
	}
	return must(b), reduces
}
