package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// poolGrad writes maxpool2d's input gradient and its epilogue, element by
// element of x (at, row-major over [N,C,H,W]): one accumulator from +0
// over the windows holding the element, (oh, ow) ascending (kh, kw
// descending), adding the window's gradient where the window selects the
// element — its tap walk is pool's, the selection the first tap and then
// each where the maximum's bits change: cpuref.MaxPool2DGrad's.
func poolGrad(b *strings.Builder, k *ir.Kernel) {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"n", "ch", "ph - " + u(c.PT), "pw - " + u(c.PL)})
	gAt := codegen.Offset(Lang, k.Inputs[1], []string{"n", "ch", "oh", "ow"})
	none := u(c.KH * c.KW)
	b.WriteString("\tidx at = 0;\n")
	fmt.Fprintf(b, "\tfor (idx n = 0; n < %s; n++)\n", u(c.N))
	fmt.Fprintf(b, "\tfor (idx ch = 0; ch < %s; ch++)\n", u(c.C))
	fmt.Fprintf(b, "\tfor (idx h = 0; h < %s; h++)\n", u(c.H))
	fmt.Fprintf(b, "\tfor (idx w = 0; w < %s; w++) {\n", u(c.W))
	fmt.Fprintf(b, "\t\tfloat acc = %s;\n", Lang.Float(0))
	fmt.Fprintf(b, "\t\tfor (idx jh = 0; jh < %s; jh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\tconst idx kh = %s - jh;\n", u(c.KH-1))
	// qh = oh·sH: the window's first row in the padded input.
	fmt.Fprintf(b, "\t\t\tif (h + %s < kh * %s) continue;\n", u(c.PT), u(c.DH))
	fmt.Fprintf(b, "\t\t\tconst idx qh = h + %s - kh * %s;\n", u(c.PT), u(c.DH))
	fmt.Fprintf(b, "\t\t\tif (qh %% %s != 0 || qh / %s >= %s) continue;\n", u(c.SH), u(c.SH), u(c.OH))
	fmt.Fprintf(b, "\t\t\tconst idx oh = qh / %s;\n", u(c.SH))
	fmt.Fprintf(b, "\t\t\tfor (idx jw = 0; jw < %s; jw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\tconst idx kw = %s - jw;\n", u(c.KW-1))
	fmt.Fprintf(b, "\t\t\t\tif (w + %s < kw * %s) continue;\n", u(c.PL), u(c.DW))
	fmt.Fprintf(b, "\t\t\t\tconst idx qw = w + %s - kw * %s;\n", u(c.PL), u(c.DW))
	fmt.Fprintf(b, "\t\t\t\tif (qw %% %s != 0 || qw / %s >= %s) continue;\n", u(c.SW), u(c.SW), u(c.OW))
	fmt.Fprintf(b, "\t\t\t\tconst idx ow = qw / %s;\n", u(c.SW))
	fmt.Fprintf(b, "\t\t\t\tfloat m = %s;\n", Lang.Bits(0xff800000))
	fmt.Fprintf(b, "\t\t\t\tidx sel = %s;\n", none)
	fmt.Fprintf(b, "\t\t\t\tfor (idx th = 0; th < %s; th++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\t\t\tconst idx ph = oh * %s + th * %s;\n", u(c.SH), u(c.DH))
	fmt.Fprintf(b, "\t\t\t\t\tfor (idx tw = 0; tw < %s; tw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\t\t\tconst idx pw = ow * %s + tw * %s;\n", u(c.SW), u(c.DW))
	fmt.Fprintf(b, "\t\t\t\t\t\tif (ph >= %s && ph < %s && pw >= %s && pw < %s) {\n", u(c.PT), u(c.PT+c.H), u(c.PL), u(c.PL+c.W))
	fmt.Fprintf(b, "\t\t\t\t\t\t\tconst float xv = in0[%s];\n", xAt)
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "m", "xv", "mx"), 7))
	fmt.Fprintf(b, "\t\t\t\t\t\t\tif (sel == %s || %s != %s) sel = th * %s + tw;\n", none, Lang.FloatBits("mx"), Lang.FloatBits("m"), u(c.KW))
	b.WriteString("\t\t\t\t\t\t\tm = mx;\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t}\n")
	fmt.Fprintf(b, "\t\t\t\tif (sel == kh * %s + kw) acc = acc + in1[%s];\n", u(c.KW), gAt)
	b.WriteString("\t\t\t}\n\t\t}\n")
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 2))
	b.WriteString(codegen.Indent(stores(k, "at"), 2))
	b.WriteString("\t\tat++;\n\t}\n")
}
