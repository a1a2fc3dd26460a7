// Package c generates freestanding C99 from a lowered ir.Program: one
// translation unit per Program, one exported function per kernel, no libc
// and no headers. The wasm backend compiles it with Clang to WebAssembly;
// a native build with the system compiler runs the same source.
//
// Exactness. The unit must be compiled with -ffp-contract=off (it also says
// #pragma STDC FP_CONTRACT OFF): every body value is its own declaration,
// so each add, sub and mul rounds to float32 on its own, as cpuref defines.
// Constants are written as their IEEE bits (F(0x3f800000u)), never as
// decimal literals. Division and square root are the target's own
// correctly rounded instructions (see native), the other primitives (exp,
// log, tanh) static functions of ir's expressions, one per unit. Matmul keeps one accumulator per output that starts at
// +0 and walks k ascending, in packed panels and register tiles (see matmulPrelude); sum reproduces
// cpuref's padded pairwise tree with contiguous blocks and a binary counter
// (a split sum, Kernel.Blocks > 1, writes each block's subtree); a
// reduction with several outputs (sum or max over axes) does the same for
// each output in turn. Measured:
// bit-identical to cpuref.RunProgram on the shared op suite, split or not
// (run_test.go builds each unit with the system compiler).
//
// Calling convention. Kernel n is exported as "kernel<n>" and takes one
// pointer per entry of Kernel.Buffers (inputs first, then outputs), plus a
// trailing scratch pointer when Kernel.Scratch is set. The caller places
// every buffer in memory; buffers never overlap.
package c

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// SumBlock is the number of contiguous leaves a sum kernel reduces as one
// aligned subtree before combining blocks with its binary counter.
const SumBlock = 256

// Lang is C's syntax for the shared renderer. Keep needs no wrapper: each
// product is a separate declaration, and C never contracts across
// declarations (nor at all under -ffp-contract=off).
var Lang = codegen.Lang{
	Let:       func(t ir.XType, name, expr string) string { return cTypes[t] + " " + name + " = " + expr + ";" },
	Bits:      func(b uint32) string { return fmt.Sprintf("F(0x%08xu)", b) },
	Select:    func(cond, t, f string) string { return "(" + cond + " ? " + t + " : " + f + ")" },
	Keep:      func(p string) string { return p },
	Uint:      func(n int) string { return fmt.Sprintf("%du", n) },
	UBits:     func(v uint32) string { return fmt.Sprintf("0x%08xu", v) },
	FloatBits: func(f string) string { return "((union { float f; u32 u; }){ .f = " + f + " }).u" },
	BitsFloat: func(u string) string { return "F(" + u + ")" },
	Func: func(name string, ps []string) string {
		return "static inline float " + name + "(float " + strings.Join(ps, ", float ") + ") {"
	},
	Native: native,
	FMA:    "fmaf", // C99's single-rounding float fma (no kernel calls one: ir.Fused is the GPUs')
	Index:  "idx",
	Types:  []string{codegen.F32: "float"},
	Decl:   cDecl,
	For:    cFor,
	Table:  cTable,
	Array:  cArray,
}

// native is C's table of primitives (codegen.Lang.Native): division and
// square root are the target's own IEEE-754 instructions (x86's divss and
// sqrtss, wasm's f32.div and f32.sqrt, correctly rounded by both
// standards, subnormals included: the units never set flush-to-zero),
// which give ir's long division and digit-by-digit root bit for bit, at a
// few cycles instead of about 300 integer operations. Only NaN needs care:
// hardware NaNs differ (x86's default NaN is negative, wasm's bits are
// nondeterministic), so every NaN a quotient or negative root produces is
// replaced by the reference's quiet NaN, and a NaN root is its argument,
// as cpuref's. The GPU targets have no table: their division and sqrt
// are not correctly rounded, so they run ir's expressions. TestNative
// proves the equality over random and edge bit patterns.
var native = map[string]string{
	"div": `static inline float prim_div(float p0, float p1) {
	const float q = p0 / p1;
	return q == q ? q : F(0x7fc00000u);
}`,
	// div_normal is ir's division for positive normal operands with a
	// normal quotient (tanh's); there the instruction is exact and no NaN
	// arises, and on other operands its caller drops the value.
	"div_normal": `static inline float prim_div_normal(float p0, float p1) {
	return p0 / p1;
}`,
	"sqrt": `static inline float prim_sqrt(float p0) {
	if (p0 != p0) {
		return p0;
	}
	const float r = __builtin_sqrtf(p0);
	return r == r ? r : F(0x7fc00000u);
}`,
}

// exp is ir.ExpIntegerK on C: the table's exp with k rounded by u32
// steps, the same bits, whose dependency chain is shorter on a CPU than the
// float rounding GPUs run (BenchmarkXMathC in ir: 5.9 against 6.9 ns).
func init() {
	l := Lang
	l.Native = nil
	native["exp"] = strings.Join(codegen.Define(l, []*ir.Func{ir.ExpIntegerK}, 0), "\n")
}

var cTypes = [...]string{ir.XFloat32: "const float", ir.XUint32: "const u32", ir.XBool: "const int"}

// Unit is the generated C of one Program.
type Unit struct {
	Source  string
	Kernels []Kernel // in Program order
	Scratch int      // floats of scratch memory shared by the kernels that take it
}

// Kernel describes one exported kernel function.
type Kernel struct {
	Export  string // exported symbol: "kernel<n>"
	Name    string // ir.Kernel.Name, for errors
	Buffers []int  // program buffers passed as pointers, inputs then outputs
	Scratch bool   // takes a trailing pointer to Unit.Scratch floats
	// Tiles is the number of parts the kernel's outputs split into (at
	// least 1): the unit's static function "<Export>_tiles" takes the
	// kernel's pointers and a range [t0, t1) of them, and computes exactly
	// the outputs of those tiles, each with the same operations in the same
	// order as the whole kernel, so any split of [0, Tiles) over threads
	// gives the same bits and writes disjoint memory (see tiles.go).
	Tiles int
	// Work estimates the kernel's arithmetic (operations over all tiles),
	// for deciding whether a split pays.
	Work int64
}

// prelude is the fixed head of every unit.
const prelude = `#pragma STDC FP_CONTRACT OFF

typedef __SIZE_TYPE__ idx;
typedef unsigned int u32;

#define EXPORT __attribute__((visibility("default")))

/* F returns the float whose IEEE-754 bits are b: exact, unlike a decimal literal. */
static inline float F(u32 b) {
	union { u32 u; float f; } x;
	x.u = b;
	return x.f;
}
`

// Target is the C generator: one Unit per program.
type Target struct{}

var _ codegen.Target[*Unit] = Target{}

// Name returns "c".
func (Target) Name() string { return "c" }

// Emit returns the C unit of a sealed program.
func (Target) Emit(sp *ir.Sealed) (*Unit, error) {
	p := sp.Program()
	defer codegen.MemoNests(p.Kernels)()
	u := &Unit{}
	var b strings.Builder
	b.WriteString("// Code generated by gpucc (codegen/c). DO NOT EDIT.\n")
	b.WriteString("// Freestanding C99; build with -ffp-contract=off.\n\n")
	b.WriteString(prelude)
	for kind := range ir.NumKernelKinds { // each kind's prelude, once, in kind order
		if w := writerOf(ir.KernelKind(kind)); w.prelude != "" && hasKind(p, ir.KernelKind(kind)) {
			b.WriteString(w.prelude)
		}
	}
	ks := make([]*ir.Kernel, len(p.Kernels))
	for n := range p.Kernels {
		ks[n] = &p.Kernels[n]
	}
	if fs := codegen.FuncsOf(ks...); len(fs) > 0 { // once per unit: C has no per-kernel constants
		b.WriteString("\n")
		b.WriteString(codegen.Indent(codegen.Define(Lang, fs, 0), 0))
	}
	for n := range p.Kernels {
		k := &p.Kernels[n]
		desc := Kernel{Export: fmt.Sprintf("kernel%d", n), Name: k.Name}
		for _, in := range k.Inputs {
			desc.Buffers = append(desc.Buffers, in.Buffer)
		}
		desc.Buffers = append(desc.Buffers, k.Outputs...)
		w := writerOf(k.Kind)
		if w.scratch != nil {
			desc.Scratch = true
			u.Scratch = max(u.Scratch, w.scratch(k))
		}
		desc.Work = work(k)
		fmt.Fprintf(&b, "\n/* %s: %s %v, nodes %v */\n", k.Name, k.Kind, k.Shape, k.Nodes)
		w.write(&b, k, &desc)
		u.Kernels = append(u.Kernels, desc)
	}
	u.Source = b.String()
	return u, nil
}

// combineInline is the attribute of a reduction's combining function. Add
// and the selecting ops (ir.OpInfo.Selects, which fold in lanes: see
// selectFold) are inline. Clang 14 at -O3 with -msimd128 did not finish
// (minutes, then killed) on a 16-leaf max tree with maximum's selects
// inlined, so any other combining op in a tree is a call.
func combineInline(c ir.Op) string {
	if c == ir.OpAdd || c.Info().Selects {
		return "inline"
	}
	return "__attribute__((noinline))"
}

// Lanes is the number of accumulators a selecting reduction folds with.
const Lanes = 16

// selectOrder is C's comparison per selecting op (ir.OpInfo.Selects) that
// has one: for arguments that are not NaN, x OP y ? x : y is the op's
// result except where both are zeros of either sign (the table orders -0
// below +0; C's comparison calls them equal). So a fold of leaves by the
// comparison ends at the op's value over them, bit for bit, whenever no
// leaf is a NaN and the end is not a zero: a nonzero float equal to
// another has its bits. TestSelectOrder checks that against cpuref.
var selectOrder = map[ir.Op]string{ir.OpMaximum: ">", ir.OpMinimum: "<"}

// selectFold writes, indented by tabs, a block that reduces arr[0..n)
// (padded leaves included) by combine, a selecting op (ir.OpInfo.Selects),
// into s, then runs statement use. Lanes accumulators take adjacent
// leaves, which Clang vectorises. Where the op has a comparison
// (selectOrder, given as order), the lanes first fold by it, a compare
// and a select per leaf, and note NaNs; only a block with a NaN or a zero
// result is folded again by combine. There, only when the result is a NaN
// is the sequential fold run again, for the first NaN in leaf order,
// which is what the reference tree returns. Any other result is the same
// in every order.
func selectFold(b *strings.Builder, tabs int, arr string, n int, combine, ident, order, use string) {
	var lines []string
	in := ""
	if order != "" {
		lines = append(lines, "{",
			fmt.Sprintf("	float fa[%d], s;", Lanes),
			fmt.Sprintf("	u32 fn[%d], nan;", Lanes),
			fmt.Sprintf("	for (int j = 0; j < %d; j++) {", Lanes),
			"		fa[j] = "+ident+";",
			"		fn[j] = 0;",
			"	}",
			fmt.Sprintf("	for (idx l = 0; l < %du; l += %d)", n/Lanes*Lanes, Lanes),
			fmt.Sprintf("		for (int j = 0; j < %d; j++) {", Lanes),
			fmt.Sprintf("			const float x = %s[l + j];", arr),
			fmt.Sprintf("			fa[j] = x %s fa[j] ? x : fa[j];", order),
			"			fn[j] |= x != x;",
			"		}")
		if n%Lanes != 0 {
			lines = append(lines, fmt.Sprintf("	for (idx l = %du; l < %du; l++) {", n/Lanes*Lanes, n),
				fmt.Sprintf("		const float x = %s[l];", arr),
				fmt.Sprintf("		fa[0] = x %s fa[0] ? x : fa[0];", order),
				"		fn[0] |= x != x;",
				"	}")
		}
		lines = append(lines, "	s = fa[0];", "	nan = fn[0];",
			fmt.Sprintf("	for (int j = 1; j < %d; j++) {", Lanes),
			fmt.Sprintf("		s = fa[j] %s s ? fa[j] : s;", order),
			"		nan |= fn[j];",
			"	}",
			"	if (nan || s == "+Lang.Float(0)+") {")
		in = "	"
	} else {
		lines = append(lines, "{", "	float s;")
	}
	exact := []string{
		"{",
		fmt.Sprintf("	float acc[%d];", Lanes),
		fmt.Sprintf("	for (int j = 0; j < %d; j++)", Lanes),
		"		acc[j] = " + ident + ";",
		fmt.Sprintf("	for (idx l = 0; l < %du; l += %d)", n/Lanes*Lanes, Lanes),
		fmt.Sprintf("		for (int j = 0; j < %d; j++)", Lanes),
		fmt.Sprintf("			acc[j] = %s(acc[j], %s[l + j]);", combine, arr),
	}
	if n%Lanes != 0 {
		exact = append(exact, fmt.Sprintf("	for (idx l = %du; l < %du; l++)", n/Lanes*Lanes, n),
			fmt.Sprintf("		acc[0] = %s(acc[0], %s[l]);", combine, arr))
	}
	exact = append(exact,
		"	s = acc[0];",
		fmt.Sprintf("	for (int j = 1; j < %d; j++)", Lanes),
		fmt.Sprintf("		s = %s(s, acc[j]);", combine),
		"	if (s != s) {",
		"		s = "+ident+";",
		fmt.Sprintf("		for (idx l = 0; l < %du; l++)", n),
		fmt.Sprintf("			s = %s(s, %s[l]);", combine, arr),
		"	}",
		"}")
	for _, l := range exact {
		lines = append(lines, in+"	"+l)
	}
	if order != "" {
		lines = append(lines, "	}")
	}
	lines = append(lines, "	"+use, "}")
	b.WriteString(codegen.Indent(lines, tabs))
}

func hasKind(p *ir.Program, kind ir.KernelKind) bool {
	for _, k := range p.Kernels {
		if k.Kind == kind {
			return true
		}
	}
	return false
}

// params renders the parameter list: inputs, outputs, scratch.
func params(k *ir.Kernel, scratch bool) string {
	var ps []string
	for j := range k.Inputs {
		ps = append(ps, fmt.Sprintf("const float *restrict in%d", j))
	}
	for j := range k.Outputs {
		ps = append(ps, fmt.Sprintf("float *restrict out%d", j))
	}
	if scratch {
		ps = append(ps, "float *restrict scratch")
	}
	return strings.Join(ps, ", ")
}

// stores renders the writes of the kernel's stored values at index i.
func stores(k *ir.Kernel, i string) []string {
	lines := make([]string, len(k.Stores))
	for j, v := range k.Stores {
		lines[j] = fmt.Sprintf("out%d[%s] = %s;", j, i, codegen.Value(int(v)))
	}
	return lines
}

// stridedLoad reports whether the body reads an operand that is not plain.
func stridedLoad(k *ir.Kernel) bool {
	for _, in := range k.Body {
		if in.Kind == ir.InstrLoad && !k.Inputs[in.Operand].Plain() {
			return true
		}
	}
	return false
}

// flatLoop reports whether elementwise walks k.Shape with one flat index.
func flatLoop(k *ir.Kernel) bool { return !stridedLoad(k) || len(k.Shape) < 2 }

// elementwise writes the loop evaluating k's body over k.Shape and storing
// it; acc is the matmul accumulator's expression (epilogues only). Bodies
// that read an operand that is not plain loop over each dimension (r and c
// for two), so that its offset needs no division. The loop covers [lo, hi)
// (C expressions) of the flat index when flatLoop(k), else of the first
// dimension.
func elementwise(b *strings.Builder, k *ir.Kernel, acc, lo, hi string) {
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "i"))
	}
	if flatLoop(k) {
		fmt.Fprintf(b, "\tfor (idx i = %s; i < %s; i++) {\n", lo, hi)
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, acc), 2))
		b.WriteString(codegen.Indent(stores(k, "i"), 2))
		b.WriteString("\t}\n")
		return
	}
	idx := []string{"r", "c"}
	if len(k.Shape) > 2 {
		idx = make([]string, len(k.Shape))
		for d := range idx {
			idx[d] = fmt.Sprintf("i%d", d)
		}
	}
	for d, n := range k.Shape {
		from, to := "0", Lang.Uint(n)
		if d == 0 {
			from, to = lo, hi
		}
		fmt.Fprintf(b, "%sfor (idx %s = %s; %s < %s; %s++) {\n", strings.Repeat("\t", d+1), idx[d], from, idx[d], to, idx[d])
	}
	in := len(k.Shape) + 1
	fmt.Fprintf(b, "%sconst idx i = %s;\n", strings.Repeat("\t", in), codegen.Offset(Lang, ir.PlainOperand(0, k.Shape), idx))
	strided := func(j int) string {
		if op := k.Inputs[j]; !op.Plain() && op.Shape.Equal(k.Shape) {
			return fmt.Sprintf("in%d[%s]", j, codegen.Offset(Lang, op, idx))
		}
		return load(j)
	}
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, strided, acc), in))
	b.WriteString(codegen.Indent(stores(k, "i"), in))
	for d := len(k.Shape); d > 0; d-- {
		fmt.Fprintf(b, "%s}\n", strings.Repeat("\t", d))
	}
}

// matmulPrelude holds the matmul routine every matmul kernel calls with
// constant sizes (always_inline lets Clang specialise it per call).
//
// mm computes c[M×N] = a × b, reading a[i,k] at a[i*ar + k*ak] and b
// row-major [K×N]. Each output has one accumulator that starts at +0 and
// walks k ascending with a rounded product and a rounded add, as cpuref;
// between blocks of MM_KC steps it rests in c as a float32, which is
// exact. The blocking is GotoBLAS's: for each block of k, b's rows are
// packed into panels of MM_W contiguous columns (no power-of-two stride
// left to alias in the cache: 1024³ ran 3-5x slower through one) and a's
// rows, MM_MC at a time, into strips of MM_R; a tile of MM_R rows × MM_W
// columns keeps 2·MM_R vector accumulators in registers. With AVX2 the
// vectors have 8 lanes and the tile 4 rows (8 ymm accumulators); otherwise
// (SSE) 4 lanes and 2 rows. The panels live in the kernel's scratch
// (MatmulScratch floats). wasm keeps the unpacked routine (2×8 tiles over
// columns in panels of 64, b read in place: taller tiles spill under
// wazero's register allocator), because wazero v1.12.0's compiler on amd64
// miscompiles the packed one: with the epilogue inlined after it, more
// than 16 v128 values are live, and the lowering of v128.bitselect (the
// vectorised relu's select) reloads its pand result from a spill slot
// written before the pand, so the select returns its first operand
// unmasked (5×3×9 relu: negative sums came back unrelued). The C is not
// at fault: ASan and UBSan at -O0, -O1 and -O3 with SSE and AVX2 find
// nothing, and the same .wasm is bit-exact under wazero's interpreter and
// V8 at every -O level; Clang's -O0 to -O2 modules happen to dodge the
// spill. The packed routine was no faster under wazero either.
const matmulPrelude = `
#ifdef __wasm__
/* wasm: the unpacked 2x8 tiles; wazero 1.12's amd64 compiler miscompiles the packed ones (see matmulPrelude's doc). */
typedef float f4 __attribute__((vector_size(16)));

static inline f4 load4(const float *p) {
	f4 v;
	__builtin_memcpy(&v, p, sizeof v);
	return v;
}

static inline void store4(float *p, f4 v) { __builtin_memcpy(p, &v, sizeof v); }

/* mm_tile computes rows i..i+R-1, columns j..j+4V-1 of c (R <= 4, V <= 2); b[k, j] is b[k*bk + j*bn]. */
static inline __attribute__((always_inline)) void mm_tile(float *restrict c, idx ldc, const float *restrict a,
	idx ar, idx ak, const float *restrict b, idx bk, idx bn, idx K, idx i, idx j, int R, int V) {
	f4 acc[4][2];
	for (int r = 0; r < R; r++)
		for (int v = 0; v < V; v++)
			acc[r][v] = (f4){F(0u), F(0u), F(0u), F(0u)};
	for (idx k = 0; k < K; k++) {
		f4 bv[2];
		for (int v = 0; v < V; v++) {
			const float *restrict p = b + k * bk + (j + 4 * v) * bn;
			bv[v] = bn == 1 ? load4(p) : (f4){p[0], p[bn], p[2 * bn], p[3 * bn]};
		}
		for (int r = 0; r < R; r++) {
			const float s = a[(i + r) * ar + k * ak];
			const f4 av = {s, s, s, s};
			for (int v = 0; v < V; v++) {
				const f4 p = av * bv[v];
				acc[r][v] = acc[r][v] + p;
			}
		}
	}
	for (int r = 0; r < R; r++)
		for (int v = 0; v < V; v++)
			store4(c + (i + r) * ldc + j + 4 * v, acc[r][v]);
}

/* mm_col computes rows i..i+R-1 of column j of c, one scalar accumulator each. */
static inline __attribute__((always_inline)) void mm_col(float *restrict c, idx ldc, const float *restrict a,
	idx ar, idx ak, const float *restrict b, idx bk, idx bn, idx K, idx i, idx j, int R) {
	float acc[4];
	for (int r = 0; r < R; r++)
		acc[r] = F(0u);
	for (idx k = 0; k < K; k++) {
		const float bkj = b[k * bk + j * bn];
		for (int r = 0; r < R; r++) {
			const float p = a[(i + r) * ar + k * ak] * bkj;
			acc[r] = acc[r] + p;
		}
	}
	for (int r = 0; r < R; r++)
		c[(i + r) * ldc + j] = acc[r];
}

/* mm_rows computes rows i..i+R-1 of columns j0..j1-1 of c. */
static inline __attribute__((always_inline)) void mm_rows(float *restrict c, idx ldc, const float *restrict a,
	idx ar, idx ak, const float *restrict b, idx bk, idx bn, idx K, idx i, idx j0, idx j1, int R) {
	idx j = j0;
	for (; j + 8 <= j1; j += 8)
		mm_tile(c, ldc, a, ar, ak, b, bk, bn, K, i, j, R, 2);
	for (; j + 4 <= j1; j += 4)
		mm_tile(c, ldc, a, ar, ak, b, bk, bn, K, i, j, R, 1);
	for (; j < j1; j++)
		mm_col(c, ldc, a, ar, ak, b, bk, bn, K, i, j, R);
}

/* mm computes c[M×N] (row stride ldc) = a × b, a[i,k] at a[i*ar + k*ak], b[k,j] at b[k*bk + j*bn]. */
static inline __attribute__((always_inline)) void mm(float *restrict c, idx ldc, const float *restrict a,
	idx ar, idx ak, const float *restrict b, idx bk, idx bn, idx M, idx K, idx N, float *restrict panel) {
	(void)panel;
	for (idx j0 = 0; j0 < N; j0 += 64) {
		const idx j1 = j0 + 64 < N ? j0 + 64 : N;
		idx i = 0;
		for (; i + 2 <= M; i += 2)
			mm_rows(c, ldc, a, ar, ak, b, bk, bn, K, i, j0, j1, 2);
		for (; i < M; i++)
			mm_rows(c, ldc, a, ar, ak, b, bk, bn, K, i, j0, j1, 1);
	}
}
#else
#ifdef __AVX2__
typedef float fv __attribute__((vector_size(32)));
#define MM_VL 8
#define MM_R 4
#define SPLAT(s) ((fv){s, s, s, s, s, s, s, s})
#else
typedef float fv __attribute__((vector_size(16)));
#define MM_VL 4
#define MM_R 2
#define SPLAT(s) ((fv){s, s, s, s})
#endif
#define MM_W (2 * MM_VL)
#define MM_KC 256
#define MM_MC 64

static inline fv loadv(const float *p) {
	fv v;
	__builtin_memcpy(&v, p, sizeof v);
	return v;
}
static inline void storev(float *p, fv v) { __builtin_memcpy(p, &v, sizeof v); }

/* mm_tile: rows i..i+R-1 of the panel at column j (W columns, w of them real), k in [k0, k1);
 * a[r*ar + k*ak] is row i+r's element k. */
static inline __attribute__((always_inline)) void mm_tile(float *restrict c, const float *restrict a,
	idx ar, idx ak, const float *restrict panel, idx ldc, idx i, idx j, idx w, idx k0, idx k1, int R) {
	fv acc[MM_R][2];
	for (int r = 0; r < R; r++) {
		if (k0 == 0) {
			acc[r][0] = acc[r][1] = SPLAT(F(0u));
		} else if (w == MM_W) {
			acc[r][0] = loadv(c + (i + r) * ldc + j);
			acc[r][1] = loadv(c + (i + r) * ldc + j + MM_VL);
		} else {
			float t[MM_W] = {0};
			for (idx q = 0; q < w; q++)
				t[q] = c[(i + r) * ldc + j + q];
			acc[r][0] = loadv(t);
			acc[r][1] = loadv(t + MM_VL);
		}
	}
	for (idx k = k0; k < k1; k++) {
		const fv b0 = loadv(panel + k * MM_W), b1 = loadv(panel + k * MM_W + MM_VL);
		for (int r = 0; r < R; r++) {
			const float s = a[r * ar + k * ak];
			const fv av = SPLAT(s);
			const fv p0 = av * b0, p1 = av * b1;
			acc[r][0] = acc[r][0] + p0;
			acc[r][1] = acc[r][1] + p1;
		}
	}
	for (int r = 0; r < R; r++) {
		if (w == MM_W) {
			storev(c + (i + r) * ldc + j, acc[r][0]);
			storev(c + (i + r) * ldc + j + MM_VL, acc[r][1]);
		} else {
			float t[MM_W];
			storev(t, acc[r][0]);
			storev(t + MM_VL, acc[r][1]);
			for (idx q = 0; q < w; q++)
				c[(i + r) * ldc + j + q] = t[q];
		}
	}
}

/* mm computes c[M×N] (row stride ldc) = a × b, a[i,k] at a[i*ar + k*ak], b[k,j] at b[k*bk + j*bn];
 * panel holds MM_KC × ceil(N/MM_W)·MM_W + MM_MC × MM_KC floats. */
static inline __attribute__((always_inline)) void mm(float *restrict c, idx ldc, const float *restrict a,
	idx ar, idx ak, const float *restrict b, idx bk, idx bn, idx M, idx K, idx N, float *restrict panel) {
	float *restrict apack = panel + (K < MM_KC ? K : MM_KC) * ((N + MM_W - 1) / MM_W) * MM_W;
	const idx np = (N + MM_W - 1) / MM_W;
	for (idx k0 = 0; k0 < K || k0 == 0; k0 += MM_KC) {
		const idx k1 = K - k0 < MM_KC ? K : k0 + MM_KC, kc = k1 - k0;
		for (idx p = 0; p < np; p++) {
			const idx j = p * MM_W, w = N - j < MM_W ? N - j : MM_W;
			float *restrict dst = panel + p * kc * MM_W;
			if (bn == 1) {
				for (idx k = 0; k < kc; k++)
					for (idx q = 0; q < MM_W; q++)
						dst[k * MM_W + q] = q < w ? b[(k0 + k) * bk + j + q] : F(0u);
			} else { /* a transposed b: walk each column's k contiguously */
				for (idx q = 0; q < MM_W; q++)
					for (idx k = 0; k < kc; k++)
						dst[k * MM_W + q] = q < w ? b[(k0 + k) * bk + (j + q) * bn] : F(0u);
			}
		}
		for (idx i0 = 0; i0 < M; i0 += MM_MC) {
			const idx i1 = M - i0 < MM_MC ? M : i0 + MM_MC, strips = (i1 - i0) / MM_R;
			for (idx t = 0; t < strips; t++)
				for (idx k = 0; k < kc; k++)
					for (int r = 0; r < MM_R; r++)
						apack[(t * kc + k) * MM_R + r] = a[(i0 + t * MM_R + r) * ar + (k0 + k) * ak];
			for (idx p = 0; p < np; p++) {
				const idx j = p * MM_W, w = N - j < MM_W ? N - j : MM_W;
				const float *restrict pp = panel + p * kc * MM_W - k0 * MM_W;
				for (idx t = 0; t < strips; t++)
					mm_tile(c, apack + t * kc * MM_R - k0 * MM_R, 1, MM_R, pp, ldc, i0 + t * MM_R, j, w, k0, k1, MM_R);
				for (idx i = i0 + strips * MM_R; i < i1; i++)
					mm_tile(c, a + i * ar, ar, ak, pp, ldc, i, j, w, k0, k1, 1);
			}
		}
		if (K == 0)
			break;
	}
}
#endif
`

// MatmulScratch is the number of floats of scratch the packed matmul of
// an [m×k] × [k×n] product needs: b's panels for one block of k (n
// rounded up to the widest panel, 16 columns, times up to 256 rows) and
// a's strips (up to 64 rows of the block). The constants are mm's MM_KC,
// MM_MC and the AVX2 MM_W.
func MatmulScratch(m, k, n int) int {
	kc := min(k, 256)
	return kc*((n+15)/16*16) + min(m, 64)*kc
}

// sum writes the reference tree: P (the power of two ≥ n) leaves, -0.0
// past n, reduced as aligned blocks of B leaves (each a pairwise tree in a
// local array) combined by a binary counter: block number t merges with
// the partial sums of as many earlier blocks as t has trailing ones. Left
// over partials then combine right to left; the all -0.0 blocks past the
// last one would each add -0.0, which changes no value.
//
// With k.Blocks > 1 the P leaves form k.Blocks output blocks of L = P/Blocks
// leaves and out0[b] is block b's subtree: the counter restarts at each
// output block (t counts within it), the partials are folded into out0 at
// its last B-block, and output blocks that hold only padding get -0.0.
//
// It returns the kernel's tiles: one output each (or, tiled, Tile adjacent
// ones); a single output (split or not) is one tile.
func sum(b *strings.Builder, k *ir.Kernel, combine string) int {
	red := ir.ReductionOf(k.Shape, k.Keep)
	if red.Outputs == 1 {
		b.WriteString("\t(void)t0;\n\t(void)t1;\n")
		reduceOutput(b, k, red, combine, "0")
		return 1
	}
	if last := len(red.Kept) - 1; k.Blocks <= 1 && last >= 0 && red.Kept[last].Stride == 1 && red.Kept[last].Size >= Tile {
		return sumTiled(b, k, red, combine)
	}
	// Each output's leaves in turn, the same code at its base.
	var body strings.Builder
	reduceOutput(&body, k, red, combine, "o")
	b.WriteString("\tfor (idx o = t0; o < t1; o++) {\n")
	fmt.Fprintf(b, "\t\tconst idx base = %s;\n", codegen.Flat(Lang, red.Kept, "o"))
	for _, ln := range strings.SplitAfter(strings.TrimSuffix(body.String(), "\n"), "\n") {
		b.WriteString("\t" + ln)
	}
	b.WriteString("\n\t}\n")
	return red.Outputs
}

// Tile is the number of adjacent outputs a column reduction computes
// together (see sumTiled); WideTile, when the run of adjacent outputs is
// long enough to leave fewer than Tile over: a wider tile reads longer
// runs of each row (4 cache lines), so a pass down the columns touches
// each row's page a quarter as often (1024² column sums ran 2x faster).
const (
	Tile     = 16
	WideTile = 64
)

// sumTiled writes a reduction whose adjacent outputs read adjacent leaves
// (the innermost kept dimension has stride 1: column sums, sums over a
// middle axis), Tile (or WideTile) outputs at a time: the same tree as
// reduceOutput's, or a selecting reduction's fold in leaf order, run over
// the tile's columns at once, so that each leaf step loads contiguous
// floats instead of one per column at the row stride. Each output keeps its own tree, so the
// bits do not change. The columns past the last whole tile of each run
// are reduced one at a time, as the last tile of the run.
func sumTiled(b *strings.Builder, k *ir.Kernel, red ir.Reduction, combine string) int {
	in := red.Kept[len(red.Kept)-1].Size
	tile := Tile
	if in >= WideTile && in%WideTile < Tile {
		tile = WideTile
	}
	n := red.Leaves
	pad := Lang.Bits(k.Reduce.Info().Identity)
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "i"))
	}
	leaf := func(ind int, r, stmt string) { // stmt: a format of the leaf's value
		fmt.Fprintf(b, "%sfor (idx c = 0; c < %d; c++) {\n", strings.Repeat("\t", ind), tile)
		fmt.Fprintf(b, "%s\tconst idx i = base + %s + c;\n", strings.Repeat("\t", ind), codegen.Flat(Lang, red.Reduced, "("+r+")"))
		b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load), ind+1))
		fmt.Fprintf(b, "%s\t%s\n", strings.Repeat("\t", ind), fmt.Sprintf(stmt, codegen.Value(int(k.Stores[0]))))
		fmt.Fprintf(b, "%s}\n", strings.Repeat("\t", ind))
	}
	each := func(ind int, stmt string, args ...any) {
		fmt.Fprintf(b, "%sfor (idx c = 0; c < %d; c++)\n%s\t%s\n", strings.Repeat("\t", ind), tile, strings.Repeat("\t", ind), fmt.Sprintf(stmt, args...))
	}
	nt := (in + tile - 1) / tile // tiles per run of the innermost kept dimension
	b.WriteString("\tfor (idx tl = t0; tl < t1; tl++) {\n")
	fmt.Fprintf(b, "\t\tconst idx q = tl / %du, c0 = tl %% %du * %du;\n", nt, nt, tile)
	fmt.Fprintf(b, "\t\tif (c0 + %du <= %du) {\n", tile, in)
	fmt.Fprintf(b, "\t\t\tconst idx o0 = q * %du + c0;\n", in)
	fmt.Fprintf(b, "\t\t\tconst idx base = %s;\n", codegen.Flat(Lang, red.Kept, "o0"))
	fmt.Fprintf(b, "\t\t\tfloat s[%d];\n", tile)
	if k.Reduce.Info().Combine.Info().Selects {
		// The fold in leaf order from the identity is the tree's value:
		// a selecting op's result does not depend on the grouping.
		each(3, "s[c] = %s;", pad)
		fmt.Fprintf(b, "\t\t\tfor (idx r = 0; r < %du; r++) {\n", n)
		leaf(4, "r", "s[c] = "+combine+"(s[c], %s);")
		b.WriteString("\t\t\t}\n")
	} else {
		p, _ := codegen.SumBlock(n, 1)
		blk := min(p, 64) // the block only partitions the tree: any power of two gives its bits
		full, rest := n/blk, n%blk
		nblk := (n + blk - 1) / blk
		pair := blk >= 2 // the first level taken as the leaves are made, then compacted levels (see reduceOutput)
		// t holds a block's leaves where it is not paired, else the
		// levels from the second on; part the counter's partial sums, at
		// most one per bit of the block count.
		rows := blk
		if pair && rest == 0 {
			rows = max(blk/4, 1)
		}
		fmt.Fprintf(b, "\t\t\tfloat t[%d][%d], u[%d][%d], lv[%d], part[%d][%d];\n\t\t\tidx top = 0;\n", rows, tile, max(blk/2, 1), tile, tile, bits.Len(uint(nblk))+1, tile)
		fmt.Fprintf(b, "\t\t\tfor (idx blk = 0; blk < %du; blk++) {\n", nblk)
		if full > 0 {
			fmt.Fprintf(b, "\t\t\t\tif (blk < %du) {\n", full)
			if pair {
				fmt.Fprintf(b, "\t\t\t\t\tfor (idx l = 0; l < %du; l++) {\n", blk/2)
				leaf(6, fmt.Sprintf("blk * %du + 2 * l", blk), "lv[c] = %s;")
				leaf(6, fmt.Sprintf("blk * %du + 2 * l + 1", blk), "u[l][c] = "+combine+"(lv[c], %s);")
			} else {
				fmt.Fprintf(b, "\t\t\t\t\tfor (idx l = 0; l < %du; l++) {\n", blk)
				leaf(6, fmt.Sprintf("blk * %du + l", blk), "t[l][c] = %s;")
			}
			b.WriteString("\t\t\t\t\t}\n\t\t\t\t}\n")
		}
		if rest > 0 {
			fmt.Fprintf(b, "\t\t\t\tif (blk == %du) {\n", full)
			fmt.Fprintf(b, "\t\t\t\t\tfor (idx l = 0; l < %du; l++) {\n", rest)
			leaf(6, fmt.Sprintf("%du + l", full*blk), "t[l][c] = %s;")
			b.WriteString("\t\t\t\t\t}\n")
			fmt.Fprintf(b, "\t\t\t\t\tfor (idx l = %du; l < %du; l++)\n", rest, blk)
			each(6, "t[l][c] = %s;", pad)
			if pair {
				fmt.Fprintf(b, "\t\t\t\t\tfor (idx l = 0; l < %du; l++)\n", blk/2)
				each(6, "u[l][c] = %s(t[2 * l][c], t[2 * l + 1][c]);", combine)
			}
			b.WriteString("\t\t\t\t}\n")
		}
		top := "t"
		if pair {
			src, dst := "u", "t"
			for w := blk / 4; w >= 1; w /= 2 {
				fmt.Fprintf(b, "\t\t\t\tfor (idx l = 0; l < %du; l++)\n", w)
				each(5, "%s[l][c] = %s(%s[2 * l][c], %s[2 * l + 1][c]);", dst, combine, src, src)
				src, dst = dst, src
			}
			top = src
		}
		each(4, "s[c] = %s[0][c];", top)
		b.WriteString("\t\t\t\tfor (idx cc = blk; cc & 1u; cc >>= 1) {\n\t\t\t\t\ttop--;\n")
		each(5, "s[c] = %s(part[top][c], s[c]);", combine)
		b.WriteString("\t\t\t\t}\n")
		each(4, "part[top][c] = s[c];")
		b.WriteString("\t\t\t\ttop++;\n\t\t\t}\n")
		each(3, "s[c] = part[top - 1][c];")
		b.WriteString("\t\t\tfor (idx d = top - 1; d > 0; d--)\n")
		each(4, "s[c] = %s(part[d - 1][c], s[c]);", combine)
	}
	fmt.Fprintf(b, "\t\t\tfor (idx c = 0; c < %d; c++) {\n\t\t\t\tconst idx o = o0 + c;\n\t\t\t\tout0[o] = s[c];\n", tile)
	if k.AccIndex() >= 0 {
		epilogue(b, k, "out0[o]", 4)
	}
	b.WriteString("\t\t\t}\n\t\t}")
	if in%tile != 0 {
		var body strings.Builder
		reduceOutput(&body, k, red, combine, "o")
		b.WriteString(" else {\n")
		fmt.Fprintf(b, "\t\t\tfor (idx c = c0; c < %du; c++) {\n", in)
		fmt.Fprintf(b, "\t\t\t\tconst idx o = q * %du + c;\n", in)
		fmt.Fprintf(b, "\t\t\t\tconst idx base = %s;\n", codegen.Flat(Lang, red.Kept, "o"))
		b.WriteString(codegen.Indent(strings.Split(strings.TrimSuffix(body.String(), "\n"), "\n"), 3))
		b.WriteString("\t\t\t}\n\t\t}")
	}
	b.WriteString("\n\t}\n")
	return red.Outputs / in * nt
}

// reduceOutput writes the tree of output o (an expression) into
// out0[o*Blocks …]; with several outputs, its leaf r is argument element
// base + Flat(Reduced, r).
func reduceOutput(b *strings.Builder, k *ir.Kernel, red ir.Reduction, combine, o string) {
	n := red.Leaves
	pad := Lang.Bits(k.Reduce.Info().Identity)
	p, _ := codegen.SumBlock(n, 1)
	outs := max(k.Blocks, 1)
	blk := min(p/outs, SumBlock)
	per := p / outs / blk // B-blocks per output block
	full, rest := n/blk, n%blk
	nblk := (n + blk - 1) / blk
	first := "" // the first output block of this output, with " + "
	index := func(r string) string { return r }
	if red.Outputs > 1 {
		first = fmt.Sprintf("o * %du + ", outs)
		index = func(r string) string { return "base + " + codegen.Flat(Lang, red.Reduced, "("+r+")") }
	}
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "i"))
	}
	leaf := func(ind int) {
		b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load), ind))
		fmt.Fprintf(b, "%st[l] = %s;\n", strings.Repeat("\t", ind), codegen.Value(int(k.Stores[0])))
	}
	selects := k.Reduce.Info().Combine.Info().Selects
	if selects || blk < 2 {
		if selects {
			fmt.Fprintf(b, "\tfloat t[%d], all = %s;\n", blk, pad)
		} else {
			fmt.Fprintf(b, "\tfloat t[%d], part[64];\n\tidx top = 0;\n", blk)
		}
		fmt.Fprintf(b, "\tfor (idx blk = 0; blk < %du; blk++) {\n", nblk)
		if full > 0 {
			fmt.Fprintf(b, "\t\tif (blk < %du) {\n", full)
			fmt.Fprintf(b, "\t\t\tfor (idx l = 0; l < %du; l++) {\n", blk)
			fmt.Fprintf(b, "\t\t\t\tconst idx i = %s;\n", index(fmt.Sprintf("blk * %du + l", blk)))
			leaf(4)
			b.WriteString("\t\t\t}\n\t\t}\n")
		}
	} else {
		// The first level of the tree is taken as the leaves are made,
		// pair by pair, and each further level is written compacted into
		// the other array: every pair's sum, in the same tree, with no
		// strided in-place walk and no second pass over the leaves.
		fmt.Fprintf(b, "\tfloat t[%d], u[%d], part[64];\n\tidx top = 0;\n", blk, blk/2)
		fmt.Fprintf(b, "\tfor (idx blk = 0; blk < %du; blk++) {\n", nblk)
		if full > 0 {
			fmt.Fprintf(b, "\t\tif (blk < %du) {\n", full)
			fmt.Fprintf(b, "\t\t\tfor (idx l = 0; l < %du; l++) {\n\t\t\t\tfloat lv[2];\n", blk/2)
			for h := 0; h < 2; h++ {
				fmt.Fprintf(b, "\t\t\t\t{\n\t\t\t\t\tconst idx i = %s;\n", index(fmt.Sprintf("blk * %du + 2 * l + %d", blk, h)))
				b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load), 5))
				fmt.Fprintf(b, "\t\t\t\t\tlv[%d] = %s;\n\t\t\t\t}\n", h, codegen.Value(int(k.Stores[0])))
			}
			fmt.Fprintf(b, "\t\t\t\tu[l] = %s(lv[0], lv[1]);\n\t\t\t}\n\t\t}\n", combine)
		}
	}
	if rest > 0 {
		fmt.Fprintf(b, "\t\tif (blk == %du) {\n", full)
		fmt.Fprintf(b, "\t\t\tfor (idx l = 0; l < %du; l++) {\n", rest)
		fmt.Fprintf(b, "\t\t\t\tconst idx i = %s;\n", index(fmt.Sprintf("%du + l", full*blk)))
		leaf(4)
		b.WriteString("\t\t\t}\n")
		fmt.Fprintf(b, "\t\t\tfor (idx l = %du; l < %du; l++)\n", rest, blk)
		fmt.Fprintf(b, "\t\t\t\tt[l] = %s;\n", pad)
		if !selects && blk >= 2 {
			fmt.Fprintf(b, "\t\t\tfor (idx l = 0; l < %du; l++)\n\t\t\t\tu[l] = %s(t[2 * l], t[2 * l + 1]);\n", blk/2, combine)
		}
		b.WriteString("\t\t}\n")
	}
	if selects {
		selectBlocks(b, k, red, blk, nblk, outs, per, first, o, combine)
		return
	}
	top := "t"
	if blk >= 2 {
		src, dst := "u", "t"
		for w := blk / 4; w >= 1; w /= 2 {
			fmt.Fprintf(b, "\t\tfor (idx l = 0; l < %du; l++)\n\t\t\t%s[l] = %s(%s[2 * l], %s[2 * l + 1]);\n", w, dst, combine, src, src)
			src, dst = dst, src
		}
		top = src
	}
	fmt.Fprintf(b, "\t\tfloat s = %s[0];\n", top)
	if outs == 1 {
		b.WriteString("\t\tfor (idx c = blk; c & 1u; c >>= 1)\n")
		fmt.Fprintf(b, "\t\t\ts = %s(part[--top], s);\n", combine)
		b.WriteString("\t\tpart[top++] = s;\n\t}\n")
		dst := fmt.Sprintf("out0[%s]", o)
		fold(b, 1, dst, combine)
		if k.AccIndex() >= 0 {
			if red.Outputs == 1 {
				b.WriteString("\t{\n\t\tconst idx o = 0;\n")
				epilogue(b, k, dst, 2)
				b.WriteString("\t}\n")
			} else {
				epilogue(b, k, dst, 1)
			}
		}
		return
	}
	fmt.Fprintf(b, "\t\tfor (idx c = blk %% %du; c & 1u; c >>= 1)\n", per)
	fmt.Fprintf(b, "\t\t\ts = %s(part[--top], s);\n", combine)
	b.WriteString("\t\tpart[top++] = s;\n")
	fmt.Fprintf(b, "\t\tif (blk %% %du == %du || blk == %du) {\n", per, per-1, nblk-1)
	fold(b, 3, fmt.Sprintf("out0[%sblk / %du]", first, per), combine)
	b.WriteString("\t\t\ttop = 0;\n\t\t}\n\t}\n")
	if used := (nblk + per - 1) / per; used < outs {
		fmt.Fprintf(b, "\tfor (idx q = %du; q < %du; q++)\n", used, outs)
		fmt.Fprintf(b, "\t\tout0[%sq] = %s;\n", first, pad)
	}
}

// selectBlocks ends reduceOutput's block loop for a selecting reduction:
// each block of leaves is folded in lanes (selectFold) and joined, in
// leaf order, to the running value all, which is stored at the output
// (or output block) it ends, as the reference tree's value there.
func selectBlocks(b *strings.Builder, k *ir.Kernel, red ir.Reduction, blk, nblk, outs, per int, first, o, combine string) {
	pad := Lang.Bits(k.Reduce.Info().Identity)
	selectFold(b, 2, "t", blk, combine, pad, selectOrder[k.Reduce.Info().Combine], fmt.Sprintf("all = %s(all, s);", combine))
	if outs == 1 {
		b.WriteString("\t}\n")
		dst := fmt.Sprintf("out0[%s]", o)
		fmt.Fprintf(b, "\t%s = all;\n", dst)
		if k.AccIndex() >= 0 {
			if red.Outputs == 1 {
				b.WriteString("\t{\n\t\tconst idx o = 0;\n")
				epilogue(b, k, dst, 2)
				b.WriteString("\t}\n")
			} else {
				epilogue(b, k, dst, 1)
			}
		}
		return
	}
	fmt.Fprintf(b, "\t\tif (blk %% %du == %du || blk == %du) {\n", per, per-1, nblk-1)
	fmt.Fprintf(b, "\t\t\tout0[%sblk / %du] = all;\n", first, per)
	fmt.Fprintf(b, "\t\t\tall = %s;\n\t\t}\n\t}\n", pad)
	if used := (nblk + per - 1) / per; used < outs {
		fmt.Fprintf(b, "\tfor (idx q = %du; q < %du; q++)\n", used, outs)
		fmt.Fprintf(b, "\t\tout0[%sq] = %s;\n", first, pad)
	}
}

// fold writes the right-to-left combination of the top partials into dst,
// indented by ind tabs: the partial sums of ever smaller subtrees, so
// combining them from the right is the reference tree with its padding.
func fold(b *strings.Builder, ind int, dst, combine string) {
	in := strings.Repeat("\t", ind)
	fmt.Fprintf(b, "%sfloat s = part[top - 1];\n", in)
	fmt.Fprintf(b, "%sfor (idx d = top - 1; d > 0; d--)\n%s\ts = %s(part[d - 1], s);\n", in, in, combine)
	fmt.Fprintf(b, "%s%s = s;\n", in, dst)
}

// epilogue writes a reduction's epilogue at output o from its reduced
// value acc, and its stores.
func epilogue(b *strings.Builder, k *ir.Kernel, acc string, tabs int) {
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "o"))
	}
	lines := codegen.Epilogue(Lang, k, load, acc)
	for j, v := range k.Stores[1:] {
		lines = append(lines, fmt.Sprintf("out%d[o] = %s;", j+1, codegen.Value(int(v))))
	}
	b.WriteString(codegen.Indent(lines, tabs))
}

// life writes one toroidal step: neighbours wrap around both edges, a cell
// is alive when > 0, and it lives on with 3 neighbours, or 2 if alive.
// Its tiles are rows.
func life(b *strings.Builder, k *ir.Kernel) int {
	h, w := k.Shape[0], k.Shape[1]
	at := func(r, c string) string {
		return fmt.Sprintf("in0[%s]", codegen.Offset(Lang, k.Inputs[0], []string{r, c}))
	}
	zero, one := Lang.Float(0), Lang.Float(1)
	b.WriteString("\tfor (idx r = t0; r < t1; r++) {\n")
	fmt.Fprintf(b, "\t\tconst idx ru = (r + %du) %% %du, rd = (r + 1u) %% %du;\n", h-1, h, h)
	fmt.Fprintf(b, "\t\tfor (idx c = 0; c < %du; c++) {\n", w)
	fmt.Fprintf(b, "\t\t\tconst idx cl = (c + %du) %% %du, cr = (c + 1u) %% %du;\n", w-1, w, w)
	var terms []string
	for _, rc := range [][2]string{{"ru", "cl"}, {"ru", "c"}, {"ru", "cr"}, {"r", "cl"}, {"r", "cr"}, {"rd", "cl"}, {"rd", "c"}, {"rd", "cr"}} {
		terms = append(terms, fmt.Sprintf("(%s > %s)", at(rc[0], rc[1]), zero))
	}
	fmt.Fprintf(b, "\t\t\tconst int live = %s;\n", strings.Join(terms, " + "))
	fmt.Fprintf(b, "\t\t\tout0[r * %du + c] = (live == 3 || (live == 2 && %s > %s)) ? %s : %s;\n", w, at("r", "c"), zero, one, zero)
	b.WriteString("\t\t}\n\t}\n")
	return h
}

// Check refuses (invalid_graph) a unit that does not call each kernel of p
// with the buffers the kernel reads and writes: a backend passes raw
// pointers, so a unit of another program would run past them.
func (u *Unit) Check(p *ir.Program) error {
	if len(u.Kernels) != len(p.Kernels) || u.Scratch < 0 {
		return ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the C unit has %d kernels (scratch %d) for %d", len(u.Kernels), u.Scratch, len(p.Kernels))
	}
	for i, k := range p.Kernels {
		var want []int
		for _, in := range k.Inputs {
			want = append(want, in.Buffer)
		}
		want = append(want, k.Outputs...)
		if !slices.Equal(u.Kernels[i].Buffers, want) {
			return ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "C kernel %d passes buffers %v, kernel %s takes %v", i, u.Kernels[i].Buffers, k.Name, want)
		}
	}
	return nil
}
