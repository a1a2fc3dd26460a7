package passes

import "github.com/gpucc/gpucc/ir"

// Cost is what one kernel does: its arithmetic and the memory it must
// move. It is the unit of the plan's cost model (see sinkCost) and what
// `gpucc build --explain` prints per kernel.
//
// Flops counts operations as the op table does (OpInfo.Cost: one for an
// add or a compare-and-select, the operations of its expression for exp
// or div, which targets emulate exactly), once per element a body value is
// computed for; a matmul adds its 2·M·K·N and a reduction one combine per
// leaf it folds. Bytes are compulsory traffic: each bound buffer, whole,
// once per binding (an input read through stride-0 broadcast dimensions
// counts its buffer, not the elements it is read as), so that caches and
// the re-reads of tiled matmuls are not in it.
type Cost struct {
	Flops        int64 `json:"flops"`
	BytesRead    int64 `json:"bytesRead"`
	BytesWritten int64 `json:"bytesWritten"`
}

// Add returns c + d.
func (c Cost) Add(d Cost) Cost {
	return Cost{ir.SatAdd(c.Flops, d.Flops), ir.SatAdd(c.BytesRead, d.BytesRead), ir.SatAdd(c.BytesWritten, d.BytesWritten)}
}

// KernelCost returns the cost of kernel k of program p.
func KernelCost(p *ir.Program, k *ir.Kernel) Cost {
	c := Cost{Flops: KernelFlops(k)}
	for _, in := range k.Inputs {
		c.BytesRead = ir.SatAdd(c.BytesRead, 4*int64(p.Buffers[in.Buffer].Len))
	}
	for _, o := range k.Outputs {
		c.BytesWritten = ir.SatAdd(c.BytesWritten, 4*int64(p.Buffers[o].Len))
	}
	return c
}

// ProgramCost returns the sum of the costs of p's kernels.
func ProgramCost(p *ir.Program) Cost {
	var c Cost
	for i := range p.Kernels {
		c = c.Add(KernelCost(p, &p.Kernels[i]))
	}
	return c
}

// KernelFlops returns the operations kernel k runs (see Cost):
//
//   - elementwise: the body's operations for each element of Shape;
//   - matmul: 2·M·K·N, and the epilogue's operations for each of M·N;
//   - sum: the prologue's operations for each leaf, one combine per leaf
//     beyond the first of each output (or of each block, when split), and
//     the epilogue's operations for each output;
//   - conv: 2 for each product (ir.Conv2D.Taps per output), and the
//     epilogue's operations for each output;
//   - pool: one maximum for each tap per output, and the epilogue's;
//   - conv_transpose, pool_grad, resize and pad: the op table's cost of
//     the node they compute, and the epilogue's operations per output;
//   - life: the op table's cost of the step;
//   - rows: the sum of its parts', which it runs with the row resident.
//
// The count is the kind's row of the kernel table (ir.KernelInfo.Flops).
func KernelFlops(k *ir.Kernel) int64 { return k.Kind.Info().Flops(k) }
