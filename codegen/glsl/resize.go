package glsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// resize renders the accumulator of output element i of a 2-D resize
// from the taps of ir.ResizeTaps embedded as constant tables (resize_rh,
// resize_rw: I0, I1, then W0's and W1's bits): nearest copies the tap;
// linear rounds each product (Keep) and each sum, the columns first
// (cpuref.Resize2D). load0 reads x at logical row-major elements.
func resize(k *ir.Kernel) string {
	r := ir.Resize2DOf(k.Inputs[0].Shape, k.Attrs)
	u := Lang.Uint
	var b strings.Builder
	rh, nh := codegen.ResizeTable(r.Rows, codegen.ResizeU32)
	rw, nw := codegen.ResizeTable(r.Cols, codegen.ResizeU32)
	fmt.Fprintf(&b, "const uint resize_rh[%d] = uint[%d](%s);\nconst uint resize_rw[%d] = uint[%d](%s);\n", nh, nh, rh, nw, nw, rw)
	b.WriteString("float resize(uint i) {\n")
	fmt.Fprintf(&b, "\tuint ow = i %% %s;\n\tuint oh = i / %s %% %s;\n\tuint nc = i / %s;\n", u(r.OW), u(r.OW), u(r.OH), u(r.OW*r.OH))
	at := func(h, w string) string { return fmt.Sprintf("load0((nc * %s + %s) * %s + %s)", u(r.H), h, u(r.W), w) }
	rows := []string{"resize_rh[oh]"}
	if r.Rows.Linear() {
		rows = append(rows, fmt.Sprintf("resize_rh[%du + oh]", r.OH))
	}
	for j, h := range rows {
		fmt.Fprintf(&b, "\tuint h%d = %s;\n", j, h)
		if !r.Cols.Linear() {
			fmt.Fprintf(&b, "\tfloat r%d = %s;\n", j, at(fmt.Sprintf("h%d", j), "resize_rw[ow]"))
			continue
		}
		fmt.Fprintf(&b, "\tfloat p%d0 = %s;\n", j, Lang.Keep(fmt.Sprintf("uintBitsToFloat(resize_rw[%du + ow]) * %s", 2*r.OW, at(fmt.Sprintf("h%d", j), "resize_rw[ow]"))))
		fmt.Fprintf(&b, "\tfloat p%d1 = %s;\n", j, Lang.Keep(fmt.Sprintf("uintBitsToFloat(resize_rw[%du + ow]) * %s", 3*r.OW, at(fmt.Sprintf("h%d", j), fmt.Sprintf("resize_rw[%du + ow]", r.OW)))))
		fmt.Fprintf(&b, "\tfloat r%d = p%d0 + p%d1;\n", j, j, j)
	}
	if !r.Rows.Linear() {
		b.WriteString("\treturn r0;\n}\n")
		return b.String()
	}
	fmt.Fprintf(&b, "\tfloat q0 = %s;\n", Lang.Keep(fmt.Sprintf("uintBitsToFloat(resize_rh[%du + oh]) * r0", 2*r.OH)))
	fmt.Fprintf(&b, "\tfloat q1 = %s;\n", Lang.Keep(fmt.Sprintf("uintBitsToFloat(resize_rh[%du + oh]) * r1", 3*r.OH)))
	b.WriteString("\treturn q0 + q1;\n}\n")
	return b.String()
}
