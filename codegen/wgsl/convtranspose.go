package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// convTranspose emits a direct transposed convolution, one thread per
// output element: its accumulator starts at Params.zero and walks (c, kh,
// kw) ascending, adding each product (rounded on its own: times
// Params.one, so no driver contracts it into the add) of a tap that lands
// on an element of x: cpuref.ConvTranspose2D's order. Then the epilogue,
// at the same element.
func convTranspose(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	n := k.Shape.Len()
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((n+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"nn", "c0 + ci", "th / " + u(c.SH), "tw / " + u(c.SW)})
	wAt := codegen.Offset(Lang, k.Inputs[1], []string{"c0 + ci", "mm", "kh", "kw"})
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet i = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (i >= %s) { return; }\n", u(n))
	fmt.Fprintf(b, "\tlet ow = i %% %s;\n\tlet oh = i / %s %% %s;\n\tlet m = i / %s %% %s;\n\tlet nn = i / %s;\n",
		u(c.OW), u(c.OW), u(c.OH), u(c.OW*c.OH), u(c.M), u(c.OW*c.OH*c.M))
	fmt.Fprintf(b, "\tlet c0 = m / %s * %s;\n\tlet mm = m %% %s;\n", u(c.MG), u(c.CG), u(c.MG))
	fmt.Fprintf(b, "\tlet ph = oh + %s;\n\tlet pw = ow + %s;\n", u(c.PT), u(c.PL))
	b.WriteString("\tvar acc = params.zero;\n")
	fmt.Fprintf(b, "\tfor (var ci = 0u; ci < %s; ci++) {\n", u(c.CG))
	fmt.Fprintf(b, "\t\tfor (var kh = 0u; kh < %s; kh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\tif (ph < kh * %s) { break; }\n", u(c.DH))
	fmt.Fprintf(b, "\t\t\tlet th = ph - kh * %s;\n", u(c.DH))
	fmt.Fprintf(b, "\t\t\tif (th %% %s != 0u || th / %s >= %s) { continue; }\n", u(c.SH), u(c.SH), u(c.H))
	fmt.Fprintf(b, "\t\t\tfor (var kw = 0u; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\tif (pw < kw * %s) { break; }\n", u(c.DW))
	fmt.Fprintf(b, "\t\t\t\tlet tw = pw - kw * %s;\n", u(c.DW))
	fmt.Fprintf(b, "\t\t\t\tif (tw %% %s != 0u || tw / %s >= %s) { continue; }\n", u(c.SW), u(c.SW), u(c.W))
	fmt.Fprintf(b, "\t\t\t\tlet p = %s;\n", Lang.Keep("in0["+xAt+"] * in1["+wAt+"]"))
	b.WriteString("\t\t\t\tacc = acc + p;\n\t\t\t}\n\t\t}\n\t}\n")
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 1))
	b.WriteString(codegen.Indent(stores(k, "i"), 1))
	b.WriteString("}\n")
}

// convTransposeLoopCost is the loop cost of a conv_transpose kernel (as
// LoopBudget counts it): the c loop, a kh loop per c and a kw loop per
// (c, kh), each with its exit test.
func convTransposeLoopCost(k *ir.Kernel) int {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	return (c.CG + 1) + c.CG*(c.KH+1) + c.CG*c.KH*(c.KW+1)
}
