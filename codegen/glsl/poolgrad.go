package glsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// poolGrad renders the accumulator of element i of x in maxpool2d's input
// gradient: from +0 over the windows holding it, (oh, ow) ascending (kh,
// kw descending), adding the window's gradient where the window selects
// it — pool's tap walk, the selection the first tap and then each where
// the maximum's bits change (cpuref.MaxPool2DGrad). load0 reads x and
// load1 the output gradient at logical elements.
func poolGrad(k *ir.Kernel) string {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	u := Lang.Uint
	none := u(c.KH * c.KW)
	var b strings.Builder
	b.WriteString("float pool_grad(uint i) {\n")
	fmt.Fprintf(&b, "\tuint w = i %% %s;\n\tuint h = i / %s %% %s;\n\tuint nc = i / %s;\n", u(c.W), u(c.W), u(c.H), u(c.W*c.H))
	fmt.Fprintf(&b, "\tfloat acc = %s;\n", Lang.Float(0))
	fmt.Fprintf(&b, "\tfor (uint jh = 0u; jh < %s; jh++) {\n", u(c.KH))
	fmt.Fprintf(&b, "\t\tuint kh = %s - jh;\n", u(c.KH-1))
	fmt.Fprintf(&b, "\t\tif (h + %s < kh * %s) continue;\n", u(c.PT), u(c.DH))
	fmt.Fprintf(&b, "\t\tuint qh = h + %s - kh * %s;\n", u(c.PT), u(c.DH))
	fmt.Fprintf(&b, "\t\tif (qh %% %s != 0u || qh / %s >= %s) continue;\n", u(c.SH), u(c.SH), u(c.OH))
	fmt.Fprintf(&b, "\t\tuint oh = qh / %s;\n", u(c.SH))
	fmt.Fprintf(&b, "\t\tfor (uint jw = 0u; jw < %s; jw++) {\n", u(c.KW))
	fmt.Fprintf(&b, "\t\t\tuint kw = %s - jw;\n", u(c.KW-1))
	fmt.Fprintf(&b, "\t\t\tif (w + %s < kw * %s) continue;\n", u(c.PL), u(c.DW))
	fmt.Fprintf(&b, "\t\t\tuint qw = w + %s - kw * %s;\n", u(c.PL), u(c.DW))
	fmt.Fprintf(&b, "\t\t\tif (qw %% %s != 0u || qw / %s >= %s) continue;\n", u(c.SW), u(c.SW), u(c.OW))
	fmt.Fprintf(&b, "\t\t\tuint ow = qw / %s;\n", u(c.SW))
	fmt.Fprintf(&b, "\t\t\tfloat m = %s;\n", Lang.Bits(0xff800000))
	fmt.Fprintf(&b, "\t\t\tuint sel = %s;\n", none)
	fmt.Fprintf(&b, "\t\t\tfor (uint th = 0u; th < %s; th++) {\n", u(c.KH))
	fmt.Fprintf(&b, "\t\t\t\tuint ph = oh * %s + th * %s;\n", u(c.SH), u(c.DH))
	fmt.Fprintf(&b, "\t\t\t\tfor (uint tw = 0u; tw < %s; tw++) {\n", u(c.KW))
	fmt.Fprintf(&b, "\t\t\t\t\tuint pw = ow * %s + tw * %s;\n", u(c.SW), u(c.DW))
	fmt.Fprintf(&b, "\t\t\t\t\tif (ph >= %s && ph < %s && pw >= %s && pw < %s) {\n", u(c.PT), u(c.PT+c.H), u(c.PL), u(c.PL+c.W))
	fmt.Fprintf(&b, "\t\t\t\t\t\tfloat xv = load0((nc * %s + ph - %s) * %s + pw - %s);\n", u(c.H), u(c.PT), u(c.W), u(c.PL))
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "m", "xv", "mx"), 6))
	fmt.Fprintf(&b, "\t\t\t\t\t\tif (sel == %s || %s != %s) sel = th * %s + tw;\n", none, Lang.FloatBits("mx"), Lang.FloatBits("m"), u(c.KW))
	b.WriteString("\t\t\t\t\t\tm = mx;\n\t\t\t\t\t}\n\t\t\t\t}\n\t\t\t}\n")
	fmt.Fprintf(&b, "\t\t\tif (sel == kh * %s + kw) acc = acc + load1((nc * %s + oh) * %s + ow);\n", u(c.KW), u(c.OH), u(c.OW))
	b.WriteString("\t\t}\n\t}\n\treturn acc;\n}\n")
	return b.String()
}
