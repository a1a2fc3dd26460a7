package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// rowsPrelude gives rows kernels their per-row arrays: static in wasm
// (one instance runs one call at a time, and its 64 KiB stack is too small
// for them), on the stack natively (a library may serve several runs at
// once).
const rowsPrelude = `
#ifdef __wasm__
#define ROWBUF static
#else
#define ROWBUF
#endif
`

// rowsKernel writes rows kernel k (ir.KernelRows) as its exported
// function and the combining functions it calls, following
// codegen.PlanRows: per row, each pass fills the leaves of its reductions
// (padded with the identity to P) and the cache of values later passes
// read, in arrays of P floats; each reduction is then the reference tree
// over its array, combined level by level in place (the pairs at
// distance 1, then 2, …: cpuref's contiguous pairwise tree).
//
// Its tiles are rows.
func rowsKernel(b *strings.Builder, k *ir.Kernel, d *Kernel) {
	pl := codegen.PlanRows(k)
	combines := map[ir.Op]string{}
	for _, in := range k.Body {
		if in.Kind != ir.InstrAcc || combines[in.Op] != "" {
			continue
		}
		name := fmt.Sprintf("%s_%s", d.Export, in.Op.Info().Wire)
		combines[in.Op] = name
		fmt.Fprintf(b, "static %s float %s(float a, float b) {\n", combineInline(in.Op.Info().Combine), name)
		b.WriteString(codegen.Indent(codegen.CombineOp(Lang, in.Op.Info().Combine, "a", "b", "m"), 1))
		b.WriteString("\treturn m;\n}\n\n")
	}
	fmt.Fprintf(b, "static void %s_tiles(%s, idx t0, idx t1) {\n", d.Export, params(k, false))
	n, p := pl.Red.Leaves, pl.P
	for j := range k.Body {
		if pl.Cached[j] {
			fmt.Fprintf(b, "\tROWBUF float c%d[%d];\n", j, p)
		}
		if k.Body[j].Kind == ir.InstrAcc {
			fmt.Fprintf(b, "\tROWBUF float a%d[%d];\n", j, p)
		}
	}
	load := func(space string) func(int) string {
		return func(op int) string {
			at := space
			if k.Inputs[op].Shape.Len() == k.Keep.Len() {
				at = "o"
			}
			return fmt.Sprintf("in%d[%s]", op, codegen.Index(Lang, k.Inputs[op], at))
		}
	}
	accOf := func(j int) string { return fmt.Sprintf("a%d[0]", j) }
	rowValues := func(d, tabs int) {
		var lines []string
		for _, j := range pl.RowAt[d] {
			lines = append(lines, codegen.Instr(Lang, k, j, load("o"), accOf(j))...)
		}
		for _, s := range pl.RowStores[d] {
			lines = append(lines, fmt.Sprintf("out%d[o] = %s;", s, codegen.Value(int(k.Stores[s]))))
		}
		b.WriteString(codegen.Indent(lines, tabs))
	}
	b.WriteString("\tfor (idx o = t0; o < t1; o++) {\n")
	fmt.Fprintf(b, "\t\tconst idx base = %s;\n", codegen.Flat(Lang, pl.Red.Kept, "o"))
	rowValues(0, 2)
	for pass := 0; pass < pl.Passes; pass++ {
		fmt.Fprintf(b, "\t\tfor (idx r = 0; r < %du; r++) {\n", n)
		b.WriteString("\t\t\tconst idx i = base + r;\n")
		lines := pl.LeafPass(Lang, k, pass, load("i"), "r")
		b.WriteString(codegen.Indent(lines, 3))
		b.WriteString("\t\t}\n")
		for _, j := range pl.Accs[pass] {
			if c := k.Body[j].Op.Info(); c.Combine.Info().Selects { // any order: see selectFold
				selectFold(b, 2, fmt.Sprintf("a%d", j), n, combines[k.Body[j].Op], Lang.Bits(c.Identity), selectOrder[c.Combine], fmt.Sprintf("a%d[0] = s;", j))
				continue
			}
			if n < p {
				fmt.Fprintf(b, "\t\tfor (idx r = %du; r < %du; r++)\n\t\t\ta%d[r] = %s;\n", n, p, j, Lang.Bits(k.Body[j].Op.Info().Identity))
			}
			fmt.Fprintf(b, "\t\tfor (idx w = 1; w < %du; w *= 2)\n", p)
			fmt.Fprintf(b, "\t\t\tfor (idx l = 0; l < %du; l += 2 * w)\n", p)
			fmt.Fprintf(b, "\t\t\t\ta%d[l] = %s(a%d[l], a%d[l + w]);\n", j, combines[k.Body[j].Op], j, j)
		}
		rowValues(pass+1, 2)
	}
	b.WriteString("\t}\n}\n")
	d.Tiles = pl.Red.Outputs
	wrapper(b, k, d)
}
