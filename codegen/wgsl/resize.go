package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// resize emits a 2-D resize, one thread per output element, from the
// taps of ir.ResizeTaps embedded as tables (resize_rh over the
// rows, resize_rw over the columns: I0, I1, then W0's and W1's bits):
// nearest copies the tap; linear rounds each product (times Params.one,
// so no driver contracts it) and each sum, the columns first
// (cpuref.Resize2D). Then the epilogue, at the same element.
func resize(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	r := ir.Resize2DOf(k.Inputs[0].Shape, k.Attrs)
	n := k.Shape.Len()
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((n+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	u := Lang.Uint
	rh, nh := codegen.ResizeTable(r.Rows, codegen.ResizeU32)
	rw, nw := codegen.ResizeTable(r.Cols, codegen.ResizeU32)
	// Private variables, not consts: naga indexes a const array only by
	// constants. Each invocation initialises its copy (a cost per thread
	// of the tables' length).
	fmt.Fprintf(b, "var<private> resize_rh: array<u32, %d> = array<u32, %d>(%s);\nvar<private> resize_rw: array<u32, %d> = array<u32, %d>(%s);\n", nh, nh, rh, nw, nw, rw)
	at := func(h, w string) string {
		return "in0[" + codegen.Offset(Lang, k.Inputs[0], []string{"nn", "ch", h, w}) + "]"
	}
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet i = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (i >= %s) { return; }\n", u(n))
	fmt.Fprintf(b, "\tlet ow = i %% %s;\n\tlet oh = i / %s %% %s;\n\tlet ch = i / %s %% %s;\n\tlet nn = i / %s;\n",
		u(r.OW), u(r.OW), u(r.OH), u(r.OW*r.OH), u(r.C), u(r.OW*r.OH*r.C))
	rows := []string{"resize_rh[oh]"}
	if r.Rows.Linear() {
		rows = append(rows, fmt.Sprintf("resize_rh[%du + oh]", r.OH))
	}
	for j, h := range rows {
		fmt.Fprintf(b, "\tlet h%d = %s;\n", j, h)
		if !r.Cols.Linear() {
			fmt.Fprintf(b, "\tlet r%d = %s;\n", j, at(fmt.Sprintf("h%d", j), "resize_rw[ow]"))
			continue
		}
		{
			fmt.Fprintf(b, "\tlet p%d0 = %s;\n", j, Lang.Keep(fmt.Sprintf("bitcast<f32>(resize_rw[%du + ow]) * %s", 2*r.OW, at(fmt.Sprintf("h%d", j), "resize_rw[ow]"))))
			fmt.Fprintf(b, "\tlet p%d1 = %s;\n", j, Lang.Keep(fmt.Sprintf("bitcast<f32>(resize_rw[%du + ow]) * %s", 3*r.OW, at(fmt.Sprintf("h%d", j), fmt.Sprintf("resize_rw[%du + ow]", r.OW)))))
			fmt.Fprintf(b, "\tlet r%d = p%d0 + p%d1;\n", j, j, j)
		}
	}
	if !r.Rows.Linear() {
		b.WriteString("\tlet acc = r0;\n")
	} else {
		fmt.Fprintf(b, "\tlet q0 = %s;\n", Lang.Keep(fmt.Sprintf("bitcast<f32>(resize_rh[%du + oh]) * r0", 2*r.OH)))
		fmt.Fprintf(b, "\tlet q1 = %s;\n", Lang.Keep(fmt.Sprintf("bitcast<f32>(resize_rh[%du + oh]) * r1", 3*r.OH)))
		b.WriteString("\tlet acc = q0 + q1;\n")
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 1))
	b.WriteString(codegen.Indent(stores(k, "i"), 1))
	b.WriteString("}\n")
}
