package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// poolGrad emits maxpool2d's input gradient, one thread per element of x:
// one accumulator from +0 over the windows holding the element, (oh, ow)
// ascending (kh, kw descending), adding the window's gradient where the
// window selects the element — its tap walk is pool's, the selection the
// first tap and then each where the maximum's bits change:
// cpuref.MaxPool2DGrad's. Then the epilogue, at the same element.
func poolGrad(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	n := k.Shape.Len()
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((n+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"nn", "ch", "ph - " + u(c.PT), "pw - " + u(c.PL)})
	gAt := codegen.Offset(Lang, k.Inputs[1], []string{"nn", "ch", "oh", "ow"})
	none := u(c.KH * c.KW)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet i = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (i >= %s) { return; }\n", u(n))
	fmt.Fprintf(b, "\tlet w = i %% %s;\n\tlet h = i / %s %% %s;\n\tlet ch = i / %s %% %s;\n\tlet nn = i / %s;\n",
		u(c.W), u(c.W), u(c.H), u(c.W*c.H), u(c.C), u(c.W*c.H*c.C))
	b.WriteString("\tvar acc = params.zero;\n")
	fmt.Fprintf(b, "\tfor (var jh = 0u; jh < %s; jh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\tlet kh = %s - jh;\n", u(c.KH-1))
	// qh = oh·sH: the window's first row in the padded input.
	fmt.Fprintf(b, "\t\tif (h + %s < kh * %s) { continue; }\n", u(c.PT), u(c.DH))
	fmt.Fprintf(b, "\t\tlet qh = h + %s - kh * %s;\n", u(c.PT), u(c.DH))
	fmt.Fprintf(b, "\t\tif (qh %% %s != 0u || qh / %s >= %s) { continue; }\n", u(c.SH), u(c.SH), u(c.OH))
	fmt.Fprintf(b, "\t\tlet oh = qh / %s;\n", u(c.SH))
	fmt.Fprintf(b, "\t\tfor (var jw = 0u; jw < %s; jw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\tlet kw = %s - jw;\n", u(c.KW-1))
	fmt.Fprintf(b, "\t\t\tif (w + %s < kw * %s) { continue; }\n", u(c.PL), u(c.DW))
	fmt.Fprintf(b, "\t\t\tlet qw = w + %s - kw * %s;\n", u(c.PL), u(c.DW))
	fmt.Fprintf(b, "\t\t\tif (qw %% %s != 0u || qw / %s >= %s) { continue; }\n", u(c.SW), u(c.SW), u(c.OW))
	fmt.Fprintf(b, "\t\t\tlet ow = qw / %s;\n", u(c.SW))
	// -Inf from Params.zero: Tint refuses an infinite constant expression.
	b.WriteString("\t\t\tvar m = bitcast<f32>(0xff800000u | bitcast<u32>(params.zero));\n")
	fmt.Fprintf(b, "\t\t\tvar sel = %s;\n", none)
	fmt.Fprintf(b, "\t\t\tfor (var th = 0u; th < %s; th++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\t\tlet ph = oh * %s + th * %s;\n", u(c.SH), u(c.DH))
	fmt.Fprintf(b, "\t\t\t\tfor (var tw = 0u; tw < %s; tw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\t\tlet pw = ow * %s + tw * %s;\n", u(c.SW), u(c.DW))
	fmt.Fprintf(b, "\t\t\t\t\tif (ph >= %s && ph < %s && pw >= %s && pw < %s) {\n", u(c.PT), u(c.PT+c.H), u(c.PL), u(c.PL+c.W))
	fmt.Fprintf(b, "\t\t\t\t\t\tlet xv = in0[%s];\n", xAt)
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "m", "xv", "mx"), 6))
	fmt.Fprintf(b, "\t\t\t\t\t\tif (sel == %s || %s != %s) { sel = th * %s + tw; }\n", none, Lang.FloatBits("mx"), Lang.FloatBits("m"), u(c.KW))
	b.WriteString("\t\t\t\t\t\tm = mx;\n\t\t\t\t\t}\n\t\t\t\t}\n\t\t\t}\n")
	fmt.Fprintf(b, "\t\t\tif (sel == kh * %s + kw) { acc = acc + in1[%s]; }\n", u(c.KW), gAt)
	b.WriteString("\t\t}\n\t}\n")
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 1))
	b.WriteString(codegen.Indent(stores(k, "i"), 1))
	b.WriteString("}\n")
}

// poolGradLoopCost is the loop cost of a pool_grad kernel (as LoopBudget
// counts it): the kh loop, a kw loop per kh, and per window pool's loops.
func poolGradLoopCost(k *ir.Kernel) int {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	window := (c.KH + 1) + c.KH*(c.KW+1)
	return (c.KH + 1) + c.KH*(c.KW+1) + c.KH*c.KW*window
}
