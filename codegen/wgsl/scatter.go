package wgsl

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// scatterBody returns value(e)'s statements for scatter node i
// (codegen.ScatterGather: e folds the candidates that aim at it, in the
// updates' order), with the float combination's definitions and
// constants. ld(k, e) loads element e of argument k (data, updates,
// indices). A node whose invocations would loop past ir.LoopBudget is
// refused by name (lavapipe ends an invocation's loops after 65535
// iterations in all).
func scatterBody(g *ir.Graph, i int, ld func(k int, e string) string) (body, defs []string, consts []float32, err error) {
	n := &g.Nodes[i]
	t := n.DType
	sg := codegen.TypedScatters[n.Op](g, n)
	if c := sg.LoopCost(t); c > ir.LoopBudget {
		return nil, nil, nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v with %d candidates an element: the WGSL scatter loops %d times an invocation, over the budget of %d", n.Op, t, sg.Candidates, c, ir.LoopBudget)
	}
	at := func(op ir.Operand) string { return codegen.Index(Lang, op, "e") }
	body = append(body, "var acc = "+ld(0, "e")+";")
	cond := "true"
	for _, gd := range sg.Guards {
		cond += fmt.Sprintf(" && (%s) < %du", at(gd.Coord), gd.Limit)
	}
	body = append(body, "if ("+cond+") {",
		fmt.Sprintf("\tlet u0 = %s;", at(sg.Upd)),
		fmt.Sprintf("\tlet i0 = %s;", at(sg.Idx)),
		fmt.Sprintf("\tfor (var c = 0u; c < %du; c++) {", sg.Candidates),
		"\t\tvar hit = true;")
	for j, d := range sg.Bounds {
		body = append(body, "\t\t{",
			fmt.Sprintf("\t\t\tlet v = %s;", ld(2, fmt.Sprintf("i0 + c * %du + %du", sg.IdxStep, j))))
		for _, ln := range splitLines(indexCheck(d, t)) {
			body = append(body, "\t\t\t"+ln)
		}
		body = append(body, fmt.Sprintf("\t\t\thit = hit && jj == (%s);", at(sg.Coords[j])), "\t\t}")
	}
	body = append(body, "\t\tif (hit) {",
		fmt.Sprintf("\t\t\tlet u = %s;", ld(1, fmt.Sprintf("u0 + c * %du", sg.UpdStep))))
	switch comb := sg.Reduction.Combine(); {
	case comb == ir.OpInvalid:
		body = append(body, "\t\t\tacc = u;")
	case t.IsFloat():
		lines, fdefs, fconsts := codegen.ExactRow(Lang, comb, 0, "acc", "u", "v2")
		for _, ln := range lines {
			body = append(body, "\t\t\t"+ln)
		}
		defs, consts = fdefs, fconsts
		body = append(body, "\t\t\tacc = "+roundTo(t, "v2")+";")
	default:
		body = append(body, "\t\t\tacc = "+codegen.RenderIntRow(&intLang, comb, t, "acc", "u")+";")
	}
	body = append(body, "\t\t}", "\t}", "}", "return acc;")
	return body, defs, consts, nil
}

// splitLines splits s at its newlines.
func splitLines(s string) []string {
	var out []string
	start := 0
	for k := range len(s) {
		if s[k] == '\n' {
			out = append(out, s[start:k])
			start = k + 1
		}
	}
	return append(out, s[start:])
}
