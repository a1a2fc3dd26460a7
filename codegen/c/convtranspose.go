package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// convTranspose writes a direct transposed convolution and its epilogue,
// output by output (at, row-major over [N,M,OH,OW]). Each output keeps one
// accumulator from +0 over (c, kh, kw) ascending, adding a rounded product
// for each tap that lands on an element of x (th = oh+pT-kh·dH ≥ 0 a
// multiple of sH with th/sH < H, and likewise for w): cpuref.ConvTranspose2D's
// order. Operands are read through their strides.
func convTranspose(b *strings.Builder, k *ir.Kernel) {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"n", "c0 + ci", "th / " + u(c.SH), "tw / " + u(c.SW)})
	wAt := codegen.Offset(Lang, k.Inputs[1], []string{"c0 + ci", "mm", "kh", "kw"})
	b.WriteString("\tidx at = 0;\n")
	fmt.Fprintf(b, "\tfor (idx n = 0; n < %s; n++)\n", u(c.N))
	fmt.Fprintf(b, "\tfor (idx m = 0; m < %s; m++) {\n", u(c.M))
	fmt.Fprintf(b, "\t\tconst idx c0 = m / %s * %s, mm = m %% %s;\n", u(c.MG), u(c.CG), u(c.MG))
	fmt.Fprintf(b, "\t\tfor (idx oh = 0; oh < %s; oh++)\n", u(c.OH))
	fmt.Fprintf(b, "\t\tfor (idx ow = 0; ow < %s; ow++) {\n", u(c.OW))
	fmt.Fprintf(b, "\t\t\tconst idx ph = oh + %s, pw = ow + %s;\n", u(c.PT), u(c.PL))
	fmt.Fprintf(b, "\t\t\tfloat acc = %s;\n", Lang.Float(0))
	fmt.Fprintf(b, "\t\t\tfor (idx ci = 0; ci < %s; ci++)\n", u(c.CG))
	fmt.Fprintf(b, "\t\t\tfor (idx kh = 0; kh < %s; kh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\t\tif (ph < kh * %s) break;\n", u(c.DH)) // kh only grows
	fmt.Fprintf(b, "\t\t\t\tconst idx th = ph - kh * %s;\n", u(c.DH))
	fmt.Fprintf(b, "\t\t\t\tif (th %% %s != 0 || th / %s >= %s) continue;\n", u(c.SH), u(c.SH), u(c.H))
	fmt.Fprintf(b, "\t\t\t\tfor (idx kw = 0; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\t\tif (pw < kw * %s) break;\n", u(c.DW))
	fmt.Fprintf(b, "\t\t\t\t\tconst idx tw = pw - kw * %s;\n", u(c.DW))
	fmt.Fprintf(b, "\t\t\t\t\tif (tw %% %s != 0 || tw / %s >= %s) continue;\n", u(c.SW), u(c.SW), u(c.W))
	fmt.Fprintf(b, "\t\t\t\t\tconst float p = in0[%s] * in1[%s];\n", xAt, wAt)
	b.WriteString("\t\t\t\t\tacc = acc + p;\n\t\t\t\t}\n\t\t\t}\n")
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 3))
	b.WriteString(codegen.Indent(stores(k, "at"), 3))
	b.WriteString("\t\t\tat++;\n\t\t}\n\t}\n")
}
