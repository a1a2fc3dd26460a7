package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// Fast mode (Target.Fast) leaves matmul and conv products contractable: a
// driver may fuse each multiply-add into one FMA (the H200's does), which
// rounds once where cpuref rounds twice. Its results are not cpuref's;
// callers must report them as inexact, with a measured error bound
// (package tune measures one for matmuls against float64; the root
// package's TestConvFast for convolutions). Other kernels are unchanged.

// FastErrorBound is the error bound of a matmul over K steps (or of a
// convolution with K taps per output: the same dot product), in either
// mode, relative to Σ_k |a·b|: each output c satisfies
// |c − Σ_k a·b| ≤ K·2⁻²⁴·Σ_k |a·b|, the exact sum of the float32 operands'
// products, whether each step rounds twice (exact mode) or once (a
// contracted FMA, fast mode), in any order (Jeannerod and Rump, 2013;
// barring underflow and overflow). Fast mode states it because its bits
// differ from cpuref's; exact mode's bits are cpuref's.
func FastErrorBound(K int) float64 { return float64(K) * 0x1p-24 }

// product renders a matmul step's product: guarded by the uniform 1.0 (see
// the package doc) unless fast.
func product(p string, fast bool) string {
	if fast {
		return p
	}
	return Lang.Keep(p)
}

// matmulGrid sets s's workgroup to the thread grid of kernel k's tile,
// BN/TN × BM/TM (x along N), and its dispatch to a workgroup per BM×BN
// tile of C, and returns the grid's sides and its threads.
func matmulGrid(k *ir.Kernel, s *codegen.Shader) (tx, ty, threads int) {
	t := k.Tile
	tx, ty = t.BN/t.TN, t.BM/t.TM
	s.Workgroup = [3]int{tx, ty, 1}
	s.Groups = [3]int{(k.N + t.BN - 1) / t.BN, (k.M + t.BM - 1) / t.BM, 1}
	return tx, ty, tx * ty
}

// batchOffsets declares, for a batched matmul (Shape of rank > 2: one
// matrix per workgroup row along z), the first buffer element of this
// workgroup's matrices of A, B and C, and returns the prefixes that add
// them to an index ("" each for a 2-D matmul, whose source is unchanged).
func batchOffsets(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) (pa, pb, pc string) {
	if len(k.Shape) <= 2 {
		return "", "", ""
	}
	s.Groups[2] = k.Batch()
	fmt.Fprintf(b, "\tlet oa = %s;\n\tlet ob = %s;\n\tlet oc = wg.z * %du;\n",
		codegen.Index(Lang, k.Inputs[0].Batch(), "wg.z"), codegen.Index(Lang, k.Inputs[1].Batch(), "wg.z"), k.M*k.N)
	return "oa + ", "ob + ", "oc + "
}

// epilogueAt writes output i = index: kernel k's epilogue of the
// accumulator acc and its stores, at depth tabs, inside if (guard) unless
// guard is "".
func epilogueAt(b *strings.Builder, k *ir.Kernel, tabs int, guard, index, acc string) {
	const indent = "\t\t\t\t\t"
	in := tabs
	if guard != "" { // strings written as they are, not through fmt: an output's few lines, 64 outputs a tile
		b.WriteString(indent[:tabs] + "if (" + guard + ") {\n")
		in++
	}
	b.WriteString(indent[:in] + "let i = " + index + ";\n")
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), acc), in))
	b.WriteString(codegen.Indent(stores(k, "i"), in))
	if guard != "" {
		b.WriteString(indent[:tabs] + "}\n")
	}
}

// scalarProduct is kStep's product of scalar accumulators: a{m} · b{n}.
func scalarProduct(m, n int) string { return fmt.Sprintf("a%d * b%d", m, n) }

// kStep writes one k-step's block at indent: the lets a0 ... a{na-1}
// and b0 ... b{nb-1}, each's workgroup read written into b by as(i)
// (bs(j)), then each accumulator c{m}_{n} (m < tm, n < tn) adds its
// product prod(m, n), rounded on its own unless fast (product): a GEMM's
// products in ascending k.
func kStep(b *strings.Builder, indent string, na, nb int, as, bs func(i int), tm, tn int, prod func(m, n int) string, fast bool) {
	b.WriteString(indent + "{\n")
	for i := range na {
		b.WriteString(indent)
		fmt.Fprintf(b, "\tlet a%d = ", i)
		as(i)
		b.WriteString(";\n")
	}
	for j := range nb {
		b.WriteString(indent)
		fmt.Fprintf(b, "\tlet b%d = ", j)
		bs(j)
		b.WriteString(";\n")
	}
	for m := range tm {
		for n := range tn {
			b.WriteString(indent)
			fmt.Fprintf(b, "\tc%d_%d = c%d_%d + ", m, n, m, n)
			b.WriteString(product(prod(m, n), fast) + ";\n")
		}
	}
	b.WriteString(indent + "}\n")
}

// gemmLoop is the k loop of a GEMM kernel whose k-tiles are fetched into
// registers one ahead of the k-tile being multiplied (the vec4 matmul's
// and the conv GEMM's): the next k-tile's global-memory latency hides
// behind the current one's products. The products of each k-tile are
// added in ascending k, k-tile after k-tile, whatever the schedule. The
// kernel gives three emitters, each at an indentation:
//
//   - fetch reads the k-tile at kt (a u32 expression) into the thread's
//     registers;
//   - store writes the fetched k-tile into workgroup buffer stage;
//   - multiply adds the products of steps k-steps of the tile in stage.
//
// The k loop is the only loop (its cost is MatmulLoopCost); the k-steps
// of a tile are unrolled, and the last, partial tile (K mod BK steps,
// known here) follows the loop.
type gemmLoop struct {
	K, BK int
	k     string // K as the kernel writes it (a constant's name, or a literal)
	// stages: 1, one workgroup buffer: store, barrier, fetch the next
	// k-tile, multiply, barrier. 2, double-buffered: k-tile i is in stage
	// i % 2, and each iteration fetches tile i+1, multiplies tile i,
	// stores tile i+1 into the other stage and meets the others at one
	// barrier: nobody stores into a stage before everyone has passed the
	// barrier after the last multiply that read it.
	stages int
	// peel (2 stages): the last k-tile, partial or whole, is multiplied
	// after the loop, so the loop tests only its counter; unroll (with
	// peel): two k-tiles an iteration, each buffer indexed by a constant.
	peel, unroll bool
	fetch        func(indent, kt string)
	store        func(indent, stage string)
	multiply     func(indent, stage string, steps int)
}

// emit writes the loop, from the first k-tile's fetch to the last one's
// products.
func (l gemmLoop) emit(b *strings.Builder) {
	whole, rest := l.K/l.BK*l.BK, l.K%l.BK
	next := fmt.Sprintf("kt + %du", l.BK)
	l.fetch("\t", "0u")
	switch {
	case l.stages == 1:
		tile := func(steps int, last bool) {
			l.store("\t\t", "0")
			b.WriteString("\t\tworkgroupBarrier();\n")
			if !last {
				fmt.Fprintf(b, "\t\tif (kt + %du < %s) {\n", l.BK, l.k)
				l.fetch("\t\t\t", next)
				b.WriteString("\t\t}\n")
			}
			l.multiply("\t\t", "0", steps)
			if !last {
				b.WriteString("\t\tworkgroupBarrier();\n")
			}
		}
		kTiles(b, l.K, l.BK, fmt.Sprintf("%du", l.BK), tile)
	case !l.peel:
		l.store("\t", "0")
		b.WriteString("\tworkgroupBarrier();\n")
		if whole > 0 {
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, l.BK)
			fmt.Fprintf(b, "\t\tlet cur = (kt / %du) & 1u;\n\t\tlet more = kt + %du < %s;\n", l.BK, l.BK, l.k)
			b.WriteString("\t\tif (more) {\n")
			l.fetch("\t\t\t", next)
			b.WriteString("\t\t}\n")
			l.multiply("\t\t", "cur", l.BK)
			b.WriteString("\t\tif (more) {\n")
			l.store("\t\t\t", "cur ^ 1u")
			b.WriteString("\t\t}\n\t\tworkgroupBarrier();\n\t}\n")
		}
		if rest > 0 {
			l.multiply("\t", fmt.Sprint(whole/l.BK%2), rest)
		}
	default:
		// tiles k-tiles, the last one last steps deep; step is the loop's
		// iteration above without its test (more).
		tiles, last := (l.K+l.BK-1)/l.BK, l.K-(l.K-1)/l.BK*l.BK
		step := func(indent, kt, stage, other string) {
			l.fetch(indent, fmt.Sprintf("%s + %du", kt, l.BK))
			l.multiply(indent, stage, l.BK)
			l.store(indent, other)
			fmt.Fprintf(b, "%sworkgroupBarrier();\n", indent)
		}
		l.store("\t", "0")
		b.WriteString("\tworkgroupBarrier();\n")
		switch pairs := (tiles - 1) / 2; {
		case !l.unroll && tiles > 1:
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", (tiles-1)*l.BK, l.BK)
			fmt.Fprintf(b, "\t\tlet cur = (kt / %du) & 1u;\n", l.BK)
			step("\t\t", "kt", "cur", "cur ^ 1u")
			b.WriteString("\t}\n")
		case l.unroll && pairs > 0:
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", pairs*2*l.BK, 2*l.BK)
			step("\t\t", "kt", "0", "1")
			step("\t\t", next, "1", "0")
			b.WriteString("\t}\n")
		}
		if l.unroll && (tiles-1)%2 == 1 {
			fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", (tiles-2)*l.BK)
			step("\t\t", "kt", "0", "1")
			b.WriteString("\t}\n")
		}
		l.multiply("\t", fmt.Sprint((tiles-1)%2), last)
	}
}

// kTiles writes the loop over the whole k-tiles of BK in K (step: BK as
// the loop adds it) and after it the last, partial one, K mod BK steps,
// known here; tile writes each one's body, at depth 2, from kt.
func kTiles(b *strings.Builder, K, BK int, step string, tile func(steps int, last bool)) {
	whole, rest := K/BK*BK, K%BK
	if whole > 0 {
		fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %s) {\n", whole, step)
		tile(BK, false)
		b.WriteString("\t}\n")
	}
	if rest > 0 {
		fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", whole)
		tile(rest, true)
		b.WriteString("\t}\n")
	}
}

// matmul emits a tiled kernel: each workgroup computes a BM×BN tile of C
// with (BM/TM)×(BN/TN) threads, each owning a TM×TN register tile, staging
// BK-deep slices of A and B through workgroup memory. Every accumulator
// walks k in ascending order and adds each rounded product separately, so
// the result is the reference's, bit for bit. The k loop stops at K
// exactly: padding with zeros would add 0·Inf = NaN where an operand
// overflowed.
//
// Only the loop over whole k-tiles is a loop; the staging, the k-steps of
// a tile and the register tile are unrolled, and the last, partial tile
// (K mod BK steps, known here) follows the loop, so that the kernel's loop
// cost is MatmulLoopCost (see LoopBudget). A batched matmul runs the same
// tiles over each matrix of the batch (batchOffsets).
func matmul(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	t := k.Tile
	tx, ty, threads := matmulGrid(k, s)
	a, bb := k.Inputs[0], k.Inputs[1]
	var body strings.Builder // the function's statements before the k loop
	oa, ob, oc := batchOffsets(&body, k, s)
	// aIdx/bIdx: buffer index of logical A[r,c] / B[r,c].
	aIdx := func(r, c string) string {
		if a.MatrixTransposed() {
			return fmt.Sprintf("%s(%s) * %du + (%s)", oa, c, k.M, r)
		}
		return fmt.Sprintf("%s(%s) * %du + (%s)", oa, r, k.K, c)
	}
	bIdx := func(r, c string) string {
		if bb.MatrixTransposed() {
			return fmt.Sprintf("%s(%s) * %du + (%s)", ob, c, k.K, r)
		}
		return fmt.Sprintf("%s(%s) * %du + (%s)", ob, r, k.N, c)
	}
	fmt.Fprintf(b, "const M = %du;\nconst N = %du;\nconst K = %du;\n", k.M, k.N, k.K)
	fmt.Fprintf(b, "const BM = %du;\nconst BN = %du;\nconst BK = %du;\n\n", t.BM, t.BN, t.BK)
	// Each operand's tile is read from global memory along its buffer's
	// contiguous axis, so that neighbouring threads read neighbouring
	// elements: along rows (or columns) for a transposed A (a plain B),
	// along k for a plain A (a transposed B), whose rows in workgroup
	// memory are then padded by one element so that those stores do not
	// all fall in one bank.
	aK, bK := !a.MatrixTransposed(), bb.MatrixTransposed()
	pitch := func(span int, kFast bool) int {
		if kFast {
			return span + 1
		}
		return span
	}
	pa, pb := pitch(t.BM, aK), pitch(t.BN, bK)
	fmt.Fprintf(b, "var<workgroup> As: array<f32, %d>; // As[kk * %d + row]\n", t.BK*pa, pa)
	fmt.Fprintf(b, "var<workgroup> Bs: array<f32, %d>; // Bs[kk * %d + col]\n\n", t.BK*pb, pb)
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tx, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet row0 = wg.y * BM;\n\tlet col0 = wg.x * BN;\n\tlet tid = lid.y * %du + lid.x;\n", tx)
	b.WriteString(body.String())
	// Accumulators start at the uniform zero: a driver that sees a literal
	// +0 folds +0 + p to p, which is -0 where the reference has +0.
	for m := 0; m < t.TM; m++ {
		for n := 0; n < t.TN; n++ {
			fmt.Fprintf(b, "\tvar c%d_%d = params.zero;\n", m, n)
		}
	}
	// stage copies one operand's tile at k-offset kt into workgroup memory,
	// zero outside the matrix: element e of the tile is (kk, x) with x
	// fastest, or with kk fastest when kFast (see above).
	stage := func(shared string, span int, kFast bool, guard, index func(kk, x string) string) {
		total := t.BK * span
		for j := 0; j*threads < total; j++ {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet e = tid + %du;\n", j*threads)
			in := "\t\t\t"
			if (j+1)*threads > total {
				fmt.Fprintf(b, "\t\t\tif (e < %du) {\n", total)
				in = "\t\t\t\t"
			}
			at := "e"
			if kFast {
				fmt.Fprintf(b, "%slet kk = e %% %du;\n%slet x = e / %du;\n%svar v = 0.0;\n", in, t.BK, in, t.BK, in)
				at = fmt.Sprintf("kk * %du + x", span+1)
			} else {
				fmt.Fprintf(b, "%slet kk = e / %du;\n%slet x = e %% %du;\n%svar v = 0.0;\n", in, span, in, span, in)
			}
			fmt.Fprintf(b, "%sif (%s) { v = %s; }\n%s%s[%s] = v;\n", in, guard("kk", "x"), index("kk", "x"), in, shared, at)
			if (j+1)*threads > total {
				b.WriteString("\t\t\t}\n")
			}
			b.WriteString("\t\t}\n")
		}
	}
	// tile emits the work of one k-tile of steps k-steps at offset kt.
	tile := func(steps int, last bool) {
		inK := "" // a whole tile lies inside K
		if last {
			inK = " && kt + kk < K"
		}
		stage("As", t.BM, aK, func(kk, x string) string { return "row0 + " + x + " < M" + inK },
			func(kk, x string) string { return "in0[" + aIdx("row0 + "+x, "kt + "+kk) + "]" })
		stage("Bs", t.BN, bK, func(kk, x string) string { return "col0 + " + x + " < N" + inK },
			func(kk, x string) string { return "in1[" + bIdx("kt + "+kk, "col0 + "+x) + "]" })
		b.WriteString("\t\tworkgroupBarrier();\n")
		for kk := 0; kk < steps; kk++ {
			kStep(b, "\t\t", t.TM, t.TN, func(m int) { fmt.Fprintf(b, "As[%du + lid.y]", kk*pa+m*ty) },
				func(n int) { fmt.Fprintf(b, "Bs[%du + lid.x]", kk*pb+n*tx) }, t.TM, t.TN, scalarProduct, fast)
		}
		if !last {
			b.WriteString("\t\tworkgroupBarrier();\n")
		}
	}
	kTiles(b, k.K, t.BK, "BK", tile)
	if tileEpilogue(b, k, t.TM, t.TN, func(m, n int) string { return fmt.Sprintf("c%d_%d", m, n) },
		fmt.Sprintf("row0 + lid.y + rm * %du", ty), fmt.Sprintf("col0 + lid.x + rn * %du", tx), "row < M && col < N", oc) {
		return
	}
	index := oc + "row * N + col"
	for m := 0; m < t.TM; m++ {
		for n := 0; n < t.TN; n++ {
			fmt.Fprintf(b, "\t{\n\t\tlet row = row0 + lid.y + %du;\n\t\tlet col = col0 + lid.x + %du;\n", m*ty, n*tx)
			epilogueAt(b, k, 2, "row < M && col < N", index, fmt.Sprintf("c%d_%d", m, n))
			b.WriteString("\t}\n")
		}
	}
	b.WriteString("}\n")
}
