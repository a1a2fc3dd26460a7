package c

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// attKeysC is how many keys' scores a C attention kernel accumulates at
// once.
const attKeysC = 8

// attentionPrelude gives attention kernels their per-row arrays, as
// rowsPrelude does rows kernels'.
const attentionPrelude = `
#ifdef __wasm__
#define ATTBUF static
#else
#define ATTBUF
#endif
`

// attention writes an attention kernel (cpuref.Attention's order) a
// query row per tile: its T scores once into an array (the nest computes
// them again for every output), their maximum, then in ascending key
// order p = exp(t − m) into l and p·v into the row's E accumulators, and
// each output o / l with the epilogue. It returns the tiles: the rows.
func attention(b *strings.Builder, k *ir.Kernel, _ *Kernel) int {
	a := ir.AttentionKernel(k)
	S, T, D, E := a.S, a.T, a.D, a.E
	// off renders the buffer index of operand j at [z, r, c].
	off := func(j int, r, c string) string {
		op := k.Inputs[j]
		n := len(op.Shape)
		terms := []string{codegen.Index(Lang, op.Batch(), "z")}
		if st := op.Strides[n-2]; st != 0 && op.Shape[n-2] > 1 {
			terms = append(terms, fmt.Sprintf("%s * %du", r, st))
		}
		if st := op.Strides[n-1]; st != 0 && op.Shape[n-1] > 1 {
			terms = append(terms, fmt.Sprintf("%s * %du", c, st))
		}
		return strings.Join(terms, " + ")
	}
	apply := func(name string, op ir.Op, args ...string) []string {
		n := &codegen.Nest{Body: []codegen.Stmt{codegen.Apply(name, op, args...)}}
		return n.Render(Lang, k)
	}
	fmt.Fprintf(b, "\tATTBUF float ts[%d];\n\tATTBUF float os[%d];\n", T, E)
	if a.Chunk > 0 && k.Blocks <= 1 {
		// The split order's parts: each one's m, l and o.
		fmt.Fprintf(b, "\tATTBUF float pm[%d];\n\tATTBUF float pl[%d];\n\tATTBUF float pos[%d];\n", a.Parts(), a.Parts(), a.Parts()*E)
	}
	b.WriteString("\tfor (idx tl = t0; tl < t1; tl++) {\n")
	fmt.Fprintf(b, "\t\tconst idx z = tl / %du;\n\t\tconst idx qi = tl %% %du;\n", S, S)
	// The scores, attKeysC keys at a time: independent accumulators, each
	// walking d ascending, so that their adds overlap instead of waiting
	// on one another; then the rest one by one.
	whole := T / attKeysC * attKeysC
	score := func(kj string) {
		t := fmt.Sprintf("sc%s * %s", kj, Lang.Bits(math.Float32bits(a.Scale)))
		if k.Masked() {
			fmt.Fprintf(b, "\t\t\t\tconst float sp%s = %s;\n", kj, t)
			t = fmt.Sprintf("sp%s + in3[%s]", kj, off(3, "qi", "(kj + "+kj+"u)"))
		}
		if a.Causal {
			t = Lang.Select("qi < kj + "+kj+"u", Lang.Bits(0xff800000), t)
		}
		fmt.Fprintf(b, "\t\t\t\tts[kj + %su] = %s;\n", kj, t)
	}
	if whole > 0 {
		fmt.Fprintf(b, "\t\tfor (idx kj = 0; kj < %du; kj += %du) {\n", whole, attKeysC)
		for x := range attKeysC {
			fmt.Fprintf(b, "\t\t\tfloat sc%d = 0.0f;\n", x)
		}
		fmt.Fprintf(b, "\t\t\tfor (idx d = 0; d < %du; d++) {\n\t\t\t\tconst float qd = in0[%s];\n", D, off(0, "qi", "d"))
		for x := range attKeysC {
			fmt.Fprintf(b, "\t\t\t\tconst float pr%d = qd * in1[%s];\n\t\t\t\tsc%d = sc%d + pr%d;\n", x, off(1, fmt.Sprintf("(kj + %du)", x), "d"), x, x, x)
		}
		b.WriteString("\t\t\t}\n\t\t\t{\n")
		for x := range attKeysC {
			score(fmt.Sprint(x))
		}
		b.WriteString("\t\t\t}\n\t\t}\n")
	}
	if whole < T {
		fmt.Fprintf(b, "\t\tfor (idx kj = %du; kj < %du; kj++) {\n\t\t\tfloat sc0 = 0.0f;\n", whole, T)
		fmt.Fprintf(b, "\t\t\tfor (idx d = 0; d < %du; d++) {\n", D)
		fmt.Fprintf(b, "\t\t\t\tconst float pr0 = in0[%s] * in1[%s];\n\t\t\t\tsc0 = sc0 + pr0;\n\t\t\t}\n\t\t\t{\n", off(0, "qi", "d"), off(1, "kj", "d"))
		score("0")
		b.WriteString("\t\t\t}\n\t\t}\n")
	}
	if a.Block > 0 {
		attentionOnline(b, k, a, off, apply)
		return a.Batch.Len() * S
	}
	fmt.Fprintf(b, "\t\tfloat mr = %s;\n", Lang.Bits(0xff800000))
	fmt.Fprintf(b, "\t\tfor (idx kj = 0; kj < %du; kj++) {\n\t\t\tconst float t = ts[kj];\n", T)
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "t", "mx"), 3))
	b.WriteString("\t\t\tmr = mx;\n\t\t}\n")
	fmt.Fprintf(b, "\t\tfloat ls = 0.0f;\n\t\tfor (idx e = 0; e < %du; e++) os[e] = 0.0f;\n", E)
	fmt.Fprintf(b, "\t\tfor (idx kj = 0; kj < %du; kj++) {\n\t\t\tconst float t = ts[kj];\n", T)
	b.WriteString(codegen.Indent(apply("us", ir.OpSub, "t", "mr"), 3))
	b.WriteString(codegen.Indent(apply("ps", ir.OpExp, "us"), 3))
	b.WriteString("\t\t\tls = ls + ps;\n")
	fmt.Fprintf(b, "\t\t\tfor (idx e = 0; e < %du; e++) {\n", E)
	fmt.Fprintf(b, "\t\t\t\tconst float pv = ps * in2[%s];\n\t\t\t\tos[e] = os[e] + pv;\n\t\t\t}\n\t\t}\n", off(2, "kj", "e"))
	fmt.Fprintf(b, "\t\tfor (idx e = 0; e < %du; e++) {\n\t\t\tconst float o = os[e];\n", E)
	b.WriteString(codegen.Indent(apply("acc", ir.OpDiv, "o", "ls"), 3))
	fmt.Fprintf(b, "\t\t\tconst idx at = tl * %du + e;\n", E)
	load := func(j int) string { return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at")) }
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 3))
	b.WriteString(codegen.Indent(stores(k, "at"), 3))
	b.WriteString("\t\t}\n\t}\n")
	return a.Batch.Len() * S
}

// attentionWork is an attention kernel's operations: per score two of q·k
// (the scores and their products), an exp, and E products and sums.
func attentionWork(k *ir.Kernel) int64 {
	a := ir.AttentionKernel(k)
	return int64(a.Batch.Len()*a.S) * int64(a.T) * int64(2*a.D+2*a.E+40)
}

// attentionOnline writes the rest of an attention kernel in the online
// order (ir/attention.go), from the row's scores ts: per key block of
// a.Block, the running maximum m' from m (-MaxFloat32 first), l and the
// row's E accumulators rounded times c = exp(m − m'), then the block's
// keys ascending with p = exp(t − m'); each output o / l with the
// epilogue. Where a.Chunk is set (the split order), each part of a.Chunk
// keys runs those blocks alone into pm, pl and pos, and the parts are
// combined in ascending order with w = exp(m − M) before the division;
// a kernel with Blocks writes the parts instead (its combine kernel
// divides and runs the epilogue). Every product is its own declaration,
// so that no C compiler contracts it with the add after it.
func attentionOnline(b *strings.Builder, k *ir.Kernel, a ir.Attention, off func(j int, r, c string) string, apply func(name string, op ir.Op, args ...string) []string) {
	T, E, B := a.T, a.E, a.Block
	// blocks writes the online order over keys [lo, hi) into mr, ls, os,
	// indented by in.
	blocks := func(in, lo, hi string) {
		w := func(format string, args ...any) { fmt.Fprintf(b, in+format, args...) }
		ind := func(lines []string, tabs int) { b.WriteString(codegen.Indent(lines, len(in)+tabs)) }
		w("float mr = %s;\n", Lang.Bits(0xff7fffff)) // -MaxFloat32
		w("float ls = 0.0f;\n%sfor (idx e = 0; e < %du; e++) os[e] = 0.0f;\n", in, E)
		w("for (idx kb = %s; kb < %s; kb += %du) {\n", lo, hi, B)
		w("\tconst idx ke = kb + %du < %s ? kb + %du : %s;\n", B, hi, B, hi)
		w("\tfloat mn = mr;\n%s\tfor (idx kj = kb; kj < ke; kj++) {\n%s\t\tconst float t = ts[kj];\n", in, in)
		ind(codegen.Combine(Lang, ir.OpMax, "mn", "t", "mx"), 2)
		w("\t\tmn = mx;\n%s\t}\n", in)
		ind(apply("ud", ir.OpSub, "mr", "mn"), 1)
		ind(apply("cs", ir.OpExp, "ud"), 1)
		w("\tls = ls * cs;\n%s\tfor (idx e = 0; e < %du; e++) os[e] = os[e] * cs;\n", in, E)
		w("\tfor (idx kj = kb; kj < ke; kj++) {\n%s\t\tconst float t = ts[kj];\n", in)
		ind(apply("us", ir.OpSub, "t", "mn"), 2)
		ind(apply("ps", ir.OpExp, "us"), 2)
		w("\t\tls = ls + ps;\n")
		w("\t\tfor (idx e = 0; e < %du; e++) {\n", E)
		w("\t\t\tconst float pv = ps * in2[%s];\n%s\t\t\tos[e] = os[e] + pv;\n%s\t\t}\n%s\t}\n", off(2, "kj", "e"), in, in, in)
		w("\tmr = mn;\n%s}\n", in)
	}
	if a.Chunk == 0 {
		blocks("\t\t", "0", fmt.Sprintf("%du", T))
	} else {
		P, W := a.Parts(), a.Chunk
		fmt.Fprintf(b, "\t\tfor (idx pc = 0; pc < %du; pc++) {\n\t\t\tconst idx k0 = pc * %du;\n", P, W)
		fmt.Fprintf(b, "\t\t\tconst idx k1 = k0 + %du < %du ? k0 + %du : %du;\n", W, T, W, T)
		blocks("\t\t\t", "k0", "k1")
		if k.Blocks > 1 {
			// The parts themselves, [P,E+2] a row: a combine kernel ends it.
			fmt.Fprintf(b, "\t\t\tconst idx at = (tl * %du + pc) * %du;\n", P, E+2)
			fmt.Fprintf(b, "\t\t\tfor (idx e = 0; e < %du; e++) out0[at + e] = os[e];\n\t\t\tout0[at + %du] = mr;\n\t\t\tout0[at + %du] = ls;\n\t\t}\n\t}\n", E, E, E+1)
			return
		}
		fmt.Fprintf(b, "\t\t\tpm[pc] = mr;\n\t\t\tpl[pc] = ls;\n\t\t\tfor (idx e = 0; e < %du; e++) pos[pc * %du + e] = os[e];\n\t\t}\n", E, E)
		// M folds the parts' maxima (maximum selects: any grouping gives
		// these bits); then L and O over the parts ascending.
		b.WriteString("\t\tfloat mm = pm[0];\n")
		fmt.Fprintf(b, "\t\tfor (idx pc = 1; pc < %du; pc++) {\n\t\t\tconst float t = pm[pc];\n", P)
		b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mm", "t", "mx"), 3))
		b.WriteString("\t\t\tmm = mx;\n\t\t}\n")
		fmt.Fprintf(b, "\t\tfloat ls = 0.0f;\n\t\tfor (idx e = 0; e < %du; e++) os[e] = 0.0f;\n", E)
		fmt.Fprintf(b, "\t\tfor (idx pc = 0; pc < %du; pc++) {\n\t\t\tconst float mc = pm[pc];\n", P)
		b.WriteString(codegen.Indent(apply("ud", ir.OpSub, "mc", "mm"), 3))
		b.WriteString(codegen.Indent(apply("ws", ir.OpExp, "ud"), 3))
		b.WriteString("\t\t\tconst float lw = pl[pc] * ws;\n\t\t\tls = ls + lw;\n")
		fmt.Fprintf(b, "\t\t\tfor (idx e = 0; e < %du; e++) {\n\t\t\t\tconst float ow = pos[pc * %du + e] * ws;\n\t\t\t\tos[e] = os[e] + ow;\n\t\t\t}\n\t\t}\n", E, E)
	}
	fmt.Fprintf(b, "\t\tfor (idx e = 0; e < %du; e++) {\n\t\t\tconst float o = os[e];\n", E)
	b.WriteString(codegen.Indent(apply("acc", ir.OpDiv, "o", "ls"), 3))
	fmt.Fprintf(b, "\t\t\tconst idx at = tl * %du + e;\n", E)
	load := func(j int) string { return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at")) }
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 3))
	b.WriteString(codegen.Indent(stores(k, "at"), 3))
	b.WriteString("\t\t}\n\t}\n")
}
