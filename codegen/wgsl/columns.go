package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// Column reductions: the kept axes are the innermost (a sum over the rows
// of a matrix, giving one value per column), so adjacent outputs read
// adjacent elements. A workgroup reduces ColumnTile adjacent outputs with
// SumThreads/ColumnTile threads each: thread (q, c) folds the contiguous
// run of leaves q·P/T .. (q+1)·P/T-1 of output c with the binary counter,
// so at each step the ColumnTile threads of one q read ColumnTile adjacent
// floats (whole 32-byte sectors), and the T partials of each output are
// combined in workgroup memory by the pairwise tree: each output keeps
// cpuref's tree over its P padded leaves.
const ColumnTile = 8

// columnChunk is how many leaves a thread of a column reduction loads
// at once: one load in flight at a time left the H200 waiting on memory
// latency (8192 leaves per output: 0.075 ms, a tenth of its bandwidth).
const columnChunk = 16

// columnar reports whether reduction kernel k takes the column form: it
// is unsplit, its kept axes are innermost and contiguous, it has at least
// ColumnTile outputs and enough leaves for a workgroup per tile (the
// shorter ones get a thread per output, which reads adjacent elements
// already), and few enough that a thread's run stays within LoopBudget
// (longer ones are split, or take the block form).
func columnar(k *ir.Kernel, red ir.Reduction) bool {
	p, _ := codegen.SumBlock(red.Leaves, 1)
	return k.Blocks <= 1 && red.Outputs >= ColumnTile && len(red.Kept) == 1 && red.Kept[0].Stride == 1 &&
		p >= SumThreads && p <= 1<<16
}

func columns(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, red ir.Reduction) {
	n := red.Leaves
	p, _ := codegen.SumBlock(n, 1)
	t := SumThreads / ColumnTile // threads per output
	per := p / t
	levels := codegen.Log2(per)
	tiles := (red.Outputs + ColumnTile - 1) / ColumnTile
	s.Workgroup = [3]int{SumThreads, 1, 1}
	s.Groups = codegen.Groups1D(tiles, maxGroupsPerDim)
	combine(b, k)
	fmt.Fprintf(b, "var<workgroup> part: array<f32, %d>;\n\n", SumThreads)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", SumThreads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet c = lid.x %% %du;\n\tlet q = lid.x / %du;\n", ColumnTile, ColumnTile)
	fmt.Fprintf(b, "\tlet tile = wg.x + wg.y * nwg.x;\n\tif (tile >= %du) { return; }\n", tiles)
	fmt.Fprintf(b, "\tlet o = tile * %du + c;\n", ColumnTile)
	// Each step of the binary counter takes a chunk of columnChunk leaves,
	// read by independent loads written out one by one (so that they are
	// in flight together) and reduced by their tree: an aligned subtree.
	u := min(per, columnChunk)
	fmt.Fprintf(b, "\tvar st: array<f32, %d>;\n\tvar lf: array<f32, %d>;\n", levels-codegen.Log2(u)+1, u)
	fmt.Fprintf(b, "\tfor (var j = 0u; j < %du; j++) {\n", per/u)
	for x := range u {
		fmt.Fprintf(b, "\t\t{\n\t\t\tlet r = q * %du + j * %du + %du;\n", per, u, x)
		fmt.Fprintf(b, "\t\t\tlf[%d] = %s; // the padding leaf\n", x, identity(k))
		fmt.Fprintf(b, "\t\t\tif (r < %du && o < %du) {\n", n, red.Outputs)
		fmt.Fprintf(b, "\t\t\t\tlet i = %s;\n", codegen.LeafIndex(Lang, red, "o", "r"))
		b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load(k, "i")), 4))
		fmt.Fprintf(b, "\t\t\t\tlf[%d] = %s;\n\t\t\t}\n\t\t}\n", x, codegen.Value(int(k.Stores[0])))
	}
	for w := 1; w < u; w *= 2 {
		for l := 0; l < u; l += 2 * w {
			fmt.Fprintf(b, "\t\tlf[%d] = combine(lf[%d], lf[%d]);\n", l, l, l+w)
		}
	}
	b.WriteString("\t\tvar leaf = lf[0];\n")
	b.WriteString(codegen.Indent(codegen.CounterPush(Lang, "leaf", "j", "combine"), 2) + "\t}\n")
	fmt.Fprintf(b, "\tpart[lid.x] = st[%d];\n\tworkgroupBarrier();\n", levels-codegen.Log2(u))
	fmt.Fprintf(b, "\tfor (var w = 1u; w < %du; w = w * 2u) {\n", t)
	fmt.Fprintf(b, "\t\tif (q %% (2u * w) == 0u) { part[lid.x] = combine(part[lid.x], part[lid.x + w * %du]); }\n", ColumnTile)
	b.WriteString("\t\tworkgroupBarrier();\n\t}\n")
	fmt.Fprintf(b, "\tif (q == 0u && o < %du) {\n\t\tout0[o] = part[c];\n", red.Outputs)
	if k.AccIndex() >= 0 {
		epilogue(b, k, "part[c]", 2)
	}
	b.WriteString("\t}\n}\n")
}

// columnsLoopCost is LoopCost of a column reduction: the leaf loop, the
// binary counter's inner loop and the workgroup tree.
func columnsLoopCost(k *ir.Kernel) int {
	red := ir.ReductionOf(k.Shape, k.Keep)
	p, _ := codegen.SumBlock(red.Leaves, 1)
	per := p / (SumThreads / ColumnTile)
	return (per + 1) + (2*per - 1) + (codegen.Log2(SumThreads/ColumnTile) + 1)
}
