package glsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// convTranspose renders the accumulator of output element i of a
// transposed convolution: (c, kh, kw) ascending from +0, adding each
// product (rounded on its own: Keep) of a tap that lands on an element of
// x (cpuref.ConvTranspose2D). load0 and load1 read x and the weight at
// logical row-major elements.
func convTranspose(k *ir.Kernel) string {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	u := Lang.Uint
	var b strings.Builder
	b.WriteString("float conv_transpose(uint i) {\n")
	fmt.Fprintf(&b, "\tuint ow = i %% %s;\n\tuint oh = i / %s %% %s;\n\tuint m = i / %s %% %s;\n\tuint n = i / %s;\n",
		u(c.OW), u(c.OW), u(c.OH), u(c.OW*c.OH), u(c.M), u(c.OW*c.OH*c.M))
	fmt.Fprintf(&b, "\tuint c0 = m / %s * %s;\n\tuint mm = m %% %s;\n", u(c.MG), u(c.CG), u(c.MG))
	fmt.Fprintf(&b, "\tuint ph = oh + %s;\n\tuint pw = ow + %s;\n", u(c.PT), u(c.PL))
	fmt.Fprintf(&b, "\tfloat acc = %s;\n", Lang.Float(0))
	fmt.Fprintf(&b, "\tfor (uint ci = 0u; ci < %s; ci++) {\n", u(c.CG))
	fmt.Fprintf(&b, "\t\tfor (uint kh = 0u; kh < %s; kh++) {\n", u(c.KH))
	fmt.Fprintf(&b, "\t\t\tif (ph < kh * %s) { break; }\n", u(c.DH))
	fmt.Fprintf(&b, "\t\t\tuint th = ph - kh * %s;\n", u(c.DH))
	fmt.Fprintf(&b, "\t\t\tif (th %% %s != 0u || th / %s >= %s) { continue; }\n", u(c.SH), u(c.SH), u(c.H))
	fmt.Fprintf(&b, "\t\t\tfor (uint kw = 0u; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(&b, "\t\t\t\tif (pw < kw * %s) { break; }\n", u(c.DW))
	fmt.Fprintf(&b, "\t\t\t\tuint tw = pw - kw * %s;\n", u(c.DW))
	fmt.Fprintf(&b, "\t\t\t\tif (tw %% %s != 0u || tw / %s >= %s) { continue; }\n", u(c.SW), u(c.SW), u(c.W))
	fmt.Fprintf(&b, "\t\t\t\tfloat p = %s;\n", Lang.Keep(fmt.Sprintf("load0(((n * %s + c0 + ci) * %s + th / %s) * %s + tw / %s) * load1((((c0 + ci) * %s + mm) * %s + kh) * %s + kw)",
		u(c.C), u(c.H), u(c.SH), u(c.W), u(c.SW), u(c.MG), u(c.KH), u(c.KW))))
	b.WriteString("\t\t\t\tacc = acc + p;\n\t\t\t}\n\t\t}\n\t}\n\treturn acc;\n}\n")
	return b.String()
}
