package wgsl

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// AttTile is the workgroup shape of the sliced attention kernel
// (attentionSliced): Rows query rows per workgroup, Slices threads per
// row, keys staged Keys at a time (a multiple of Slices: each thread
// scores Keys/Slices keys of a tile). Direct reads k and v from their
// buffers (vec4 bindings where their rows allow) instead of staging them
// through workgroup memory: only the probabilities cross threads, with
// one barrier a tile. Cache (Direct only) is how many scores a thread
// keeps in registers from the first pass for the second, which then
// scores only the keys past them. The zero AttTile selects the first
// kernel (attentionRows). The shape changes no bit: every tile keeps
// cpuref.Attention's order.
type AttTile struct {
	Rows, Slices, Keys int
	Direct             bool
	Cache              int
}

// AttentionTile is the attention kernels' shape, a tuning knob (Config
// names it): benchmarks set it to time the variants side by side
// (bench/attn_bench_test.go, GPUCC_BENCH_ATTN_TILES).
var AttentionTile = DefaultAttTile // or GPUCC_ATTN_TILE's (init)

// DefaultAttTile: 16 query rows of 16 threads, tiles of 32 keys: 128
// workgroups at sequence 2048, about one per H200 compute unit.
var DefaultAttTile = AttTile{Rows: 16, Slices: 16, Keys: 32}

// attTileEnv is GPUCC_ATTN_TILE's error, when it is set and malformed:
// every Emit then fails with it (usage), rather than run another tile
// than the one asked for.
var attTileEnv error

// GPUCC_ATTN_TILE, when set, replaces DefaultAttTile as AttentionTile at
// start-up (ParseAttTile's syntax: 16x16k64g, rows), so that a device
// visit can run the models under the tile its AttnTiles benchmark picked
// without a rebuild.
func init() {
	AttentionTile, attTileEnv = attTileFromEnv(os.Getenv("GPUCC_ATTN_TILE"))
}

// attTileFromEnv is the tile GPUCC_ATTN_TILE's value s names:
// DefaultAttTile for "", and an error for a malformed s.
func attTileFromEnv(s string) (AttTile, error) {
	if s == "" {
		return DefaultAttTile, nil
	}
	t, err := ParseAttTile(s)
	if err != nil {
		return DefaultAttTile, ir.Errorf(ir.CodeUsage, -1, "", "GPUCC_ATTN_TILE: %v", err)
	}
	return t, nil
}

// String is the tile as ParseAttTile reads it: RxSkK, a g after it for
// Direct, then cN for a Cache of N, or "rows" for the zero tile.
func (t AttTile) String() string {
	if t == (AttTile{}) {
		return "rows"
	}
	s := fmt.Sprintf("%dx%dk%d", t.Rows, t.Slices, t.Keys)
	if t.Direct {
		s += "g"
	}
	if t.Cache > 0 {
		s += fmt.Sprintf("c%d", t.Cache)
	}
	return s
}

var attTileSyntax = regexp.MustCompile(`^([0-9]+)x([0-9]+)k([0-9]+)(g(c([0-9]+))?)?$`)

// ParseAttTile reads a tile written as String writes it.
func ParseAttTile(s string) (AttTile, error) {
	if s == "rows" {
		return AttTile{}, nil
	}
	m := attTileSyntax.FindStringSubmatch(s)
	if m == nil {
		return AttTile{}, fmt.Errorf("attention tile %q is not ROWSxSLICESkKEYS[g[cCACHE]] (16x16k32, 16x16k64g, 8x32k64gc64) or rows", s)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v } // the syntax's digits; huge values fail below
	t := AttTile{Rows: n(1), Slices: n(2), Keys: n(3), Direct: m[4] != ""}
	if m[6] != "" {
		t.Cache = n(6)
	}
	if t.Keys == t.Slices {
		return AttTile{}, fmt.Errorf("attention tile %s: one key a thread per tile gave other bits than cpuref on the H200's driver (16x16k16 at 67 and 130 keys, causal, 2026-12-04; lavapipe agreed with cpuref); keys must be at least twice slices", s)
	}
	if t.Rows < 1 || t.Slices < 1 || t.Keys < t.Slices || t.Keys%t.Slices != 0 || t.Rows > attThreads || t.Slices > attThreads || t.Rows*t.Slices > attThreads || t.Cache > attMaxCache || t.String() != s {
		return AttTile{}, fmt.Errorf("attention tile %s: want rows·slices ≤ %d, keys a positive multiple of slices, a cache of at most %d", s, attThreads, attMaxCache)
	}
	return t, nil
}

const (
	attThreads  = 256   // WebGPU's default maxComputeInvocationsPerWorkgroup
	attStorage  = 16384 // WebGPU's default maxComputeWorkgroupStorageSize, bytes
	attMaxHead  = 128   // the widest q row a thread holds in registers
	attMaxCache = 256   // the most scores a thread keeps between passes
)

// attShape is a sliced kernel's geometry for one attention: the tile (its
// Keys perhaps reduced to fit attStorage), keys per thread per tile, q's
// row in vec4s, vec4 outputs per thread, and the staged tile's pitch in
// vec4s (one more than a k row, so that the two keys a warp's lanes read
// fall in different banks).
type attShape struct {
	AttTile
	per, d4, ev, w4 int
	// ow is the lanes of a thread's output vectors (ev of them): 4, or 2
	// for a Direct kernel whose threads hold at most 2 outputs.
	ow int
	// vk, vv: a Direct kernel reads k as vec4s, v as vectors of ow
	// (attVecN).
	vk, vv bool
}

// attPlan returns the sliced kernel's geometry for a under t, and false
// where it has none (the zero tile, a head wider than attMaxHead, or no
// tile that fits WebGPU's default workgroup storage).
func attPlan(a ir.Attention, t AttTile) (attShape, bool) {
	if t == (AttTile{}) || t.Keys == t.Slices || a.D > attMaxHead || a.E > 2*attMaxHead || t.Rows*t.Slices > attThreads {
		return attShape{}, false
	}
	p := attShape{AttTile: t, d4: (a.D + 3) / 4}
	ew := (a.E + t.Slices - 1) / t.Slices
	p.ow, p.ev = 4, (ew+3)/4
	if t.Direct && ew <= 2 {
		p.ow, p.ev = 2, 1
	}
	p.w4 = max(p.d4+1, t.Slices*p.ev)
	storage := func(keys int) int { return 16*keys*p.w4 + 4*keys*t.Rows + 4*t.Rows*t.Slices }
	if t.Direct { // no staged tile; Ps twice
		p.w4 = 0
		storage = func(keys int) int { return 8*keys*t.Rows + 4*t.Rows*t.Slices }
	}
	for p.Keys >= t.Slices && storage(p.Keys) > attStorage {
		p.Keys -= t.Slices
	}
	if p.Keys < t.Slices {
		return attShape{}, false
	}
	p.per = p.Keys / t.Slices
	return p, true
}

// attKernelPlan is attPlan for kernel k under AttentionTile, with a
// Direct kernel's vec4 reads: k's (v's) where its rows are whole vec4s
// (attVec4) and the epilogue does not read it too.
func attKernelPlan(k *ir.Kernel) (attShape, bool) {
	a := ir.AttentionKernel(k)
	if a.Block > 0 { // the online order: attentionOnline, f32 bindings
		return attShape{}, false
	}
	p, ok := attPlan(a, AttentionTile)
	if ok && p.Direct {
		p.vk = a.D%4 == 0 && attVecN(k.Inputs[1], 4) && !bodyLoads(k, 1)
		p.vv = a.E%p.ow == 0 && attVecN(k.Inputs[2], p.ow) && !bodyLoads(k, 2)
	}
	return p, ok
}

// attVecN reports whether an attention operand's rows can be read as
// vectors of w of its buffer: contiguous rows whose starts (every batch
// and row stride, and the offset) are multiples of w elements.
func attVecN(op ir.Operand, w int) bool {
	n := len(op.Shape)
	if op.Strides[n-1] != 1 && op.Shape[n-1] > 1 || op.Offset%w != 0 {
		return false
	}
	for d := range n - 1 {
		if op.Strides[d]%w != 0 && op.Shape[d] > 1 {
			return false
		}
	}
	return true
}

// bodyLoads reports whether kernel k's body (its epilogue) reads operand j.
func bodyLoads(k *ir.Kernel, j int) bool {
	for _, in := range k.Body {
		if in.Kind == ir.InstrLoad && in.Operand == j {
			return true
		}
	}
	return false
}

// attInputElem is the element type generate binds input i of kernel k
// as, where it is not f32: a Direct attention kernel's k (vec4) or v
// (vectors of ow) read as vectors (attKernelPlan); "" for f32.
func attInputElem(k *ir.Kernel, i int) string {
	if k.Kind != ir.KernelAttention || i < 1 || i > 2 {
		return ""
	}
	p, ok := attKernelPlan(k)
	switch {
	case ok && i == 1 && p.vk:
		return "vec4<f32>"
	case ok && i == 2 && p.vv:
		return fmt.Sprintf("vec%d<f32>", p.ow)
	}
	return ""
}

// attention emits an attention kernel: the online one where the shapes
// take the online order (ir.Attention.Block), else the sliced one where
// AttentionTile has a shape for it, else attentionRows. storage is the
// workgroup storage the online kernel's plan may use (Target.storage).
func attention(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, storage int) {
	if ir.AttentionKernel(k).Block > 0 { // the online order, and the split order's parts side by side
		attentionOnline(b, k, s, storage)
		return
	}
	if p, ok := attKernelPlan(k); ok {
		attentionSliced(b, k, s, p)
		return
	}
	attentionRows(b, k, s)
}

// attentionLoops is the loop cost of the kernel attention emits.
func attentionLoops(k *ir.Kernel) int {
	a := ir.AttentionKernel(k)
	if a.Block > 0 {
		return attentionOnlineLoops(k)
	}
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
// the current one is used, as matmulVec4 does. A Direct kernel reads k
// and v from their buffers instead, and with a Cache, its first tiles are
// unrolled and their scores kept from pass 1 for pass 2.
func attentionSliced(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, p attShape) {
	a := ir.AttentionKernel(k)
	S, T, D, E := a.S, a.T, a.D, a.E
	R, N, K := p.Rows, p.Slices, p.Keys
	threads := R * N
	ew4 := N * p.ev // staged v row, vec4s (zero past E)
	s.Workgroup = [3]int{threads, 1, 1}
	s.Groups = [3]int{(S + R - 1) / R, max(a.Batch.Len(), 1), 1}
	scale := Lang.Const(len(codegen.Constants(k)) - 1) // the nest's Params[0], after the body's slots
	off := func(j int, r, c string) string { return attOffset(k, j, r, c) }
	apply := func(name string, op ir.Op, args ...string) []string { return attApply(k, name, op, args...) }
	rowN := func(j int, r, c4 string, cols, w int) string { return attRow(k, j, r, c4, cols, w) }
	row4 := func(j int, r, c4 string, cols int) string { return rowN(j, r, c4, cols, 4) }
	if p.Direct {
		fmt.Fprintf(b, "var<workgroup> Ps: array<f32, %d>; // two tiles' p, alternately\n", 2*K*R)
	} else {
		fmt.Fprintf(b, "var<workgroup> KVs: array<vec4<f32>, %d>;\n", K*p.w4)
		fmt.Fprintf(b, "var<workgroup> Ps: array<f32, %d>;\n", K*R)
	}
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
	if p.Direct {
		nk, nv = 0, 0
		b.WriteString("\tvar pb = 0u; // this tile's half of Ps\n")
	}
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
	// kread renders vec4 c4 of this thread's key x of the tile.
	kread := func(x, c4 int) string {
		switch {
		case !p.Direct:
			return fmt.Sprintf("KVs[(kb + %du) * %du + %du]", x, p.w4, c4)
		case p.vk:
			return fmt.Sprintf("in1[kq%d + %du]", x, c4)
		}
		return row4(1, fmt.Sprintf("jx%d", x), fmt.Sprintf("%du", c4), D)
	}
	// vread renders vector vb + y (of ow lanes) of v's row kt + j.
	ow := p.ow
	vrow := k.Inputs[2].Strides[len(k.Inputs[2].Shape)-2] / ow // v's row stride, in vectors (p.vv)
	vread := func(j, y int) string {
		switch {
		case !p.Direct:
			return fmt.Sprintf("KVs[%du + vb + %du]", j*p.w4, y)
		case p.vv && N*p.ev*ow == E:
			return fmt.Sprintf("in2[vq + %du + vb + %du]", j*vrow, y)
		case p.vv:
			return fmt.Sprintf("select(vec%d<f32>(0.0), in2[min(vq + %du + vb + %du, vq + %du)], vb + %du < %du)",
				ow, j*vrow, y, j*vrow+E/ow-1, y, E/ow)
		}
		return rowN(2, fmt.Sprintf("min(kt + %du, %du)", j, T-1), fmt.Sprintf("(vb + %du)", y), -E, ow)
	}
	// scores declares sc0 … sc{per-1}: this thread's scores' accumulators
	// of the tile's keys kb …, d ascending.
	scores := func() {
		for x := range p.per {
			fmt.Fprintf(b, "\t\tvar sc%d = params.zero;\n", x)
			if p.Direct {
				fmt.Fprintf(b, "\t\tlet jx%d = min(kt + kb + %du, %du);\n", x, x, T-1)
			}
			if p.vk {
				fmt.Fprintf(b, "\t\tlet kq%d = (%s) / 4u;\n", x, off(1, fmt.Sprintf("jx%d", x), "0u"))
			}
		}
		for c4 := range p.d4 {
			b.WriteString("\t\t{\n")
			for x := range p.per {
				fmt.Fprintf(b, "\t\t\tlet p%d = %s;\n", x, Lang.Keep(fmt.Sprintf("q%d * %s", c4, kread(x, c4))))
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
	// tiles emits body(keys, last, n) over the key tiles: the first ct
	// whole ones unrolled (n their number: their scores are cached), a
	// loop over the other whole ones, then the partial one (n = -1).
	whole, rest := T/K*K, T%K
	ct := 0
	if p.Direct {
		ct = min(T/K, p.Cache/p.per)
	}
	tiles := func(body func(keys int, last bool, n int)) {
		for n := range ct {
			fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", n*K)
			body(K, false, n)
			b.WriteString("\t}\n")
		}
		if whole > ct*K {
			fmt.Fprintf(b, "\tfor (var kt = %du; kt < %du; kt += %du) {\n", ct*K, whole, K)
			body(K, false, -1) // the last whole tile's fetch is skipped at run time
			b.WriteString("\t}\n")
		}
		if rest > 0 {
			fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", whole)
			body(rest, true, -1)
			b.WriteString("\t}\n")
		}
	}
	for n := range ct {
		for x := range p.per {
			fmt.Fprintf(b, "\tvar c%d_%d = params.zero;\n", n, x)
		}
	}
	// Pass 1: each thread's maximum over its keys, then the row's.
	fetch(1, "kr", nk, 1, p.d4, D, "0u")
	fmt.Fprintf(b, "\tvar mr = %s;\n", Lang.Opaque(0xff800000))
	tiles(func(keys int, last bool, n int) {
		if !p.Direct {
			b.WriteString("\t\tworkgroupBarrier();\n")
			store("kr", nk, p.d4)
			b.WriteString("\t\tworkgroupBarrier();\n")
		}
		if !last && !p.Direct {
			fmt.Fprintf(b, "\t\tif (kt + %du < %du) {\n", K, T)
			fetch(3, "kr", nk, 1, p.d4, D, fmt.Sprintf("kt + %du", K))
			b.WriteString("\t\t}\n")
		}
		scores()
		each(keys, func(x int, j string) {
			fmt.Fprintf(b, "\t\t\tlet ts = %s;\n", score(fmt.Sprintf("sc%d", x), j))
			if n >= 0 {
				fmt.Fprintf(b, "\t\t\tc%d_%d = ts;\n", n, x)
			}
			b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "ts", "mx"), 3))
			b.WriteString("\t\t\tmr = mx;\n")
		})
	})
	if !p.Direct {
		fetch(1, "kr", nk, 1, p.d4, D, "0u")
	}
	fmt.Fprintf(b, "\tMs[tid] = mr;\n\tworkgroupBarrier();\n\tmr = Ms[i];\n")
	for x := 1; x < N; x++ {
		fmt.Fprintf(b, "\t{\n\t\tlet mv = Ms[i + %du];\n", x*R)
		b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "mv", "mx"), 2))
		b.WriteString("\t\tmr = mx;\n\t}\n")
	}
	// Pass 2: p = exp(t − m) into Ps; l and o in key order.
	b.WriteString("\tvar ls = params.zero;\n")
	for y := range p.ev {
		fmt.Fprintf(b, "\tvar o%d = vec%d<f32>(params.zero);\n", y, ow)
	}
	pb := "" // a Direct kernel's half of Ps
	if p.Direct {
		pb = "pb + "
	}
	tiles(func(keys int, last bool, n int) {
		if !p.Direct {
			b.WriteString("\t\tworkgroupBarrier();\n")
			store("kr", nk, p.d4)
			b.WriteString("\t\tworkgroupBarrier();\n")
			fetch(2, "vr", nv, 2, ew4, E, "kt")
		}
		if n < 0 {
			scores()
		}
		each(keys, func(x int, j string) {
			if n >= 0 {
				fmt.Fprintf(b, "\t\t\tlet ts = c%d_%d;\n", n, x)
			} else {
				fmt.Fprintf(b, "\t\t\tlet ts = %s;\n", score(fmt.Sprintf("sc%d", x), j))
			}
			b.WriteString(codegen.Indent(apply("us", ir.OpSub, "ts", "mr"), 3))
			b.WriteString(codegen.Indent(apply("ps", ir.OpExp, "us"), 3))
			fmt.Fprintf(b, "\t\t\tPs[%s(kb + %du) * %du + i] = ps;\n", pb, x, R)
		})
		b.WriteString("\t\tworkgroupBarrier();\n")
		if !p.Direct {
			store("vr", nv, ew4)
			b.WriteString("\t\tworkgroupBarrier();\n")
		}
		if !last && !p.Direct {
			fmt.Fprintf(b, "\t\tif (kt + %du < %du) {\n", K, T)
			fetch(3, "kr", nk, 1, p.d4, D, fmt.Sprintf("kt + %du", K))
			b.WriteString("\t\t}\n")
		}
		if p.vv {
			fmt.Fprintf(b, "\t\tlet vq = (%s) / %du;\n", off(2, "kt", "0u"), ow)
		}
		for j := range keys {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet pj = Ps[%s%du + i];\n\t\t\tls = ls + pj;\n", pb, j*R)
			for y := range p.ev {
				fmt.Fprintf(b, "\t\t\to%d = o%d + %s;\n", y, y, Lang.Keep("pj * "+vread(j, y)))
			}
			b.WriteString("\t\t}\n")
		}
		if p.Direct {
			fmt.Fprintf(b, "\t\tpb = %du - pb;\n", K*R)
		}
	})
	fmt.Fprintf(b, "\tif (qi >= %du) { return; }\n", S)
	for y := range p.ev {
		for l := range ow {
			fmt.Fprintf(b, "\t{\n\t\tlet ve = vb * %du + %du;\n\t\tif (ve < %du) {\n\t\t\tlet ov = o%d.%c;\n", ow, ow*y+l, E, y, lanes[l])
			b.WriteString(codegen.Indent(apply("acc", ir.OpDiv, "ov", "ls"), 3))
			fmt.Fprintf(b, "\t\t\tlet i = (z * %du + qi) * %du + ve;\n", S, E)
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), 3))
			b.WriteString(codegen.Indent(stores(k, "i"), 3))
			b.WriteString("\t\t}\n\t}\n")
		}
	}
	b.WriteString("}\n")
}

// attOffset renders the index of attention kernel k's operand j at row r,
// column c, in batch z (a stride of 0 or a dimension of 1 adds nothing).
func attOffset(k *ir.Kernel, j int, r, c string) string {
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

// attApply renders one application of the table's op as kernel k's nest
// renders it.
func attApply(k *ir.Kernel, name string, op ir.Op, args ...string) []string {
	n := &codegen.Nest{Body: []codegen.Stmt{codegen.Apply(name, op, args...)}}
	return n.Render(Lang, k)
}

// attRow renders kernel k's operand j's vector of w at row r, columns
// w·c4 … (cols wide; lanes past cols are 0 and read nothing; a negative
// cols guards every lane).
func attRow(k *ir.Kernel, j int, r, c4 string, cols, w int) string {
	var lanes []string
	guard := cols < 0
	cols = max(cols, -cols)
	for x := range w {
		c := fmt.Sprintf("%s * %du + %du", c4, w, x)
		ld := fmt.Sprintf("in%d[%s]", j, attOffset(k, j, r, c))
		if guard || cols%4 != 0 {
			ld = fmt.Sprintf("select(0.0, in%d[%s], %s < %du)", j, attOffset(k, j, r, fmt.Sprintf("min(%s, %du)", c, cols-1)), c, cols)
		}
		lanes = append(lanes, ld)
	}
	return fmt.Sprintf("vec%d<f32>(%s)", w, strings.Join(lanes, ", "))
}
