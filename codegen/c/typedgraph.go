package c

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// Fault codes a typed unit sets in *fault: the run has no right answer.
const (
	FaultInteger = 1 // an integer division or modulo by zero, a cast with no answer (ir.CodeIntegerFault)
	FaultIndex   = 2 // a gather index outside its axis (ir.CodeInvalidInput)
)

// FaultCode returns the error code of fault flag f (FaultInteger,
// FaultIndex); false for any other value.
func FaultCode(f int32) (ir.Code, bool) {
	switch f {
	case FaultInteger:
		return ir.CodeIntegerFault, true
	case FaultIndex:
		return ir.CodeInvalidInput, true
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
		} else if n.Ints[0] == math.MinInt64 {
			v = "(-9223372036854775807LL - 1)"
		} else {
			v = fmt.Sprintf("%dLL", n.Ints[0])
		}
		loop(y + "[i] = " + typedStore(n.DType, v) + ";")
	case info.View:
		emitTable(b, i, cpuref.ViewSources(g, n))
		loop(fmt.Sprintf("%s[i] = %s[src%d[i]];", y, arg(0), i))
	case n.Op == ir.OpWhere:
		loop(fmt.Sprintf("%s[i] = %s[i] ? %s[i] : %s[i];", y, arg(0), arg(1), arg(2)))
	case n.Op == ir.OpGather:
		ds := g.Nodes[n.Args[0]].Shape
		ax := ir.GatherAxis(n.Attrs, len(ds))
		outer, inner := 1, 1
		for _, d := range ds[:ax] {
			outer *= d
		}
		for _, d := range ds[ax+1:] {
			inner *= d
		}
		d, q := ds[ax], g.Nodes[n.Args[1]].Shape.Len()
		fmt.Fprintf(b, "\tfor (t_i64 o = 0, i = 0; o < %d; o++) for (t_i64 j = 0; j < %d; j++) {\n", outer, q)
		fmt.Fprintf(b, "\t\tt_i64 v = (t_i64)%s[j];\n\t\tif (v < -%d || v >= %d) { fault[0] = %d; fault[1] = %d; return; }\n\t\tif (v < 0) v += %d;\n", arg(1), d, d, FaultIndex, i, d)
		fmt.Fprintf(b, "\t\tfor (t_i64 k = 0; k < %d; k++, i++) %s[i] = %s[(o * %d + v) * %d + k];\n\t}\n", inner, y, arg(0), d, inner)
	case n.Op == ir.OpGatherElements: // each element at its own position but the axis coordinate: a base table plus v·stride
		ds := g.Nodes[n.Args[0]].Shape
		ax := ir.IndexAxis(n.Op, n.Attrs, len(ds))
		stride := ds[ax+1:].Len()
		emitTable(b, i, ir.AlongAxisSources(ds, n.Shape, ax, make([]int64, m)))
		fmt.Fprintf(b, "	for (t_i64 i = 0; i < %d; i++) {\n\t\tt_i64 v = (t_i64)%s[i];\n\t\tif (v < -%d || v >= %d) { *fault = %d; return; }\n\t\tif (v < 0) v += %d;\n", m, arg(1), ds[ax], ds[ax], FaultIndex, ds[ax])
		fmt.Fprintf(b, "\t\t%s[i] = %s[src%d[i] + v * %d];\n\t}\n", y, arg(0), i, stride)
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

// emitTable writes src as the static table src<i>.
func emitTable(b *strings.Builder, i int, src []int) { emitTableNamed(b, fmt.Sprintf("src%d", i), src) }

// emitTableNamed writes src as the static table name.
func emitTableNamed(b *strings.Builder, name string, src []int) {
	parts := make([]string, len(src))
	for k, v := range src {
		parts[k] = fmt.Sprint(v)
	}
	fmt.Fprintf(b, "\tstatic const t_i64 %s[%d] = {%s};\n", name, len(src), strings.Join(parts, ","))
}

// emitTypedReduce writes a reduction: integers combine their leaves in
// order by the row's Combine (wrapping add, max: any order is the tree's
// value); floats by the reference's contiguous pairwise tree over the
// leaves padded with the Identity to a power of two, each combination
// rounded to the dtype.
func emitTypedReduce(b *strings.Builder, g *ir.Graph, i int) error {
	n := &g.Nodes[i]
	a := g.Nodes[n.Args[0]]
	red := ir.ReductionOf(a.Shape, n.Shape)
	var bases, leaves []int
	for o := range red.Outputs {
		bases = append(bases, ir.Offset(red.Kept, o))
	}
	for r := range red.Leaves {
		leaves = append(leaves, ir.Offset(red.Reduced, r))
	}
	fmt.Fprintf(b, "\t{\n")
	emitTable(b, i, bases)
	emitTableNamed(b, fmt.Sprintf("src_%d", i+1), leaves)
	x := fmt.Sprintf("((%s *)b[%d])", StorageType(a.DType), n.Args[0])
	y := fmt.Sprintf("((%s *)b[%d])", StorageType(n.DType), i)
	comb := n.Op.Info().Combine
	lt := fmt.Sprintf("src_%d", i+1)
	if !a.DType.IsFloat() {
		row := intRows[comb]
		fmt.Fprintf(b, "\t\tfor (t_i64 o = 0; o < %d; o++) {\n\t\t\tt_i64 acc = %s;\n", red.Outputs, typedLoad(a.DType, x+"[src"+fmt.Sprint(i)+"[o]]"))
		fmt.Fprintf(b, "\t\t\tfor (t_i64 r = 1; r < %d; r++) { t_i64 v = %s; acc = (t_i64)%s; }\n", red.Leaves,
			typedLoad(a.DType, x+"[src"+fmt.Sprint(i)+"[o] + "+lt+"[r]]"), typedStore(a.DType, row(a.DType, "acc", "v")))
		fmt.Fprintf(b, "\t\t\t%s[o] = %s;\n\t\t}\n\t}\n", y, typedStore(n.DType, "acc"))
		return nil
	}
	f, ok := floatRows[comb]
	if !ok && comb != ir.OpMaximum {
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the C typed path does not hold it yet", n.Op, a.DType)
	}
	if comb == ir.OpMaximum { // the reference's maximum: NaN wins (a's first), -0 < +0
		f = func(p, q string) string { return "fmax_ref(" + p + ", " + q + ")" }
	}
	p := 1
	for p < red.Leaves {
		p *= 2
	}
	fmt.Fprintf(b, "\t\tfloat t[%d];\n\t\tfor (t_i64 o = 0; o < %d; o++) {\n", p, red.Outputs)
	fmt.Fprintf(b, "\t\t\tfor (t_i64 r = 0; r < %d; r++) t[r] = r < %d ? %s : F(0x%08xu);\n", p, red.Leaves,
		typedLoad(a.DType, x+"[src"+fmt.Sprint(i)+"[o] + "+lt+"[r < "+fmt.Sprint(red.Leaves)+" ? r : 0]]"), n.Op.Info().Identity)
	round := map[ir.DType]string{ir.F32: "", ir.F16: "f16_float(f16_bits", ir.BF16: "bf16_float(bf16_bits"}[a.DType]
	closing := ""
	if round != "" {
		closing = ")"
	}
	fmt.Fprintf(b, "\t\t\tfor (t_i64 w = %d; w >= 1; w /= 2) for (t_i64 k = 0; k < w; k++) t[k] = %s(%s)%s;\n", p/2, round, f("t[2*k]", "t[2*k+1]"), closing)
	fmt.Fprintf(b, "\t\t\t%s[o] = %s;\n\t\t}\n\t}\n", y, typedStore(n.DType, "t[0]"))
	return nil
}
