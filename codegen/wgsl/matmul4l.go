package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// matmulLean emits the double-buffered vec4 kernel (matmulStaged's
// tiles, threads, workgroup layout and order) under ir.Tile.Opts. Each
// option only removes instructions around the products:
//
//   - TileLean: an operand whose every vec4 starts at a multiple of four
//     elements is bound as array<vec4<f32>> (matmulInputElem), so a fetch
//     is one load and one bounds clamp, not four of each; a guard is
//     emitted only where the shape leaves a partial tile on its side (the
//     shapes are constants); the last k-tile is peeled, so the loop tests
//     only its counter.
//   - TileUnroll: the k-tiles are unrolled by two so the workgroup
//     buffers are indexed by constant stages (no clamp of a dynamic stage
//     index), at twice the loop's code (about 2,200 instructions, 35 KB
//     of machine code for 64x128/8x8k8: an instruction cache may miss).
//   - TileWarp: thread (lx, ly) of the grid comes from the invocation
//     index so that each 32 consecutive invocations (an NVIDIA warp)
//     form an 8×4 block of the grid rather than 16×2.
//
// Each accumulator lane still adds one rounded product per k, in
// ascending k, from the uniform zero: cpuref's bits.
func matmulLean(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	t := k.Tile
	lean := t.Opts&ir.TileLean != 0
	tx, ty := t.BN/t.TN, t.BM/t.TM
	threads := tx * ty
	s.Workgroup = [3]int{tx, ty, 1}
	s.Groups = [3]int{(k.N + t.BN - 1) / t.BN, (k.M + t.BM - 1) / t.BM, 1}
	a, bb := k.Inputs[0], k.Inputs[1]
	am, bn := t.BM/4, t.BN/4

	fmt.Fprintf(b, "const M = %du;\nconst N = %du;\nconst K = %du;\n\n", k.M, k.N, k.K)
	fmt.Fprintf(b, "var<workgroup> As: array<array<array<vec4<f32>, %d>, %d>, 2>; // As[stage][kk][row vec4]\n", am, t.BK)
	fmt.Fprintf(b, "var<workgroup> Bs: array<array<array<vec4<f32>, %d>, %d>, 2>; // Bs[stage][kk][col vec4]\n\n", bn, t.BK)
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tx, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet row0 = wg.y * %du;\n\tlet col0 = wg.x * %du;\n\tlet tid = lid.y * %du + lid.x;\n", t.BM, t.BN, tx)
	if t.Opts&ir.TileWarp != 0 { // warp w of tid/32 is block (w % (tx/8), w / (tx/8)) of 8×4 threads
		fmt.Fprintf(b, "\tlet lx = (tid / 32u) %% %du * 8u + tid %% 8u;\n\tlet ly = (tid / 32u) / %du * 4u + tid %% 32u / 8u;\n", tx/8, tx/8)
	} else {
		b.WriteString("\tlet lx = lid.x;\n\tlet ly = lid.y;\n")
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
	// fetch and store stage the k-tile at kt; a guard on e is kept only
	// for the vec4s past the tile's last (total not a multiple of threads).
	fetch := func(indent, kt string) {
		for j := 0; j < na; j++ {
			sa.fetchLean(b, indent, fmt.Sprintf("pa%d", j), j*threads, kt, t.BK*am, (j+1)*threads > t.BK*am)
		}
		for j := 0; j < nb; j++ {
			sb.fetchLean(b, indent, fmt.Sprintf("pb%d", j), j*threads, kt, t.BK*bn, (j+1)*threads > t.BK*bn)
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
	multiply := func(indent, stage string, steps int) {
		for kk := 0; kk < steps; kk++ {
			fmt.Fprintf(b, "%s{\n", indent)
			for r := 0; r < t.TM/4; r++ {
				fmt.Fprintf(b, "%s\tlet a%d = As[%s][%d][ly + %du];\n", indent, r, stage, kk, r*ty)
			}
			for c := 0; c < t.TN/4; c++ {
				fmt.Fprintf(b, "%s\tlet b%d = Bs[%s][%d][lx + %du];\n", indent, c, stage, kk, c*tx)
			}
			for r := 0; r < t.TM; r++ {
				for c := 0; c < t.TN/4; c++ {
					fmt.Fprintf(b, "%s\tc%d_%d = c%d_%d + %s;\n", indent, r, c, r, c, product(fmt.Sprintf("a%d.%c * b%d", r/4, lanes[r%4], c), fast))
				}
			}
			fmt.Fprintf(b, "%s}\n", indent)
		}
	}
	// K-tile i (of tiles, the last one last steps deep) is in stage i % 2.
	// Step i < tiles-1 fetches tile i+1 into registers, multiplies tile i,
	// stores tile i+1 into the other stage and meets the others at one
	// barrier: nobody stores into a stage before everyone has passed the
	// barrier after the last multiply that read it. The last tile is only
	// multiplied.
	tiles, last := (k.K+t.BK-1)/t.BK, k.K-(k.K-1)/t.BK*t.BK
	step := func(indent, kt, stage, other string) {
		fetch(indent, fmt.Sprintf("%s + %du", kt, t.BK))
		multiply(indent, stage, t.BK)
		store(indent, other)
		fmt.Fprintf(b, "%sworkgroupBarrier();\n", indent)
	}
	fetch("\t", "0u")
	store("\t", "0")
	b.WriteString("\tworkgroupBarrier();\n")
	if t.Opts&ir.TileUnroll == 0 { // one k-tile an iteration, its stage computed
		if tiles > 1 {
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", (tiles-1)*t.BK, t.BK)
			fmt.Fprintf(b, "\t\tlet cur = (kt / %du) & 1u;\n", t.BK)
			step("\t\t", "kt", "cur", "cur ^ 1u")
			b.WriteString("\t}\n")
		}
	} else if pairs := (tiles - 1) / 2; pairs > 0 {
		fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", pairs*2*t.BK, 2*t.BK)
		step("\t\t", "kt", "0", "1")
		step("\t\t", fmt.Sprintf("kt + %du", t.BK), "1", "0")
		b.WriteString("\t}\n")
	}
	if t.Opts&ir.TileUnroll != 0 && (tiles-1)%2 == 1 {
		fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", (tiles-2)*t.BK)
		step("\t\t", "kt", "0", "1")
		b.WriteString("\t}\n")
	}
	multiply("\t", fmt.Sprint((tiles-1)%2), last)
	// The epilogue, unrolled: row r of the thread is 4·(ly + (r/4)·ty)
	// + r%4, column c 4·(lx + (c/4)·tx) + c%4; a side the tile divides
	// needs no guard. A long one is looped (tileEpilogue).
	var guard []string
	if !lean || k.M%t.BM != 0 {
		guard = append(guard, "row < M")
	}
	if !lean || k.N%t.BN != 0 {
		guard = append(guard, "col < N")
	}
	if tileEpilogue(b, k, t.TM, t.TN, func(r, c int) string { return fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4]) },
		fmt.Sprintf("row0 + (ly + rm / 4u * %du) * 4u + rm %% 4u", ty), fmt.Sprintf("col0 + (lx + rn / 4u * %du) * 4u + rn %% 4u", tx),
		strings.Join(guard, " && "), oc) {
		return
	}
	for r := 0; r < t.TM; r++ {
		fmt.Fprintf(b, "\tlet r%d = row0 + (ly + %du) * 4u + %du;\n", r, r/4*ty, r%4)
		for c := 0; c < t.TN; c++ {
			fmt.Fprintf(b, "\t{\n\t\tlet col = col0 + (lx + %du) * 4u + %du;\n", c/4*tx, c%4)
			var guard []string
			if !lean || k.M%t.BM != 0 {
				guard = append(guard, fmt.Sprintf("r%d < M", r))
			}
			if !lean || k.N%t.BN != 0 {
				guard = append(guard, "col < N")
			}
			in := 2
			if len(guard) > 0 {
				fmt.Fprintf(b, "\t\tif (%s) {\n", strings.Join(guard, " && "))
				in = 3
			}
			fmt.Fprintf(b, "%slet i = %sr%d * N + col;\n", strings.Repeat("\t", in), oc, r)
			acc := fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4])
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), acc), in))
			b.WriteString(codegen.Indent(stores(k, "i"), in))
			if len(guard) > 0 {
				b.WriteString("\t\t}\n")
			}
			b.WriteString("\t}\n")
		}
	}
	b.WriteString("}\n")
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

// fetchLean is fetch for the lean kernel: vec4 number j0 + tid of the
// tile at kt, with the e < total guard only where tail says a thread may
// be past the tile's last vec4, and the side and k guards s.lean kept.
func (s stager) fetchLean(b *strings.Builder, indent, reg string, j0 int, kt string, total int, tail bool) {
	if !s.leanGuard {
		s.fetch(b, indent, reg, fmt.Sprintf("tid + %du", j0), kt, total)
		return
	}
	var g []string
	if tail {
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
