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
//     side (row vec4 ly + r·BM/TM, column vec4 lx + c·BN/TN) rather
//     than adjacent, so the threads of a warp read consecutive vec4s of
//     B: no bank conflicts.
//   - With two stages, the next k-tile is stored into the other buffer
//     while the current one is multiplied: one barrier a k-tile, not two.
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
// counter. Each accumulator lane still adds one rounded product per k, in
// ascending k, from the uniform zero: cpuref's bits.
func matmulStaged(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	t := k.Tile
	stages := min(t.Stages, 2) // more buffers than two would sit idle
	opts := stages == 2 && t.Opts != 0
	lean := opts && t.Opts&ir.TileLean != 0
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
	sa, sb := stagerA(a, t, oa), stagerB(bb, t, ob)
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
	// fetch and store stage the k-tile at kt; a lean stager keeps the
	// guard on e only for the vec4s past the tile's last (total not a
	// multiple of threads).
	fetch := func(indent, kt string) {
		for j := 0; j < na; j++ {
			sa.fetch(b, indent, fmt.Sprintf("pa%d", j), j*threads, kt, t.BK*am, (j+1)*threads > t.BK*am)
		}
		for j := 0; j < nb; j++ {
			sb.fetch(b, indent, fmt.Sprintf("pb%d", j), j*threads, kt, t.BK*bn, (j+1)*threads > t.BK*bn)
		}
	}
	store := func(indent, stage string) {
		for j := 0; j < na; j++ {
			sa.storeStaged(b, indent, stage, fmt.Sprintf("pa%d", j), fmt.Sprintf("tid + %du", j*threads), t.BK*am, am, (j+1)*threads > t.BK*am)
		}
		for j := 0; j < nb; j++ {
			sb.storeStaged(b, indent, stage, fmt.Sprintf("pb%d", j), fmt.Sprintf("tid + %du", j*threads), t.BK*bn, bn, (j+1)*threads > t.BK*bn)
		}
	}
	lanes := "xyzw"
	// multiply adds the products of steps k-steps of the tile in stage.
	multiply := func(indent, stage string, steps int) {
		for kk := 0; kk < steps; kk++ {
			fmt.Fprintf(b, "%s{\n", indent)
			for r := 0; r < t.TM/4; r++ {
				fmt.Fprintf(b, "%s\tlet a%d = As[%s][%d][%s + %du];\n", indent, r, stage, kk, ly, r*ty)
			}
			for c := 0; c < t.TN/4; c++ {
				fmt.Fprintf(b, "%s\tlet b%d = Bs[%s][%d][%s + %du];\n", indent, c, stage, kk, lx, c*tx)
			}
			for r := 0; r < t.TM; r++ {
				for c := 0; c < t.TN/4; c++ {
					fmt.Fprintf(b, "%s\tc%d_%d = c%d_%d + %s;\n", indent, r, c, r, c, product(fmt.Sprintf("a%d.%c * b%d", r/4, lanes[r%4], c), fast))
				}
			}
			fmt.Fprintf(b, "%s}\n", indent)
		}
	}
	fetch("\t", "0u")
	switch {
	case stages == 1:
		// One buffer: store, barrier, fetch the next tile into registers,
		// multiply, barrier (matmulVec4's schedule).
		whole, rest := k.K/t.BK*t.BK, k.K%t.BK
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
	case !opts:
		// Two buffers: k-tile i is in stage i % 2. Iteration i fetches
		// tile i+1 into registers, multiplies tile i, stores tile i+1
		// into the other stage and meets the others at one barrier:
		// nobody stores into a stage before everyone has passed the
		// barrier after the last multiply that read it.
		whole, rest := k.K/t.BK*t.BK, k.K%t.BK
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
	default:
		// Two buffers, the last k-tile peeled: k-tile i (of tiles, the
		// last one last steps deep) is in stage i % 2; step i < tiles-1
		// is the loop's iteration above without its test (more), and the
		// last tile is only multiplied.
		tiles, last := (k.K+t.BK-1)/t.BK, k.K-(k.K-1)/t.BK*t.BK
		step := func(indent, kt, stage, other string) {
			fetch(indent, fmt.Sprintf("%s + %du", kt, t.BK))
			multiply(indent, stage, t.BK)
			store(indent, other)
			fmt.Fprintf(b, "%sworkgroupBarrier();\n", indent)
		}
		store("\t", "0")
		b.WriteString("\tworkgroupBarrier();\n")
		if t.Opts&ir.TileUnroll == 0 { // one k-tile an iteration, its stage computed
			if tiles > 1 {
				fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", (tiles-1)*t.BK, t.BK)
				fmt.Fprintf(b, "\t\tlet cur = (kt / %du) & 1u;\n", t.BK)
				step("\t\t", "kt", "cur", "cur ^ 1u")
				b.WriteString("\t}\n")
			}
		} else {
			if pairs := (tiles - 1) / 2; pairs > 0 {
				fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", pairs*2*t.BK, 2*t.BK)
				step("\t\t", "kt", "0", "1")
				step("\t\t", fmt.Sprintf("kt + %du", t.BK), "1", "0")
				b.WriteString("\t}\n")
			}
			if (tiles-1)%2 == 1 {
				fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", (tiles-2)*t.BK)
				step("\t\t", "kt", "0", "1")
				b.WriteString("\t}\n")
			}
		}
		multiply("\t", fmt.Sprint((tiles-1)%2), last)
	}
	// The epilogue, unrolled: row r of the thread is 4·(ly + (r/4)·ty)
	// + r%4, column c 4·(lx + (c/4)·tx) + c%4; under TileLean a side the
	// tile divides needs no guard. A long one is looped (tileEpilogue).
	rowIn, colIn := !lean || k.M%t.BM != 0, !lean || k.N%t.BN != 0
	if tileEpilogue(b, k, t.TM, t.TN, func(r, c int) string { return fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4]) },
		fmt.Sprintf("row0 + (%s + rm / 4u * %du) * 4u + rm %% 4u", ly, ty), fmt.Sprintf("col0 + (%s + rn / 4u * %du) * 4u + rn %% 4u", lx, tx),
		guards(rowIn, "row < M", colIn, "col < N"), oc) {
		return
	}
	for r := 0; r < t.TM; r++ {
		fmt.Fprintf(b, "\tlet r%d = row0 + (%s + %du) * 4u + %du;\n", r, ly, r/4*ty, r%4)
		for c := 0; c < t.TN; c++ {
			fmt.Fprintf(b, "\t{\n\t\tlet col = col0 + (%s + %du) * 4u + %du;\n", lx, c/4*tx, c%4)
			guard := guards(rowIn, fmt.Sprintf("r%d < M", r), colIn, "col < N")
			in := 2
			if guard != "" {
				fmt.Fprintf(b, "\t\tif (%s) {\n", guard)
				in = 3
			}
			fmt.Fprintf(b, "%slet i = %sr%d * N + col;\n", strings.Repeat("\t", in), oc, r)
			acc := fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4])
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), acc), in))
			b.WriteString(codegen.Indent(stores(k, "i"), in))
			if guard != "" {
				b.WriteString("\t\t}\n")
			}
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

// storeStaged writes register reg, vec4 number e of the tile as fetched,
// into stage of the [stage][kk][vec4] workgroup array: as is when the
// fetched vec4 lies along the array's vec4s (direct), else its four
// lanes, four k-steps of one row (column), each into its k-step's vec4.
// inner is the array's vec4s a k-step. A lean stager (TileLean) tests
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

// lean drops the guards of s that kernel k's shape makes always true (a
// side the tile divides), and reads whole vec4s where vec (the operand
// is bound as vec4s: matmulInputElem).
func (s *stager) lean(k *ir.Kernel, t ir.Tile, vec bool) {
	s.vec = vec
	s.leanGuard = true
	var g []string
	if s.sideGuard != "" && (s.in == "in0" && k.M%t.BM != 0 || s.in == "in1" && k.N%t.BN != 0) {
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
