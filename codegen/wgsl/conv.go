package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// pool emits a max pooling, one thread per output element: its
// accumulator starts at -Inf and takes maximum (the op table's) with each
// tap inside x, (kh, kw) ascending: cpuref.MaxPool2D's order. Then the
// epilogue, at the same element.
func pool(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	n := k.Shape.Len()
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((n+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	u := Lang.Uint
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"nn", "ch", "ph - " + u(c.PT), "pw - " + u(c.PL)})
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet i = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (i >= %s) { return; }\n", u(n))
	fmt.Fprintf(b, "\tlet ow = i %% %s;\n\tlet oh = i / %s %% %s;\n\tlet ch = i / %s %% %s;\n\tlet nn = i / %s;\n",
		u(c.OW), u(c.OW), u(c.OH), u(c.OW*c.OH), u(c.C), u(c.OW*c.OH*c.C))
	// -Inf from Params.zero: Tint refuses an infinite constant expression.
	b.WriteString("\tvar acc = bitcast<f32>(0xff800000u | bitcast<u32>(params.zero));\n")
	fmt.Fprintf(b, "\tfor (var kh = 0u; kh < %s; kh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\tlet ph = oh * %s + kh * %s;\n", u(c.SH), u(c.DH))
	fmt.Fprintf(b, "\t\tfor (var kw = 0u; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\tlet pw = ow * %s + kw * %s;\n", u(c.SW), u(c.DW))
	fmt.Fprintf(b, "\t\t\tif (ph >= %s && ph < %s && pw >= %s && pw < %s) {\n", u(c.PT), u(c.PT+c.H), u(c.PL), u(c.PL+c.W))
	fmt.Fprintf(b, "\t\t\t\tlet xv = in0[%s];\n", xAt)
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "acc", "xv", "mx"), 4))
	b.WriteString("\t\t\t\tacc = mx;\n\t\t\t}\n\t\t}\n\t}\n")
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 1))
	b.WriteString(codegen.Indent(stores(k, "i"), 1))
	b.WriteString("}\n")
}
