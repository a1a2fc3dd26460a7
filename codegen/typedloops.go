package codegen

import (
	"math/bits"

	"github.com/gpucc/gpucc/ir"
)

// TypedReduceLoopCost is the loop cost, as ir.LoopBudget counts it (an
// entry into a loop of n trips costs n+1), of one invocation of a typed
// reduction's serial form (codegen/wgsl's and codegen/glsl's typedReduce
// up to their bounds): it computes the elements of one storage word of
// the output (out: two of float16 and bfloat16, four of the 1-byte
// dtypes, one otherwise), each by one loop over the leaves:
//   - an integer or bool input folds leaf 0, then loops over leaves 1 to
//     n-1: n;
//   - a float input keeps the reference's pairwise tree in a stack, an
//     outer loop over the n leaves (n+1) and, for leaf r, an inner loop
//     over r's trailing one bits (t(r)+1); the t(r) sum to n-popcount(n):
//     3n+1-popcount(n).
func TypedReduceLoopCost(leaves int, in, out ir.DType) int {
	one := leaves
	if in.IsFloat() {
		one = 3*leaves + 1 - bits.OnesCount(uint(leaves))
	}
	return typedPerWord(out) * one
}

// TypedSerialLeaves is the most leaves an output that a typed reduction's
// serial form may reduce with its invocations within ir.LoopBudget
// (TypedReduceLoopCost): float32 21847, float16 and bfloat16 10924,
// 32- and 64-bit integers 65535, 1-byte dtypes 16383.
func TypedSerialLeaves(in, out ir.DType) int {
	lo, hi := 0, ir.LoopBudget // cost(lo) fits, cost(hi+1) does not
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if TypedReduceLoopCost(mid, in, out) <= ir.LoopBudget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// typedPerWord is the elements of dtype t one 32-bit storage word holds
// (an int64 takes two words, which one invocation's element fills).
func typedPerWord(t ir.DType) int { return max(1, 4/t.Size()) }
