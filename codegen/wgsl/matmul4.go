package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// matmulVec4 emits the large-matrix kernel: a BM×BN tile per workgroup of
// (BN/TN)×(BM/TM) threads, each thread owning TM rows × TN columns held as
// vec4 accumulators. Tiles of A and B are staged through workgroup memory
// as vec4s, BK deep; the next k-tile is fetched into registers while the
// current one, already in workgroup memory, is multiplied, so that
// global-memory latency hides behind arithmetic. Each accumulator lane
// adds one rounded product per k, in ascending k, from the uniform zero,
// exactly as cpuref does; the product is multiplied by the uniform 1.0 so
// no contraction can change a bit.
//
// ir.Tile.Stages picks one of three forms, which only move work:
//
//   - 0: a thread's vec4s are adjacent (rows lid.y·TM/4 + r), in one
//     workgroup buffer indexed [kk·vec4s + vec4]: store, barrier,
//     multiply, barrier, a k-tile.
//   - 1 or 2, staged: the workgroup arrays are [stage][k-step][vec4], so
//     every read of the inner loop indexes them by a constant k-step and
//     a per-thread index that does not change along k: the bounds clamp
//     that wgpu's naga puts on each dynamic workgroup index (its Restrict
//     policy) is worked out once, not once a read. A thread's vec4s of a
//     tile are strided by the threads along that side (row vec4
//     ly + r·BM/TM, column vec4 lx + c·BN/TN), so the threads of a warp
//     read consecutive vec4s of B: no bank conflicts. With two stages the
//     next k-tile is stored into the other buffer while the current one is
//     multiplied: one barrier a k-tile, not two.
//
// The double-buffered kernel takes options (ir.Tile.Opts), each of which
// only removes instructions around the products:
//
//   - TileLean: an operand whose every vec4 starts at a multiple of four
//     elements is bound as array<vec4<f32>> (matmulInputElem), so a fetch
//     is one load and one bounds clamp, not four of each; a guard is
//     emitted only where the shape leaves a partial tile on its side (the
//     shapes are constants).
//   - TileUnroll: the k-tiles are unrolled by two so the workgroup
//     buffers are indexed by constant stages (no clamp of a dynamic stage
//     index), at twice the loop's code (about 2,200 instructions, 35 KB
//     of machine code for 64x128/8x8k8: an instruction cache may miss).
//   - TileWarp: thread (lx, ly) of the grid comes from the invocation
//     index so that each 32 consecutive invocations (an NVIDIA warp)
//     form an 8×4 block of the grid rather than 16×2.
//
// With any option the last k-tile is peeled, so the loop tests only its
// counter.
func matmulVec4(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	t := k.Tile
	stages := min(t.Stages, 2) // more buffers than two would sit idle
	opts := stages == 2 && t.Opts != 0
	lean := opts && t.Opts&ir.TileLean != 0
	tx, ty, threads := matmulGrid(k, s)
	am, bn := t.BM/4, t.BN/4 // vec4s across a tile's rows of A, columns of B

	fmt.Fprintf(b, "const M = %du;\nconst N = %du;\nconst K = %du;\n\n", k.M, k.N, k.K)
	if stages == 0 {
		fmt.Fprintf(b, "var<workgroup> As: array<vec4<f32>, %d>; // As[kk][row], rows in vec4s\n", t.BK*am)
		fmt.Fprintf(b, "var<workgroup> Bs: array<vec4<f32>, %d>; // Bs[kk][col], cols in vec4s\n\n", t.BK*bn)
	} else {
		fmt.Fprintf(b, "var<workgroup> As: array<array<array<vec4<f32>, %d>, %d>, %d>; // As[stage][kk][row vec4]\n", am, t.BK, stages)
		fmt.Fprintf(b, "var<workgroup> Bs: array<array<array<vec4<f32>, %d>, %d>, %d>; // Bs[stage][kk][col vec4]\n\n", bn, t.BK, stages)
	}
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tx, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet row0 = wg.y * %du;\n\tlet col0 = wg.x * %du;\n\tlet tid = lid.y * %du + lid.x;\n", t.BM, t.BN, tx)
	// (lx, ly): the thread's place in the grid, lid's but under TileWarp.
	lx, ly := "lid.x", "lid.y"
	if opts {
		lx, ly = "lx", "ly"
		if t.Opts&ir.TileWarp != 0 { // warp w of tid/32 is block (w % (tx/8), w / (tx/8)) of 8×4 threads
			fmt.Fprintf(b, "\tlet lx = (tid / 32u) %% %du * 8u + tid %% 8u;\n\tlet ly = (tid / 32u) / %du * 4u + tid %% 32u / 8u;\n", tx/8, tx/8)
		} else {
			b.WriteString("\tlet lx = lid.x;\n\tlet ly = lid.y;\n")
		}
	}
	oa, ob, oc := batchOffsets(b, k, s)
	for r := 0; r < t.TM; r++ {
		for c := 0; c < t.TN/4; c++ {
			// The uniform zero, not a literal: see the package doc.
			fmt.Fprintf(b, "\tvar c%d_%d = vec4<f32>(params.zero);\n", r, c)
		}
	}
	sa, sb := stagerOf(0, k.Inputs[0], t, oa), stagerOf(1, k.Inputs[1], t, ob)
	sa.flat, sb.flat = stages == 0, stages == 0
	if lean {
		sa.lean(k, t, matmulInputElem(k, 0) != "")
		sb.lean(k, t, matmulInputElem(k, 1) != "")
	}
	na, nb := (t.BK*am+threads-1)/threads, (t.BK*bn+threads-1)/threads
	for j := 0; j < na; j++ {
		fmt.Fprintf(b, "\tvar pa%d = vec4<f32>(0.0);\n", j)
	}
	for j := 0; j < nb; j++ {
		fmt.Fprintf(b, "\tvar pb%d = vec4<f32>(0.0);\n", j)
	}
	// A lean stager keeps the guard on e only for the vec4s past the
	// tile's last (total not a multiple of threads).
	loop := gemmLoop{K: k.K, BK: t.BK, k: "K", stages: max(stages, 1), peel: opts, unroll: opts && t.Opts&ir.TileUnroll != 0}
	loop.fetch = func(indent, kt string) {
		for j := 0; j < na; j++ {
			sa.fetch(b, indent, fmt.Sprintf("pa%d", j), j*threads, kt, t.BK*am, (j+1)*threads > t.BK*am)
		}
		for j := 0; j < nb; j++ {
			sb.fetch(b, indent, fmt.Sprintf("pb%d", j), j*threads, kt, t.BK*bn, (j+1)*threads > t.BK*bn)
		}
	}
	loop.store = func(indent, stage string) {
		for j := 0; j < na; j++ {
			sa.store(b, indent, stage, fmt.Sprintf("pa%d", j), j*threads, t.BK*am, am, (j+1)*threads > t.BK*am)
		}
		for j := 0; j < nb; j++ {
			sb.store(b, indent, stage, fmt.Sprintf("pb%d", j), j*threads, t.BK*bn, bn, (j+1)*threads > t.BK*bn)
		}
	}
	lanes := "xyzw"
	loop.multiply = func(indent, stage string, steps int) {
		for kk := 0; kk < steps; kk++ {
			as := func(r int) { fmt.Fprintf(b, "As[%s][%d][%s + %du]", stage, kk, ly, r*ty) }
			bs := func(c int) { fmt.Fprintf(b, "Bs[%s][%d][%s + %du]", stage, kk, lx, c*tx) }
			if stages == 0 {
				as = func(r int) { fmt.Fprintf(b, "As[%du + lid.y * %du]", kk*am+r, t.TM/4) }
				bs = func(c int) { fmt.Fprintf(b, "Bs[%du + lid.x * %du]", kk*bn+c, t.TN/4) }
			}
			kStep(b, indent, t.TM/4, t.TN/4, as, bs, t.TM, t.TN/4, func(r, c int) string { return fmt.Sprintf("a%d.%c * b%d", r/4, lanes[r%4], c) }, fast)
		}
	}
	loop.emit(b)
	// The epilogue is unrolled (indexing the accumulators dynamically
	// would push them out of registers): row r of the thread is
	// lid.y·TM + r adjacent, 4·(ly + (r/4)·ty) + r%4 staged; column c
	// likewise; under TileLean a side the tile divides needs no guard. A
	// long one is looped (tileEpilogue).
	rowAt := func(r int) string { return fmt.Sprintf("row0 + lid.y * %du + %du", t.TM, r) }
	colAt := func(c int) string { return fmt.Sprintf("col0 + lid.x * %du + %du", t.TN, c) }
	rowLoop, colLoop := fmt.Sprintf("row0 + lid.y * %du + rm", t.TM), fmt.Sprintf("col0 + lid.x * %du + rn", t.TN)
	if stages > 0 {
		rowAt = func(r int) string { return fmt.Sprintf("row0 + (%s + %du) * 4u + %du", ly, r/4*ty, r%4) }
		colAt = func(c int) string { return fmt.Sprintf("col0 + (%s + %du) * 4u + %du", lx, c/4*tx, c%4) }
		rowLoop = fmt.Sprintf("row0 + (%s + rm / 4u * %du) * 4u + rm %% 4u", ly, ty)
		colLoop = fmt.Sprintf("col0 + (%s + rn / 4u * %du) * 4u + rn %% 4u", lx, tx)
	}
	rowIn, colIn := !lean || k.M%t.BM != 0, !lean || k.N%t.BN != 0
	acc := func(r, c int) string { return fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4]) }
	if tileEpilogue(b, k, t.TM, t.TN, acc, rowLoop, colLoop, guards(rowIn, "row < M", colIn, "col < N"), oc) {
		return
	}
	for r := 0; r < t.TM; r++ {
		fmt.Fprintf(b, "\tlet r%d = %s;\n", r, rowAt(r))
		guard, index := guards(rowIn, fmt.Sprintf("r%d < M", r), colIn, "col < N"), fmt.Sprintf("%sr%d * N + col", oc, r)
		for c := 0; c < t.TN; c++ {
			fmt.Fprintf(b, "\t{\n\t\tlet col = %s;\n", colAt(c))
			epilogueAt(b, k, 2, guard, index, acc(r, c))
			b.WriteString("\t}\n")
		}
	}
	b.WriteString("}\n")
}

// guards joins the conditions whose flag is set with &&: "" for none.
func guards(c1 bool, g1 string, c2 bool, g2 string) string {
	switch {
	case c1 && c2:
		return g1 + " && " + g2
	case c1:
		return g1
	case c2:
		return g2
	}
	return ""
}

// stager emits the two halves of staging one operand's tile: fetch reads
// vec4 number e of the tile at k-offset kt from global memory into a
// register (zero outside the matrix), store writes that register into
// workgroup memory in the [kk][row-or-col] layout the inner loop reads.
type stager struct {
	in   string // the operand's buffer
	span int    // vec4s per row of the tile as loaded
	// guard and base are WGSL expressions of the loaded vec4's position
	// (u, v): whether it lies in the matrix, and its first element's
	// buffer index.
	guard, base string
	// direct: the vec4 lands as is in its k-step's vec4s; otherwise its
	// four lanes, four k-steps, are scattered, transposed.
	direct bool
	shared string // the workgroup array
	// flat: the unstaged kernel's array, [kk·vec4s + vec4], not
	// [stage][kk][vec4].
	flat bool
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

// store writes register reg, vec4 number j0 + tid of the tile as
// fetched, into stage of the workgroup array: as is when the fetched vec4
// lies along the array's vec4s (direct), else its four lanes, four
// k-steps of one row (column), each into its k-step's vec4. inner is the
// array's vec4s a k-step. A lean stager (TileLean) tests e < total only
// where tail says a thread may be past the tile's last.
func (s stager) store(b *strings.Builder, indent, stage, reg string, j0, total, inner int, tail bool) {
	fmt.Fprintf(b, "%s{\n%s\tlet e = tid + %du;\n", indent, indent, j0)
	in := indent + "\t"
	if s.leanGuard && !tail {
		fmt.Fprintf(b, "%s{\n", in) // the same lines, unguarded
	} else {
		fmt.Fprintf(b, "%sif (e < %du) {\n", in, total)
	}
	switch {
	case s.direct && s.flat:
		fmt.Fprintf(b, "%s\t%s[e] = %s;\n", in, s.shared, reg)
	case s.direct: // e = u·span + v/4, span == inner: [kk = u][vec4 v/4]
		fmt.Fprintf(b, "%s\t%s[%s][e / %du][e %% %du] = %s;\n", in, s.shared, stage, inner, inner, reg)
	default: // u: the row (column), v: the first of four k-steps
		fmt.Fprintf(b, "%s\tlet u = e / %du;\n%s\tlet v = (e %% %du) * 4u;\n", in, s.span, in, s.span)
		for q := 0; q < 4; q++ {
			if s.flat {
				fmt.Fprintf(b, "%s\t%s[(v + %du) * %du + u / 4u][u %% 4u] = %s[%d];\n", in, s.shared, q, inner, reg, q)
			} else {
				fmt.Fprintf(b, "%s\t%s[%s][v + %du][u / 4u][u %% 4u] = %s[%d];\n", in, s.shared, stage, q, reg, q)
			}
		}
	}
	fmt.Fprintf(b, "%s}\n%s}\n", in, indent)
}

// stagerOf stages the tile of operand i of a matmul: A's BM×BK at (row0,
// kt0) for i 0, B's BK×BN at (kt0, col0) for 1; off prefixes the index
// with the batch's offset (see batchOffsets).
func stagerOf(i int, op ir.Operand, t ir.Tile, off string) stager {
	s := stager{in: "in0", shared: "As"}
	side, lim, span := "row0", "M", t.BM/4
	if i == 1 {
		s.in, s.shared = "in1", "Bs"
		side, lim, span = "col0", "N", t.BN/4
	}
	if op.MatrixTransposed() == (i == 0) {
		// buffer [K, side]: u = kk, v = row (col); four rows (cols) are
		// contiguous and land as a vec4 of the array
		s.span, s.direct = span, true
		s.sideGuard, s.kGuard, s.base = side+" + v < "+lim, "kt0 + u < K", off+"(kt0 + u) * "+lim+" + "+side+" + v"
	} else {
		// buffer [side, K]: u = row (col), v = kk; four k are contiguous,
		// stored transposed
		s.span = t.BK / 4
		s.sideGuard, s.kGuard, s.base = side+" + u < "+lim, "kt0 + v < K", off+"("+side+" + u) * K + kt0 + v"
	}
	s.guard = s.sideGuard + " && " + s.kGuard
	return s
}

// lean drops the guards of s that kernel k's shape makes always true (a
// side the tile divides), and reads whole vec4s where vec (the operand
// is bound as vec4s: matmulInputElem).
func (s *stager) lean(k *ir.Kernel, t ir.Tile, vec bool) {
	s.vec = vec
	s.leanGuard = true
	var g []string
	if s.in == "in0" && k.M%t.BM != 0 || s.in == "in1" && k.N%t.BN != 0 {
		g = append(g, s.sideGuard)
	}
	if k.K%t.BK != 0 {
		g = append(g, s.kGuard)
	}
	s.guard = strings.Join(g, " && ")
}

// matmulInputElem is the element type generate binds input i of kernel k
// as, where it is not f32: vec4<f32> for a lean matmul's operand (i 0 or
// 1) that the kernel reads only as whole vec4s, each starting at a
// multiple of four elements: the matrix's offset and every batch stride
// are multiples of 4 (the row stride along the loaded side is, or the
// tile would not be vec4), and its epilogue reads no element of it.
func matmulInputElem(k *ir.Kernel, i int) string {
	if k.Kind != ir.KernelMatmul || i > 1 || k.Tile.Vector != 4 || k.Tile.Stages != 2 || k.Tile.Opts&ir.TileLean == 0 || bodyLoads(k, i) {
		return ""
	}
	op := k.Inputs[i]
	if op.Offset%4 != 0 {
		return ""
	}
	for d, st := range op.Strides[:len(op.Strides)-2] {
		if st%4 != 0 && op.Shape[d] > 1 {
			return ""
		}
	}
	return "vec4<f32>"
}
