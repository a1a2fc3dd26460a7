package c

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// Fault codes a typed unit sets in *fault: the run has no right answer.
const (
	FaultInteger = 1 // an integer division or modulo by zero, a cast with no answer (ir.CodeIntegerFault)
	FaultIndex   = 2 // a gather index outside its axis (ir.CodeInvalidInput)
	FaultU64     = 3 // a uint64 result of 2^63 or more, which its int64 carrier does not hold (ir.CodeUnsupported)
)

// FaultCode returns the error code of fault flag f (FaultInteger,
// FaultIndex, FaultU64); false for any other value.
func FaultCode(f int32) (ir.Code, bool) {
	switch f {
	case FaultInteger:
		return ir.CodeIntegerFault, true
	case FaultIndex:
		return ir.CodeInvalidInput, true
	case FaultU64:
		return ir.CodeUnsupported, true
	}
	return "", false
}

// EmitTypedGraph returns C computing every node of the validated typed
// graph g, node by node, each into its own buffer at its dtype's width:
// "void name(void **b, int *fault)", b[i] node i's storage (the caller
// fills the inputs'), fault two ints the caller zeroes, with cpuref's bits (the typed rows of
// typed.go; views, gathers and reductions by the reference's index maps,
// a float reduction by its pairwise tree rounded to the dtype after each
// combination; a float row without a C row of its own, such as exp, by its
// reference expression as every kernel renders it, then rounded to the
// dtype). A fault sets fault[0] (FaultInteger, FaultIndex) and fault[1]
// the faulting node, and returns: the first node that faults, in graph
// order, as the reference stops at it. An op it does not hold is refused
// with unsupported, naming the node. It is the typed path in C, node by
// node, not yet fused kernels: the native and wasm backends run it
// (their TypedDevice).
func EmitTypedGraph(g *ir.Graph, name string) (string, error) {
	var b strings.Builder
	var defs []string
	fmt.Fprintf(&b, "void %s(void **b, int *fault) {\n", name)
	for i := range g.Nodes {
		if err := emitTypedNode(&b, &defs, g, i); err != nil {
			return "", err
		}
		if n := &g.Nodes[i]; codegen.CheckedU64(n) { // uint64's carrier: a result's sign bit is 2^63
			fmt.Fprintf(&b, "\tfor (t_i64 i = 0; i < %d; i++) { if (((t_i64 *)b[%d])[i] < 0) { fault[0] = %d; fault[1] = %d; return; } }\n", n.Shape.Len(), i, FaultU64, i)
		}
	}
	b.WriteString("}\n")
	return strings.Join(defs, "\n") + "\n" + b.String(), nil
}

// TypedPrelude is the C the units of EmitTypedGraph need, once per
// translation unit: the C unit's own prelude (F, u32) and the typed rows.
func TypedPrelude() string { return prelude + typedPrelude }

// exprNode returns, for a float elementwise row that is not a C row of its
// own (exp, log, tanh, erf, a scalar form, …), the statements computing
// element i by the op's reference expression (codegen's rendering, the one
// every kernel uses) over loads la and lb and a scalar form's scalar s,
// ending in the value named "v2", and the definitions of the functions it
// calls, each guarded so that a unit holds it once.
func exprNode(op ir.Op, s float32, la, lb string) (body []string, defs []string) {
	k := &ir.Kernel{Kind: ir.KernelElementwise, Body: []ir.Instr{
		{Kind: ir.InstrLoad, Operand: 0, Node: -1}, {Kind: ir.InstrLoad, Operand: 1, Node: -1},
		{Kind: ir.InstrOp, Op: op, Args: [2]int32{0, 1}, Scalar: s, Node: -1}}, Stores: []int32{2}}
	body = codegen.Body(Lang, k, func(operand int) string { return []string{la, lb}[operand] }, "")
	for _, f := range codegen.FuncsOf(k) {
		guard := "GPUCC_" + codegen.FuncName(f)
		defs = append(defs, "#ifndef "+guard, "#define "+guard)
		defs = append(defs, codegen.Define(Lang, []*ir.Func{f}, 0)...)
		defs = append(defs, "#endif")
	}
	return body, defs
}

func emitTypedNode(b *strings.Builder, defs *[]string, g *ir.Graph, i int) error {
	n := &g.Nodes[i]
	ptr := func(id int) string {
		return fmt.Sprintf("((%s *)b[%d])", StorageType(g.Nodes[id].DType), id)
	}
	arg := func(k int) string { return ptr(int(n.Args[k])) }
	y := ptr(i)
	m := n.Shape.Len()
	info := n.Op.Info()
	loop := func(body string) { fmt.Fprintf(b, "\tfor (t_i64 i = 0; i < %d; i++) { %s }\n", m, body) }
	switch {
	case n.Op == ir.OpInput:
	case n.Op == ir.OpFull:
		var v string
		if n.DType.IsFloat() {
			v = fmt.Sprintf("F(0x%08xu)", math.Float32bits(n.Scalar))
		} else if n.DType.IsFloat64() {
			v = fmt.Sprintf("f64_of(0x%016xull)", uint64(n.Ints[0]))
		} else if n.Ints[0] == math.MinInt64 {
			v = "(-9223372036854775807LL - 1)"
		} else {
			v = fmt.Sprintf("%dLL", n.Ints[0])
		}
		loop(y + "[i] = " + typedStore(n.DType, v) + ";")
	case codegen.TypedMoves[n.Op] != nil: // a structural row: where each element comes from
		mv, _ := codegen.TypedMoveOf(g, i)
		switch {
		case !mv.Indexed && mv.Source.Plain(): // the same elements in the same order (a reshape)
			loop(fmt.Sprintf("%s[i] = %s[i];", y, arg(0)))
		case !mv.Indexed:
			strided(b, n.Shape, []string{"s"}, [][]int{mv.Source.Strides}, fmt.Sprintf("%s[i] = %s[s];", y, arg(0)))
		default:
			d := mv.Bound
			stridedIndexed(b, n.Shape, mv.Source.Strides, mv.Index.Strides,
				fmt.Sprintf("t_i64 v = (t_i64)%s[p]; if (v < -%d || v >= %d) { fault[0] = %d; fault[1] = %d; return; } if (v < 0) v += %d;", arg(1), d, d, FaultIndex, i, d),
				fmt.Sprintf("%s[i] = %s[s + v * %d];", y, arg(0), mv.Step))
		}
	case codegen.TypedScatters[n.Op] != nil: // scatter.go
		return emitScatter(b, g, i)
	case n.Op == ir.OpWhere:
		loop(fmt.Sprintf("%s[i] = %s[i] ? %s[i] : %s[i];", y, arg(0), arg(1), arg(2)))
	case n.Op.IsReduction():
		return emitTypedReduce(b, g, i)
	case info.Elementwise && len(n.Args) <= 2:
		in := g.Nodes[n.Args[0]].DType
		bArg := arg(0)
		if len(n.Args) == 2 {
			bArg = arg(1)
		}
		stmt, ok := "", false
		if info.ScalarOf == 0 { // a scalar form is its expression with the scalar in place
			stmt, ok = TypedElementwise(n.Op, in, n.DType, y, arg(0), bArg)
		}
		if !ok && in.IsFloat() && info.Expr != nil && n.Op != ir.OpWhere {
			body, fdefs := exprNode(n.Op, n.Scalar, typedLoad(in, arg(0)+"[i]"), typedLoad(in, bArg+"[i]"))
			*defs = append(*defs, fdefs...)
			store := typedStore(n.DType, "v2")
			if n.DType == ir.Bool {
				store = "(t_u8)(v2 != 0)"
			}
			loop(strings.Join(body, " ") + " " + y + "[i] = " + store + ";")
			return nil
		}
		if !ok {
			return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the C typed rows do not hold it yet", n.Op, in)
		}
		loop(stmt + fmt.Sprintf(" if (*fault) { fault[1] = %d; return; }", i))
	default:
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the C typed path does not hold it yet", n.Op, n.DType)
	}
	return nil
}

// strided writes body once per element of shape, in row-major order, with
// i the element's index and each of names (s, p) Σ c[d]·strides[k][d]
// over its coordinates c, for its stride set k:
// nested loops, one per dimension of more than one element, so that a
// view or an indexed row costs no table of the tensor's size in the unit.
// stridedIndexed is strided for an indexed row: pre, which reads p (the
// index's offset, Σ c[d]·idx[d]) and sets v, runs once per index, in the
// loop of the innermost dimension along which the index moves, and body,
// which reads s (Σ c[d]·src[d]) and v, once per element inside it, so that
// an embedding lookup loads and checks each id once per row, not once per
// element.
func stridedIndexed(b *strings.Builder, shape ir.Shape, src, idx []int, pre, body string) {
	last := -1 // the innermost dimension of more than one element along which the index moves
	for d, n := range shape {
		if n > 1 && idx[d] != 0 {
			last = d
		}
	}
	b.WriteString("\t{\n\t\tt_i64 i = 0;\n")
	var sterms, pterms []string
	depth, open := 0, 0
	tabs := func() string { return strings.Repeat("\t", depth+2) }
	index := func() {
		if len(pterms) == 0 {
			pterms = []string{"0"}
		}
		fmt.Fprintf(b, "%s{ t_i64 p = %s; %s\n", tabs(), strings.Join(pterms, " + "), pre)
		open++
		depth++
	}
	if last < 0 {
		index()
	}
	for d, n := range shape {
		if n == 1 {
			continue
		}
		fmt.Fprintf(b, "%sfor (t_i64 c%d = 0; c%d < %d; c%d++)\n", tabs(), d, d, n, d)
		if src[d] != 0 {
			sterms = append(sterms, fmt.Sprintf("c%d * %d", d, src[d]))
		}
		if idx[d] != 0 {
			pterms = append(pterms, fmt.Sprintf("c%d * %d", d, idx[d]))
		}
		depth++
		if d == last {
			index()
		}
	}
	if len(sterms) == 0 {
		sterms = []string{"0"}
	}
	fmt.Fprintf(b, "%s{ t_i64 s = %s; %s i++; }\n", tabs(), strings.Join(sterms, " + "), body)
	for ; open > 0; open-- {
		b.WriteString("\t\t}\n")
	}
	b.WriteString("\t}\n")
}

func strided(b *strings.Builder, shape ir.Shape, names []string, strides [][]int, body string) {
	b.WriteString("\t{\n\t\tt_i64 i = 0;\n")
	terms := make([][]string, len(names))
	depth := 0
	for d, n := range shape {
		if n == 1 {
			continue
		}
		fmt.Fprintf(b, "\t\t%sfor (t_i64 c%d = 0; c%d < %d; c%d++)\n", strings.Repeat("\t", depth), d, d, n, d)
		for k := range names {
			if strides[k][d] != 0 {
				terms[k] = append(terms[k], fmt.Sprintf("c%d * %d", d, strides[k][d]))
			}
		}
		depth++
	}
	var decl []string
	for k, name := range names {
		if len(terms[k]) == 0 {
			terms[k] = []string{"0"}
		}
		decl = append(decl, fmt.Sprintf("t_i64 %s = %s;", name, strings.Join(terms[k], " + ")))
	}
	fmt.Fprintf(b, "\t\t%s{ %s %s i++; }\n\t}\n", strings.Repeat("\t", depth), strings.Join(decl, " "), body)
}

// offsetExpr returns the C of ir.Offset(dims, v): v's digits in the mixed
// radix of the dims' sizes, each times its stride.
func offsetExpr(dims []ir.Dim, v string) string {
	if len(dims) == 0 {
		return "0"
	}
	var terms []string
	radix := 1
	for d := len(dims) - 1; d >= 0; d-- {
		digit := v
		if radix > 1 {
			digit = fmt.Sprintf("(%s / %d)", v, radix)
		}
		if d > 0 {
			digit = fmt.Sprintf("%s %% %d", digit, dims[d].Size)
		}
		terms = append(terms, fmt.Sprintf("(%s) * %d", digit, dims[d].Stride))
		radix *= dims[d].Size
	}
	return strings.Join(terms, " + ")
}

// emitTypedReduce writes a reduction: integers combine their leaves in
// order by the row's Combine (wrapping add, max: any order is the tree's
// value); floats by the reference's contiguous pairwise tree over the
// leaves padded with the Identity to a power of two, each combination
// rounded to the dtype. The tree is walked as a binary counter (leaf r
// combined with the pending subtrees its carries close), which makes the
// same combinations in the same order while holding one partial result
// per level: no array of the leaves, which a large reduction would
// overflow the stack with (wasm's is 64 KiB).
func emitTypedReduce(b *strings.Builder, g *ir.Graph, i int) error {
	n := &g.Nodes[i]
	a := g.Nodes[n.Args[0]]
	red := ir.ReductionOf(a.Shape, n.Shape)
	x := fmt.Sprintf("((%s *)b[%d])", StorageType(a.DType), n.Args[0])
	y := fmt.Sprintf("((%s *)b[%d])", StorageType(n.DType), i)
	comb := n.Op.Info().Combine
	leaf := func(r string) string { return typedLoad(a.DType, x+"[base + "+offsetExpr(red.Reduced, r)+"]") }
	fmt.Fprintf(b, "\tfor (t_i64 o = 0; o < %d; o++) {\n\t\tconst t_i64 base = %s;\n", red.Outputs, offsetExpr(red.Kept, "o"))
	if a.DType.IsFloat64() {
		return reduceTree(b, i, n, red, "double", leaf, float64Rows[comb], func(v string) string { return v },
			fmt.Sprintf("f64_of(0x%016xull)", math.Float64bits(float64(math.Float32frombits(n.Op.Info().Identity)))), y)
	}
	if !a.DType.IsFloat() {
		fmt.Fprintf(b, "\t\tt_i64 acc = %s;\n", leaf("0"))
		fmt.Fprintf(b, "\t\tfor (t_i64 r = 1; r < %d; r++) { t_i64 v = %s; acc = (t_i64)%s; }\n", red.Leaves,
			leaf("r"), typedStore(a.DType, codegen.RenderIntRow(&intLang, comb, a.DType, "acc", "v")))
		fmt.Fprintf(b, "\t\t%s[o] = %s;\n\t}\n", y, typedStore(n.DType, "acc"))
		return nil
	}
	f, ok := floatRows[comb]
	if !ok && comb != ir.OpMaximum {
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the C typed path does not hold it yet", n.Op, a.DType)
	}
	if comb == ir.OpMaximum { // the reference's maximum: NaN wins (a's first), -0 < +0
		f = func(p, q string) string { return "fmax_ref(" + p + ", " + q + ")" }
	}
	round := func(v string) string {
		switch a.DType {
		case ir.F16:
			return "f16_float(f16_bits(" + v + "))"
		case ir.BF16:
			return "bf16_float(bf16_bits(" + v + "))"
		}
		return v
	}
	return reduceTree(b, i, n, red, "float", leaf, f, round, fmt.Sprintf("F(0x%08xu)", n.Op.Info().Identity), y)
}

// reduceTree writes the rest of a float reduction's loop body: the leaves
// of output o, padded with pad to a power of two, combined by f (nil: the
// op has no C row for the dtype, unsupported) in the reference's
// contiguous pairwise tree, each combination rounded by round, in
// variables of C type ct, and the root stored to y[o].
func reduceTree(b *strings.Builder, i int, n *ir.Node, red ir.Reduction, ct string, leaf func(string) string,
	f func(p, q string) string, round func(string) string, pad, y string) error {
	if f == nil {
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the C typed path does not hold it yet", n.Op, n.DType)
	}
	p, levels := 1, 1
	for p < red.Leaves {
		p, levels = p*2, levels+1
	}
	fmt.Fprintf(b, "\t\t%s st[%d];\n\t\tfor (t_i64 r = 0; r < %d; r++) {\n", ct, levels, p)
	fmt.Fprintf(b, "\t\t\t%s v = r < %d ? %s : %s;\n", ct, red.Leaves, leaf("r"), pad)
	fmt.Fprintf(b, "\t\t\tint l = 0;\n\t\t\tfor (t_i64 k = r; k & 1; k >>= 1, l++) v = %s;\n\t\t\tst[l] = v;\n\t\t}\n", round(f("st[l]", "v")))
	fmt.Fprintf(b, "\t\t%s[o] = %s;\n\t}\n", y, typedStore(n.DType, fmt.Sprintf("st[%d]", levels-1)))
	return nil
}
