package cpuref

import (
	"github.com/gpucc/gpucc/ir"
)

// runRows executes a rows kernel (ir.KernelRows) with the reference
// semantics, value by value in body order over its whole space: a per-leaf
// value over every element of k.Shape, a per-row value over every row, a
// reduction by the reference tree of each row (reduce), a per-row argument
// of a per-leaf op read at the leaf's row. It does not run k.Parts: it is
// the meaning of the fused body itself, which the code generators render.
//
// It checks halt before each value and returns early once it reports true.
func runRows(k *ir.Kernel, bufs [][]float32, halt func() bool) {
	n, rows := k.Shape.Len(), k.Keep.Len()
	red := ir.ReductionOf(k.Shape, k.Keep)
	rowOf := make([]int32, n) // the row of each leaf
	for o := range red.Outputs {
		base := ir.Offset(red.Kept, o)
		for r := range red.Leaves {
			rowOf[base+ir.Offset(red.Reduced, r)] = int32(o)
		}
	}
	row := k.RowValues()
	vals := make([][]float32, len(k.Body))
	// leafOf returns value j over the leaves: a per-row value repeated.
	leafOf := func(j int32) []float32 {
		if !row[j] {
			return vals[j]
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = vals[j][rowOf[i]]
		}
		return v
	}
	var scratch []uint32
	for j, in := range k.Body {
		if halt() {
			return
		}
		m := n
		if row[j] {
			m = rows
		}
		v := make([]float32, m)
		switch in.Kind {
		case ir.InstrConst:
			for i := range v {
				v[i] = in.Scalar
			}
		case ir.InstrLoad:
			op := k.Inputs[in.Operand]
			Gather(op, bufs[op.Buffer], 0, v)
		case ir.InstrAcc:
			v = exact.reduce(in.Op, leafOf(in.Args[0]), k.Shape, k.Keep, 1)
		case ir.InstrOp:
			prog := compile(in.Op.Info().Expr)
			if need := len(prog) * chunk; need > len(scratch) {
				scratch = make([]uint32, need)
			}
			arg := func(a int32) []float32 {
				if row[j] {
					return vals[a]
				}
				return leafOf(a)
			}
			a := arg(in.Args[0])
			var b []float32
			if in.Op.Info().Args == 2 {
				b = arg(in.Args[1])
			}
			for lo := 0; lo < m; lo += chunk {
				hi := min(lo+chunk, m)
				var bs []float32
				if b != nil {
					bs = b[lo:hi]
				}
				prog.runSlice(v[lo:hi], a[lo:hi], bs, in.Scalar, exact, scratch)
			}
		}
		vals[j] = v
	}
	for s, o := range k.Outputs {
		copy(bufs[o], vals[k.Stores[s]])
	}
}
