package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// The tiled online kernel (OnlineTile.Tiled): the online order's steps
// (ir/attention.go) for one key block of ir.AttentionBlock keys at a
// time, as two register-tiled products, where attentionOnline gives each
// thread one query row. A workgroup of tiledSide × tiledSide threads
// (tx, ty) holds tiledSide·rq query rows of one batch index, q staged
// once, transposed, in workgroup memory (Qs[d] holds the rows of each ty
// as one vector). For each key block, k and v are staged (fetched into
// registers a block ahead), and thread (tx, ty):
//
//   - scores its rq rows (ty·rq …) against keys 2·tx and 2·tx + 1: 2·rq
//     accumulators walking d ascending, each product rounded on its own,
//     one vector load of Qs and one of k a d (the attention kernel's
//     one thread a row loads a vec4 of k for every four products);
//   - folds its rows' maximum with the block's: its own keys after m,
//     then the threads' folds in tx order (key order: maximum's first NaN
//     is the order's), as order keys through Ms;
//   - writes p = exp(t − m') of its keys to Ps (transposed: a key's rows
//     as one vector), and the thread tx < rq computes row ty·rq + tx's
//     c = exp(m − m') into Cs and keeps that row's l, rescaled by c and
//     summed over the block's p ascending;
//   - adds p·v for the block's keys ascending into its rq × 4 outputs
//     (rows ty·rq …, columns 4·tx …), one vector load of Ps and one vec4
//     of v a key for 4·rq products, after rescaling them by c.
//
// Every sum runs in the order's sequence and every product and sum is
// rounded on its own, so the bits are the online order's (and the split
// order's parts, under Blocks: written undivided, as writeParts does).
// The workgroup storage is tiledStorage: 44 KiB at d 64 and rq 4, past
// WebGPU's default 16 KiB, so the tile runs where the device grants it
// (NVIDIA's Vulkan driver 48 KiB; lavapipe's 32 KiB takes rq 2).
//
// Opt-in: on an H100 (2026-12-06, bench/RESULTS.md) rq 4 ran one head
// of 2048 keys, d 64, in 4 parts in 0.1172 ms, and the one-row kernel
// in 2 parts in 0.1173; at 4096 keys 0.4067 against 0.4023. Its 40%
// fewer workgroup loads bought nothing: workgroup memory is not what
// bounds attention there (bench/RESULTS.md, the twentieth session).

// tiledSide is the tiled kernel's threads along each side.
const tiledSide = 16

// tiledMaxHead is the widest q and v rows the tiled kernel takes: a key's
// outputs are one vec4 for each tx.
const tiledMaxHead = 4 * tiledSide

// tiledStorage is the tiled kernel's workgroup storage in bytes for heads
// of d, rq query rows a thread: Qs, Ks, Vs, Ps, Ms, Cs and Ls.
func tiledStorage(d, rq int) int {
	rows, B := tiledSide*rq, ir.AttentionBlock
	return 4 * (d*rows + d*B + B*tiledMaxHead + B*rows + tiledSide*rows + 2*rows)
}

// tiledFits reports whether the tiled kernel of rq rows a thread runs
// attention a within limit bytes of workgroup storage: the online order
// (or a kernel of the split order's parts: parts), heads of at most
// tiledMaxHead.
func tiledFits(a ir.Attention, rq int, parts bool, limit int) bool {
	return (rq == 2 || rq == 4) && a.Block == 2*tiledSide && (a.Chunk == 0 || parts) &&
		a.D <= tiledMaxHead && a.E <= tiledMaxHead && tiledStorage(a.D, rq) <= limit
}

// attentionTiled emits the tiled online kernel of rq query rows a
// thread (see above); its plan was checked by tiledFits.
func attentionTiled(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, rq int) {
	a := ir.AttentionKernel(k)
	S, T, D, E, B := a.S, a.T, a.D, a.E, a.Block
	parts := k.Blocks > 1
	n := tiledSide
	RR, threads := n*rq, n*n
	d4, e4 := (D+3)/4, (E+3)/4
	vt, vu := fmt.Sprintf("vec%d<f32>", rq), fmt.Sprintf("vec%d<u32>", rq)
	s.Workgroup = [3]int{threads, 1, 1}
	s.Groups = [3]int{(S + RR - 1) / RR, max(a.Batch.Len(), 1), 1}
	if parts {
		s.Groups[2] = a.Parts()
	}
	scale := Lang.Const(len(codegen.Constants(k)) - 1) // the nest's Params[0], after the body's slots
	apply := func(name string, op ir.Op, args ...string) []string { return attApply(k, name, op, args...) }
	row4 := func(j int, r, c4 string, cols int) string { return attRow(k, j, r, c4, cols, 4) }
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	lanes := "xyzw"

	w("var<workgroup> Qs: array<array<%s, %d>, %d>; // q, transposed: Qs[d][ty] is ty's rows\n", vt, n, D)
	w("var<workgroup> Ks: array<array<vec2<f32>, %d>, %d>; // k, transposed: Ks[d][tx] is keys 2tx, 2tx+1\n", n, D)
	w("var<workgroup> Vs: array<array<vec4<f32>, %d>, %d>; // v: Vs[key][tx] is columns 4tx …\n", n, B)
	w("var<workgroup> Ps: array<array<%s, %d>, %d>; // p: Ps[key][ty] is ty's rows\n", vt, n, B)
	w("var<workgroup> Ms: array<array<%s, %d>, %d>; // order keys of each thread's maxima: Ms[tx][ty]\n", vu, n, n)
	w("var<workgroup> Cs: array<%s, %d>; // c of ty's rows\n", vt, n)
	w("var<workgroup> Ls: array<%s, %d>; // l of ty's rows, at the end\n\n", vt, n)
	b.WriteString(maxKeyFuncs)
	w("fn combine_maxkeys(a: %s, b: %s) -> %s {\n\treturn select(a, b, (b > a) & (a < %s(0xff000002u)));\n}\n\n", vu, vu, vu, vu)
	w("@compute @workgroup_size(%d)\n", threads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	w("\tlet tid = lid.x;\n\tlet tx = tid %% %du;\n\tlet ty = tid / %du;\n\tlet z = wg.y;\n\tlet q0 = wg.x * %du;\n", n, n, RR)
	if parts {
		b.WriteString("\tlet g = wg.z; // the part: keys g·Chunk …\n")
	}
	for r := range rq {
		w("\tlet qi%d = q0 + ty * %du + %du;\n\tlet qc%d = min(qi%d, %du);\n", r, rq, r, r, r, S-1)
	}
	// q, staged once: vec4 (row, c4) as D scalars of Qs.
	for x := range (RR*d4 + threads - 1) / threads {
		w("\t{\n\t\tlet e = tid + %du;\n\t\tif (e < %du) {\n", x*threads, RR*d4)
		w("\t\t\tlet row = e %% %du;\n\t\t\tlet c4 = e / %du;\n\t\t\tlet qv = %s;\n", RR, RR, row4(0, fmt.Sprintf("min(q0 + row, %du)", S-1), "c4", D))
		for l := range 4 {
			st := fmt.Sprintf("Qs[c4 * 4u + %du][row / %du][row %% %du] = qv.%c;", l, rq, rq, lanes[l])
			w("\t\t\t%s\n", guardD(D, l, st))
		}
		b.WriteString("\t\t}\n\t}\n")
	}
	// The staging registers: a block of k (kr) and of v (vr).
	nk, nv := (B*d4+threads-1)/threads, (B*n+threads-1)/threads
	for x := range nk {
		w("\tvar kr%d = vec4<f32>(0.0);\n", x)
	}
	for x := range nv {
		w("\tvar vr%d = vec4<f32>(0.0);\n", x)
	}
	// fetch loads the block at key kt (an expression) into the
	// registers, 0 past T: k with consecutive threads on consecutive keys
	// (their stores into Ks fall in different banks), v on a key's
	// consecutive vec4s.
	fetch := func(in, kt string) {
		for x := range nk {
			w("%s{\n%s\tlet e = tid + %du;\n%s\tlet key = %s + e %% %du;\n%s\tkr%d = vec4<f32>(0.0);\n", in, in, x*threads, in, kt, B, in, x)
			w("%s\tif (e < %du && key < %du) { kr%d = %s; }\n%s}\n", in, B*d4, T, x, row4(1, "key", fmt.Sprintf("(e / %du)", B), D), in)
		}
		for x := range nv {
			w("%s{\n%s\tlet e = tid + %du;\n%s\tlet key = %s + e / %du;\n%s\tvr%d = vec4<f32>(0.0);\n", in, in, x*threads, in, kt, n, in, x)
			w("%s\tif (e < %du && e %% %du < %du && key < %du) { vr%d = %s; }\n%s}\n", in, B*n, n, e4, T, x, row4(2, "key", fmt.Sprintf("(e %% %du)", n), E), in)
		}
	}
	store := func() {
		b.WriteString("\t\tworkgroupBarrier();\n")
		for x := range nk {
			w("\t\t{\n\t\t\tlet e = tid + %du;\n\t\t\tif (e < %du) {\n\t\t\t\tlet key = e %% %du;\n\t\t\t\tlet c4 = e / %du;\n", x*threads, B*d4, B, B)
			for l := range 4 {
				w("\t\t\t\t%s\n", guardD(D, l, fmt.Sprintf("Ks[c4 * 4u + %du][key / 2u][key %% 2u] = kr%d.%c;", l, x, lanes[l])))
			}
			b.WriteString("\t\t\t}\n\t\t}\n")
		}
		for x := range nv {
			w("\t\t{\n\t\t\tlet e = tid + %du;\n\t\t\tif (e < %du) { Vs[e / %du][e %% %du] = vr%d; }\n\t\t}\n", x*threads, B*n, n, n, x)
		}
		b.WriteString("\t\tworkgroupBarrier();\n")
	}
	// ragged: in the split order, the last part's blocks may run past T:
	// every key is checked against T at run time, and a key past it
	// scores -Inf and adds nothing.
	ragged := parts && T != a.Parts()*a.Chunk
	// block emits one key block at kt with keys keys; next, where not
	// empty, is the condition under which the block after it is fetched.
	block := func(keys int, next, nextKt string) {
		store()
		if next != "" {
			w("\t\tif (%s) {\n", next)
			fetch("\t\t\t", nextKt)
			b.WriteString("\t\t}\n")
		}
		// Scores: for each of the thread's two keys, its rows' chains.
		w("\t\tvar s0 = %s(params.zero);\n\t\tvar s1 = %s(params.zero);\n", vt, vt)
		for d := range D {
			w("\t\t{\n\t\t\tlet qd = Qs[%du][ty];\n\t\t\tlet kd = Ks[%du][tx];\n", d, d)
			w("\t\t\ts0 = s0 + %s;\n\t\t\ts1 = s1 + %s;\n\t\t}\n", Lang.Keep("qd * kd.x"), Lang.Keep("qd * kd.y"))
		}
		for y := range 2 {
			w("\t\tlet j%d = kt + tx * 2u + %du;\n", y, y)
			for r := range rq {
				t := Lang.Keep(fmt.Sprintf("s%d.%c * %s", y, lanes[r], scale))
				if k.Masked() {
					t += fmt.Sprintf(" + in3[%s]", attOffset(k, 3, fmt.Sprintf("qc%d", r), fmt.Sprintf("min(j%d, %du)", y, T-1)))
				}
				if a.Causal {
					t = Lang.Select(fmt.Sprintf("qi%d < j%d", r, y), Lang.Opaque(0xff800000), t) // opaque: Tint refuses a constant -Inf
				}
				if keys < B {
					t = Lang.Select(fmt.Sprintf("tx * 2u + %du < %du", y, keys), t, Lang.Opaque(0xff800000))
				}
				if ragged {
					t = Lang.Select(fmt.Sprintf("j%d < %du", y, T), t, Lang.Opaque(0xff800000))
				}
				w("\t\tlet t%d_%d = %s;\n", r, y, t)
			}
		}
		// m': this thread's keys after m, then the threads' in tx order.
		var mts []string
		for r := range rq {
			w("\t\tvar mt%d = maxkey(mr.%c);\n", r, lanes[r])
			for y := range 2 {
				w("\t\tmt%d = combine_maxkey(mt%d, maxkey(t%d_%d));\n", r, r, r, y)
			}
			mts = append(mts, fmt.Sprintf("mt%d", r))
		}
		w("\t\tMs[tx][ty] = %s(%s);\n\t\tworkgroupBarrier();\n", vu, strings.Join(mts, ", "))
		b.WriteString("\t\tvar mk = Ms[0][ty];\n")
		for x := 1; x < n; x++ {
			w("\t\tmk = combine_maxkeys(mk, Ms[%d][ty]);\n", x)
		}
		var mns []string
		for r := range rq {
			mns = append(mns, fmt.Sprintf("unmaxkey(mk.%c)", lanes[r]))
		}
		w("\t\tlet mn = %s(%s);\n", vt, strings.Join(mns, ", "))
		// p = exp(t − m') of the thread's keys into Ps.
		for y := range 2 {
			var ps []string
			for r := range rq {
				w("\t\tvar p%d_%d: f32;\n\t\t{\n", r, y)
				b.WriteString(codegen.Indent(apply("us", ir.OpSub, fmt.Sprintf("t%d_%d", r, y), fmt.Sprintf("mn.%c", lanes[r])), 3))
				b.WriteString(codegen.Indent(apply("ps", ir.OpExp, "us"), 3))
				w("\t\t\tp%d_%d = ps;\n\t\t}\n", r, y)
				ps = append(ps, fmt.Sprintf("p%d_%d", r, y))
			}
			w("\t\tPs[tx * 2u + %du][ty] = %s(%s);\n", y, vt, strings.Join(ps, ", "))
		}
		// c of row ty·rq + tx by its thread, which keeps that row's l.
		w("\t\tif (tx < %du) {\n\t\t\tlet mo = %s;\n\t\t\tlet mm = %s;\n", rq, laneOf("mr", rq), laneOf("mn", rq))
		b.WriteString(codegen.Indent(apply("ud", ir.OpSub, "mo", "mm"), 3))
		b.WriteString(codegen.Indent(apply("cs", ir.OpExp, "ud"), 3))
		w("\t\t\tCs[ty][tx] = cs;\n\t\t\tls = %s;\n\t\t}\n", Lang.Keep("ls * cs"))
		b.WriteString("\t\tmr = mn;\n\t\tworkgroupBarrier();\n\t\tlet cv = Cs[ty];\n")
		for r := range rq {
			w("\t\to%d = %s;\n", r, Lang.Keep(fmt.Sprintf("o%d * cv.%c", r, lanes[r])))
		}
		kept := func(in string, j int) string {
			if ragged {
				w("%sif (kt + %du < %du) {\n", in, j, T)
				return in + "\t"
			}
			return in
		}
		unkept := func(in string) {
			if ragged {
				w("%s}\n", in)
			}
		}
		w("\t\tif (tx < %du) {\n", rq)
		for j := range keys {
			in := kept("\t\t\t", j)
			w("%sls = ls + Ps[%du][ty][tx];\n", in, j)
			unkept("\t\t\t")
		}
		b.WriteString("\t\t}\n")
		for j := range keys {
			in := kept("\t\t", j)
			w("%s{\n%s\tlet pj = Ps[%du][ty];\n%s\tlet vj = Vs[%du][tx];\n", in, in, j, in, j)
			for r := range rq {
				w("%s\to%d = o%d + %s;\n", in, r, r, Lang.Keep(fmt.Sprintf("vj * pj.%c", lanes[r])))
			}
			w("%s}\n", in)
			unkept("\t\t")
		}
	}
	w("\tvar mr = %s(%s); // -MaxFloat32\n\tvar ls = params.zero;\n", vt, Lang.Opaque(0xff7fffff))
	for r := range rq {
		w("\tvar o%d = vec4<f32>(params.zero);\n", r)
	}
	if parts {
		nb := a.Chunk / B
		fetch("\t", fmt.Sprintf("g * %du", a.Chunk))
		w("\tfor (var bi = 0u; bi < %du; bi++) {\n\t\tlet kt = g * %du + bi * %du;\n", nb, a.Chunk, B)
		block(B, fmt.Sprintf("bi + 1u < %du", nb), fmt.Sprintf("kt + %du", B))
		b.WriteString("\t}\n")
		tiledParts(b, k, a, rq)
		return
	}
	fetch("\t", "0u")
	whole, rest := T/B*B, T%B
	if whole > 0 {
		w("\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, B)
		block(B, fmt.Sprintf("kt + %du < %du", B, T), fmt.Sprintf("kt + %du", B))
		b.WriteString("\t}\n")
	}
	if rest > 0 {
		w("\t{\n\t\tlet kt = %du;\n", whole)
		block(rest, "", "")
		b.WriteString("\t}\n")
	}
	// Each output is o / l, then the epilogue.
	w("\tif (tx < %du) { Ls[ty][tx] = ls; }\n\tworkgroupBarrier();\n\tlet lv = Ls[ty];\n", rq)
	for r := range rq {
		w("\tif (qi%d < %du) {\n", r, S)
		for l := range 4 {
			w("\t\t{\n\t\t\tlet ve = tx * 4u + %du;\n\t\t\tif (ve < %du) {\n\t\t\t\tlet ov = o%d.%c;\n", l, E, r, lanes[l])
			b.WriteString(codegen.Indent(apply("acc", ir.OpDiv, "ov", fmt.Sprintf("lv.%c", lanes[r])), 4))
			w("\t\t\t\tlet i = (z * %du + qi%d) * %du + ve;\n", S, r, E)
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 4))
			b.WriteString(codegen.Indent(stores(k, "i"), 4))
			b.WriteString("\t\t\t}\n\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
}

// laneOf is lane tx of vector v of rq lanes, selected (a vector in
// registers indexed at run time may be kept in memory instead).
func laneOf(v string, rq int) string {
	x := v + ".x"
	for l := 1; l < rq; l++ {
		x = fmt.Sprintf("select(%s, %s.%c, tx == %du)", x, v, "xyzw"[l], l)
	}
	return x
}

// guardD is statement st of lane l of a vec4 column c4 of a head of d,
// guarded where that lane may be past d.
func guardD(d, l int, st string) string {
	if d%4 == 0 {
		return st
	}
	return fmt.Sprintf("if (c4 * 4u + %du < %du) { %s }", l, d, st)
}

// tiledParts ends a tiled kernel of the split order's parts (Blocks):
// as writeParts, each query row's part g, [E+2] at ((z·S + qi)·P +
// g)·(E+2): its outputs o undivided from their threads, then m and l
// from the thread that kept l.
func tiledParts(b *strings.Builder, k *ir.Kernel, a ir.Attention, rq int) {
	at := func(qi string) string {
		return fmt.Sprintf("((z * %du + %s) * %du + g) * %du", a.S, qi, k.Blocks, a.E+2)
	}
	for r := range rq {
		fmt.Fprintf(b, "\tif (qi%d < %du) {\n\t\tlet at = %s;\n", r, a.S, at(fmt.Sprintf("qi%d", r)))
		for l := range 4 {
			fmt.Fprintf(b, "\t\tif (tx * 4u + %du < %du) { out0[at + tx * 4u + %du] = o%d.%c; }\n", l, a.E, l, r, "xyzw"[l])
		}
		b.WriteString("\t}\n")
	}
	fmt.Fprintf(b, "\tlet ql = q0 + ty * %du + tx;\n\tif (tx < %du && ql < %du) {\n\t\tlet at = %s;\n", rq, rq, a.S, at("ql"))
	fmt.Fprintf(b, "\t\tout0[at + %du] = %s;\n\t\tout0[at + %du] = ls;\n\t}\n}\n", a.E, laneOf("mr", rq), a.E+1)
}
