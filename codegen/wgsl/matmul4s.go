package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// matmulStaged emits the staged vec4 kernel (ir.Tile.Stages 1 or 2): the
// tiles, threads and order of matmulVec4, with three changes that only
// move work:
//
//   - The workgroup arrays are [stage][k-step][vec4], so every read of the
//     inner loop indexes them by a constant k-step and a per-thread index
//     that does not change along k: the bounds clamp that wgpu's naga
//     puts on each dynamic workgroup index (its Restrict policy) is
//     worked out once, not once a read.
//   - A thread's vec4s of a tile are strided by the threads along that
//     side (row vec4 lid.y + r·BM/TM, column vec4 lid.x + c·BN/TN) rather
//     than adjacent, so the threads of a warp read consecutive vec4s of
//     B: no bank conflicts.
//   - With two stages, the next k-tile is stored into the other buffer
//     while the current one is multiplied: one barrier a k-tile, not two.
//
// Each accumulator lane still adds one rounded product per k, in
// ascending k, from the uniform zero: cpuref's bits.
func matmulStaged(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	t := k.Tile
	stages := min(t.Stages, 2) // more buffers than two would sit idle
	tx, ty := t.BN/t.TN, t.BM/t.TM
	threads := tx * ty
	s.Workgroup = [3]int{tx, ty, 1}
	s.Groups = [3]int{(k.N + t.BN - 1) / t.BN, (k.M + t.BM - 1) / t.BM, 1}
	a, bb := k.Inputs[0], k.Inputs[1]
	am, bn := t.BM/4, t.BN/4 // vec4s across a tile's rows of A, columns of B

	fmt.Fprintf(b, "const M = %du;\nconst N = %du;\nconst K = %du;\n\n", k.M, k.N, k.K)
	fmt.Fprintf(b, "var<workgroup> As: array<array<array<vec4<f32>, %d>, %d>, %d>; // As[stage][kk][row vec4]\n", am, t.BK, stages)
	fmt.Fprintf(b, "var<workgroup> Bs: array<array<array<vec4<f32>, %d>, %d>, %d>; // Bs[stage][kk][col vec4]\n\n", bn, t.BK, stages)
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
	sa, sb := stagerA(a, t, oa), stagerB(bb, t, ob)
	na, nb := (t.BK*am+threads-1)/threads, (t.BK*bn+threads-1)/threads
	for j := 0; j < na; j++ {
		fmt.Fprintf(b, "\tvar pa%d = vec4<f32>(0.0);\n", j)
	}
	for j := 0; j < nb; j++ {
		fmt.Fprintf(b, "\tvar pb%d = vec4<f32>(0.0);\n", j)
	}
	fetch := func(indent, kt string) {
		for j := 0; j < na; j++ {
			sa.fetch(b, indent, fmt.Sprintf("pa%d", j), fmt.Sprintf("tid + %du", j*threads), kt, t.BK*am)
		}
		for j := 0; j < nb; j++ {
			sb.fetch(b, indent, fmt.Sprintf("pb%d", j), fmt.Sprintf("tid + %du", j*threads), kt, t.BK*bn)
		}
	}
	store := func(indent, stage string) {
		for j := 0; j < na; j++ {
			sa.storeStaged(b, indent, stage, fmt.Sprintf("pa%d", j), fmt.Sprintf("tid + %du", j*threads), t.BK*am, am, true)
		}
		for j := 0; j < nb; j++ {
			sb.storeStaged(b, indent, stage, fmt.Sprintf("pb%d", j), fmt.Sprintf("tid + %du", j*threads), t.BK*bn, bn, true)
		}
	}
	lanes := "xyzw"
	// multiply adds the products of steps k-steps of the tile in stage.
	multiply := func(indent, stage string, steps int) {
		for kk := 0; kk < steps; kk++ {
			fmt.Fprintf(b, "%s{\n", indent)
			for r := 0; r < t.TM/4; r++ {
				fmt.Fprintf(b, "%s\tlet a%d = As[%s][%d][lid.y + %du];\n", indent, r, stage, kk, r*ty)
			}
			for c := 0; c < t.TN/4; c++ {
				fmt.Fprintf(b, "%s\tlet b%d = Bs[%s][%d][lid.x + %du];\n", indent, c, stage, kk, c*tx)
			}
			for r := 0; r < t.TM; r++ {
				for c := 0; c < t.TN/4; c++ {
					fmt.Fprintf(b, "%s\tc%d_%d = c%d_%d + %s;\n", indent, r, c, r, c, product(fmt.Sprintf("a%d.%c * b%d", r/4, lanes[r%4], c), fast))
				}
			}
			fmt.Fprintf(b, "%s}\n", indent)
		}
	}
	whole, rest := k.K/t.BK*t.BK, k.K%t.BK
	fetch("\t", "0u")
	if stages == 1 {
		// One buffer: store, barrier, fetch the next tile into registers,
		// multiply, barrier (matmulVec4's schedule).
		tile := func(steps int, last bool) {
			store("\t\t", "0")
			b.WriteString("\t\tworkgroupBarrier();\n")
			if !last {
				fmt.Fprintf(b, "\t\tif (kt + %du < K) {\n", t.BK)
				fetch("\t\t\t", fmt.Sprintf("kt + %du", t.BK))
				b.WriteString("\t\t}\n")
			}
			multiply("\t\t", "0", steps)
			if !last {
				b.WriteString("\t\tworkgroupBarrier();\n")
			}
		}
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
	} else {
		// Two buffers: k-tile i is in stage i % 2. Iteration i fetches
		// tile i+1 into registers, multiplies tile i, stores tile i+1
		// into the other stage and meets the others at one barrier:
		// nobody stores into a stage before everyone has passed the
		// barrier after the last multiply that read it.
		store("\t", "0")
		b.WriteString("\tworkgroupBarrier();\n")
		if whole > 0 {
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, t.BK)
			fmt.Fprintf(b, "\t\tlet cur = (kt / %du) & 1u;\n", t.BK)
			fmt.Fprintf(b, "\t\tlet more = kt + %du < K;\n", t.BK)
			b.WriteString("\t\tif (more) {\n")
			fetch("\t\t\t", fmt.Sprintf("kt + %du", t.BK))
			b.WriteString("\t\t}\n")
			multiply("\t\t", "cur", t.BK)
			b.WriteString("\t\tif (more) {\n")
			store("\t\t\t", "cur ^ 1u")
			b.WriteString("\t\t}\n")
			b.WriteString("\t\tworkgroupBarrier();\n")
			b.WriteString("\t}\n")
		}
		if rest > 0 {
			multiply("\t", fmt.Sprint(whole/t.BK%2), rest)
		}
	}
	// The epilogue, unrolled: row r of the thread is 4·(lid.y + (r/4)·ty)
	// + r%4, column c 4·(lid.x + (c/4)·tx) + c%4. A long one is looped
	// (tileEpilogue).
	if tileEpilogue(b, k, t.TM, t.TN, func(r, c int) string { return fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4]) },
		fmt.Sprintf("row0 + (lid.y + rm / 4u * %du) * 4u + rm %% 4u", ty), fmt.Sprintf("col0 + (lid.x + rn / 4u * %du) * 4u + rn %% 4u", tx),
		"row < M && col < N", oc) {
		return
	}
	for r := 0; r < t.TM; r++ {
		fmt.Fprintf(b, "\tlet r%d = row0 + (lid.y + %du) * 4u + %du;\n", r, r/4*ty, r%4)
		for c := 0; c < t.TN; c++ {
			fmt.Fprintf(b, "\t{\n\t\tlet col = col0 + (lid.x + %du) * 4u + %du;\n", c/4*tx, c%4)
			fmt.Fprintf(b, "\t\tif (r%d < M && col < N) {\n\t\t\tlet i = %sr%d * N + col;\n", r, oc, r)
			acc := fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4])
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), acc), 3))
			b.WriteString(codegen.Indent(stores(k, "i"), 3))
			b.WriteString("\t\t}\n\t}\n")
		}
	}
	b.WriteString("}\n")
}

// storeStaged writes register reg, vec4 number e of the tile as fetched,
// into stage of the [stage][kk][vec4] workgroup array: as is when the
// fetched vec4 lies along the array's vec4s (direct), else its four
// lanes, four k-steps of one row (column), each into its k-step's vec4.
// inner is the array's vec4s a k-step. A lean stager (matmulLean) tests
// e < total only where tail says a thread may be past the tile's last.
func (s stager) storeStaged(b *strings.Builder, indent, stage, reg, e string, total, inner int, tail bool) {
	fmt.Fprintf(b, "%s{\n%s\tlet e = %s;\n", indent, indent, e)
	in := indent + "\t"
	if s.leanGuard && !tail {
		fmt.Fprintf(b, "%s{\n", in) // the same lines, unguarded
	} else {
		fmt.Fprintf(b, "%sif (e < %du) {\n", in, total)
	}
	if s.direct { // e = u·span + v/4, span == inner: [kk = u][vec4 v/4]
		fmt.Fprintf(b, "%s\t%s[%s][e / %du][e %% %du] = %s;\n", in, s.shared, stage, inner, inner, reg)
	} else { // u: the row (column), v: the first of four k-steps
		fmt.Fprintf(b, "%s\tlet u = e / %du;\n%s\tlet v = (e %% %du) * 4u;\n", in, s.span, in, s.span)
		for q := 0; q < 4; q++ {
			fmt.Fprintf(b, "%s\t%s[%s][v + %du][u / 4u][u %% 4u] = %s[%d];\n", in, s.shared, stage, q, reg, q)
		}
	}
	fmt.Fprintf(b, "%s}\n%s}\n", in, indent)
}
