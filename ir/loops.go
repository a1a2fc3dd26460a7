package ir

// LoopBudget is how many loop iterations one invocation of a kernel may
// run, counted over all its loops, where an entry into a loop that runs n
// times costs n+1 (the pass that finds the exit condition counts too).
//
// Mesa's llvmpipe, behind both lavapipe (Vulkan) and its OpenGL driver,
// runs shaders as SIMD code with one iteration counter per invocation: once
// 65535 iterations have run, every loop exits at its next back edge, and the
// shader goes on with whatever it has computed, reporting nothing. A matmul
// with K ≥ 43,690 on the 32×32 tile summed only its first 43,689 products
// that way. runtime/gpu's TestSoftwareLoopBudget measures the limit.
//
// It is a property of the programs gpucc makes, not of one generator: the
// tiling pass picks a matmul's k-step deep enough to stay within it
// (MatmulLoopCost), and the WGSL generator refuses a kernel whose loops
// could run past it on any adapter (wgsl.LoopCost), so that one program
// runs everywhere.
const LoopBudget = 65535

// MatmulLoopCost is the loop cost (as LoopBudget counts it) of a matmul
// kernel with inner dimension K and k-step bk: one iteration per whole
// k-tile and the exit test; the last, partial tile is unrolled after the
// loop.
func MatmulLoopCost(K, bk int) int { return K/bk + 1 }
