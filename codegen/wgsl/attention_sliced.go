package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// AttTile is the workgroup shape of the sliced attention kernel
// (attentionSliced): Rows query rows per workgroup, Slices threads per
// row, keys staged Keys at a time (a multiple of Slices: each thread
// scores Keys/Slices keys of a tile). The zero AttTile selects the first
// kernel (attentionRows). The shape changes no bit: every tile keeps
// cpuref.Attention's order.
type AttTile struct{ Rows, Slices, Keys int }

// AttentionTile is the attention kernels' shape, a tuning knob (Config
// names it): benchmarks set it to time the variants side by side
// (bench/attn_bench_test.go, GPUCC_BENCH_ATTN_TILES).
var AttentionTile = DefaultAttTile

// DefaultAttTile: 16 query rows of 16 threads, tiles of 32 keys: 128
// workgroups at sequence 2048, about one per H200 compute unit.
var DefaultAttTile = AttTile{Rows: 16, Slices: 16, Keys: 32}

// String is the tile as ParseAttTile reads it: RxSkK, or "rows" for the
// zero tile.
func (t AttTile) String() string {
	if t == (AttTile{}) {
		return "rows"
	}
	return fmt.Sprintf("%dx%dk%d", t.Rows, t.Slices, t.Keys)
}

// ParseAttTile reads a tile written as String writes it.
func ParseAttTile(s string) (AttTile, error) {
	if s == "rows" {
		return AttTile{}, nil
	}
	var t AttTile
	if _, err := fmt.Sscanf(s, "%dx%dk%d", &t.Rows, &t.Slices, &t.Keys); err != nil || t.String() != s {
		return AttTile{}, fmt.Errorf("attention tile %q is not ROWSxSLICESkKEYS (16x16k32) or rows", s)
	}
	if t.Rows < 1 || t.Slices < 1 || t.Keys < t.Slices || t.Keys%t.Slices != 0 || t.Rows*t.Slices > attThreads {
		return AttTile{}, fmt.Errorf("attention tile %s: want rows·slices ≤ %d and keys a positive multiple of slices", s, attThreads)
	}
	return t, nil
}

const (
	attThreads = 256   // WebGPU's default maxComputeInvocationsPerWorkgroup
	attStorage = 16384 // WebGPU's default maxComputeWorkgroupStorageSize, bytes
	attMaxHead = 128   // the widest q row a thread holds in registers
)

// attShape is a sliced kernel's geometry for one attention: the tile (its
// Keys perhaps reduced to fit attStorage), keys per thread per tile, q's
// row in vec4s, vec4 outputs per thread, and the staged tile's pitch in
// vec4s (one more than a k row, so that the two keys a warp's lanes read
// fall in different banks).
type attShape struct {
	AttTile
	per, d4, ev, w4 int
}

// attPlan returns the sliced kernel's geometry for a under t, and false
// where it has none (the zero tile, a head wider than attMaxHead, or no
// tile that fits WebGPU's default workgroup storage).
func attPlan(a ir.Attention, t AttTile) (attShape, bool) {
	if t == (AttTile{}) || a.D > attMaxHead || a.E > 2*attMaxHead || t.Rows*t.Slices > attThreads {
		return attShape{}, false
	}
	p := attShape{AttTile: t, d4: (a.D + 3) / 4}
	p.ev = ((a.E+t.Slices-1)/t.Slices + 3) / 4
	p.w4 = max(p.d4+1, t.Slices*p.ev)
	for p.Keys >= t.Slices && 16*p.Keys*p.w4+4*p.Keys*t.Rows+4*t.Rows*t.Slices > attStorage {
		p.Keys -= t.Slices
	}
	if p.Keys < t.Slices {
		return attShape{}, false
	}
	p.per = p.Keys / t.Slices
	return p, true
}

// attention emits an attention kernel: the sliced one where AttentionTile
// has a shape for it, else attentionRows.
func attention(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	if p, ok := attPlan(ir.AttentionKernel(k), AttentionTile); ok {
		attentionSliced(b, k, s, p)
		return
	}
	attentionRows(b, k, s)
}

// attentionLoops is the loop cost of the kernel attention emits.
func attentionLoops(k *ir.Kernel) int {
	a := ir.AttentionKernel(k)
	if p, ok := attPlan(a, AttentionTile); ok {
		return 2 * (a.T/p.Keys + 1)
	}
	return attentionRowsLoops(k)
}

// attentionSliced emits an attention kernel in cpuref.Attention's order
// that computes each score once per pass and shares nothing but the
// probabilities: a workgroup holds Rows query rows of one batch index,
// Slices threads per row, each thread holding its row of q in registers
// (vec4s). Keys are staged Keys at a time through workgroup memory as
// vec4 rows; within a tile, slice s scores keys s·per … s·per+per−1 (per
// = Keys/Slices), each score one accumulator walking d ascending (each
// product rounded on its own: times the uniform 1.0), then times the
// scale, plus the mask, or -Inf past the diagonal. Pass 1 keeps each
// thread's maximum; the row's Slices maxima are folded (maximum selects:
// any grouping gives cpuref's bits). Pass 2 scores the keys again and
// stores p = exp(t − m) for the tile; v's tile replaces k's, and each
// thread adds, for the tile's keys in ascending order, p into l and p·v
// into its vec4 outputs (e = s·4·ev …). Each output is o / l, then the
// epilogue. The next tile (k's or v's) is fetched into registers while
// the current one is used, as matmulVec4 does.
func attentionSliced(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, p attShape) {
	a := ir.AttentionKernel(k)
	S, T, D, E := a.S, a.T, a.D, a.E
	R, N, K := p.Rows, p.Slices, p.Keys
	threads := R * N
	ew4 := N * p.ev // staged v row, vec4s (zero past E)
	s.Workgroup = [3]int{threads, 1, 1}
	s.Groups = [3]int{(S + R - 1) / R, max(a.Batch.Len(), 1), 1}
	scale := Lang.Const(len(codegen.Constants(k)) - 1) // the nest's Params[0], after the body's slots
	off := func(j int, r, c string) string {
		op := k.Inputs[j]
		n := len(op.Shape)
		terms := []string{codegen.Index(Lang, op.Batch(), "z")}
		if st := op.Strides[n-2]; st != 0 && op.Shape[n-2] > 1 {
			terms = append(terms, fmt.Sprintf("(%s) * %du", r, st))
		}
		if st := op.Strides[n-1]; st != 0 && op.Shape[n-1] > 1 {
			terms = append(terms, fmt.Sprintf("(%s) * %du", c, st))
		}
		return strings.Join(terms, " + ")
	}
	apply := func(name string, op ir.Op, args ...string) []string {
		n := &codegen.Nest{Body: []codegen.Stmt{codegen.Apply(name, op, args...)}}
		return n.Render(Lang, k)
	}
	// row4 renders operand j's vec4 at row r, columns 4·c4 … (cols wide;
	// lanes past cols are 0 and read nothing).
	row4 := func(j int, r, c4 string, cols int) string {
		var lanes []string
		for x := range 4 {
			c := fmt.Sprintf("%s * 4u + %du", c4, x)
			ld := fmt.Sprintf("in%d[%s]", j, off(j, r, c))
			if cols%4 != 0 {
				ld = fmt.Sprintf("select(0.0, in%d[%s], %s < %du)", j, off(j, r, fmt.Sprintf("min(%s, %du)", c, cols-1)), c, cols)
			}
			lanes = append(lanes, ld)
		}
		return "vec4<f32>(" + strings.Join(lanes, ", ") + ")"
	}
	fmt.Fprintf(b, "var<workgroup> KVs: array<vec4<f32>, %d>;\n", K*p.w4)
	fmt.Fprintf(b, "var<workgroup> Ps: array<f32, %d>;\n", K*R)
	fmt.Fprintf(b, "var<workgroup> Ms: array<f32, %d>;\n\n", R*N)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", threads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet tid = lid.x;\n\tlet i = tid %% %du;\n\tlet sl = tid / %du;\n", R, R)
	fmt.Fprintf(b, "\tlet z = wg.y;\n\tlet qi = wg.x * %du + i;\n\tlet qc = min(qi, %du);\n", R, S-1)
	fmt.Fprintf(b, "\tlet kb = sl * %du;\n\tlet vb = sl * %du;\n", p.per, p.ev)
	for c4 := range p.d4 {
		fmt.Fprintf(b, "\tlet q%d = %s;\n", c4, row4(0, "qc", fmt.Sprintf("%du", c4), D))
	}
	// The staging registers: nk vec4s of a k tile, nv of a v tile.
	nk, nv := (K*p.d4+threads-1)/threads, (K*ew4+threads-1)/threads
	for x := range nk {
		fmt.Fprintf(b, "\tvar kr%d = vec4<f32>(0.0);\n", x)
	}
	for x := range nv {
		fmt.Fprintf(b, "\tvar vr%d = vec4<f32>(0.0);\n", x)
	}
	// fetch loads the tile at key kt of operand j (w4 vec4s a row, cols
	// columns) into registers reg0…, 0 past T.
	fetch := func(tabs int, reg string, n, j, w4, cols int, kt string) {
		in := strings.Repeat("\t", tabs)
		for x := range n {
			fmt.Fprintf(b, "%s{\n%s\tlet e = tid + %du;\n%s\tlet key = %s + e / %du;\n", in, in, x*threads, in, kt, w4)
			fmt.Fprintf(b, "%s\t%s%d = vec4<f32>(0.0);\n", in, reg, x)
			guard := fmt.Sprintf("e < %du && key < %du", K*w4, T)
			if c4 := (cols + 3) / 4; c4 < w4 {
				guard += fmt.Sprintf(" && e %% %du < %du", w4, c4)
			}
			fmt.Fprintf(b, "%s\tif (%s) {\n", in, guard)
			fmt.Fprintf(b, "%s\t\t%s%d = %s;\n%s\t}\n%s}\n", in, reg, x, row4(j, "key", fmt.Sprintf("(e %% %du)", w4), cols), in, in)
		}
	}
	// store writes registers reg0… into KVs.
	store := func(reg string, n, w4 int) {
		for x := range n {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet e = tid + %du;\n", x*threads)
			fmt.Fprintf(b, "\t\t\tif (e < %du) { KVs[(e / %du) * %du + e %% %du] = %s%d; }\n\t\t}\n", K*w4, w4, p.w4, w4, reg, x)
		}
	}
	lanes := "xyzw"
	// scores declares sc0 … sc{per-1}: this thread's scores' accumulators
	// of the staged tile's keys kb …, d ascending.
	scores := func() {
		for x := range p.per {
			fmt.Fprintf(b, "\t\tvar sc%d = params.zero;\n", x)
		}
		for c4 := range p.d4 {
			b.WriteString("\t\t{\n")
			for x := range p.per {
				fmt.Fprintf(b, "\t\t\tlet p%d = %s;\n", x, Lang.Keep(fmt.Sprintf("q%d * KVs[(kb + %du) * %du + %du]", c4, x, p.w4, c4)))
			}
			for x := range p.per {
				for l := 0; l < 4 && 4*c4+l < D; l++ {
					fmt.Fprintf(b, "\t\t\tsc%d = sc%d + p%d.%c;\n", x, x, x, lanes[l])
				}
			}
			b.WriteString("\t\t}\n")
		}
	}
	// score renders key j's score from accumulator sc.
	score := func(sc, j string) string {
		t := Lang.Keep(sc + " * " + scale)
		if k.Masked() {
			t += fmt.Sprintf(" + in3[%s]", off(3, "qc", j))
		}
		if a.Causal {
			t = Lang.Select("qi < "+j, Lang.Opaque(0xff800000), t) // opaque: Tint refuses a constant -Inf
		}
		return t
	}
	// each emits body(x, j) for this thread's keys of a tile of keys keys
	// (guarded where the tile is partial).
	each := func(keys int, body func(x int, j string)) {
		for x := range p.per {
			b.WriteString("\t\t{\n")
			j := fmt.Sprintf("kt + kb + %du", x)
			if keys < K {
				fmt.Fprintf(b, "\t\tif (kb + %du < %du) {\n", x, keys)
			}
			body(x, j)
			if keys < K {
				b.WriteString("\t\t}\n")
			}
			b.WriteString("\t\t}\n")
		}
	}
	// tiles emits body(keys, last) over the key tiles: a loop over the
	// whole ones, then the partial one.
	whole, rest := T/K*K, T%K
	tiles := func(body func(keys int, last bool)) {
		if whole > 0 {
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, K)
			body(K, false) // the last whole tile's fetch is skipped at run time
			b.WriteString("\t}\n")
		}
		if rest > 0 {
			fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", whole)
			body(rest, true)
			b.WriteString("\t}\n")
		}
	}
	// Pass 1: each thread's maximum over its keys, then the row's.
	fetch(1, "kr", nk, 1, p.d4, D, "0u")
	fmt.Fprintf(b, "\tvar mr = %s;\n", Lang.Opaque(0xff800000))
	tiles(func(keys int, last bool) {
		b.WriteString("\t\tworkgroupBarrier();\n")
		store("kr", nk, p.d4)
		b.WriteString("\t\tworkgroupBarrier();\n")
		if !last {
			fmt.Fprintf(b, "\t\tif (kt + %du < %du) {\n", K, T)
			fetch(3, "kr", nk, 1, p.d4, D, fmt.Sprintf("kt + %du", K))
			b.WriteString("\t\t}\n")
		}
		scores()
		each(keys, func(x int, j string) {
			fmt.Fprintf(b, "\t\t\tlet ts = %s;\n", score(fmt.Sprintf("sc%d", x), j))
			b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "ts", "mx"), 3))
			b.WriteString("\t\t\tmr = mx;\n")
		})
	})
	fetch(1, "kr", nk, 1, p.d4, D, "0u")
	fmt.Fprintf(b, "\tMs[tid] = mr;\n\tworkgroupBarrier();\n\tmr = Ms[i];\n")
	for x := 1; x < N; x++ {
		fmt.Fprintf(b, "\t{\n\t\tlet mv = Ms[i + %du];\n", x*R)
		b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "mv", "mx"), 2))
		b.WriteString("\t\tmr = mx;\n\t}\n")
	}
	// Pass 2: p = exp(t − m) into Ps; l and o in key order.
	b.WriteString("\tvar ls = params.zero;\n")
	for y := range p.ev {
		fmt.Fprintf(b, "\tvar o%d = vec4<f32>(params.zero);\n", y)
	}
	tiles(func(keys int, last bool) {
		b.WriteString("\t\tworkgroupBarrier();\n")
		store("kr", nk, p.d4)
		b.WriteString("\t\tworkgroupBarrier();\n")
		fetch(2, "vr", nv, 2, ew4, E, "kt")
		scores()
		each(keys, func(x int, j string) {
			fmt.Fprintf(b, "\t\t\tlet ts = %s;\n", score(fmt.Sprintf("sc%d", x), j))
			b.WriteString(codegen.Indent(apply("us", ir.OpSub, "ts", "mr"), 3))
			b.WriteString(codegen.Indent(apply("ps", ir.OpExp, "us"), 3))
			fmt.Fprintf(b, "\t\t\tPs[(kb + %du) * %du + i] = ps;\n", x, R)
		})
		b.WriteString("\t\tworkgroupBarrier();\n")
		store("vr", nv, ew4)
		b.WriteString("\t\tworkgroupBarrier();\n")
		if !last {
			fmt.Fprintf(b, "\t\tif (kt + %du < %du) {\n", K, T)
			fetch(3, "kr", nk, 1, p.d4, D, fmt.Sprintf("kt + %du", K))
			b.WriteString("\t\t}\n")
		}
		for j := range keys {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet pj = Ps[%du + i];\n\t\t\tls = ls + pj;\n", j*R)
			for y := range p.ev {
				fmt.Fprintf(b, "\t\t\to%d = o%d + %s;\n", y, y, Lang.Keep(fmt.Sprintf("pj * KVs[%du + vb + %du]", j*p.w4, y)))
			}
			b.WriteString("\t\t}\n")
		}
	})
	fmt.Fprintf(b, "\tif (qi >= %du) { return; }\n", S)
	for y := range p.ev {
		for l := range 4 {
			fmt.Fprintf(b, "\t{\n\t\tlet ve = vb * 4u + %du;\n\t\tif (ve < %du) {\n\t\t\tlet ov = o%d.%c;\n", 4*y+l, E, y, lanes[l])
			b.WriteString(codegen.Indent(apply("acc", ir.OpDiv, "ov", "ls"), 3))
			fmt.Fprintf(b, "\t\t\tlet i = (z * %du + qi) * %du + ve;\n", S, E)
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 3))
			b.WriteString(codegen.Indent(stores(k, "i"), 3))
			b.WriteString("\t\t}\n\t}\n")
		}
	}
	b.WriteString("}\n")
}
