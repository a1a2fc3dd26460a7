package ir

import (
	"fmt"
	"slices"
)

// A rows kernel (KernelRows) keeps each row of its iteration space
// resident while it reduces it and reads the results back: softmax is one
// such kernel (max, then exp(x - max) and its sum, then the division).
//
// Shape is the iteration space and Keep the kept shape of every
// reduction in the kernel (Shape with 1 at each reduced axis, as for
// KernelReduce; [] for the whole tensor). A row is one output o of
// ReductionOf(Shape, Keep), its leaves the elements it covers; every row
// has at least two. Each Body value is per leaf (one per element i of
// Shape, row-major) or per row (one per element o of Keep):
//
//   - InstrConst is per row (the same value everywhere);
//   - InstrLoad is per row when its operand has Keep's length (read at o),
//     else per leaf (read at i);
//   - InstrAcc is per row: the reduction by Instr.Op (a row of the op
//     table with a Combine: sum, max) of value Args[0] over the leaves of
//     the row, by the reference's pairwise tree (cpuref);
//   - InstrOp is per row when every argument is, else per leaf, where a
//     per-row argument is the value of the leaf's row.
//
// Outputs of Keep's length store per-row values at o; the others store
// per-leaf values at i. Levels give the order of evaluation: a code
// generator runs Passes(k) passes over each row, pass d computing the
// per-leaf values of level d and the reductions of level d+1.
//
// Parts are the kernels that the rows kernel replaces, in order: writing,
// besides the rows kernel's outputs, the buffers it keeps in registers,
// which are Scratch (buffer -1-j of a part is Scratch[j]). A target that
// cannot keep rows resident (GLSL ES, whose fragment shaders write one
// value per pass) runs Program.Unfused instead, with the same results.

// RowValues reports, for each Body value of rows kernel k, whether it is
// per row (see KernelRows).
func (k *Kernel) RowValues() []bool {
	row := make([]bool, len(k.Body))
	for j, in := range k.Body {
		switch in.Kind {
		case InstrConst, InstrAcc:
			row[j] = true
		case InstrLoad:
			row[j] = k.Inputs[in.Operand].Shape.Len() == k.Keep.Len()
		case InstrOp:
			row[j] = true
			for a := 0; a < in.Op.Info().Args; a++ {
				row[j] = row[j] && row[in.Args[a]]
			}
		}
	}
	return row
}

// Levels returns each Body value's level in rows kernel k: 0 for loads
// and constants, one more than its argument's for an InstrAcc, and the
// largest of its arguments' for an op.
func (k *Kernel) Levels() []int {
	lv := make([]int, len(k.Body))
	for j, in := range k.Body {
		switch in.Kind {
		case InstrAcc:
			lv[j] = lv[in.Args[0]] + 1
		case InstrOp:
			for a := 0; a < in.Op.Info().Args; a++ {
				lv[j] = max(lv[j], lv[in.Args[a]])
			}
		}
	}
	return lv
}

// Passes returns how many passes over each row rows kernel k needs: one
// more than the largest level of a per-leaf value or a reduced value.
func (k *Kernel) Passes() int {
	row, lv := k.RowValues(), k.Levels()
	n := 1
	for j, in := range k.Body {
		if !row[j] {
			n = max(n, lv[j]+1)
		}
		if in.Kind == InstrAcc {
			n = max(n, lv[j])
		}
	}
	return n
}

// validateRows checks a rows kernel, returning "" or what is wrong.
func validateRows(p *Program, k *Kernel) string {
	if _, err := reduceShape(-1, OpSum, []Shape{k.Shape}, k.Keep, nil); err != nil {
		return fmt.Sprintf("keeps %v of %v: %s", k.Keep, k.Shape, err.Msg)
	}
	if k.Shape.Len() < 2*k.Keep.Len() {
		return fmt.Sprintf("rows of %v in %v have fewer than two leaves", k.Keep, k.Shape)
	}
	if k.Reduce != 0 || k.Blocks > 1 {
		return "a rows kernel names its reductions in its InstrAccs, unsplit"
	}
	if len(k.Stores) != len(k.Outputs) {
		return fmt.Sprintf("%d stores for %d outputs", len(k.Stores), len(k.Outputs))
	}
	accs := 0
	for j, in := range k.Body {
		if in.Kind == InstrAcc {
			accs++
			if in.Op.Info().Combine == 0 || in.Args[0] < 0 || int(in.Args[0]) >= j {
				return fmt.Sprintf("v%d reduces v%d by %v: want an earlier value and a reduction", j, in.Args[0], in.Op)
			}
		}
	}
	if accs == 0 {
		return "a rows kernel reduces something"
	}
	for j, in := range k.Body {
		if in.Kind == InstrLoad && in.Operand >= 0 && in.Operand < len(k.Inputs) {
			if n := k.Inputs[in.Operand].Shape.Len(); n != k.Shape.Len() && n != k.Keep.Len() {
				return fmt.Sprintf("v%d loads %d elements, want %d or %d", j, n, k.Shape.Len(), k.Keep.Len())
			}
		}
	}
	row := k.RowValues()
	for j, o := range k.Outputs {
		n := p.Buffers[o].Len
		if n != k.Shape.Len() && n != k.Keep.Len() {
			return fmt.Sprintf("output buf%d has %d elements, want %d or %d", o, n, k.Shape.Len(), k.Keep.Len())
		}
		if s := k.Stores[j]; s >= 0 && int(s) < len(k.Body) && n == k.Keep.Len() && !row[s] {
			return fmt.Sprintf("output buf%d of a row's length stores per-leaf v%d", o, s)
		}
		if s := k.Stores[j]; s >= 0 && int(s) < len(k.Body) && n != k.Keep.Len() && row[s] {
			return fmt.Sprintf("output buf%d of %d elements stores per-row v%d, which a rows kernel writes once per row", o, n, s)
		}
	}
	if len(k.Parts) == 0 || slices.ContainsFunc(k.Parts, func(q Kernel) bool { return q.Kind == KernelRows }) {
		return "a rows kernel needs its parts, none of them rows kernels"
	}
	return ""
}

func (p *Program) hasRows() bool {
	return slices.ContainsFunc(p.Kernels, func(k Kernel) bool { return k.Kind == KernelRows })
}

// Unfused returns p with each rows kernel replaced by its parts and their
// scratch buffers appended to the buffers (see KernelRows): the program a
// target without rows kernels runs. It computes the same outputs, bit for
// bit (Sealed.Unfused is the sealed form).
func (p *Program) Unfused() *Program {
	if !p.hasRows() {
		return p
	}
	q := &Program{Buffers: slices.Clone(p.Buffers), Outputs: p.Outputs}
	for _, k := range p.Kernels {
		if k.Kind != KernelRows {
			q.Kernels = append(q.Kernels, k)
			continue
		}
		base := len(q.Buffers)
		q.Buffers = append(q.Buffers, k.Scratch...)
		at := func(b int) int {
			if b < 0 {
				return base - 1 - b
			}
			return b
		}
		for _, part := range k.Parts {
			part.Inputs = slices.Clone(part.Inputs)
			for i := range part.Inputs {
				part.Inputs[i].Buffer = at(part.Inputs[i].Buffer)
			}
			part.Outputs = slices.Clone(part.Outputs)
			for i := range part.Outputs {
				part.Outputs[i] = at(part.Outputs[i])
			}
			q.Kernels = append(q.Kernels, part)
		}
	}
	return q
}
