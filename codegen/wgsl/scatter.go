package wgsl

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

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

// The linear scatter. A scatter node run as TypedNode writes it (value(e)
// folding every candidate that may aim at e) costs the output times the
// candidates. TypedKernels runs it instead as three passes over a scratch
// buffer of ScatterScratch words that every pass leaves all zero (WebGPU
// zeroes a buffer at creation), each pass a dispatch that sees the last's
// writes:
//
//   - copy: one invocation per storage word of the output, the data's
//     elements as TypedNode's copy stores them;
//   - mark: one per update element u, which checks its index components
//     (one outside its dimension faults with FaultIndex and marks
//     nothing) and, on its target element t, raises mark[t] to u+1 by
//     atomicMax, the last update in the reference's order winning, and
//     (a reduction) counts the updates aimed at t;
//   - apply: one per update element; the winner of its target (mark[t] is
//     u+1: exactly one invocation a marked target) zeroes t's scratch
//     words and stores t's value: the update (none), the data combined
//     with it (a reduction of one update at t), or value(t), TypedNode's
//     fold of the candidates in the reference's order (a reduction with
//     several updates at t): the same bits as the reference in each case.
//     A narrow element is stored into its word by atomicAnd and atomicOr
//     (its neighbours are other winners'); a uint64 result of 2^63 or
//     more faults with FaultU64 only where no index faulted, as the
//     reference checks the indices first.
//
// Where each element has one candidate (one index row, or indices of one
// along the axis: a KV cache's row), no two updates can aim at one
// element, and apply alone stores each update's value (combined with the
// data's under a reduction), with no mark and no scratch.
//
// So a scatter costs the output plus the updates (none, and a reduction
// whose updates aim at distinct elements), plus Candidates a target aimed
// at twice or more (no float atomics, whose order varies: the fold is
// cpuref's). The fault mode FaultPerElement (the row tests) keeps the
// output-side kernel.

// TypedKernels returns the kernels of node i in dispatch order and the
// words of scratch storage they share (0: none, and no scratch binding):
// TypedNode's one kernel, or a scatter's linear passes in FaultPerNode
// mode, whose bindings are TypedNode's followed by the scratch buffer.
func TypedKernels(g *ir.Graph, i int, mode FaultMode) ([]codegen.Shader, int, error) {
	if mode == FaultPerNode && codegen.TypedScatters[g.Nodes[i].Op] != nil {
		return scatterPasses(g, i)
	}
	s, err := TypedNode(g, i, mode)
	if err != nil {
		return nil, 0, err
	}
	return []codegen.Shader{s}, 0, nil
}

// scatterScratch is the scratch words of scatter node n: its winner
// words, and for a reduction its counts; none where no two updates can
// aim at one element (direct).
func scatterScratch(n *ir.Node, direct bool) int {
	switch {
	case direct:
		return 0
	case ir.ScatterReductionOf(n.Op, n.Attrs) == ir.ScatterNone:
		return max(1, n.Shape.Len())
	}
	return max(1, 2*n.Shape.Len())
}

// ScatterInPlace returns the kernels of scatter node i computed in place:
// its output's storage is its data's (a donated buffer, whose node only
// the scatter reads), so the copy is not made and mark and apply (see
// TypedKernels) run alone, reading the data from the output: only the
// elements that updates aim at are written. Its bindings are
// TypedKernels' without the data's (the distinct operands but the data,
// in order of first use; then the output, the faults, the parameters and
// the scratch). It is refused (invalid_graph) where the updates or the
// indices are the data's node, and (unsupported) for float16 and
// bfloat16, whose copy stores a NaN quieted (t_f16_bits), so that data
// left where it is would keep bits the copy changes.
func ScatterInPlace(g *ir.Graph, i int) ([]codegen.Shader, error) {
	n := &g.Nodes[i]
	if codegen.TypedScatters[n.Op] == nil || n.Args[1] == n.Args[0] || n.Args[2] == n.Args[0] {
		return nil, ir.Errorf(ir.CodeInvalidGraph, i, "op", "%v: computed in place only as a scatter whose updates and indices are not its data", n.Op)
	}
	if n.DType == ir.F16 || n.DType == ir.BF16 {
		return nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: not computed in place (the copy quiets a NaN's payload; the data's bits would stay)", n.Op, n.DType)
	}
	ks, _, err := scatterKernels(g, i, true)
	return ks, err
}

// scatterPasses writes scatter node i's linear passes (see TypedKernels).
func scatterPasses(g *ir.Graph, i int) ([]codegen.Shader, int, error) {
	return scatterKernels(g, i, false)
}

// dataFromOutput matches a storage word of loadFn's output over "t_dw".
var dataFromOutput = regexp.MustCompile(`t_dw\[([^\]]*)\]`)

// scatterKernels writes scatter node i's linear passes, or with inPlace
// its in-place ones (ScatterInPlace).
func scatterKernels(g *ir.Graph, i int, inPlace bool) ([]codegen.Shader, int, error) {
	n := &g.Nodes[i]
	t := n.DType
	var args []int // distinct operands, binding order (TypedNode's); in place, not the data
	bind := make([]int, len(n.Args))
	for k, a := range n.Args {
		if inPlace && k == 0 {
			bind[k] = -1
			continue
		}
		bind[k] = slices.Index(args, int(a))
		if bind[k] < 0 {
			bind[k] = len(args)
			args = append(args, int(a))
		}
	}
	ld := func(k int, e string) string {
		if bind[k] < 0 {
			return fmt.Sprintf("t_data(%s)", e)
		}
		return fmt.Sprintf("ld%d(%s)", bind[k], e)
	}
	s := ir.ScatterOf(g, n)
	red := s.Reduction != ir.ScatterNone
	// direct: each element has one candidate (one index row, or one index
	// along the axis), so no two updates aim at one element: apply stores
	// each update's value, with no scratch and no mark.
	direct := codegen.TypedScatters[n.Op](g, n).Candidates == 1
	words := 1 // scratch words an element
	var body, defs []string
	var consts []float32
	ct := computeType(t)
	if red {
		words = 2
		var err error
		if !direct {
			if body, defs, consts, err = scatterBody(g, i, ld); err != nil {
				return nil, 0, err
			}
		}
		comb := s.Reduction.Combine()
		var cdefs []string
		if t.IsFloat() {
			lines, fdefs, c2 := codegen.ExactRow(Lang, comb, 0, "acc", "u", "v2")
			if direct {
				cdefs, consts = fdefs, c2
			}
			cdefs = append(cdefs, fmt.Sprintf("fn t_comb(acc: %s, u: %s) -> %s {", ct, ct, ct))
			if !direct && !slices.Equal(c2, consts) {
				return nil, 0, ir.Errorf(ir.CodeInternal, i, "op", "%v: the combination's constants differ between its two renderings", n.Op)
			}
			cdefs = append(cdefs, indentLines(lines)...)
			cdefs = append(cdefs, "\treturn "+roundTo(t, "v2")+";")
		} else {
			cdefs = append(cdefs, fmt.Sprintf("fn t_comb(acc: %s, u: %s) -> %s {", ct, ct, ct))
			cdefs = append(cdefs, "\treturn "+codegen.RenderIntRow(&intLang, comb, t, "acc", "u")+";")
		}
		defs = append(defs, append(cdefs, "}")...)
	}
	m, nu := n.Shape.Len(), s.Base.Shape.Len()
	var b strings.Builder
	b.WriteString("// Code generated by gpucc. DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// typed node %d: %v -> %v %v, linear: copy, mark, apply\n\n", i, n.Op, t, n.Shape)
	fmt.Fprintf(&b, "struct Params { one: f32, zero: f32, k: array<vec4<f32>, %d> }\n\n", max(1, (len(consts)+3)/4))
	var kinds []codegen.BindingKind
	for j := range args {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> in%d: array<u32>;\n", j, j)
		kinds = append(kinds, codegen.ReadOnly)
	}
	nb := len(args)
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> out0: array<atomic<u32>>;\n", nb)
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> fault: array<atomic<u32>>;\n", nb+1)
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<uniform> params: Params;\n", nb+2)
	kinds = append(kinds, codegen.ReadWrite, codegen.ReadWrite, codegen.Uniform)
	if !direct {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> mark: array<atomic<u32>>;\n", nb+3)
		kinds = append(kinds, codegen.ReadWrite)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "fn t_fault(e: u32, code: u32) { atomicMax(&fault[%du], code); }\n", i)
	b.WriteString(typedPrelude)
	b.WriteString("\n")
	for j, a := range args {
		b.WriteString(loadFn(fmt.Sprintf("ld%d", j), fmt.Sprintf("in%d", j), g.Nodes[a].DType))
	}
	if inPlace { // the data is the output's storage: an element's word as the copy would have stored it
		b.WriteString(dataFromOutput.ReplaceAllString(loadFn("t_data", "t_dw", t), "atomicLoad(&out0[$1])"))
	}
	b.WriteString(codegen.Indent(defs, 0))
	if red && !direct {
		fmt.Fprintf(&b, "\nfn value(e: u32) -> %s {\n", ct)
		b.WriteString(codegen.Indent(body, 1))
		b.WriteString("}\n")
	}
	// target(u): the element update u lands on (ir.Scatter), or
	// 0xffffffffu after a fault for an index outside its dimension.
	fmt.Fprintf(&b, "\nfn t_target(u: u32) -> u32 {\n\tvar at = %s;\n\tlet i0 = %s;\n", codegen.Index(Lang, s.Base, "u"), codegen.Index(Lang, s.Index, "u"))
	for j, d := range s.Bounds {
		fmt.Fprintf(&b, "\t{\n\t\tlet v = %s;\n", ld(2, fmt.Sprintf("i0 + %du", j)))
		fmt.Fprintf(&b, "\t\tif (!((v.y == 0u && v.x < %du) || (v.y == 0xffffffffu && v.x >= %du))) { t_fault(u, %du); return 0xffffffffu; }\n", d, uint32(-int64(d)), FaultIndex)
		fmt.Fprintf(&b, "\t\tat = at + select(v.x + %du, v.x, v.y == 0u) * %du;\n\t}\n", d, s.Steps[j])
	}
	b.WriteString("\treturn at;\n}\n")
	per := perWord(t)
	flat := func(name string) {
		fmt.Fprintf(&b, "\n@compute @workgroup_size(%d)\n", ElementwiseThreads)
		fmt.Fprintf(&b, "fn %s(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n", name)
		fmt.Fprintf(&b, "\tlet w = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	}
	if !inPlace { // copy: the data's elements, a word an invocation.
		flat("s_copy")
		fmt.Fprintf(&b, "\tif (w >= %du) { return; }\n", (m+per-1)/per)
		switch {
		case t.Size() == 8:
			fmt.Fprintf(&b, "\tlet v = %s;\n\tatomicStore(&out0[2u * w], v.x);\n\tatomicStore(&out0[2u * w + 1u], v.y);\n", ld(0, "w"))
		case per == 1:
			fmt.Fprintf(&b, "\tatomicStore(&out0[w], %s);\n", storeBits(t, ld(0, "w")))
		default:
			bits := 32 / per
			fmt.Fprintf(&b, "\tvar x = %s;\n", storeBits(t, ld(0, fmt.Sprintf("%du * w", per))))
			for l := 1; l < per; l++ {
				fmt.Fprintf(&b, "\tif (%du * w + %du < %du) { x = x | (%s << %du); }\n", per, l, m, storeBits(t, ld(0, fmt.Sprintf("%du * w + %du", per, l))), bits*l)
			}
			b.WriteString("\tatomicStore(&out0[w], x);\n")
		}
		b.WriteString("}\n")
	}
	if !direct { // mark: the last update an element wins; a reduction counts them.
		flat("s_mark")
		fmt.Fprintf(&b, "\tif (w >= %du) { return; }\n\tlet at = t_target(w);\n\tif (at == 0xffffffffu) { return; }\n", nu)
		fmt.Fprintf(&b, "\tatomicMax(&mark[%du * at], w + 1u);\n", words)
		if red {
			b.WriteString("\tatomicAdd(&mark[2u * at + 1u], 1u);\n")
		}
		b.WriteString("}\n")
	}
	// apply: each marked element's winner (direct: each update) stores its
	// value and zeroes its scratch words.
	flat("s_apply")
	fmt.Fprintf(&b, "\tif (w >= %du) { return; }\n\tlet at = t_target(w);\n", nu)
	switch {
	case direct:
		b.WriteString("\tif (at == 0xffffffffu) { return; }\n")
	default:
		fmt.Fprintf(&b, "\tif (at == 0xffffffffu || atomicLoad(&mark[%du * at]) != w + 1u) { return; }\n", words)
		fmt.Fprintf(&b, "\tatomicStore(&mark[%du * at], 0u);\n", words)
	}
	switch {
	case red && direct:
		fmt.Fprintf(&b, "\tlet v = t_comb(%s, %s);\n", ld(0, "at"), ld(1, "w"))
	case red:
		b.WriteString("\tlet count = atomicLoad(&mark[2u * at + 1u]);\n\tatomicStore(&mark[2u * at + 1u], 0u);\n")
		fmt.Fprintf(&b, "\tvar v: %s;\n\tif (count == 1u) { v = t_comb(%s, %s); } else { v = value(at); }\n", ct, ld(0, "at"), ld(1, "w"))
	default:
		fmt.Fprintf(&b, "\tlet v = %s;\n", ld(1, "w"))
	}
	if codegen.CheckedU64(n) {
		fmt.Fprintf(&b, "\tif (t_isneg(v) && atomicLoad(&fault[%du]) == 0u) { t_fault(at, %du); }\n", i, FaultU64)
	}
	switch {
	case t.Size() == 8:
		b.WriteString("\tatomicStore(&out0[2u * at], v.x);\n\tatomicStore(&out0[2u * at + 1u], v.y);\n")
	case per == 1:
		fmt.Fprintf(&b, "\tatomicStore(&out0[at], %s);\n", storeBits(t, "v"))
	default:
		bits := 32 / per
		fmt.Fprintf(&b, "\tlet sh = (at %% %du) * %du;\n", per, bits)
		fmt.Fprintf(&b, "\tatomicAnd(&out0[at / %du], ~(0x%xu << sh));\n", per, uint32(1)<<bits-1)
		fmt.Fprintf(&b, "\tatomicOr(&out0[at / %du], %s << sh);\n", per, storeBits(t, "v"))
	}
	b.WriteString("}\n")
	src := b.String()
	groups := func(threads int) [3]int {
		return codegen.Groups1D(max(1, (threads+ElementwiseThreads-1)/ElementwiseThreads), maxGroupsPerDim)
	}
	params := typedParams(consts)
	var out []codegen.Shader
	for _, p := range []struct {
		entry   string
		threads int
	}{{"s_copy", (m + per - 1) / per}, {"s_mark", nu}, {"s_apply", nu}} {
		if inPlace && p.entry == "s_copy" || direct && p.entry == "s_mark" {
			continue
		}
		out = append(out, codegen.Shader{Name: fmt.Sprintf("typed%d_%v_%s", i, n.Op, p.entry), Source: src, Entry: p.entry,
			Bindings: kinds, Workgroup: [3]int{ElementwiseThreads, 1, 1}, Groups: groups(p.threads), Params: params})
	}
	return out, scatterScratch(n, direct), nil
}
