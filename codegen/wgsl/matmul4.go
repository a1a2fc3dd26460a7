package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// matmulVec4 emits the large-matrix kernel: a BM×BN tile per workgroup of
// (BN/TN)×(BM/TM) threads with TN == 8, each thread owning TM rows × 8
// columns held as vec4 accumulators. Tiles of A and B are staged through
// workgroup memory as vec4s, BK deep. Each accumulator lane adds one rounded
// product per k, in ascending k, exactly as cpuref does; the product is
// multiplied by the uniform 1.0 so no contraction can change a bit.
func matmulVec4(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	t := k.Tile
	tx, ty := t.BN/t.TN, t.BM/t.TM
	threads := tx * ty
	s.Workgroup = [3]int{tx, ty, 1}
	s.Groups = [3]int{(k.N + t.BN - 1) / t.BN, (k.M + t.BM - 1) / t.BM, 1}
	a, bb := k.Inputs[0], k.Inputs[1]

	fmt.Fprintf(b, "const M = %du;\nconst N = %du;\nconst K = %du;\n\n", k.M, k.N, k.K)
	fmt.Fprintf(b, "var<workgroup> As: array<vec4<f32>, %d>; // As[kk][row], rows in vec4s\n", t.BK*t.BM/4)
	fmt.Fprintf(b, "var<workgroup> Bs: array<vec4<f32>, %d>; // Bs[kk][col], cols in vec4s\n\n", t.BK*t.BN/4)
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tx, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet row0 = wg.y * %du;\n\tlet col0 = wg.x * %du;\n\tlet tid = lid.y * %du + lid.x;\n", t.BM, t.BN, tx)
	oa, ob, oc := batchOffsets(b, k, s)
	for r := 0; r < t.TM; r++ {
		for c := 0; c < t.TN/4; c++ {
			// The uniform zero, not a literal: see the package doc.
			fmt.Fprintf(b, "\tvar c%d_%d = vec4<f32>(params.zero);\n", r, c)
		}
	}
	// Software pipelining: the next tiles of A and B are fetched into
	// registers while the current ones, already in workgroup memory, are
	// multiplied, so global-memory latency hides behind arithmetic.
	sa, sb := stagerA(a, t, oa), stagerB(bb, t, ob)
	na, nb := (t.BK*t.BM/4+threads-1)/threads, (t.BK*t.BN/4+threads-1)/threads
	for j := 0; j < na; j++ {
		fmt.Fprintf(b, "\tvar pa%d = vec4<f32>(0.0);\n", j)
	}
	for j := 0; j < nb; j++ {
		fmt.Fprintf(b, "\tvar pb%d = vec4<f32>(0.0);\n", j)
	}
	fetch := func(indent, kt string) {
		for j := 0; j < na; j++ {
			sa.fetch(b, indent, fmt.Sprintf("pa%d", j), j*threads, kt, t.BK*t.BM/4, true)
		}
		for j := 0; j < nb; j++ {
			sb.fetch(b, indent, fmt.Sprintf("pb%d", j), j*threads, kt, t.BK*t.BN/4, true)
		}
	}
	fetch("\t", "0u")
	// tile multiplies the staged k-tile at kt, steps k-steps deep; the loop
	// over k-steps is unrolled (see LoopBudget), and every k-tile but the
	// last, partial one prefetches the next.
	lanes := "xyzw"
	tile := func(steps int, last bool) {
		for j := 0; j < na; j++ {
			sa.store(b, fmt.Sprintf("pa%d", j), fmt.Sprintf("tid + %du", j*threads), t.BK*t.BM/4)
		}
		for j := 0; j < nb; j++ {
			sb.store(b, fmt.Sprintf("pb%d", j), fmt.Sprintf("tid + %du", j*threads), t.BK*t.BN/4)
		}
		b.WriteString("\t\tworkgroupBarrier();\n")
		if !last {
			fmt.Fprintf(b, "\t\tif (kt + %du < K) {\n", t.BK)
			fetch("\t\t\t", fmt.Sprintf("kt + %du", t.BK))
			b.WriteString("\t\t}\n")
		}
		for kk := 0; kk < steps; kk++ {
			b.WriteString("\t\t{\n")
			for r := 0; r < t.TM/4; r++ {
				fmt.Fprintf(b, "\t\t\tlet a%d = As[%du + lid.y * %du];\n", r, kk*t.BM/4+r, t.TM/4)
			}
			for c := 0; c < t.TN/4; c++ {
				fmt.Fprintf(b, "\t\t\tlet b%d = Bs[%du + lid.x * %du];\n", c, kk*t.BN/4+c, t.TN/4)
			}
			for r := 0; r < t.TM; r++ {
				for c := 0; c < t.TN/4; c++ {
					fmt.Fprintf(b, "\t\t\tc%d_%d = c%d_%d + %s;\n", r, c, r, c, product(fmt.Sprintf("a%d.%c * b%d", r/4, lanes[r%4], c), fast))
				}
			}
			b.WriteString("\t\t}\n")
		}
		if !last {
			b.WriteString("\t\tworkgroupBarrier();\n")
		}
	}
	whole, rest := k.K/t.BK*t.BK, k.K%t.BK
	if whole > 0 {
		fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, t.BK)
		tile(t.BK, false)
		b.WriteString("\t}\n")
	}
	if rest > 0 {
		fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", whole)
		tile(rest, true)
		b.WriteString("\t}\n")
	}
	// The epilogue is unrolled: indexing the accumulators dynamically would
	// push them out of registers. A long one is looped (tileEpilogue).
	if tileEpilogue(b, k, t.TM, t.TN, func(r, c int) string { return fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4]) },
		fmt.Sprintf("row0 + lid.y * %du + rm", t.TM), fmt.Sprintf("col0 + lid.x * %du + rn", t.TN), "row < M && col < N", oc) {
		return
	}
	for r := 0; r < t.TM; r++ {
		fmt.Fprintf(b, "\tlet r%d = row0 + lid.y * %du + %du;\n", r, t.TM, r)
		for c := 0; c < t.TN; c++ {
			fmt.Fprintf(b, "\t{\n\t\tlet col = col0 + lid.x * %du + %du;\n", t.TN, c)
			fmt.Fprintf(b, "\t\tif (r%d < M && col < N) {\n\t\t\tlet i = %sr%d * N + col;\n", r, oc, r)
			acc := fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4])
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), acc), 3))
			b.WriteString(codegen.Indent(stores(k, "i"), 3))
			b.WriteString("\t\t}\n\t}\n")
		}
	}
	b.WriteString("}\n")
}

// stager emits the two halves of staging one operand's tile: fetch reads
// vec4 number e of the tile at k-offset kt from global memory into a
// register (zero outside the matrix), store writes that register into
// workgroup memory in the [kk][row-or-col] layout the inner loop reads.
type stager struct {
	in   string // the operand's buffer
	span int    // vec4s per row of the tile as loaded
	// coords returns WGSL lets for the loaded vec4's position: its guard
	// and its first element's buffer index.
	guard, base string
	// direct: the vec4 lands as is at As/Bs[e]; otherwise its four lanes
	// are scattered, transposed, with dst(q) naming lane q's place.
	direct bool
	dst    string
	shared string
	// sideGuard and kGuard are guard's two terms: the tile's rows (columns)
	// within M (N), and its k within K. A lean stager (TileLean) keeps those its
	// shape needs (leanGuard), and reads whole vec4s where vec.
	sideGuard, kGuard string
	leanGuard, vec    bool
}

// fetch reads vec4 number j0 + tid of the tile at kt into reg, +0 where
// the guard fails: the vec4 past the tile's last (tested only where tail
// says a thread may be past it, under leanGuard) and the operand's side
// and k guards (those s.lean kept, under leanGuard).
func (s stager) fetch(b *strings.Builder, indent, reg string, j0 int, kt string, total int, tail bool) {
	var g []string
	if tail || !s.leanGuard {
		g = append(g, fmt.Sprintf("e < %du", total))
	}
	if s.guard != "" {
		g = append(g, s.guard)
	}
	fmt.Fprintf(b, "%s{\n%s\tlet e = tid + %du;\n%s\tlet kt0 = %s;\n", indent, indent, j0, indent, kt)
	fmt.Fprintf(b, "%s\tlet u = e / %du;\n%s\tlet v = (e %% %du) * 4u;\n", indent, s.span, indent, s.span)
	in := indent + "\t"
	if len(g) > 0 {
		fmt.Fprintf(b, "%s%s = vec4<f32>(0.0);\n%sif (%s) {\n", in, reg, in, strings.Join(g, " && "))
		in += "\t"
	}
	if s.vec { // base is a multiple of 4 (matmulInputElem)
		fmt.Fprintf(b, "%s%s = %s[(%s) / 4u];\n", in, reg, s.in, s.base)
	} else {
		fmt.Fprintf(b, "%slet base = %s;\n", in, s.base)
		fmt.Fprintf(b, "%s%s = vec4<f32>(%s[base], %s[base + 1u], %s[base + 2u], %s[base + 3u]);\n", in, reg, s.in, s.in, s.in, s.in)
	}
	if len(g) > 0 {
		fmt.Fprintf(b, "%s}\n", indent+"\t")
	}
	fmt.Fprintf(b, "%s}\n", indent)
}

func (s stager) store(b *strings.Builder, reg, e string, total int) {
	fmt.Fprintf(b, "\t\t{\n\t\t\tlet e = %s;\n\t\t\tif (e < %du) {\n", e, total)
	if s.direct {
		fmt.Fprintf(b, "\t\t\t\t%s[e] = %s;\n", s.shared, reg)
	} else {
		fmt.Fprintf(b, "\t\t\t\tlet u = e / %du;\n\t\t\t\tlet v = (e %% %du) * 4u;\n", s.span, s.span)
		for q := 0; q < 4; q++ {
			fmt.Fprintf(b, "\t\t\t\t%s = %s[%d];\n", strings.ReplaceAll(s.dst, "Q", fmt.Sprint(q)), reg, q)
		}
	}
	b.WriteString("\t\t\t}\n\t\t}\n")
}

// stagerA stages the BM×BK tile of A at (row0, kt0); off prefixes the
// index with the batch's offset (see batchOffsets).
func stagerA(a ir.Operand, t ir.Tile, off string) stager {
	if a.MatrixTransposed() { // buffer [K,M]: u = kk, v = row; four rows are contiguous
		return stager{in: "in0", span: t.BM / 4, direct: true, shared: "As",
			guard: "row0 + v < M && kt0 + u < K", sideGuard: "row0 + v < M", kGuard: "kt0 + u < K", base: off + "(kt0 + u) * M + row0 + v"}
	}
	// buffer [M,K]: u = row, v = kk; four k are contiguous, stored transposed
	return stager{in: "in0", span: t.BK / 4, shared: "As",
		guard: "row0 + u < M && kt0 + v < K", sideGuard: "row0 + u < M", kGuard: "kt0 + v < K", base: off + "(row0 + u) * K + kt0 + v",
		dst: fmt.Sprintf("As[(v + Qu) * %du + u / 4u][u %% 4u]", t.BM/4)}
}

// stagerB stages the BK×BN tile of B at (kt0, col0), off as stagerA's.
func stagerB(bb ir.Operand, t ir.Tile, off string) stager {
	if !bb.MatrixTransposed() { // buffer [K,N]: u = kk, v = col; four columns are contiguous
		return stager{in: "in1", span: t.BN / 4, direct: true, shared: "Bs",
			guard: "col0 + v < N && kt0 + u < K", sideGuard: "col0 + v < N", kGuard: "kt0 + u < K", base: off + "(kt0 + u) * N + col0 + v"}
	}
	// buffer [N,K]: u = col, v = kk; four k are contiguous, stored transposed
	return stager{in: "in1", span: t.BK / 4, shared: "Bs",
		guard: "col0 + u < N && kt0 + v < K", sideGuard: "col0 + u < N", kGuard: "kt0 + v < K", base: off + "(col0 + u) * K + kt0 + v",
		dst: fmt.Sprintf("Bs[(v + Qu) * %du + u / 4u][u %% 4u]", t.BN/4)}
}
