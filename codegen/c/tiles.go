package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// Tiles. Every kernel is written as a static function "<export>_tiles"
// taking the kernel's pointers and a range [t0, t1) of its tiles, and an
// exported "<export>" that runs all of them. A tile is a set of outputs
// (a chunk of elements, a block of matmul rows, an image and channel
// group's block of convolution rows, one reduction output or a tile of
// adjacent ones, a row of a rows kernel), and the tiles function computes
// exactly those outputs, each with the operations and summation order of
// the whole kernel: the split only chooses which outputs a call computes.
// So the native backend may hand disjoint ranges to several threads at
// once and get the same bits as one call over [0, Tiles): no two tiles
// write the same element, and no tile reads what another writes (kernels
// never read their outputs, except an epilogue reading its own element).
// A kernel that needs scratch memory (matmul's panels, convolution's
// windows) gets a separate Unit.Scratch floats per concurrent call.

// EwChunk is the number of elements in a tile of a flat elementwise
// kernel.
const EwChunk = 4096

// MatmulRows is the number of output rows in a tile of a matmul (a
// multiple of every tile height mm uses, so that no row changes path).
const MatmulRows = 16

// wrapper writes the exported function of k: its tiles function over
// [0, d.Tiles).
func wrapper(b *strings.Builder, k *ir.Kernel, d *Kernel) {
	var args []string
	for j := range k.Inputs {
		args = append(args, fmt.Sprintf("in%d", j))
	}
	for j := range k.Outputs {
		args = append(args, fmt.Sprintf("out%d", j))
	}
	if d.Scratch {
		args = append(args, "scratch")
	}
	args = append(args, "0", Lang.Uint(d.Tiles))
	fmt.Fprintf(b, "\nEXPORT void %s(%s) {\n\t%s_tiles(%s);\n}\n", d.Export, params(k, d.Scratch), d.Export, strings.Join(args, ", "))
}

// elementwiseTiles writes an elementwise kernel's loop over its tiles:
// chunks of EwChunk elements of a flat loop, else indices of the first
// dimension.
func elementwiseTiles(b *strings.Builder, k *ir.Kernel) int {
	if flatLoop(k) {
		n := k.Shape.Len()
		hi := fmt.Sprintf("(t1 * %du < %du ? t1 * %du : %du)", EwChunk, n, EwChunk, n)
		elementwise(b, k, "", fmt.Sprintf("t0 * %du", EwChunk), hi)
		return max(1, (n+EwChunk-1)/EwChunk)
	}
	elementwise(b, k, "", "t0", "t1")
	return k.Shape[0]
}

// matmul writes the rows of C in tiles [t0, t1) into out0 through mm,
// then, unless the body only stores the accumulator to out0, runs the
// epilogue over those rows with out0[i] as the accumulator (each element
// reads it before any store). A tile is MatmulRows rows of one matrix of
// the batch (a batched matmul runs the same product per matrix z, at each
// operand's batch offset). Operands are read in place through their
// strides (a transposed b is gathered into mm's panels).
func matmul(b *strings.Builder, k *ir.Kernel) int {
	a, bb := k.Inputs[0], k.Inputs[1]
	ar, ak := k.K, 1
	if a.MatrixTransposed() {
		ar, ak = 1, k.M
	}
	bk, bn := k.N, 1
	if bb.MatrixTransposed() {
		bk, bn = 1, k.K
	}
	rb := max(1, (k.M+MatmulRows-1)/MatmulRows) // tiles per matrix
	epilogue := !(len(k.Body) == 1 && len(k.Stores) == 1 && k.Stores[0] == 0)
	if len(k.Shape) > 2 && epilogue && !flatLoop(k) {
		// An epilogue looping over dimensions cannot stop at a row of one
		// matrix: the kernel is one tile.
		fmt.Fprintf(b, "\t(void)t0;\n\t(void)t1;\n\tfor (idx z = 0; z < %du; z++)\n", k.Batch())
		fmt.Fprintf(b, "\t\tmm(out0 + z * %du, %du, in0 + %s, %du, %du, in1 + %s, %du, %du, %du, %du, %du, scratch);\n",
			k.M*k.N, k.N, codegen.Index(Lang, a.Batch(), "z"), ar, ak, codegen.Index(Lang, bb.Batch(), "z"), bk, bn, k.M, k.K, k.N)
		elementwise(b, k, "out0[i]", "0", Lang.Uint(k.Shape[0]))
		return 1
	}
	if len(k.Shape) > 2 {
		fmt.Fprintf(b, "\tfor (idx z = t0 / %du; z * %du < t1; z++) {\n", rb, rb)
		fmt.Fprintf(b, "\t\tconst idx lo = z * %du < t0 ? t0 - z * %du : 0, hi = (z + 1) * %du > t1 ? t1 - z * %du : %du;\n", rb, rb, rb, rb, rb)
		fmt.Fprintf(b, "\t\tconst idx r0 = lo * %du, r1 = hi * %du < %du ? hi * %du : %du;\n", MatmulRows, MatmulRows, k.M, MatmulRows, k.M)
		fmt.Fprintf(b, "\t\tmm(out0 + z * %du + r0 * %du, %du, in0 + %s + r0 * %du, %du, %du, in1 + %s, %du, %du, r1 - r0, %du, %du, scratch);\n",
			k.M*k.N, k.N, k.N, codegen.Index(Lang, a.Batch(), "z"), ar, ar, ak, codegen.Index(Lang, bb.Batch(), "z"), bk, bn, k.K, k.N)
		b.WriteString("\t}\n")
	} else {
		fmt.Fprintf(b, "\tconst idx r0 = t0 * %du, r1 = t1 * %du < %du ? t1 * %du : %du;\n", MatmulRows, MatmulRows, k.M, MatmulRows, k.M)
		fmt.Fprintf(b, "\tmm(out0 + r0 * %du, %du, in0 + r0 * %du, %du, %du, in1, %du, %du, r1 - r0, %du, %du, scratch);\n",
			k.N, k.N, ar, ar, ak, bk, bn, k.K, k.N)
	}
	if !epilogue {
		return k.Batch() * rb // out0 already holds C
	}
	if flatLoop(k) {
		// Rows [g0, g1) of all the matrices stacked: tile t starts at row
		// (t / rb)·M + min(t % rb · MatmulRows, M).
		row := func(t string) string {
			return fmt.Sprintf("(%s / %du * %du + (%s %% %du * %du < %du ? %s %% %du * %du : %du))", t, rb, k.M, t, rb, MatmulRows, k.M, t, rb, MatmulRows, k.M)
		}
		elementwise(b, k, "out0[i]", row("t0")+fmt.Sprintf(" * %du", k.N), row("t1")+fmt.Sprintf(" * %du", k.N))
	} else {
		elementwise(b, k, "out0[i]", "r0", "r1")
	}
	return k.Batch() * rb
}
