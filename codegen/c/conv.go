package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// conv writes a direct convolution and its epilogue, output by output
// (at, row-major over [N,M,OH,OW]). Each output
// keeps one accumulator from +0 over (c, kh, kw) ascending, a rounded
// product and a rounded add per tap, x read as +0 in the padding:
// cpuref.Conv2D's order. Operands are read through their strides.
func conv(b *strings.Builder, k *ir.Kernel) {
	c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"n", "c0 + ci", "ih", "iw"})
	wAt := codegen.Offset(Lang, k.Inputs[1], []string{"m", "ci", "kh", "kw"})
	fmt.Fprintf(b, "\tidx at = 0;\n")
	fmt.Fprintf(b, "\tfor (idx n = 0; n < %s; n++)\n", u(c.N))
	fmt.Fprintf(b, "\tfor (idx m = 0; m < %s; m++) {\n", u(c.M))
	fmt.Fprintf(b, "\t\tconst idx c0 = m / %s * %s;\n", u(c.MG), u(c.CG))
	fmt.Fprintf(b, "\t\tfor (idx oh = 0; oh < %s; oh++)\n", u(c.OH))
	fmt.Fprintf(b, "\t\tfor (idx ow = 0; ow < %s; ow++) {\n", u(c.OW))
	fmt.Fprintf(b, "\t\t\tfloat acc = %s;\n", Lang.Float(0))
	fmt.Fprintf(b, "\t\t\tfor (idx ci = 0; ci < %s; ci++)\n", u(c.CG))
	fmt.Fprintf(b, "\t\t\tfor (idx kh = 0; kh < %s; kh++) {\n", u(c.KH))
	// ih + pT and iw + pL, unsigned: in the input when in [pT, pT + H).
	fmt.Fprintf(b, "\t\t\t\tconst idx ph = oh * %s + kh * %s;\n", u(c.SH), u(c.DH))
	fmt.Fprintf(b, "\t\t\t\tconst idx ih = ph - %s;\n", u(c.PT))
	fmt.Fprintf(b, "\t\t\t\tfor (idx kw = 0; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\t\tconst idx pw = ow * %s + kw * %s;\n", u(c.SW), u(c.DW))
	fmt.Fprintf(b, "\t\t\t\t\tconst idx iw = pw - %s;\n", u(c.PL))
	fmt.Fprintf(b, "\t\t\t\t\tconst float xv = ph >= %s && ph < %s && pw >= %s && pw < %s ? in0[%s] : %s;\n",
		u(c.PT), u(c.PT+c.H), u(c.PL), u(c.PL+c.W), xAt, Lang.Float(0))
	fmt.Fprintf(b, "\t\t\t\t\tconst float p = xv * in1[%s];\n", wAt)
	b.WriteString("\t\t\t\t\tacc = acc + p;\n\t\t\t\t}\n\t\t\t}\n")
	// The epilogue at once, per output: a separate vectorised pass over
	// out0 (matmul's) met a wazero 1.12 compiler bug, which dropped a
	// relu's select (f32x4.gt against zero, v128.bitselect) on amd64.
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 3))
	b.WriteString(codegen.Indent(stores(k, "at"), 3))
	b.WriteString("\t\t\tat++;\n\t\t}\n\t}\n")
}

// pool writes a max pooling and its epilogue, output by output: each
// output's accumulator starts at -Inf and takes maximum (the op table's)
// with each tap inside x, (kh, kw) ascending: cpuref.MaxPool2D's order.
func pool(b *strings.Builder, k *ir.Kernel) {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"n", "ch", "ph - " + u(c.PT), "pw - " + u(c.PL)})
	b.WriteString("\tidx at = 0;\n")
	fmt.Fprintf(b, "\tfor (idx n = 0; n < %s; n++)\n", u(c.N))
	fmt.Fprintf(b, "\tfor (idx ch = 0; ch < %s; ch++)\n", u(c.C))
	fmt.Fprintf(b, "\tfor (idx oh = 0; oh < %s; oh++)\n", u(c.OH))
	fmt.Fprintf(b, "\tfor (idx ow = 0; ow < %s; ow++) {\n", u(c.OW))
	fmt.Fprintf(b, "\t\tfloat acc = %s;\n", Lang.Bits(0xff800000))
	fmt.Fprintf(b, "\t\tfor (idx kh = 0; kh < %s; kh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\tconst idx ph = oh * %s + kh * %s;\n", u(c.SH), u(c.DH))
	fmt.Fprintf(b, "\t\t\tfor (idx kw = 0; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\tconst idx pw = ow * %s + kw * %s;\n", u(c.SW), u(c.DW))
	fmt.Fprintf(b, "\t\t\t\tif (ph >= %s && ph < %s && pw >= %s && pw < %s) {\n", u(c.PT), u(c.PT+c.H), u(c.PL), u(c.PL+c.W))
	fmt.Fprintf(b, "\t\t\t\t\tconst float xv = in0[%s];\n", xAt)
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "acc", "xv", "mx"), 5))
	b.WriteString("\t\t\t\t\tacc = mx;\n\t\t\t\t}\n\t\t\t}\n\t\t}\n")
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 2))
	b.WriteString(codegen.Indent(stores(k, "at"), 2))
	b.WriteString("\t\tat++;\n\t}\n")
}
