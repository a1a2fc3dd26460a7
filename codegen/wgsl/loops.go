package wgsl

import (
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// LoopBudget is ir.LoopBudget, the loop iterations one invocation may
// run. The generators keep every loop whose trip count is known at
// generation time unrolled, so that only a matmul's k-tile loop and a
// sum's per-thread leaf loop remain, and Generate refuses a kernel whose
// LoopCost is over it.
const LoopBudget = ir.LoopBudget

// LoopCost is the most loop iterations (as LoopBudget counts them) that one
// invocation of kernel k's shader runs.
func LoopCost(k *ir.Kernel) int {
	if f := writerOf(k.Kind).loops; f != nil {
		return f(k)
	}
	return 0
}

// sumLoopCost is LoopCost of a reduction kernel.
func sumLoopCost(k *ir.Kernel) int {
	if columnar(k, ir.ReductionOf(k.Shape, k.Keep)) {
		return columnsLoopCost(k)
	}
	n := k.Shape.Len() / k.Keep.Len()
	if perThread(k) {
		// the leaf loop and the binary counter's inner loop (n-1
		// trailing ones in all, plus an exit test per leaf).
		return (n + 1) + (2*n - 1)
	}
	p, _ := codegen.SumBlock(n, SumThreads)
	per := max(p/max(k.Blocks, 1)/SumThreads, 1)
	// the leaf loop, the binary counter's inner loop over j's trailing
	// ones (per-1 of them in all, plus an exit test per j), and the
	// workgroup tree's loop of log2(SumThreads) steps.
	return (per + 1) + (2*per - 1) + (codegen.Log2(SumThreads) + 1)
}

// MatmulLoopCost is ir.MatmulLoopCost.
func MatmulLoopCost(K, bk int) int { return ir.MatmulLoopCost(K, bk) }

// checkLoops refuses a kernel whose loops could exceed LoopBudget.
func checkLoops(k *ir.Kernel) error {
	if c := LoopCost(k); c > LoopBudget {
		node := -1
		if len(k.Nodes) > 0 {
			node = int(k.Nodes[len(k.Nodes)-1])
		}
		return ir.Errorf(ir.CodeLimitExceeded, node, "",
			"kernel %s needs %d loop iterations per invocation; WebGPU kernels are held to %d (Mesa's llvmpipe stops loops silently beyond it)",
			k.Name, c, LoopBudget)
	}
	return nil
}
