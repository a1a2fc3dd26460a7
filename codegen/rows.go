package codegen

import (
	"fmt"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// RowPlan is the schedule of a rows kernel (ir.KernelRows) that every
// target follows: for each row, the per-row values of level 0, then
// Passes passes over the row's leaves, pass d evaluating the per-leaf
// values of level d (reading earlier passes' values from a per-leaf cache)
// and feeding the reductions of level d+1, each reduced by the reference
// tree at the end of the pass, then the per-row values of level d+1.
type RowPlan struct {
	Red    ir.Reduction
	P      int // leaves per row padded to a power of two
	Passes int
	Row    []bool // per body value: per row
	// Cached marks the per-leaf values other than loads that a later pass
	// reads (a later pass loads again what it reads of an operand).
	Cached []bool
	// Leaf[d] are the per-leaf values pass d evaluates, in body order;
	// Reads[d] the cached values of earlier passes that they (or the
	// reductions of the pass) read; Accs[d] the reductions at its end.
	Leaf, Reads, Accs [][]int
	// RowAt[d] are the per-row values of level d, in body order.
	RowAt [][]int
	// LeafStores[d] are the stores (indices into Stores) of per-leaf
	// values of pass d; RowStores[d] those of per-row values of level d.
	LeafStores, RowStores [][]int
	// Render, when it has body value j, renders j's declaration in a leaf
	// pass instead of Instr: a target's own schedule of the same bits
	// (WGSL's division by a per-row divisor, say).
	Render map[int]func() []string
	// AccLeaf, when it has reduction j, renders the leaf value v that a leaf
	// pass hands to it (WGSL's max by order keys, say); else v.
	AccLeaf map[int]func(v string) string
	// LeafStore, when it has store s (an index into Stores), renders the
	// store of per-leaf value v to output s in a leaf pass (WGSL's vec4
	// outputs, RowVec4, say); else out<s>[i] = v.
	LeafStore map[int]func(v string) string
}

// PlanRows returns the schedule of rows kernel k.
func PlanRows(k *ir.Kernel) RowPlan {
	pl := RowPlan{Red: ir.ReductionOf(k.Shape, k.Keep), Passes: k.Passes(), Row: k.RowValues()}
	pl.P, _ = SumBlock(pl.Red.Leaves, 1)
	lv := k.Levels()
	pl.Cached = make([]bool, len(k.Body))
	pl.Leaf, pl.Reads, pl.Accs = make([][]int, pl.Passes), make([][]int, pl.Passes), make([][]int, pl.Passes)
	pl.LeafStores = make([][]int, pl.Passes)
	pl.RowAt, pl.RowStores = make([][]int, pl.Passes+1), make([][]int, pl.Passes+1)
	read := func(d, a int) {
		if !pl.Row[a] && lv[a] < d {
			pl.Cached[a] = k.Body[a].Kind != ir.InstrLoad // loads are read again
			if !slices.Contains(pl.Reads[d], a) {
				pl.Reads[d] = append(pl.Reads[d], a)
			}
		}
	}
	for j, in := range k.Body {
		switch {
		case in.Kind == ir.InstrAcc:
			d := lv[j] - 1
			pl.Accs[d] = append(pl.Accs[d], j)
			read(d, int(in.Args[0]))
			pl.RowAt[lv[j]] = append(pl.RowAt[lv[j]], j)
		case pl.Row[j]:
			pl.RowAt[lv[j]] = append(pl.RowAt[lv[j]], j)
		default:
			d := lv[j]
			pl.Leaf[d] = append(pl.Leaf[d], j)
			if in.Kind == ir.InstrOp {
				for a := 0; a < in.Op.Info().Args; a++ {
					read(d, int(in.Args[a]))
				}
			}
		}
	}
	for s, v := range k.Stores {
		if pl.Row[v] {
			pl.RowStores[lv[v]] = append(pl.RowStores[lv[v]], s)
		} else {
			pl.LeafStores[lv[v]] = append(pl.LeafStores[lv[v]], s)
		}
	}
	for d := range pl.Reads {
		slices.Sort(pl.Reads[d])
	}
	return pl
}

// RowDivisions returns, for each division of k evaluated per leaf whose
// divisor is a per-row value, the divisor's body index, by the division's.
func (pl RowPlan) RowDivisions(k *ir.Kernel) map[int]int {
	divs := map[int]int{}
	for d := range pl.Leaf {
		for _, j := range pl.Leaf[d] {
			in := k.Body[j]
			if in.Kind == ir.InstrOp && in.Op == ir.OpDiv && pl.Row[in.Args[1]] && !pl.Row[in.Args[0]] {
				divs[j] = int(in.Args[1])
			}
		}
	}
	return divs
}

// CacheLoads marks, besides Cached's values, the per-leaf loads that a
// later pass reads, so that a target whose threads keep their leaves in
// registers reads each leaf of an operand from memory once per row rather
// than once per pass.
func (pl *RowPlan) CacheLoads(k *ir.Kernel) {
	for d := range pl.Reads {
		for _, j := range pl.Reads[d] {
			if k.Body[j].Kind == ir.InstrLoad {
				pl.Cached[j] = true
			}
		}
	}
}

// Reread renders, for pass d, the values of earlier passes that it
// reads: a load again, else from the cache, named cache(j).
func (pl RowPlan) Reread(l Lang, k *ir.Kernel, d int, load func(operand int) string, cache func(j int) string) []string {
	var lines []string
	for _, j := range pl.Reads[d] {
		if pl.Cached[j] {
			lines = append(lines, l.Let(ir.XFloat32, Value(j), cache(j)))
		} else {
			lines = append(lines, Instr(l, k, j, load, "")...)
		}
	}
	return lines
}

// LeafPass renders pass d's body for the leaf at index i: the values of
// earlier passes it reads, its per-leaf values (caching in c<j>[slot] those
// a later pass reads), the leaf's part a<j>[slot] of each reduction of the
// pass, and the stores out<s>[i] of its per-leaf values (or LeafStore's
// rendering). load renders the read of an operand at i; every target
// wraps these lines in its own loop over the row's leaves.
func (pl RowPlan) LeafPass(l Lang, k *ir.Kernel, d int, load func(operand int) string, slot string) []string {
	lines := pl.Reread(l, k, d, load, func(j int) string { return fmt.Sprintf("c%d[%s]", j, slot) })
	for _, j := range pl.Leaf[d] {
		if r, ok := pl.Render[j]; ok {
			lines = append(lines, r()...)
		} else {
			lines = append(lines, Instr(l, k, j, load, "")...)
		}
		if pl.Cached[j] {
			lines = append(lines, fmt.Sprintf("c%d[%s] = %s;", j, slot, Value(j)))
		}
	}
	for _, j := range pl.Accs[d] {
		v := Value(int(k.Body[j].Args[0]))
		if f, ok := pl.AccLeaf[j]; ok {
			v = f(v)
		}
		lines = append(lines, fmt.Sprintf("a%d[%s] = %s;", j, slot, v))
	}
	for _, s := range pl.LeafStores[d] {
		v := Value(int(k.Stores[s]))
		if f, ok := pl.LeafStore[s]; ok {
			lines = append(lines, f(v))
			continue
		}
		lines = append(lines, fmt.Sprintf("out%d[i] = %s;", s, v))
	}
	return lines
}

// Instr renders body value j of k alone (see BodyRange): load renders the
// read of an operand, acc an InstrAcc's value.
func Instr(l Lang, k *ir.Kernel, j int, load func(operand int) string, acc string) []string {
	return BodyRange(l, k, j, j+1, load, acc)
}

// CombineOp renders, as declarations ending in name, combining op c (a
// reduction's ir.OpInfo.Combine: add, maximum) applied to a and b.
func CombineOp(l Lang, c ir.Op, a, b, name string) []string {
	return expr(l, c.Info().Expr, name, []string{a, b}, false, func(float32) string {
		panic("codegen: combining op " + c.String() + " has a float constant")
	})
}
