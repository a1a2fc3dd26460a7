package wgsl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// rowsKernel emits a rows kernel (ir.KernelRows) by codegen.PlanRows.
//
// Rows of at least rowThreads(P) padded leaves get a workgroup of that
// many threads each (RowThreads, RowCheapThreads for cheap leaves, more
// for long rows). Where each thread holds a multiple of 4 leaves of an
// unpadded row (RowVec4, the default), thread t takes the contiguous run
// from t·P/threads, loaded and stored as vec4s, and reduces it where it
// is; otherwise every pass reads the row coalesced: in step j thread t
// evaluates leaf j·RowThreads + t, so a warp's loads and stores are
// adjacent, and keeps
// in registers the values later passes read (loads included: each leaf of
// an operand is read from memory once). Each reduction then stages its
// leaves, padded with its identity, through workgroup memory (red), from
// which thread t takes the contiguous leaves from t·P/RowThreads and
// reduces them by the pairwise tree; the threads' partials are combined by
// the same tree (staged.tree), whose root every thread then computes:
// cpuref's tree over P leaves, whatever thread evaluated a leaf. The
// passes are written out step by step (wgPass), so that every index into
// a private array is a constant. Shorter rows get a thread each, which
// holds all P leaves and loops over them.
//
// In the staged schedule the leaves reach the tree through workgroup
// memory, not straight from the registers they were computed in: an
// unrolled tree over a short row's leaves in registers (tried for rows of
// up to 32 leaves) changed the bits of variance on lavapipe, whose
// compiler rewrote the guarded products and sums across the tree (see
// Params.one in the package doc). Under RowVec4 (and RowContiguous) a
// thread's run goes from its registers into the tree; every product is
// kept (TestProductsKept), and TestRowKnobs' variance and layer norm over
// extremes give cpuref's bits under it on lavapipe and on NVIDIA's driver
// (2026-12-06), but that is the tests' word, not a proof.
// With fused (Target.Fused), its divisions by a per-row divisor take
// ir.DivRowFastFused.
func rowsKernel(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fused bool) {
	pl := codegen.PlanRows(k)
	n, p := pl.Red.Leaves, pl.P
	threads := rowThreads(k, p)
	wg := p >= threads
	per := p
	var vec *rowVec // RowVec4's vec4s, if it takes them
	if wg {
		per = p / threads
		pl.CacheLoads(k)
		vec = rowVecOf(k, p, threads)
	}
	divs := rowDivisions(b, &pl, k, fused)
	rowMaxNeg(b, &pl, k)
	keys := map[int]bool{} // the max reductions reduced by order keys (RowMaxKeys)
	if wg && RowMaxKeys {
		for j, in := range k.Body {
			if in.Kind == ir.InstrAcc && in.Op.Info().Combine == ir.OpMaximum {
				keys[j] = true
			}
		}
	}
	if len(keys) > 0 {
		b.WriteString(maxKeyFuncs)
		pl.AccLeaf = map[int]func(string) string{}
		for j := range keys {
			pl.AccLeaf[j] = func(v string) string { return "maxkey(" + v + ")" }
		}
	}
	keyed := func(j int) keying {
		if keys[j] {
			return maxKeying
		}
		return floatKeying
	}
	for _, op := range rowOps(k) {
		fmt.Fprintf(b, "fn combine_%s(a: f32, b: f32) -> f32 {\n", op.Info().Wire)
		b.WriteString(codegen.Indent(codegen.CombineOp(Lang, op.Info().Combine, "a", "b", "m"), 1))
		b.WriteString("\treturn m;\n}\n\n")
	}
	var st staged
	if wg {
		atomics := 0 // RowMaxAtomic's workgroup u32s, one a max
		if RowMaxAtomic {
			atomics = len(keys)
		}
		st = stagedArrays(b, p, threads, RowContiguous || vec != nil, atomics)
		for j := range len(k.Body) {
			if keys[j] && st.atomic {
				fmt.Fprintf(b, "var<workgroup> wk_a%d: atomic<u32>; // zero (-Inf's key) at the workgroup's start\n", j)
			}
		}
		s.Workgroup = [3]int{threads, 1, 1}
		s.Groups = codegen.Groups1D(pl.Red.Outputs, maxGroupsPerDim)
		fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", threads)
		b.WriteString("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
		b.WriteString("\tlet t = lid.x;\n\tlet o = wid.x + wid.y * nwg.x;\n")
	} else {
		s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
		s.Groups = codegen.Groups1D((pl.Red.Outputs+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
		fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
		b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
		fmt.Fprintf(b, "\tlet o = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	}
	// o is uniform over a workgroup: the whole workgroup returns or none.
	fmt.Fprintf(b, "\tif (o >= %du) { return; }\n", pl.Red.Outputs)
	fmt.Fprintf(b, "\tlet base = %s;\n", codegen.Flat(Lang, pl.Red.Kept, "o"))
	if vec != nil {
		b.WriteString("\tlet vbase = base / 4u; // a multiple of 4 (rowVec4Rows)\n")
	}
	for j, in := range k.Body {
		if pl.Cached[j] {
			fmt.Fprintf(b, "\tvar c%d: array<f32, %d>;\n", j, per)
		}
		if in.Kind == ir.InstrAcc {
			fmt.Fprintf(b, "\tvar a%d: array<%s, %d>;\n", j, keyed(j).typ, per)
		}
	}
	if wg {
		fmt.Fprintf(b, "\tvar grp: array<f32, %d>;\n", max(rowGroup, threads/rowGroup))
		if len(keys) > 0 {
			fmt.Fprintf(b, "\tvar grpk: array<u32, %d>;\n", max(rowGroup, threads/rowGroup))
		}
	}
	load := func(space string) func(int) string {
		return func(op int) string {
			at := space
			if k.Inputs[op].Shape.Len() == k.Keep.Len() {
				at = "o"
			}
			return fmt.Sprintf("in%d[%s]", op, codegen.Index(Lang, k.Inputs[op], at))
		}
	}
	rowValues := func(d int) {
		var lines []string
		for _, j := range pl.RowAt[d] {
			lines = append(lines, codegen.Instr(Lang, k, j, load("o"), fmt.Sprintf("r%d", j))...)
		}
		near := fused && RowDivNear
		for _, j := range pl.RowAt[d] {
			if divs[j] {
				lines = append(lines, divisorParts(j, near, near && RowPartsLazy)...)
			}
		}
		b.WriteString(codegen.Indent(lines, 1))
		var st []string
		for _, s := range pl.RowStores[d] {
			st = append(st, fmt.Sprintf("out%d[o] = %s;", s, codegen.Value(int(k.Stores[s]))))
		}
		if wg && len(st) > 0 {
			b.WriteString("\tif (t == 0u) {\n" + codegen.Indent(st, 2) + "\t}\n")
		} else {
			b.WriteString(codegen.Indent(st, 1))
		}
	}
	rowValues(0)
	for pass := 0; pass < pl.Passes; pass++ {
		if wg {
			b.WriteString(codegen.Indent(wgPass(k, pl, pass, load("i"), st, keyed, vec), 1))
			rowValues(pass + 1)
			continue
		}
		fmt.Fprintf(b, "\tfor (var j = 0u; j < %du; j++) {\n\t\tlet r = j;\n", per)
		for _, j := range pl.Accs[pass] {
			fmt.Fprintf(b, "\t\ta%d[j] = %s;\n", j, rowIdentity(k.Body[j].Op))
		}
		fmt.Fprintf(b, "\t\tif (r < %du) {\n\t\t\tlet i = base + r;\n", n)
		lines := pl.LeafPass(Lang, k, pass, load("i"), "j")
		b.WriteString(codegen.Indent(lines, 3))
		b.WriteString("\t\t}\n\t}\n")
		for _, j := range pl.Accs[pass] {
			c := "combine_" + k.Body[j].Op.Info().Wire
			if per > 1 {
				fmt.Fprintf(b, "\tfor (var w = 1u; w < %du; w = w * 2u) {\n", per)
				fmt.Fprintf(b, "\t\tfor (var l = 0u; l < %du; l = l + 2u * w) { a%d[l] = %s(a%d[l], a%d[l + w]); }\n\t}\n", per, j, c, j, j)
			}
			fmt.Fprintf(b, "\tlet r%d = a%d[0];\n", j, j)
		}
		rowValues(pass + 1)
	}
	b.WriteString("}\n")
}

// RowThreads is the workgroup size of a rows kernel whose rows have at
// least as many padded leaves: 256 (SumThreads), or 32, 64 or 128. Fewer
// threads give each thread more leaves and the workgroup fewer partials to
// combine and fewer warps to hold at its barriers, and an SM more rows at
// once: on an H100 (2026-12-05) layer norm [8192,1024] ran 0.0589 ms at
// 128 against 0.0780 at 256 and 0.0645 at 64, log-softmax 0.0484 against
// 0.0519, softmax the same. The same tree (cpuref's pairwise tree over P
// leaves splits at every power of two), the same bits (TestRowThreads, on
// lavapipe and the H100's driver). A knob for the benchmarks (Config
// names it). 128 was the default from 2026-12-05 14:04 until the first
// driver run of TestRowDivision under it failed (subnormal quotients one
// ulp off, H100, in a process that had by then opened the GL adapter, so
// which backend gave them is not known): 256 again until that test passes
// at 128 on Vulkan (bench/device.sh exactkernels, GPUCC_BENCH_ROWS=threads128).
var RowThreads = SumThreads

// rowThreads is the workgroup size of rows kernel k over rows of p padded
// leaves: RowThreads (RowCheapThreads for a kernel of cheap leaves), or
// more threads where each would hold more than 16 leaves (at most
// SumThreads): registers, not the tree, bound a thread.
func rowThreads(k *ir.Kernel, p int) int {
	t := RowThreads
	if RowCheapThreads > 0 && RowThreads == SumThreads && cheapLeaves(k) {
		t = RowCheapThreads
	}
	if p/t > 16 {
		return min(SumThreads, max(t, p/16))
	}
	return t
}

// RowCheapThreads is the workgroup size of a rows kernel whose leaves
// take only a few instructions each (cheapLeaves: a layer norm's, an RMS
// norm's), where RowThreads is its default, SumThreads; 0 keeps
// RowThreads for every rows kernel. On an H100 (2026-12-06, [8192,1024],
// RowVec4) layer norm ran 0.0474 ms at 128 threads against 0.0639 at 256,
// while softmax and log-softmax, whose leaves each take an exp, ran
// 0.0489 and 0.0416 against 0.0433 and 0.0396: a thread of cheap leaves
// has the registers for twice as many, and the workgroup half the
// partials to combine. The same tree, the same bits (TestRowThreads,
// TestRowKnobs at 128 threads). A knob for the benchmarks (Config names
// it).
var RowCheapThreads = 128

// cheapLeaves reports whether every per-leaf value of rows kernel k is a
// load, a constant or arithmetic of a few instructions (no exp, log,
// tanh, erf or other function of the table's bodies): cheapOps.
func cheapLeaves(k *ir.Kernel) bool {
	row := k.RowValues()
	for j, in := range k.Body {
		if in.Kind == ir.InstrOp && !row[j] && !cheapOps[in.Op] {
			return false
		}
	}
	return true
}

// cheapOps are the elementwise ops a leaf of a cheap rows kernel may
// take (cheapLeaves).
var cheapOps = map[ir.Op]bool{
	ir.OpAdd: true, ir.OpSub: true, ir.OpMul: true, ir.OpDiv: true, ir.OpNeg: true,
	ir.OpAddScalar: true, ir.OpSubScalar: true, ir.OpMulScalar: true, ir.OpDivScalar: true,
	ir.OpMaximum: true, ir.OpMinimum: true, ir.OpMaximumScalar: true, ir.OpMinimumScalar: true,
	ir.OpRelu: true, ir.OpPositive: true,
}

// RowDivFast makes a rows kernel divide by a per-row divisor through
// ir.DivRowFast: the divisor's parts (its significand, reciprocal, split
// and exponent) once a row, then per leaf the fast path, and ir's
// division only where that gives +0 or the divisor is not normal (an
// operand or the quotient not normal, rare: a branch, which costs a warp
// nothing while all its leaves are normal); a row whose divisor is 1
// (layer norm's scale, nearly always) takes ir.DivByOne instead.
// The same bits as the division (ir's TestDivRowFast, TestRowKnobs); a
// knob for the benchmarks (Config names it).
var RowDivFast = true

// RowDivNear makes a rows kernel on a device whose fma is fused (the
// fused twins) divide the leaves of ir.DivRowNear's range by a per-row
// divisor with the divisor's correctly rounded reciprocal, once a row:
// a product and two fused multiply-adds a leaf (Markstein's theorem)
// where DivRowFastFused takes about 50 instructions; other leaves take
// the fused fast path or the division as before. The same bits (ir's
// TestDivRowNear); a knob for the benchmarks (Config names it).
var RowDivNear = true

// RowPartsLazy, with RowDivNear, computes a per-row divisor's parts for
// the fused fast path (fastParts) in the branch of the leaves outside
// ir.DivRowNear's range, the rare ones, where otherwise every thread of
// the row computes them before its leaves (about 40 instructions a
// thread). The same functions of the same values; off until a driver
// whose fma is fused has run its bits and timed it beside the default
// (device.sh rowsnext with ROWS="default partslazy"): a knob for the
// benchmarks (Config names it).
var RowPartsLazy = false

// RowContiguous makes thread t of a rows kernel's workgroup evaluate the
// contiguous leaves t·per … t·per + per - 1 of its row (per = P/threads)
// instead of leaves j·threads + t: its loads and stores are 4·per bytes
// apart across a warp, not adjacent, and its leaves are already the run
// of cpuref's tree it reduces, so a reduction writes no leaf to workgroup
// memory, and waits at one barrier fewer. The same tree, the same bits
// (TestRowKnobs). A knob for the benchmarks (Config names it).
var RowContiguous = false

// RowVec4 makes a rows kernel whose threads would hold a multiple of 4
// leaves each (per = P/threads) of unpadded rows read each input that
// allows it (rowsInputElem) as vec4s of 4 adjacent leaves: thread t takes
// the contiguous leaves t·per … t·per + per - 1 (RowContiguous's
// schedule: no leaf staged through workgroup memory, one barrier fewer a
// reduction), loaded per/4 vec4s at a time, so that a warp's loads are
// adjacent 16-byte vec4s where RowContiguous's scalar loads are 4·per
// bytes apart. Its per-leaf outputs (rowsOutputElem) are stored as vec4s
// too. A kernel none of whose inputs allows it keeps its schedule. Only
// loads and stores move: the same leaves reach the same tree, the same
// bits (TestRowKnobs, TestRowMax). A knob for the benchmarks (Config
// names it). On by default since the H100 (2026-12-06, [8192,1024], one
// call, each a fresh process) ran softmax in 0.0433 ms against 0.0488
// (eager 0.0277), log-softmax 0.0396 against 0.0435 and layer norm
// 0.0639 against 0.0695, after TestRowKnobs and TestRowMax passed there
// under it.
var RowVec4 = true

// rowVec4Rows reports whether rows kernel k's rows take vec4s under
// RowVec4 (see rowVec4), its inputs aside: its rows, trailing and of n
// leaves with n a power of two (no padding), get a workgroup each whose
// threads hold a multiple of 4 leaves each, and every row starts at a
// multiple of 4 elements.
func rowVec4Rows(k *ir.Kernel) bool {
	if !RowVec4 || k.Kind != ir.KernelRows {
		return false
	}
	red := ir.ReductionOf(k.Shape, k.Keep)
	p, _ := codegen.SumBlock(red.Leaves, 1)
	threads := rowThreads(k, p)
	if red.Leaves != p || p < threads || p/threads%4 != 0 {
		return false
	}
	if len(red.Reduced) != 1 || red.Reduced[0].Stride != 1 {
		return false
	}
	for _, d := range red.Kept {
		if d.Stride%4 != 0 {
			return false
		}
	}
	return true
}

// rowVec4 reports whether rows kernel k takes RowVec4's schedule: its rows
// allow it (rowVec4Rows) and at least one input is read as vec4s.
func rowVec4(k *ir.Kernel) bool {
	for i := range k.Inputs {
		if rowsInputElem(k, i) != "" {
			return true
		}
	}
	return false
}

// rowsInputElem returns the element type that rows kernel k binds input
// i as, where it is not f32: vec4<f32> under RowVec4, where k's rows allow
// it (rowVec4Rows) and the input is read at the leaves (not per row) so
// that every 4 adjacent leaves from a multiple of 4 are one aligned vec4
// of its buffer (vec4Operand: stride 1 along the row, in runs of a
// multiple of 4, its offset and other strides multiples of 4; a leaf-wise
// broadcast of a row such as layer norm's scale qualifies, a per-row
// value broadcast over its row's leaves does not). Otherwise "".
func rowsInputElem(k *ir.Kernel, i int) string {
	if !rowVec4Rows(k) || k.Inputs[i].Shape.Len() != k.Shape.Len() {
		return ""
	}
	if _, ok := vec4Operand(k.Inputs[i]); !ok {
		return ""
	}
	return "vec4<f32>"
}

// rowsOutputElem returns the element type that rows kernel k binds output
// i as, where it is not f32: vec4<f32> where k takes RowVec4's schedule
// (rowVec4) and the output's store is per leaf (at the leaves' own index:
// each 4 adjacent leaves of a thread one aligned vec4). An output of a
// per-row value (stored at o) stays f32.
func rowsOutputElem(k *ir.Kernel, i int) string {
	if !rowVec4(k) {
		return ""
	}
	v := k.Stores[i]
	if v < 0 || int(v) >= len(k.Body) || k.RowValues()[v] {
		return ""
	}
	return "vec4<f32>"
}

// rowVec is a rows kernel's vec4s under RowVec4 (rowVec4): each thread
// holds per leaves, from t·per; in has the vec4 operand (vec4Operand) of
// each input read as vec4s, out the outputs stored as vec4s.
type rowVec struct {
	per int
	in  map[int]ir.Operand
	out map[int]bool
}

// rowVecOf returns rows kernel k's vec4s under RowVec4, or nil where it
// takes none (rowVec4). threads is its workgroup size.
func rowVecOf(k *ir.Kernel, p, threads int) *rowVec {
	if !rowVec4(k) {
		return nil
	}
	v := &rowVec{per: p / threads, in: map[int]ir.Operand{}, out: map[int]bool{}}
	for i := range k.Inputs {
		if rowsInputElem(k, i) != "" {
			v.in[i], _ = vec4Operand(k.Inputs[i])
		}
	}
	for i := range k.Outputs {
		if rowsOutputElem(k, i) != "" {
			v.out[i] = true
		}
	}
	return v
}

// at renders the index, in vec4s, of vec4 g of thread t's leaves in its
// row: the row starts at vec4 vbase (base / 4).
func (v *rowVec) at(g int) string {
	at := "vbase + t"
	if v.per > 4 {
		at = fmt.Sprintf("vbase + t * %du", v.per/4)
	}
	if g > 0 {
		at += fmt.Sprintf(" + %du", g)
	}
	return at
}

// lanes are a vec4's components, by leaf.
const lanes = "xyzw"

// rowDivisions declares the functions of the divisions by a per-row
// divisor in rows kernel k (with RowDivFast) and sets pl.Render for each;
// it returns the divisors. With fused, the fast path is DivRowFast's
// fused twin, DivRowFastFused (the same bits: ir's TestDivRowFastFused).
func rowDivisions(b *strings.Builder, pl *codegen.RowPlan, k *ir.Kernel, fused bool) map[int]bool {
	divs := pl.RowDivisions(k)
	if !RowDivFast || len(divs) == 0 {
		return nil
	}
	lit := Lang // exact literals: these functions' constants are not in Params
	lit.Const = nil
	fast := ir.DivRowFast
	if fused {
		fast = ir.DivRowFastFused
	}
	funcs := []*ir.Func{ir.DivRowB, ir.DivRowY, ir.DivRowHi, ir.DivRowLo, ir.DivRowE, ir.DivRowOK, fast, ir.DivByOne}
	near := fused && RowDivNear
	if near {
		funcs = append(funcs, ir.DivRowRecip, ir.DivRowIn, ir.DivRowNear)
	}
	b.WriteString(codegen.Indent(codegen.Define(lit, funcs, 0), 0))
	divisors := map[int]bool{}
	if pl.Render == nil {
		pl.Render = map[int]func() []string{}
	}
	for j, d := range divs {
		divisors[d] = true
		a, v, q := codegen.Value(int(k.Body[j].Args[0])), codegen.Value(d), codegen.Value(j)
		pl.Render[j] = func() []string {
			// DivByOne only in the rows whose divisor is 1: computed
			// for every leaf before, 6 units of xcost's model a leaf in
			// softmax, whose sums are never 1 but for one-hot rows
			lines := []string{
				fmt.Sprintf("var %s = 0.0;", q),
				fmt.Sprintf("if (%s_one) {", v),
				fmt.Sprintf("\t%s = %s(%s);", q, codegen.FuncName(ir.DivByOne), a),
			}
			if near {
				// the leaves of ir.DivRowNear's range, nearly all
				lines = append(lines,
					fmt.Sprintf("} else if (%s_near && %s(%s) == 1.0) {", v, codegen.FuncName(ir.DivRowIn), a),
					fmt.Sprintf("\t%s = %s(%s, %s, %s_rn);", q, codegen.FuncName(ir.DivRowNear), a, v, v))
			}
			lines = append(lines, "} else {")
			if near && RowPartsLazy {
				for _, ln := range append(fastParts(d), fastOK(d)) {
					lines = append(lines, "\t"+ln)
				}
			}
			return append(lines,
				fmt.Sprintf("\tif (%s_ok) { %s = %s(%s, %s, %s_b, %s_y, %s_hi, %s_lo, %s_e); }", v, q, codegen.FuncName(fast), a, v, v, v, v, v, v),
				fmt.Sprintf("\tif (bitcast<u32>(%s) == 0u) { %s = %s(%s, %s); }", q, q, codegen.FuncName(ir.DivFn), a, v),
				"}",
			)
		}
	}
	return divisors
}

// rowMaxNeg renders each maximum(x, neg(x)) that rows kernel k evaluates
// per leaf (layer norm's |x - mean|) as ir.MaxNeg(x): its 3 nodes instead
// of maximum's 18, the same bits (ir's TestMaxNeg, all 2^32 inputs).
func rowMaxNeg(b *strings.Builder, pl *codegen.RowPlan, k *ir.Kernel) {
	defined := false
	for d := range pl.Leaf {
		for _, j := range pl.Leaf[d] {
			in := k.Body[j]
			if in.Kind != ir.InstrOp || in.Op != ir.OpMaximum {
				continue
			}
			if n := k.Body[in.Args[1]]; n.Kind != ir.InstrOp || n.Op != ir.OpNeg || n.Args[0] != in.Args[0] {
				continue
			}
			if !defined {
				b.WriteString(codegen.Indent(codegen.Define(Lang, []*ir.Func{ir.MaxNeg}, 0), 0))
				defined = true
			}
			if pl.Render == nil {
				pl.Render = map[int]func() []string{}
			}
			v, x := codegen.Value(j), codegen.Value(int(in.Args[0]))
			pl.Render[j] = func() []string {
				return []string{fmt.Sprintf("let %s = %s(%s);", v, codegen.FuncName(ir.MaxNeg), x)}
			}
		}
	}
}

// divisorParts declares per-row divisor j's values that every leaf's
// division reads: whether it is 1, its parts that ir.DivRowFast takes
// (fastParts) unless lazy, and with near its correctly rounded
// reciprocal (ir.DivRowRecip; +0 where ir.DivRowNear cannot take the
// row), with which nearly every leaf is divided.
func divisorParts(j int, near, lazy bool) []string {
	v := codegen.Value(j)
	var lines []string
	if !lazy {
		lines = fastParts(j)
	}
	if near {
		lines = append(lines, fmt.Sprintf("let %s_rn = %s(%s);", v, codegen.FuncName(ir.DivRowRecip), v),
			fmt.Sprintf("let %s_near = bitcast<u32>(%s_rn) != 0u;", v, v))
	}
	if !lazy {
		lines = append(lines, fastOK(j))
	}
	// a divisor of 1 (layer norm's scale) sends every leaf to DivByOne
	return append(lines, fmt.Sprintf("let %s_one = bitcast<u32>(%s) == 0x3f800000u;", v, v))
}

// fastParts declares per-row divisor j's parts that ir.DivRowFast takes.
func fastParts(j int) []string {
	v := codegen.Value(j)
	var lines []string
	for _, f := range []struct {
		suffix string
		fn     *ir.Func
	}{{"b", ir.DivRowB}, {"y", ir.DivRowY}, {"hi", ir.DivRowHi}, {"lo", ir.DivRowLo}, {"e", ir.DivRowE}} {
		lines = append(lines, fmt.Sprintf("let %s_%s = %s(%s);", v, f.suffix, codegen.FuncName(f.fn), v))
	}
	return lines
}

// fastOK declares whether ir.DivRowFast may take per-row divisor j's
// leaves: a divisor that is not normal sends every leaf of the row to the
// division.
func fastOK(j int) string {
	v := codegen.Value(j)
	return fmt.Sprintf("let %s_ok = %s(%s) == 1.0;", v, codegen.FuncName(ir.DivRowOK), v)
}

// wgPass renders pass d of a rows kernel whose rows get a workgroup each
// (see rowsKernel), written out step by step: every index of a private
// array is a constant, so that they stay in registers (a loop over them
// left NVIDIA's compiler spilling them to memory). With vec (RowVec4, whose
// schedule is contiguous), the pass first loads each vec4 of its leaves
// that it reads (x<d>_<operand>_<vec4>), and a leaf reads its component;
// a vec4 output's leaves are gathered in st<s> and stored 4 at a time.
func wgPass(k *ir.Kernel, pl codegen.RowPlan, d int, load func(int) string, st staged, keyed func(int) keying, vec *rowVec) []string {
	n, per := pl.Red.Leaves, pl.P/st.threads
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	var outs []int // the vec4 outputs the pass stores
	if vec != nil {
		for _, s := range pl.LeafStores[d] {
			if vec.out[s] {
				outs = append(outs, s)
				add("var st%d: vec4<f32>;", s)
			}
		}
	}
	pre := len(lines) // where the vec4 loads go
	for j := range per {
		leafLoad := load
		if vec != nil {
			leafLoad = func(op int) string {
				if _, ok := vec.in[op]; !ok {
					return load(op)
				}
				return fmt.Sprintf("x%d_%d_%d.%c", d, op, j/4, lanes[j%4])
			}
			pl.LeafStore = map[int]func(string) string{}
			for _, s := range outs {
				pl.LeafStore[s] = func(v string) string { return fmt.Sprintf("st%d.%c = %s;", s, lanes[j%4], v) }
			}
		}
		add("{")
		last := (j+1)*st.threads > n // a step some of whose threads' leaves are padding
		if st.contiguous {
			add("\tlet r = t * %du + %du;", per, j)
			last = n < pl.P
		} else {
			add("\tlet r = %du + t;", j*st.threads)
		}
		for _, a := range pl.Accs[d] {
			id := rowIdentity(k.Body[a].Op)
			if kk := keyed(a); kk.identity != "" {
				id = kk.identity
			}
			add("\ta%d[%d] = %s;", a, j, id)
		}
		body := pl.LeafPass(Lang, k, d, leafLoad, fmt.Sprint(j))
		if last {
			add("\tif (r < %du) {", n)
			add("\t\tlet i = base + r;")
			for _, ln := range body {
				add("\t\t%s", ln)
			}
			add("\t}")
		} else {
			add("\tlet i = base + r;")
			for _, ln := range body {
				add("\t%s", ln)
			}
		}
		add("}")
		if j%4 == 3 {
			for _, s := range outs {
				add("out%d[%s] = st%d;", s, vec.at(j/4), s)
			}
		}
	}
	if vec != nil {
		// the vec4s the pass's leaves read (not those that Instr renders
		// and drops for their constants' slots)
		var loads []string
		for g := range per / 4 {
			for op := range k.Inputs {
				x := fmt.Sprintf("x%d_%d_%d", d, op, g)
				if _, ok := vec.in[op]; ok && slices.ContainsFunc(lines[pre:], func(ln string) bool { return strings.Contains(ln, x+".") }) {
					loads = append(loads, fmt.Sprintf("let %s = in%d[%s];", x, op, codegen.Index(Lang, vec.in[op], vec.at(g))))
				}
			}
		}
		lines = slices.Insert(lines, pre, loads...)
	}
	for _, a := range pl.Accs[d] {
		c := "combine_" + k.Body[a].Op.Info().Wire
		kk := keyed(a)
		if kk.combine != "" {
			c = kk.combine
		}
		lines = append(lines, st.treeOf(kk, fmt.Sprintf("a%d", a), per, c, fmt.Sprintf("r%d", a), true)...)
	}
	return lines
}

// staged is how a workgroup of T threads (SumThreads, or a rows kernel's
// RowThreads) reduces P leaves (P ≥ T, powers of two), leaf j·T+t held
// by thread t,
// by cpuref's tree over them, in workgroup memory: red, of P floats (one
// more per 32 where it fits, so that the reads of contiguous runs fall in
// distinct banks) and, where it fits, T more for the threads'
// partials (mine: then no barrier separates the reads of the leaves from
// the writes of the partials); part, of T/rowGroup floats, or
// where both would not fit the 16 KiB WebGPU guarantees, red beyond the
// threads' partials, read by every thread before a barrier; and wroot,
// the root, which one thread computes and the others read (RowRootOnce).
type staged struct {
	at, partAt, mine func(string) string
	shared           bool
	threads          int // the workgroup's: SumThreads, or a rows kernel's rowThreads
	// contiguous: thread t holds leaves t·per + q (RowContiguous), so its
	// run needs no staging through red
	contiguous bool
	// atomic: a max by order keys goes through a workgroup atomicMax
	// (RowMaxAtomic), which stagedArrays left room for
	atomic bool
}

// RowRootOnce makes one thread of a rows kernel's workgroup combine the
// groups' values into the root of a reduction and hand it to the others
// through workgroup memory (a barrier more), instead of every thread
// combining them (rowGroup-1 more combinations in every thread: for max,
// whose combination is 15 integer and select instructions, about 56 per
// leaf of a 1024-leaf row). A knob for the benchmarks (Config names it);
// the bits are the same either way.
var RowRootOnce = true

// stagedArrays declares the workgroup arrays of a staged reduction of P
// leaves by a workgroup of threads threads (P ≥ threads ≥ 2·rowGroup,
// powers of two); with contiguous, whose threads hold contiguous runs of
// leaves, none of which go through red, which holds the partials alone.
// It leaves room for atomics workgroup u32s (RowMaxAtomic's, 16 bytes
// each as Tint aligns them) where the 16 KiB WebGPU guarantees has it, and
// says so in staged.atomic; where red fills them (rows of 4096 leaves),
// none.
func stagedArrays(b *strings.Builder, p, threads int, contiguous bool, atomics int) staged {
	storage := 16384/4 - atomics*wrootFloats // floats
	st := staged{at: func(x string) string { return x }, partAt: func(x string) string { return "part[" + x + "]" },
		mine: func(x string) string { return x }, threads: threads, contiguous: contiguous}
	size, groups := p, threads/rowGroup
	if contiguous {
		size = threads
	}
	switch {
	case contiguous:
	case p > threads && p+p/32+groups+wrootFloats <= storage:
		size = p + p/32
		st.at = func(x string) string { return fmt.Sprintf("pad(%s)", x) }
		b.WriteString("fn pad(x: u32) -> u32 {\n\treturn x + x / 32u;\n}\n\n")
	case p+groups > storage:
		st.partAt, st.shared = func(x string) string { return fmt.Sprintf("red[%du + %s]", threads, x) }, true
	}
	if p > threads && !contiguous && !st.shared && size+threads+groups+wrootFloats <= storage {
		off := size
		st.mine = func(x string) string { return fmt.Sprintf("%du + %s", off, x) }
		size += threads
	}
	fmt.Fprintf(b, "var<workgroup> red: array<f32, %d>;\n", size)
	if !st.shared {
		fmt.Fprintf(b, "var<workgroup> part: array<f32, %d>;\n", groups)
	}
	if !st.shared {
		// With red shared by the leaves and the partials, storage is
		// full (4096 leaves: 16384 bytes, and wroot made 16400, which
		// WebGPU's default limit refuses): every thread computes the root.
		b.WriteString("var<workgroup> wroot: f32;\n\n")
	}
	st.atomic = atomics > 0 && !st.shared
	return st
}

// wrootFloats is the room wroot takes beside red and part: 16 bytes, as
// Tint aligns a workgroup variable.
const wrootFloats = 4

// tree renders the reduction, by combining function c, of the per leaves
// each thread holds in private array a (thread t's a[q] is leaf
// q·T+t), declaring its root as result in every thread (with
// everyone), or in thread 0 alone: the leaves go through red so that
// thread t reduces the contiguous run from t·per (unless its leaves are
// that run already, staged.contiguous, or the keying combines in any
// order, keying.anyOrder), and the threads'
// partials are reduced in groups of rowGroup, each by one thread, then
// over the groups' values, by thread 0 (RowRootOnce, or where only thread
// 0 reads the root) or by every thread: subtrees of the same tree. A
// barrier before the next write to red, part or wroot follows every read
// of them. It needs a variable grp: array<f32, 16>.
func (st staged) tree(a string, per int, c, result string, everyone bool) []string {
	return st.treeOf(floatKeying, a, per, c, result, everyone)
}

// keying is how a reduction's values are held while they are reduced:
// as floats, or as order keys (maxKeying), u32s whose workgroup copies
// go through red, part and wroot as bitcasts.
type keying struct {
	typ, grp          string              // private type, and the array of the groups' values
	put, get          func(string) string // to and from a float of workgroup memory
	identity, combine string              // the padding leaf and combining function, when not the op's
	result            func(string) string // the float root from the held one
	// anyOrder: the combination gives the same root in any order, so a
	// thread combines the leaves it holds (j·T+t) without staging them
	// through red into the tree's runs
	anyOrder bool
}

var floatKeying = keying{typ: "f32", grp: "grp", put: same, get: same, result: same}

// maxKeying reduces max by order keys (maxKeyFuncs).
var maxKeying = keying{typ: "u32", grp: "grpk",
	put:      func(x string) string { return "bitcast<f32>(" + x + ")" },
	get:      func(x string) string { return "bitcast<u32>(" + x + ")" },
	identity: "0u", combine: "combine_maxkey",
	result:   func(x string) string { return "unmaxkey(" + x + ")" },
	anyOrder: true}

func same(x string) string { return x }

// RowMaxKeys makes a rows kernel's workgroups reduce max by order keys:
// each leaf becomes a u32 whose order is maximum's (-0 below +0, every
// NaN above every number, -Inf 0), combined by 3 instructions (a NaN on
// the left stays, as maximum keeps its first operand's) instead of
// maximum's 18, the root mapped back; a bijection, so the same bits
// (TestRowKnobs, TestRowMax). The maximum of keys is the same in any
// order but for which of several NaNs a row's root is, whose sign and
// payload are not part of the answer (cpuref's doc; every NaN output is
// returned as the quiet NaN), so each thread combines the leaves it holds
// where they are, and none goes through workgroup memory: a barrier and
// a store and a load a leaf fewer. A knob for the benchmarks (Config
// names it).
var RowMaxKeys = true

// RowMaxAtomic makes a rows kernel's max by order keys (RowMaxKeys) take
// one workgroup atomicMax of each thread's keys and one barrier, instead
// of the tree's three: the same root but for which of several NaNs it is
// (see RowMaxKeys), since a maximum of keys is the same in any order. On
// the H100 (2026-12-06) softmax [8192,1024] went from 0.0526 to 0.0489 ms
// and log-softmax from 0.0463 to 0.0434, the same bits on the driver
// (TestRowKnobs, TestRowMax). A knob for the benchmarks (Config names it).
var RowMaxAtomic = true

// maxKeyFuncs are the order keys of max: maxkey is maximum's order key
// (a non-negative float's bits with the sign bit set, a negative one's
// complemented) less that of -Inf, so that -Inf is 0 and the NaNs, of
// either sign, are the keys from 0xff000002 up; unmaxkey is its inverse.
const maxKeyFuncs = `fn maxkey(x: f32) -> u32 {
	let b = bitcast<u32>(x);
	return select(b | 0x80000000u, ~b, b >= 0x80000000u) - 0x007fffffu;
}

fn unmaxkey(k: u32) -> f32 {
	let c = k + 0x007fffffu;
	return bitcast<f32>(select(~c, c & 0x7fffffffu, c >= 0x80000000u));
}

fn combine_maxkey(a: u32, b: u32) -> u32 {
	return select(a, b, b > a && a < 0xff000002u);
}

`

// treeOf is tree over values held by kk.
func (st staged) treeOf(kk keying, a string, per int, c, result string, everyone bool) []string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if kk.anyOrder && st.atomic {
		// every thread's own leaves, then one atomic max and one barrier
		if per > 1 {
			lines = append(lines, treeUnrolled(a, per, c)...)
		}
		add("atomicMax(&wk_%s, %s[0]);", a, a)
		add("workgroupBarrier();")
		add("let %s = %s;", result, kk.result("atomicLoad(&wk_"+a+")"))
		return lines
	}
	if per > 1 && !st.contiguous && !kk.anyOrder {
		for q := range per {
			add("red[%s] = %s;", st.at(fmt.Sprintf("%du + t", q*st.threads)), kk.put(fmt.Sprintf("%s[%d]", a, q)))
		}
		add("workgroupBarrier();")
		for q := range per {
			add("%s[%d] = %s;", a, q, kk.get("red["+st.at(fmt.Sprintf("t * %du + %du", per, q))+"]"))
		}
		if st.mine("t") == "t" { // the partials overwrite the leaves
			add("workgroupBarrier();")
		}
	}
	if per > 1 {
		lines = append(lines, treeUnrolled(a, per, c)...)
	}
	add("red[%s] = %s;", st.mine("t"), kk.put(a+"[0]"))
	add("workgroupBarrier();")
	add("if (t < %du) {", st.threads/rowGroup)
	for q := range rowGroup {
		add("\t%s[%d] = %s;", kk.grp, q, kk.get("red["+st.mine(fmt.Sprintf("t * %du + %du", rowGroup, q))+"]"))
	}
	for _, ln := range treeUnrolled(kk.grp, rowGroup, c) {
		add("\t%s", ln)
	}
	add("\t%s = %s;", st.partAt("t"), kk.put(kk.grp+"[0]"))
	add("}")
	add("workgroupBarrier();")
	groups := func(tabs string) {
		for q := range st.threads / rowGroup {
			add("%s%s[%d] = %s;", tabs, kk.grp, q, kk.get(st.partAt(fmt.Sprintf("%du", q))))
		}
		for _, ln := range treeUnrolled(kk.grp, st.threads/rowGroup, c) {
			add("%s%s", tabs, ln)
		}
	}
	if !everyone || RowRootOnce && !st.shared {
		v := "wroot"
		if !everyone {
			v = result + "_0"
			add("var %s = %s;", v, kk.put(kk.grp+"[0]"))
		}
		add("if (t == 0u) {")
		groups("\t")
		add("\t%s = %s;", v, kk.put(kk.grp+"[0]"))
		add("}")
		if everyone {
			add("workgroupBarrier();")
		}
		add("let %s = %s;", result, kk.result(kk.get(v)))
		return lines
	}
	groups("")
	if st.shared {
		add("workgroupBarrier();")
	}
	add("let %s = %s;", result, kk.result(kk.grp+"[0]"))
	return lines
}

// treeUnrolled renders the pairwise tree over the first n (a power of
// two) values of private array v, in place, by combining function c, one
// combination a line.
func treeUnrolled(v string, n int, c string) []string {
	var lines []string
	for w := 1; w < n; w *= 2 {
		for l := 0; l < n; l += 2 * w {
			lines = append(lines, fmt.Sprintf("%s[%d] = %s(%s[%d], %s[%d]);", v, l, c, v, l, v, l+w))
		}
	}
	return lines
}

// rowGroup is how many threads' partials of a rows kernel's reduction one
// thread combines, in registers, before the tree over the groups: two
// barriers instead of one per level of the tree over the threads' partials.
const rowGroup = 16

// rowOps returns the reductions of rows kernel k, each once.
func rowOps(k *ir.Kernel) []ir.Op {
	var ops []ir.Op
	for _, in := range k.Body {
		if in.Kind == ir.InstrAcc && !containsOp(ops, in.Op) {
			ops = append(ops, in.Op)
		}
	}
	return ops
}

func containsOp(ops []ir.Op, op ir.Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// rowIdentity renders reduction op's padding leaf (see identity).
func rowIdentity(op ir.Op) string {
	bits := op.Info().Identity
	if bits&0x7f800000 == 0x7f800000 {
		return fmt.Sprintf("bitcast<f32>(0x%08xu | bitcast<u32>(params.zero))", bits)
	}
	return Lang.Bits(bits)
}

// rowsLoopCost is LoopCost of a rows kernel: per pass, the leaf loop and
// each reduction's staging through workgroup memory and its trees
// (in-thread over its leaves, then the workgroup's).
func rowsLoopCost(k *ir.Kernel) int {
	pl := codegen.PlanRows(k)
	per := pl.P
	if threads := rowThreads(k, pl.P); pl.P >= threads {
		per = pl.P / threads
	}
	c := 0
	for d := 0; d < pl.Passes; d++ {
		c += per + 1
		for range pl.Accs[d] {
			c += (codegen.Log2(per) + 1) + 3*per + 2*(rowGroup+codegen.Log2(rowGroup)+1)
		}
	}
	return c
}
