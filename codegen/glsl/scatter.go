package glsl

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// scatterBody returns value(e)'s statements for scatter node i
// (codegen.ScatterGather: e folds the candidates that aim at it, in the
// updates' order), with the float combination's definitions, as the WGSL
// typed path writes it. ld(k, e) loads element e of argument k (data,
// updates, indices). A node whose invocations would loop past
// ir.LoopBudget, or whose checks (the output times the candidates) pass
// ir.MaxGLSLScatterChecks, is refused by name: WebGL2 has no atomics and
// no scattered stores for the other backends' linear form, and ir's cost
// counts that form.
func scatterBody(g *ir.Graph, i int, ld func(k int, e string) string) (body, defs []string, err error) {
	n := &g.Nodes[i]
	t := n.DType
	sg := codegen.TypedScatters[n.Op](g, n)
	if c := sg.LoopCost(t); c > ir.LoopBudget {
		return nil, nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v with %d candidates an element: the GLSL scatter loops %d times an invocation, over the budget of %d", n.Op, t, sg.Candidates, c, ir.LoopBudget)
	}
	if c := int64(n.Shape.Len()) * int64(sg.Candidates); c > ir.MaxGLSLScatterChecks {
		return nil, nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v into %d elements with %d candidates each: the GLSL scatter checks each element's candidates, %d checks, past ir.MaxGLSLScatterChecks (%d); the other backends run it in a pass over the updates", n.Op, t, n.Shape.Len(), sg.Candidates, c, ir.MaxGLSLScatterChecks)
	}
	at := func(op ir.Operand) string { return codegen.Index(Lang, op, "e") }
	ct := computeType(t)
	body = append(body, ct+" acc = "+ld(0, "e")+";")
	cond := "true"
	for _, gd := range sg.Guards {
		cond += fmt.Sprintf(" && (%s) < %du", at(gd.Coord), gd.Limit)
	}
	body = append(body, "if ("+cond+") {",
		fmt.Sprintf("\tuint u0 = %s;", at(sg.Upd)),
		fmt.Sprintf("\tuint i0 = %s;", at(sg.Idx)),
		fmt.Sprintf("\tfor (uint c = 0u; c < %du; c++) {", sg.Candidates),
		"\t\tbool hit = true;")
	for j, d := range sg.Bounds {
		d := int64(d)
		body = append(body, "\t\t{",
			fmt.Sprintf("\t\t\tuvec2 v = %s;", ld(2, fmt.Sprintf("i0 + c * %du + %du", sg.IdxStep, j))),
			fmt.Sprintf("\t\t\tif (t_lt(v, %s) || !t_lt(v, %s)) { t_fault(e, %du); return %s; }", i64Lit(-d), i64Lit(d), FaultIndex, zeroOf(t)),
			fmt.Sprintf("\t\t\tuint jj = t_isneg(v) ? v.x + %du : v.x;", d),
			fmt.Sprintf("\t\t\thit = hit && jj == (%s);", at(sg.Coords[j])), "\t\t}")
	}
	body = append(body, "\t\tif (hit) {",
		fmt.Sprintf("\t\t\t%s u = %s;", ct, ld(1, fmt.Sprintf("u0 + c * %du", sg.UpdStep))))
	switch comb := sg.Reduction.Combine(); {
	case comb == ir.OpInvalid:
		body = append(body, "\t\t\tacc = u;")
	case t.IsFloat():
		lines, fdefs, _ := codegen.ExactRow(Lang, comb, 0, "acc", "u", "v2")
		for _, ln := range lines {
			body = append(body, "\t\t\t"+ln)
		}
		defs = fdefs
		body = append(body, "\t\t\tacc = "+roundTo(t, "v2")+";")
	default:
		body = append(body, "\t\t\tacc = "+codegen.RenderIntRow(&intLang, comb, t, "acc", "u")+";")
	}
	body = append(body, "\t\t}", "\t}", "}", "return acc;")
	return body, defs, nil
}
