package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// resize writes a 2-D resize and its epilogue, output by output, from the
// taps of ir.ResizeTaps embedded as tables (rh over the rows, rw over the
// columns: I0, I1, then W0's and W1's bits): nearest copies the tap;
// linear rounds each product and sum on its own, the columns first
// (cpuref.Resize2D).
func resize(b *strings.Builder, k *ir.Kernel) {
	r := ir.Resize2DOf(k.Inputs[0].Shape, k.Attrs)
	u := Lang.Uint
	rh, nh := codegen.ResizeTable(r.Rows, codegen.ResizeU32)
	rw, nw := codegen.ResizeTable(r.Cols, codegen.ResizeU32)
	fmt.Fprintf(b, "\tstatic const u32 rh[%d] = {%s};\n\tstatic const u32 rw[%d] = {%s};\n", nh, rh, nw, rw)
	at := func(h, w string) string {
		return "in0[" + codegen.Offset(Lang, k.Inputs[0], []string{"n", "ch", h, w}) + "]"
	}
	b.WriteString("\tidx at = 0;\n")
	fmt.Fprintf(b, "\tfor (idx n = 0; n < %s; n++)\n", u(r.N))
	fmt.Fprintf(b, "\tfor (idx ch = 0; ch < %s; ch++)\n", u(r.C))
	fmt.Fprintf(b, "\tfor (idx oh = 0; oh < %s; oh++)\n", u(r.OH))
	fmt.Fprintf(b, "\tfor (idx ow = 0; ow < %s; ow++) {\n", u(r.OW))
	rows := []string{"rh[oh]"}
	if r.Rows.Linear() {
		rows = append(rows, fmt.Sprintf("rh[%d + oh]", r.OH))
	}
	for j, h := range rows {
		if !r.Cols.Linear() {
			fmt.Fprintf(b, "\t\tconst float r%d = %s;\n", j, at(h, "rw[ow]"))
			continue
		}
		fmt.Fprintf(b, "\t\tconst float p%d0 = F(rw[%d + ow]) * %s;\n", j, 2*r.OW, at(h, "rw[ow]"))
		fmt.Fprintf(b, "\t\tconst float p%d1 = F(rw[%d + ow]) * %s;\n", j, 3*r.OW, at(h, fmt.Sprintf("rw[%d + ow]", r.OW)))
		fmt.Fprintf(b, "\t\tconst float r%d = p%d0 + p%d1;\n", j, j, j)
	}
	if r.Rows.Linear() {
		fmt.Fprintf(b, "\t\tconst float q0 = F(rh[%d + oh]) * r0;\n\t\tconst float q1 = F(rh[%d + oh]) * r1;\n", 2*r.OH, 3*r.OH)
		b.WriteString("\t\tconst float acc = q0 + q1;\n")
	} else {
		b.WriteString("\t\tconst float acc = r0;\n")
	}
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 2))
	b.WriteString(codegen.Indent(stores(k, "at"), 2))
	b.WriteString("\t\tat++;\n\t}\n")
}
