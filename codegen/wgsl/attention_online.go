package wgsl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// OnlineTile is the online kernel's workgroup: Rows query rows of one
// batch index, Slices threads a row; each key block of ir.AttentionBlock
// keys is staged through workgroup memory in sub-tiles (onlinePlan), k's
// and then v's. A tuning knob like AttentionTile: the shape changes no
// bit (every shape keeps the online order). The flags change how the
// threads of a row share their work, not what any of them rounds:
//
//   - TreeMax (suffix m): the row's maxima are stored row by row and read
//     as vec4s, and folded as a tree, not a chain (combine_maxkey is
//     associative: maximum with the first NaN, so the same bits): a
//     fifth of the loads and a quarter of the dependent steps.
//   - RowC (c): c = exp(m − m') is computed by the row's first thread
//     only and read by the others after the v stage's barrier, not once
//     by every thread of the row.
//   - VecP (p): the block's probabilities are stored row by row and each
//     thread reads four keys' at once (vec4), not one a key.
//   - RowL (l): l is summed by the row's first thread only (the others
//     add p·v alone) and shared through workgroup memory for the division.
//   - Index2D (i): the workgroup arrays are two-dimensional, indexed
//     [row][column], where they were flat. WGSL clamps every dynamic index
//     into an array (naga's Restrict policy, on Vulkan): a flat index
//     such as (kb + y)·w4 + c4 is clamped as a whole at every load, a
//     two-dimensional one clamps its dynamic row once for all constant
//     columns, which then become the loads' immediate offsets.
//   - Half (h): where a v row fits in Slices/2 vec4s (d 64 under 32
//     slices), each thread holds two outputs (a vec2: the low or high half
//     of its vec4 column), not a vec4: the staged v row is E wide, not
//     Slices vec4s, so 32 slices fit at d 64 (without h they never do).
//   - TwoLevel (t): with TreeMax's rows, a quarter of the row's threads
//     fold four maxima each behind one more barrier, then every thread
//     folds those: Slices/4 + 3 combines a thread, not Slices − 1.
//   - Wide (w): the plan may fill the device's workgroup storage
//     (Target.Storage: 48 KiB on NVIDIA's Vulkan driver, 32 KiB on
//     lavapipe), not WebGPU's default 16 KiB: wider sub-tiles of k and v
//     (d 128: 32 keys a stage, not 16, so a block's barriers 5, not 9),
//     and tiles that do not fit 16 KiB (8x32 at d 128). Under a target of
//     the default storage (gpucc build's, the page's) it is the tile
//     without w.
//
// RowBlock (rN after the shape, before the letters: online8x32r2mcpl),
// where 2 or more, registers-blocks the query rows: each thread holds
// RowBlock query rows (rows i, i + Rows, …: the workgroup covers
// Rows·RowBlock of them) and scores each staged k vec4 against all of
// them, and adds each staged v vec4 into all of their outputs, so one
// workgroup load feeds RowBlock independent chains. Every row keeps its
// own chains in the online order, so the bits are the same; q's
// registers grow RowBlock-fold, so it fits only where RowBlock·d ≤
// onlineQRegs (onlinePlan; else the default tile runs).
//
// Span (bN after the row block: online16x16b2mcpliw), where 2 or more,
// stages N key blocks at once: k's sub-tiles span up to N·32 keys (a
// thread scores 32/Slices keys of each block of a sub-tile, so each has
// N-fold independent score chains between barriers), the blocks' row
// maxima are folded behind one barrier (each thread's maximum of each
// block's keys; then m'_b = max(m'_(b−1), the row's maximum of block b) in
// block order, maximum being associative), and v's sub-tiles are summed
// block by block, l and o rescaled by c_b = exp(m'_(b−1) − m'_b) before
// block b's keys. Each block keeps the online order's steps (the same
// m', p, c and sums in the same order), so the bits are cpuref's; the
// barriers a block fall N-fold where a sub-tile of N blocks fits the
// storage (Wide, on a device that grants it).
type OnlineTile struct {
	Rows, Slices                                       int
	RowBlock                                           int
	Span                                               int
	TreeMax, RowC, VecP, RowL, Index2D, Half, TwoLevel bool
	Wide                                               bool
}

// onlineMaxRowBlock is the most query rows a thread (RowBlock).
const onlineMaxRowBlock = 8

// onlineMaxSpan is the most key blocks staged at once (Span).
const onlineMaxSpan = 4

// onlineQRegs bounds the floats of q a thread holds (RowBlock·d): past
// it a GPU's compiler spills the rows to memory.
const onlineQRegs = 128

// rq is the tile's query rows a thread (RowBlock, at least 1).
func (t OnlineTile) rq() int { return max(t.RowBlock, 1) }

// nb is the tile's key blocks staged at once (Span, at least 1).
func (t OnlineTile) nb() int { return max(t.Span, 1) }

// DefaultOnlineTile: 16 query rows of 16 threads, two keys a thread a
// block, its workgroup arrays two-dimensional (Index2D: naga's index
// clamp paid once a row). Since 2026-12-05, when the H100 ran it at 2048
// keys in 0.1291 ms (d 64) and 0.2209 (d 128) against the plain 16x16's
// 0.1408 and 0.2375 in the same visit (and 0.1330 / 0.2235 against
// 0.1441 / 0.2400 in an earlier call), with the same bits: the flag
// changes where values are kept, not the order they are combined in.
var DefaultOnlineTile = OnlineTile{Rows: 16, Slices: 16, Index2D: true}

// AttentionOnlineTile is the online kernel's shape (benchmarks set it:
// bench/attn_bench_test.go's "online8x32").
var AttentionOnlineTile = DefaultOnlineTile

// onlineFlags are the flags' suffix letters in the order String writes
// them.
var onlineFlags = []struct {
	letter byte
	get    func(*OnlineTile) *bool
}{
	{'m', func(t *OnlineTile) *bool { return &t.TreeMax }},
	{'c', func(t *OnlineTile) *bool { return &t.RowC }},
	{'p', func(t *OnlineTile) *bool { return &t.VecP }},
	{'l', func(t *OnlineTile) *bool { return &t.RowL }},
	{'i', func(t *OnlineTile) *bool { return &t.Index2D }},
	{'h', func(t *OnlineTile) *bool { return &t.Half }},
	{'t', func(t *OnlineTile) *bool { return &t.TwoLevel }},
	{'w', func(t *OnlineTile) *bool { return &t.Wide }},
}

// String is the tile as ParseOnlineTile reads it: online for the
// default, else its spelling (spelled).
func (t OnlineTile) String() string {
	if t == DefaultOnlineTile {
		return "online"
	}
	return t.spelled()
}

// spelled is onlineRxS, the tile's row block (rN), span (bM) and flags'
// letters (online16x16mcp, online8x32r2mcpliht, online16x16mcpliw), the
// default's too (online16x16i), which ParseOnlineTile also reads.
func (t OnlineTile) spelled() string {
	s := fmt.Sprintf("online%dx%d", t.Rows, t.Slices)
	if t.RowBlock != 0 {
		s += fmt.Sprintf("r%d", t.RowBlock)
	}
	if t.Span != 0 {
		s += fmt.Sprintf("b%d", t.Span)
	}
	for _, f := range onlineFlags {
		if *f.get(&t) {
			s += string(f.letter)
		}
	}
	return s
}

// ParseOnlineTile reads a tile written as String writes it.
func ParseOnlineTile(s string) (OnlineTile, error) {
	if s == "online" {
		return DefaultOnlineTile, nil
	}
	var t OnlineTile
	_, err := fmt.Sscanf(s, "online%dx%d", &t.Rows, &t.Slices)
	if err == nil {
		rest := strings.TrimLeft(strings.TrimPrefix(s, "online"), "0123456789x")
		// number reads the digits after letter c, if rest starts with it.
		number := func(c string, n *int) {
			if err != nil || !strings.HasPrefix(rest, c) {
				return
			}
			digits := strings.TrimLeft(rest[1:], "0123456789")
			if *n, err = strconv.Atoi(rest[1 : len(rest)-len(digits)]); err == nil && *n < 2 {
				err = fmt.Errorf("%s%d", c, *n)
			}
			rest = digits
		}
		number("r", &t.RowBlock)
		number("b", &t.Span)
		for _, f := range onlineFlags {
			if strings.HasPrefix(rest, string(f.letter)) {
				*f.get(&t), rest = true, rest[1:]
			}
		}
	}
	if err != nil || t.spelled() != s ||
		t.Rows < 1 || t.Slices < 1 || t.Rows*t.Slices > attThreads || ir.AttentionBlock%t.Slices != 0 || t.RowBlock > onlineMaxRowBlock ||
		t.Span > onlineMaxSpan || t.Span&(t.Span-1) != 0 {
		return OnlineTile{}, fmt.Errorf("online attention tile %q is not onlineRxS[rN][bM][m][c][p][l][i][h][t][w] with R·S ≤ %d, S dividing %d, 2 ≤ N ≤ %d and M 2 or %d", s, attThreads, ir.AttentionBlock, onlineMaxRowBlock, onlineMaxSpan)
	}
	return t, nil
}

// onlineShape is the online kernel's geometry for one attention: the
// tile, keys a staged sub-tile (ks, dividing the block), keys a thread
// scores per sub-tile (pk), q's row in vec4s (d4), vec4 outputs a thread
// (ev), the staged row's pitch in vec4s (w4: one more than a k row,
// against bank conflicts, or a v row of Slices·ev); in the split order,
// the parts run side by side (G groups of Rows × Slices threads). A span
// of W keys (Span blocks) is staged at once, in sub-tiles of ks keys (ks
// divides W; where ks spans blocks, a thread scores kp keys of each, so
// that each block's keys are its own: kp = min(ks, Block)/Slices).
type onlineShape struct {
	OnlineTile
	ks, pk, d4, ev, w4 int
	W, kp              int
	pp, mp             int // VecP's and TreeMax's row pitches in vec4s
	ew4                int // the staged v row's vec4s
	half, two          bool
	m2                 int // TwoLevel's row pitch in vec4s
	G                  int // the split order's parts a workgroup runs at once (1: none)
}

// onlinePlan returns the online kernel's geometry for a (a.Block > 0, so
// D and E are at most ir.AttentionOnlineMaxHead) under t: the widest
// sub-tile that keeps the staged rows, the block's probabilities and the
// row maxima within WebGPU's default workgroup storage, or within storage
// bytes where t is Wide; false where even a sub-tile of a key a thread
// does not fit. In the split order (a.Chunk
// set) the workgroup holds a group of threads for each part, each
// staging its own keys: its rows and slices are the tile's or fewer
// (onlineSplitPlan).
func onlinePlan(a ir.Attention, t OnlineTile, storage int, parts bool) (onlineShape, bool) {
	limit := attStorage
	if t.Wide {
		limit = max(storage, attStorage)
	}
	switch {
	case parts:
		return onlinePartsPlan(a, t, limit)
	case a.Chunk > 0:
		return onlineSplitPlan(a, t, limit)
	}
	return onlineFit(a, t, 1, limit)
}

// onlinePartsPlan is the geometry of the split order's parts in
// workgroups of their own (a kernel with Blocks: one part of one row
// tile a workgroup): t itself, its span halved until a part's blocks are
// whole spans.
func onlinePartsPlan(a ir.Attention, t OnlineTile, limit int) (onlineShape, bool) {
	for t.nb() > 1 && a.Chunk%(t.nb()*a.Block) != 0 {
		t.Span /= 2
	}
	return onlineFit(a, t, 1, limit)
}

// onlineSplitPlan is the split order's geometry under t: G = a.Parts()
// groups of R × N threads, N the tile's slices or fewer (halved until a
// sub-tile of N keys fits), R the tile's rows or fewer (at most 256/(G·N)
// threads in all), the first that fits with the workgroup's rows of a
// group within a sub-tile's keys (the parts' outputs are combined in the
// staged rows). The row block is kept; Half is not (a group's outputs
// are whole vec4s); the span is halved until the parts' blocks are whole
// spans.
func onlineSplitPlan(a ir.Attention, t OnlineTile, limit int) (onlineShape, bool) {
	G := a.Parts()
	t.Half = false
	for t.nb() > 1 && a.Chunk%(t.nb()*a.Block) != 0 {
		t.Span /= 2 // a part's blocks in whole spans
	}
	for N := t.Slices; N >= 1; N /= 2 {
		for R := min(t.Rows, attThreads/(G*N)); R >= 1; R /= 2 {
			u := t
			u.Rows, u.Slices = R, N
			if p, ok := onlineFit(a, u, G, limit); ok && R*u.rq() <= p.ks {
				return p, true
			}
		}
	}
	return onlineShape{}, false
}

// onlineFit is onlinePlan for G groups of t's threads (G > 1: the split
// order's parts side by side, each group with its own staged keys,
// probabilities and maxima, and the parts' maxima and l beside them),
// within limit bytes of workgroup storage.
func onlineFit(a ir.Attention, t OnlineTile, G, limit int) (onlineShape, bool) {
	R, N, RR, nb := t.Rows, t.Slices, t.Rows*t.rq(), t.nb()
	if R < 1 || N < 1 || G*R*N > attThreads || a.Block%N != 0 || t.RowBlock < 0 || t.RowBlock > onlineMaxRowBlock ||
		t.rq() > 1 && t.rq()*4*((a.D+3)/4) > onlineQRegs || t.Span < 0 || t.Span > onlineMaxSpan || nb&(nb-1) != 0 ||
		G > 1 && a.Chunk%(nb*a.Block) != 0 {
		return onlineShape{}, false
	}
	p := onlineShape{OnlineTile: t, d4: (a.D + 3) / 4, ev: ((a.E+N-1)/N + 3) / 4, G: G, W: nb * a.Block}
	p.ew4 = N * p.ev
	if p.half = t.Half && N%2 == 0 && (a.E+3)/4 <= N/2; p.half {
		p.ev, p.ew4 = 1, (a.E+3)/4
	}
	if p.two = t.TwoLevel && N >= 8 && N%4 == 0; p.two {
		p.TreeMax = true
	}
	p.w4 = max(p.d4+1, p.ew4)
	// A row's probabilities and maxima are padded by a vec4 (against bank
	// conflicts between rows).
	// (A span's probabilities are W keys a row, its maxima and c a block's
	// each.)
	p.pp, p.mp, p.m2 = (p.W+3)/4+1, (N+3)/4+1, (N/4+3)/4+1
	storage := func(ks int) int {
		n := 16*ks*p.w4 + 4*p.W*RR + 4*RR*N*nb
		if t.VecP {
			n += 16*RR*p.pp - 4*p.W*RR
		}
		if p.TreeMax {
			n += (16*RR*p.mp - 4*RR*N) * nb
		}
		if p.two {
			n += 16 * RR * p.m2 * nb
		}
		if t.RowC {
			n += 4 * RR * nb
		}
		if t.RowL {
			n += 4 * RR
		}
		if G > 1 {
			n += 8 * RR // the part's m and weighted l, for the combine
		}
		return G * n
	}
	p.ks = p.W
	for p.ks > N && storage(p.ks) > limit {
		p.ks /= 2
	}
	if p.ks < N || p.W%p.ks != 0 || storage(p.ks) > limit {
		return onlineShape{}, false
	}
	p.pk, p.kp = p.ks/N, min(p.ks, a.Block)/N
	return p, true
}

// OnlineTileFits reports whether tile t runs attention a's online kernel
// (a.Block set) as itself on a device of WebGPU's default workgroup
// storage; where it does not, the default tile runs instead (so a
// benchmark of t would time the default under t's name).
func OnlineTileFits(a ir.Attention, t OnlineTile) bool {
	return OnlineTileFitsIn(a, t, attStorage)
}

// OnlineTileFitsIn is OnlineTileFits on a device of storage bytes of
// workgroup storage (Target.Storage), which t fills only where Wide.
func OnlineTileFitsIn(a ir.Attention, t OnlineTile, storage int) bool {
	_, ok := onlinePlan(a, t, storage, false)
	return ok
}

// onlineKernelPlan is onlinePlan under AttentionOnlineTile, or under
// DefaultOnlineTile where that has none (it fits every head up to
// ir.AttentionOnlineMaxHead), on a device of storage bytes.
func onlineKernelPlan(a ir.Attention, storage int, parts bool) onlineShape {
	if p, ok := onlinePlan(a, AttentionOnlineTile, storage, parts); ok {
		return p
	}
	p, ok := onlinePlan(a, DefaultOnlineTile, storage, parts)
	if !ok {
		panic(fmt.Sprintf("wgsl: BUG: the default online attention tile does not fit d %d, e %d", a.D, a.E))
	}
	return p
}

// attentionOnline emits an attention kernel in the online order
// (ir/attention.go; a.Block > 0): each score is computed once. A
// workgroup holds Rows query rows of one batch index, Slices threads a
// row (AttentionOnlineTile), each thread holding its row of q in registers (vec4s)
// and its vec4 outputs o (e = 4·(slice·ev + y) + lane). Per key block:
// k's sub-tiles are staged through workgroup memory (fetched into
// registers one stage ahead), each thread scores its pk keys of each
// (one accumulator per key walking d ascending, each product rounded on
// its own), keeping them in registers; the row's maximum m' is its
// threads' maxima folded with m through Ms, as order keys (maximum
// selects: any grouping gives the order's bits); each thread writes p = exp(t − m')
// of its keys to Ps and rounds l and o times c = exp(m − m'); then v's
// sub-tiles are staged and each thread adds, for the block's keys
// ascending, p into l and p·v into its outputs. Each output is o / l,
// then the epilogue. In the split order (a.Chunk > 0) the workgroup holds
// a group of such threads for each part (onlineSplitPlan), all running
// the same blocks at once (group g from key g·Chunk; keys past T, in the
// last part, score -Inf and add nothing), each with its own staged keys,
// probabilities and maxima, and the parts are combined at the end
// (combineParts) before the division; a kernel of the parts (Blocks) runs
// one part a workgroup (wg.z) and writes it undivided (writeParts), for
// the combine kernel. storage is the device's workgroup
// storage (Target.storage), which the plan fills only under a Wide tile.
func attentionOnline(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, storage int) {
	a := ir.AttentionKernel(k)
	S, T, D, E, B := a.S, a.T, a.D, a.E, a.Block
	parts := k.Blocks > 1 // one part of the split order a workgroup (wg.z), written undivided
	p := onlineKernelPlan(a, storage, parts)
	R, N, Rq, G, nb, W := p.Rows, p.Slices, p.rq(), p.G, p.nb(), p.W
	// perPart: the keys run are a part's (group g's, or the workgroup's)
	perPart := G > 1 || parts
	RR := R * Rq     // the workgroup's query rows
	RRt := G * RR    // the workgroup arrays' rows: a group's rows for each part
	threads := R * N // a group's threads (all of them without a split)
	ew4 := p.ew4
	s.Workgroup = [3]int{G * threads, 1, 1}
	s.Groups = [3]int{(S + RR - 1) / RR, max(a.Batch.Len(), 1), 1}
	if parts {
		s.Groups[2] = a.Parts()
	}
	scale := Lang.Const(len(codegen.Constants(k)) - 1) // the nest's Params[0], after the body's slots
	off := func(j int, r, c string) string { return attOffset(k, j, r, c) }
	apply := func(name string, op ir.Op, args ...string) []string { return attApply(k, name, op, args...) }
	row4 := func(j int, r, c4 string, cols int) string { return attRow(k, j, r, c4, cols, 4) }
	// sf is the suffix of query row r's registers (none without a row
	// block, so that those kernels are as before); wr is its row in the
	// workgroup arrays (rows i, i + Rows, …).
	sf := func(r int) string {
		if Rq == 1 {
			return ""
		}
		return fmt.Sprintf("_r%d", r)
	}
	wr := func(r int) string {
		base := "i"
		if G > 1 {
			base = "gi" // the group's rows: g·RR + i
		}
		if r == 0 {
			return base
		}
		return fmt.Sprintf("%s + %du", base, r*R)
	}
	// decl declares workgroup array name of rows × cols elements; at
	// indexes it (Index2D: two-dimensional, else flat).
	decl := func(name, elem string, rows, cols int, comment string) {
		if p.Index2D {
			fmt.Fprintf(b, "var<workgroup> %s: array<array<%s, %d>, %d>;%s\n", name, elem, cols, rows, comment)
			return
		}
		fmt.Fprintf(b, "var<workgroup> %s: array<%s, %d>;%s\n", name, elem, rows*cols, comment)
	}
	at := func(name, r, c string, cols int) string {
		if p.Index2D {
			return fmt.Sprintf("%s[%s][%s]", name, r, c)
		}
		return fmt.Sprintf("%s[(%s) * %du + %s]", name, r, cols, c)
	}
	decl("KVs", "vec4<f32>", G*p.ks, p.w4, "")
	// vat is key j's vec4 y of the staged v (of the group's keys: gk·w4
	// vec4s on).
	vat := func(j, y int) string {
		switch {
		case p.Index2D && G > 1:
			return fmt.Sprintf("KVs[gk + %du][vb + %du]", j, y)
		case p.Index2D:
			return fmt.Sprintf("KVs[%du][vb + %du]", j, y)
		case G > 1:
			return fmt.Sprintf("KVs[gk * %du + %du + vb + %du]", p.w4, j*p.w4, y)
		}
		return fmt.Sprintf("KVs[%du + vb + %du]", j*p.w4, y)
	}
	// kvRow is the staged row of the group's key x (an expression).
	kvRow := func(x string) string {
		if G > 1 {
			return "gk + " + x
		}
		return x
	}
	if p.VecP {
		decl("Ps", "vec4<f32>", RRt, p.pp, " // row by row")
	} else {
		decl("Ps", "f32", W, RRt, "")
	}
	// A span's maxima and c: a block's after another (nb = 1: one).
	if p.TreeMax {
		decl("Ms", "vec4<u32>", nb*RRt, p.mp, " // order keys of the threads' maxima, row by row")
	} else {
		decl("Ms", "u32", nb*N, RRt, " // order keys of the threads' maxima")
	}
	if p.RowC {
		fmt.Fprintf(b, "var<workgroup> Cs: array<f32, %d>; // c of each row\n", nb*RRt)
	}
	if p.RowL {
		fmt.Fprintf(b, "var<workgroup> Ls: array<f32, %d>; // l of each row\n", RRt)
	}
	if p.two {
		decl("M2", "vec4<u32>", nb*RRt, p.m2, " // the maxima's folds of four, row by row")
	}
	if G > 1 {
		fmt.Fprintf(b, "var<workgroup> Mp: array<f32, %d>; // each part's m of each row\n", RRt)
		fmt.Fprintf(b, "var<workgroup> Lp: array<f32, %d>; // each part's l·w of each row\n", RRt)
	}
	b.WriteString("\n")
	b.WriteString(maxKeyFuncs)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", G*threads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	if G > 1 {
		// Group g runs part g: keys g·Chunk … (its own tid lt, rows gi and
		// staged keys gk on).
		fmt.Fprintf(b, "\tlet lt = lid.x %% %du;\n\tlet g = lid.x / %du;\n\tlet i = lt %% %du;\n\tlet sl = lt / %du;\n\tlet z = wg.y;\n", threads, threads, R, R)
		fmt.Fprintf(b, "\tlet gi = g * %du + i;\n\tlet gk = g * %du;\n", RR, p.ks)
	} else {
		fmt.Fprintf(b, "\tlet tid = lid.x;\n\tlet i = tid %% %du;\n\tlet sl = tid / %du;\n\tlet z = wg.y;\n", R, R)
	}
	if parts {
		b.WriteString("\tlet g = wg.z; // the part: keys g·Chunk …\n")
	}
	for r := range Rq {
		qi := "i"
		if r > 0 {
			qi = fmt.Sprintf("i + %du", r*R)
		}
		fmt.Fprintf(b, "\tlet qi%s = wg.x * %du + %s;\n\tlet qc%s = min(qi%s, %du);\n", sf(r), RR, qi, sf(r), sf(r), S-1)
	}
	if p.half {
		// Thread sl holds e = 4·vb + 2·hb + 0, 1.
		fmt.Fprintf(b, "\tlet kb = sl * %du;\n\tlet vb = sl %% %du;\n\tlet hb = sl / %du;\n", p.kp, N/2, N/2)
	} else {
		fmt.Fprintf(b, "\tlet kb = sl * %du;\n\tlet vb = sl * %du;\n", p.kp, p.ev)
	}
	// keyOff is the offset from kb of a thread's key y of a sub-tile: kp
	// keys of each block the sub-tile spans (y where it spans one).
	keyOff := func(y int) int { return y/p.kp*min(p.ks, B) + y%p.kp }
	// blockOf is the span's block of a thread's key y of sub-tile sub.
	blockOf := func(sub, y int) int { return (sub*p.ks + keyOff(y)) / B }
	// bs is the suffix of block bk's m', c and maxima (none without a
	// span, so that those kernels are as before).
	bs := func(bk int) string {
		if nb == 1 {
			return ""
		}
		return fmt.Sprintf("_b%d", bk)
	}
	for r := range Rq {
		for c4 := range p.d4 {
			fmt.Fprintf(b, "\tlet q%d%s = %s;\n", c4, sf(r), row4(0, "qc"+sf(r), fmt.Sprintf("%du", c4), D))
		}
	}
	// The staging registers: enough for a sub-tile of k or of v.
	nk, nv := (p.ks*p.d4+threads-1)/threads, (p.ks*ew4+threads-1)/threads
	for x := range max(nk, nv) {
		fmt.Fprintf(b, "\tvar sr%d = vec4<f32>(0.0);\n", x)
	}
	// A stage is one sub-tile of k (v false) or v at key kt + sub·ks.
	type stage struct {
		v   bool
		sub int
	}
	geom := func(st stage) (j, n, w4, cols int) {
		if st.v {
			return 2, nv, ew4, E
		}
		return 1, nk, p.d4, D
	}
	// fetch loads stage st of the block at key kt (an expression) into
	// the registers, 0 past T.
	ltid := "tid" // the thread within its group
	if G > 1 {
		ltid = "lt"
	}
	fetch := func(tabs int, st stage, kt string) {
		in := strings.Repeat("\t", tabs)
		j, n, w4, cols := geom(st)
		for x := range n {
			fmt.Fprintf(b, "%s{\n%s\tlet e = %s + %du;\n%s\tlet key = %s + %du + e / %du;\n", in, in, ltid, x*threads, in, kt, st.sub*p.ks, w4)
			fmt.Fprintf(b, "%s\tsr%d = vec4<f32>(0.0);\n", in, x)
			guard := fmt.Sprintf("e < %du && key < %du", p.ks*w4, T)
			if c4 := (cols + 3) / 4; c4 < w4 {
				guard += fmt.Sprintf(" && e %% %du < %du", w4, c4)
			}
			fmt.Fprintf(b, "%s\tif (%s) {\n", in, guard)
			fmt.Fprintf(b, "%s\t\tsr%d = %s;\n%s\t}\n%s}\n", in, x, row4(j, "key", fmt.Sprintf("(e %% %du)", w4), cols), in, in)
		}
	}
	// store writes the registers of stage st into KVs, between barriers.
	store := func(st stage) {
		_, n, w4, _ := geom(st)
		b.WriteString("\t\tworkgroupBarrier();\n")
		for x := range n {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet e = %s + %du;\n", ltid, x*threads)
			fmt.Fprintf(b, "\t\t\tif (e < %du) { %s = sr%d; }\n\t\t}\n", p.ks*w4, at("KVs", kvRow(fmt.Sprintf("e / %du", w4)), fmt.Sprintf("e %% %du", w4), p.w4), x)
		}
		b.WriteString("\t\tworkgroupBarrier();\n")
	}
	// The stages of a block with keys keys, in order; after the last, the
	// next block's first (k's sub-tile 0), fetched while v's last is used.
	stages := func(keys int) []stage {
		var ss []stage
		for _, v := range []bool{false, true} {
			for sub := 0; sub*p.ks < keys; sub++ {
				ss = append(ss, stage{v, sub})
			}
		}
		return ss
	}
	// next fetches the stage after ss[x], if any.
	next := func(ss []stage, x int, last bool) {
		if x+1 < len(ss) {
			fetch(2, ss[x+1], "kt")
			return
		}
		if !last {
			if perPart {
				// The part's next block (keys past T are fetched as 0).
				fmt.Fprintf(b, "\t\tif (bi + 1u < %du) {\n", a.Chunk/W)
			} else {
				fmt.Fprintf(b, "\t\tif (kt + %du < %du) {\n", W, T)
			}
			fetch(3, stage{}, fmt.Sprintf("kt + %du", W))
			b.WriteString("\t\t}\n")
		}
	}
	lanes := "xyzw"
	// score renders key j's score of query row r from accumulator sc.
	score := func(r int, sc, j string) string {
		t := Lang.Keep(sc + " * " + scale)
		if k.Masked() {
			t += fmt.Sprintf(" + in3[%s]", off(3, "qc"+sf(r), fmt.Sprintf("min(%s, %du)", j, T-1)))
		}
		if a.Causal {
			t = Lang.Select("qi"+sf(r)+" < "+j, Lang.Opaque(0xff800000), t) // opaque: Tint refuses a constant -Inf
		}
		return t
	}
	// pjAt is key jb's probability of query row r in Ps (VecP: of the
	// vec4 the row's pv registers hold).
	pjAt := func(r, jb int) string {
		switch {
		case p.VecP:
			return fmt.Sprintf("pv%d%s.%c", jb/4, sf(r), lanes[jb%4])
		case p.Index2D:
			return fmt.Sprintf("Ps[%du][%s]", jb, wr(r))
		case r == 0 && G == 1:
			return fmt.Sprintf("Ps[%du + i]", jb*RR)
		}
		return fmt.Sprintf("Ps[%du + %s]", jb*RRt, wr(r))
	}
	// ragged: in the split order, a part's blocks may end before its
	// width (the last part's, at T): every key is checked against T at
	// run time, and a key past it scores -Inf and adds nothing.
	ragged := perPart && T != a.Parts()*a.Chunk
	// kept opens key jb's guard where the keys are ragged (closed by
	// unkept).
	kept := func(in string, jb int) {
		if ragged {
			fmt.Fprintf(b, "%sif (kt + %du < %du) {\n", in, jb, T)
		}
	}
	unkept := func(in string) {
		if ragged {
			fmt.Fprintf(b, "%s}\n", in)
		}
	}
	// block emits one key block at kt with keys keys (last: no block
	// after it).
	block := func(keys int, last bool) {
		ss := stages(keys)
		x := 0
		// Score this thread's keys of each k sub-tile into t{sub}_{y}, for
		// each of its query rows: one staged k vec4 feeds Rq chains.
		for ; x < len(ss) && !ss[x].v; x++ {
			sub := ss[x].sub
			store(ss[x])
			next(ss, x, last)
			for r := range Rq {
				for y := range p.pk {
					fmt.Fprintf(b, "\t\tvar sc%d_%d%s = params.zero;\n", sub, y, sf(r))
				}
			}
			for c4 := range p.d4 {
				b.WriteString("\t\t{\n")
				for y := range p.pk {
					kv := at("KVs", kvRow(fmt.Sprintf("kb + %du", keyOff(y))), fmt.Sprintf("%du", c4), p.w4)
					if Rq == 1 {
						fmt.Fprintf(b, "\t\t\tlet p%d = %s;\n", y, Lang.Keep(fmt.Sprintf("q%d * %s", c4, kv)))
						continue
					}
					fmt.Fprintf(b, "\t\t\tlet k%d = %s;\n", y, kv)
					for r := range Rq {
						fmt.Fprintf(b, "\t\t\tlet p%d%s = %s;\n", y, sf(r), Lang.Keep(fmt.Sprintf("q%d%s * k%d", c4, sf(r), y)))
					}
				}
				for y := range p.pk {
					for r := range Rq {
						for l := 0; l < 4 && 4*c4+l < D; l++ {
							fmt.Fprintf(b, "\t\t\tsc%d_%d%s = sc%d_%d%s + p%d%s.%c;\n", sub, y, sf(r), sub, y, sf(r), y, sf(r), lanes[l])
						}
					}
				}
				b.WriteString("\t\t}\n")
			}
			for r := range Rq {
				for y := range p.pk {
					j := fmt.Sprintf("kt + %du + kb + %du", sub*p.ks, keyOff(y))
					t := score(r, fmt.Sprintf("sc%d_%d%s", sub, y, sf(r)), j)
					if rest := keys - sub*p.ks; rest < p.ks {
						t = Lang.Select(fmt.Sprintf("kb + %du < %du", keyOff(y), rest), t, Lang.Opaque(0xff800000))
					}
					if ragged {
						t = Lang.Select(fmt.Sprintf("%s < %du", j, T), t, Lang.Opaque(0xff800000))
					}
					fmt.Fprintf(b, "\t\tlet t%d_%d%s = %s;\n", sub, y, sf(r), t)
				}
			}
		}
		// m' folds m with this thread's scores, then the row's threads',
		// as maximum's order keys (maxKeyFuncs: a bijection, so
		// maximum's bits, NaNs included). In a span (nb > 1) each thread
		// folds each block's keys apart, the row's threads' folds of block
		// bk make its maximum, and m'_bk = max(m'_(bk−1), that): maximum is
		// associative, so each m'_bk is the block's m' of the online order.
		nbk := (keys + B - 1) / B // the span's blocks
		for r := range Rq {
			if nb == 1 {
				fmt.Fprintf(b, "\t\tvar mt%s = maxkey(mr%s);\n", sf(r), sf(r))
				for sub := 0; sub*p.ks < keys; sub++ {
					for y := range p.pk {
						fmt.Fprintf(b, "\t\tmt%s = combine_maxkey(mt%s, maxkey(t%d_%d%s));\n", sf(r), sf(r), sub, y, sf(r))
					}
				}
				continue
			}
			for bk := range nbk {
				first := true
				for sub := 0; sub*p.ks < keys; sub++ {
					for y := range p.pk {
						if blockOf(sub, y) != bk {
							continue
						}
						if first {
							fmt.Fprintf(b, "\t\tvar mt%s%s = maxkey(t%d_%d%s);\n", bs(bk), sf(r), sub, y, sf(r))
							first = false
							continue
						}
						fmt.Fprintf(b, "\t\tmt%s%s = combine_maxkey(mt%s%s, maxkey(t%d_%d%s));\n", bs(bk), sf(r), bs(bk), sf(r), sub, y, sf(r))
					}
				}
			}
		}
		// rowAt is query row r's row of block bk's maxima (and c).
		rowAt := func(bk, r int) string {
			if bk == 0 {
				return wr(r)
			}
			return fmt.Sprintf("%s + %du", wr(r), bk*RRt)
		}
		// rowKey[r][bk] names the row's fold of block bk (nb > 1).
		rowKey := make([][]string, Rq)
		if p.TreeMax {
			for r := range Rq {
				for bk := range nbk {
					fmt.Fprintf(b, "\t\t%s[sl %% 4u] = mt%s%s;\n", at("Ms", rowAt(bk, r), "sl / 4u", p.mp), bs(bk), sf(r))
				}
			}
			b.WriteString("\t\tworkgroupBarrier();\n")
			arr, pitch, n := "Ms", p.mp, N
			if p.two {
				// The first N/4 threads of the row fold four each.
				fmt.Fprintf(b, "\t\tif (sl < %du) {\n", N/4)
				for r := range Rq {
					for bk := range nbk {
						q := bs(bk) + sf(r)
						fmt.Fprintf(b, "\t\t\tlet mq%s = %s;\n", q, at("Ms", rowAt(bk, r), "sl", p.mp))
						fmt.Fprintf(b, "\t\t\t%s[sl %% 4u] = combine_maxkey(combine_maxkey(mq%s.x, mq%s.y), combine_maxkey(mq%s.z, mq%s.w));\n", at("M2", rowAt(bk, r), "sl / 4u", p.m2), q, q, q, q)
					}
				}
				b.WriteString("\t\t}\n\t\tworkgroupBarrier();\n")
				arr, pitch, n = "M2", p.m2, N/4
			}
			for r := range Rq {
				for bk := range nbk {
					q := bs(bk) + sf(r)
					var keys []string
					for x := range (n + 3) / 4 {
						fmt.Fprintf(b, "\t\tlet mv%d%s = %s;\n", x, q, at(arr, rowAt(bk, r), fmt.Sprintf("%du", x), pitch))
						for l := 0; l < 4 && 4*x+l < n; l++ {
							keys = append(keys, fmt.Sprintf("mv%d%s.%c", x, q, lanes[l]))
						}
					}
					// Fold neighbours, left before right, level by level.
					for lvl := 0; len(keys) > 1; lvl++ {
						var next []string
						for x := 0; x+1 < len(keys); x += 2 {
							name := fmt.Sprintf("mk%d_%d%s", lvl, x/2, q)
							fmt.Fprintf(b, "\t\tlet %s = combine_maxkey(%s, %s);\n", name, keys[x], keys[x+1])
							next = append(next, name)
						}
						if len(keys)%2 == 1 {
							next = append(next, keys[len(keys)-1])
						}
						keys = next
					}
					if nb == 1 {
						fmt.Fprintf(b, "\t\tlet mn%s = unmaxkey(%s);\n", sf(r), keys[0])
					}
					rowKey[r] = append(rowKey[r], keys[0])
				}
			}
		} else {
			ms := func(bk, r, x int) string {
				x += bk * N
				if p.Index2D {
					return fmt.Sprintf("Ms[%du][%s]", x, wr(r))
				}
				if x == 0 {
					return fmt.Sprintf("Ms[%s]", wr(r))
				}
				return fmt.Sprintf("Ms[%s + %du]", wr(r), x*RRt)
			}
			for r := range Rq {
				for bk := range nbk {
					mine := "Ms[tid]"
					switch {
					case p.Index2D && bk > 0:
						mine = fmt.Sprintf("Ms[sl + %du][%s]", bk*N, wr(r))
					case p.Index2D:
						mine = fmt.Sprintf("Ms[sl][%s]", wr(r))
					case Rq > 1 || G > 1:
						mine = fmt.Sprintf("Ms[sl * %du + %s]", RRt, rowAt(bk*N, r))
					case bk > 0:
						mine = fmt.Sprintf("Ms[tid + %du]", bk*N*RRt)
					}
					fmt.Fprintf(b, "\t\t%s = mt%s%s;\n", mine, bs(bk), sf(r))
				}
			}
			b.WriteString("\t\tworkgroupBarrier();\n")
			for r := range Rq {
				for bk := range nbk {
					q := bs(bk) + sf(r)
					fmt.Fprintf(b, "\t\tvar mk%s = %s;\n", q, ms(bk, r, 0))
					for x := 1; x < N; x++ {
						fmt.Fprintf(b, "\t\tmk%s = combine_maxkey(mk%s, %s);\n", q, q, ms(bk, r, x))
					}
					if nb == 1 {
						fmt.Fprintf(b, "\t\tlet mn%s = unmaxkey(mk%s);\n", sf(r), sf(r))
					}
					rowKey[r] = append(rowKey[r], "mk"+q)
				}
			}
		}
		if nb > 1 {
			// m'_bk, block by block from m.
			for r := range Rq {
				fmt.Fprintf(b, "\t\tvar mc%s = maxkey(mr%s);\n", sf(r), sf(r))
				for bk := range nbk {
					fmt.Fprintf(b, "\t\tmc%s = combine_maxkey(mc%s, %s);\n\t\tlet mn%s%s = unmaxkey(mc%s);\n", sf(r), sf(r), rowKey[r][bk], bs(bk), sf(r), sf(r))
				}
			}
		}
		// p = exp(t − m') of this thread's keys into Ps; l and o times c.
		for r := range Rq {
			for sub := 0; sub*p.ks < keys; sub++ {
				rest := keys - sub*p.ks
				for y := range p.pk {
					if blockOf(sub, y) >= nbk {
						continue // a block past the span's keys (the last span's)
					}
					b.WriteString("\t\t{\n")
					if rest < p.ks {
						fmt.Fprintf(b, "\t\tif (kb + %du < %du) {\n", keyOff(y), rest)
					}
					fmt.Fprintf(b, "\t\t\tlet ts = t%d_%d%s;\n", sub, y, sf(r))
					b.WriteString(codegen.Indent(apply("us", ir.OpSub, "ts", "mn"+bs(blockOf(sub, y))+sf(r)), 3))
					b.WriteString(codegen.Indent(apply("ps", ir.OpExp, "us"), 3))
					if p.VecP {
						fmt.Fprintf(b, "\t\t\tlet pk = %du + kb + %du;\n\t\t\t%s[pk %% 4u] = ps;\n", sub*p.ks, keyOff(y), at("Ps", wr(r), "pk / 4u", p.pp))
					} else {
						fmt.Fprintf(b, "\t\t\t%s = ps;\n", at("Ps", fmt.Sprintf("%du + kb + %du", sub*p.ks, keyOff(y)), wr(r), RRt))
					}
					if rest < p.ks {
						b.WriteString("\t\t}\n")
					}
					b.WriteString("\t\t}\n")
				}
			}
		}
		rescale := func(r int, in string) {
			fmt.Fprintf(b, "%sls%s = %s;\n", in, sf(r), Lang.Keep(fmt.Sprintf("ls%s * cs%s", sf(r), sf(r))))
			for y := range p.ev {
				fmt.Fprintf(b, "%so%d%s = %s;\n", in, y, sf(r), Lang.Keep(fmt.Sprintf("o%d%s * cs%s", y, sf(r), sf(r))))
			}
		}
		// In a span: c_bk = exp(m'_(bk−1) − m'_bk) (m'_(−1) = m), l and
		// o rescaled by c_0 here and by c_bk before block bk's first key.
		csOf := func(bk, r int) string { return "cs" + bs(bk) + sf(r) }
		prevM := func(bk, r int) string {
			if bk == 0 {
				return "mr" + sf(r)
			}
			return "mn" + bs(bk-1) + sf(r)
		}
		rescaleL := func(r, bk int, in string) {
			fmt.Fprintf(b, "%sls%s = %s;\n", in, sf(r), Lang.Keep(fmt.Sprintf("ls%s * %s", sf(r), csOf(bk, r))))
		}
		rescaleO := func(r, bk int, in string) {
			for y := range p.ev {
				fmt.Fprintf(b, "%so%d%s = %s;\n", in, y, sf(r), Lang.Keep(fmt.Sprintf("o%d%s * %s", y, sf(r), csOf(bk, r))))
			}
		}
		switch {
		case nb > 1 && p.RowC:
			b.WriteString("\t\tif (sl == 0u) {\n")
			for r := range Rq {
				for bk := range nbk {
					b.WriteString("\t\t\t{\n")
					b.WriteString(codegen.Indent(apply("ud", ir.OpSub, prevM(bk, r), "mn"+bs(bk)+sf(r)), 4))
					b.WriteString(codegen.Indent(apply("cs", ir.OpExp, "ud"), 4))
					fmt.Fprintf(b, "\t\t\t\tCs[%s] = cs;\n\t\t\t}\n", rowAt(bk, r))
				}
			}
			b.WriteString("\t\t}\n")
		case nb > 1:
			for r := range Rq {
				for bk := range nbk {
					fmt.Fprintf(b, "\t\tvar %s: f32;\n\t\t{\n", csOf(bk, r))
					b.WriteString(codegen.Indent(apply("ud", ir.OpSub, prevM(bk, r), "mn"+bs(bk)+sf(r)), 3))
					b.WriteString(codegen.Indent(apply("cs", ir.OpExp, "ud"), 3))
					fmt.Fprintf(b, "\t\t\t%s = cs;\n\t\t}\n", csOf(bk, r))
				}
				rescaleL(r, 0, "\t\t")
				rescaleO(r, 0, "\t\t")
			}
		case p.RowC:
			// The row's first thread computes c; the others read it after
			// the v stage's barrier and rescale there.
			b.WriteString("\t\tif (sl == 0u) {\n")
			for r := range Rq {
				in := "\t\t\t"
				if Rq > 1 {
					b.WriteString("\t\t\t{\n")
					in = "\t\t\t\t"
				}
				b.WriteString(codegen.Indent(apply("ud", ir.OpSub, "mr"+sf(r), "mn"+sf(r)), len(in)))
				b.WriteString(codegen.Indent(apply("cs", ir.OpExp, "ud"), len(in)))
				fmt.Fprintf(b, "%sCs[%s] = cs;\n", in, wr(r))
				if Rq > 1 {
					b.WriteString("\t\t\t}\n")
				}
			}
			b.WriteString("\t\t}\n")
		case Rq == 1:
			b.WriteString(codegen.Indent(apply("ud", ir.OpSub, "mr", "mn"), 2))
			b.WriteString(codegen.Indent(apply("cs", ir.OpExp, "ud"), 2))
			rescale(0, "\t\t")
		default:
			for r := range Rq {
				b.WriteString("\t\t{\n")
				b.WriteString(codegen.Indent(apply("ud", ir.OpSub, "mr"+sf(r), "mn"+sf(r)), 3))
				b.WriteString(codegen.Indent(apply("cs"+sf(r), ir.OpExp, "ud"), 3))
				rescale(r, "\t\t\t")
				b.WriteString("\t\t}\n")
			}
		}
		for r := range Rq {
			fmt.Fprintf(b, "\t\tmr%s = mn%s%s;\n", sf(r), bs(nbk-1), sf(r))
		}
		// v's sub-tiles: l and o over the block's keys ascending.
		for first := true; x < len(ss); x, first = x+1, false {
			sub := ss[x].sub
			store(ss[x])
			next(ss, x, last)
			if p.RowC && first && nb == 1 {
				for r := range Rq {
					fmt.Fprintf(b, "\t\tlet cs%s = Cs[%s];\n", sf(r), wr(r))
					rescale(r, "\t\t")
				}
			}
			if p.RowC && first && nb > 1 {
				for r := range Rq {
					for bk := range nbk {
						fmt.Fprintf(b, "\t\tlet %s = Cs[%s];\n", csOf(bk, r), rowAt(bk, r))
					}
					rescaleL(r, 0, "\t\t")
					rescaleO(r, 0, "\t\t")
				}
			}
			// starts reports whether span key jb starts a block after the
			// first, whose c rescales l and o before it.
			starts := func(jb int) bool { return jb > 0 && jb%B == 0 }
			n := min(p.ks, keys-sub*p.ks)
			if p.VecP {
				for r := range Rq {
					for j := range n {
						if jb := sub*p.ks + j; jb%4 == 0 {
							fmt.Fprintf(b, "\t\tlet pv%d%s = %s;\n", jb/4, sf(r), at("Ps", wr(r), fmt.Sprintf("%du", jb/4), p.pp))
						}
					}
				}
			}
			// products emits the block's keys' p·v (half: the vec4
			// column's half sw) into each query row's outputs, and l's
			// sums where every thread keeps l.
			products := func(sw string, withL bool) {
				for j := range n {
					jb := sub*p.ks + j
					if starts(jb) {
						for r := range Rq {
							if withL {
								rescaleL(r, jb/B, "\t\t")
							}
							rescaleO(r, jb/B, "\t\t")
						}
					}
					kept("\t\t", jb)
					if Rq == 1 {
						if !withL {
							fmt.Fprintf(b, "\t\t{\n\t\t\tlet pj = %s;\n", pjAt(0, jb))
						} else {
							fmt.Fprintf(b, "\t\t{\n\t\t\tlet pj = %s;\n\t\t\tls = ls + pj;\n", pjAt(0, jb))
						}
						for y := range p.ev {
							if sw != "" {
								fmt.Fprintf(b, "\t\t\to%d = o%d + %s;\n", y, y, Lang.Keep(fmt.Sprintf("pj * %s%s", at("KVs", fmt.Sprintf("%du", j), "vb", p.w4), sw)))
								continue
							}
							fmt.Fprintf(b, "\t\t\to%d = o%d + %s;\n", y, y, Lang.Keep("pj * "+vat(j, y)))
						}
						b.WriteString("\t\t}\n")
						unkept("\t\t")
						continue
					}
					// One load of each staged v vec4 for all the rows.
					b.WriteString("\t\t{\n")
					for y := range p.ev {
						v := vat(j, y)
						if sw != "" {
							v = at("KVs", fmt.Sprintf("%du", j), "vb", p.w4) + sw
						}
						fmt.Fprintf(b, "\t\t\tlet v%d = %s;\n", y, v)
					}
					for r := range Rq {
						fmt.Fprintf(b, "\t\t\tlet pj%s = %s;\n", sf(r), pjAt(r, jb))
						if withL {
							fmt.Fprintf(b, "\t\t\tls%s = ls%s + pj%s;\n", sf(r), sf(r), sf(r))
						}
						for y := range p.ev {
							fmt.Fprintf(b, "\t\t\to%d%s = o%d%s + %s;\n", y, sf(r), y, sf(r), Lang.Keep(fmt.Sprintf("pj%s * v%d", sf(r), y)))
						}
					}
					b.WriteString("\t\t}\n")
					unkept("\t\t")
				}
			}
			// sums emits l's sums of the block's keys, for each row.
			sums := func(in string) {
				for r := range Rq {
					for j := range n {
						if starts(sub*p.ks + j) {
							rescaleL(r, (sub*p.ks+j)/B, in)
						}
						kept(in, sub*p.ks+j)
						fmt.Fprintf(b, "%sls%s = ls%s + %s;\n", in, sf(r), sf(r), pjAt(r, sub*p.ks+j))
						unkept(in)
					}
				}
			}
			switch {
			case p.half:
				// One branch a warp (hb is uniform over a warp's slices
				// where Rows·Slices/2 is a multiple of 32).
				b.WriteString("\t\tif (hb == 0u) {\n")
				products(".xy", false)
				b.WriteString("\t\t} else {\n")
				products(".zw", false)
				b.WriteString("\t\t}\n")
				if !p.RowL {
					// l by every thread, after the products.
					sums("\t\t")
				}
			default:
				products("", !p.RowL)
			}
			if p.RowL {
				b.WriteString("\t\tif (sl == 0u) {\n")
				sums("\t\t\t")
				b.WriteString("\t\t}\n")
			}
		}
	}
	for r := range Rq {
		fmt.Fprintf(b, "\tvar mr%s = %s; // -MaxFloat32\n", sf(r), Lang.Opaque(0xff7fffff))
		fmt.Fprintf(b, "\tvar ls%s = params.zero;\n", sf(r))
	}
	ovec := "vec4"
	if p.half {
		ovec = "vec2"
	}
	for r := range Rq {
		for y := range p.ev {
			fmt.Fprintf(b, "\tvar o%d%s = %s<f32>(params.zero);\n", y, sf(r), ovec)
		}
	}
	whole, rest := T/W*W, T%W
	if perPart {
		// Each group runs its part's blocks from g·Chunk (the last part's
		// past T: ragged).
		fetch(1, stage{}, fmt.Sprintf("g * %du", a.Chunk))
		fmt.Fprintf(b, "\tfor (var bi = 0u; bi < %du; bi++) {\n\t\tlet kt = g * %du + bi * %du;\n", a.Chunk/W, a.Chunk, W)
		block(W, false)
		b.WriteString("\t}\n")
		whole, rest = 0, 0
	} else {
		fetch(1, stage{}, "0u")
	}
	if whole > 0 {
		fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, W)
		block(W, false) // the last whole span's fetch is skipped at run time
		b.WriteString("\t}\n")
	}
	if rest > 0 {
		fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", whole)
		block(rest, true)
		b.WriteString("\t}\n")
	}
	if p.RowL {
		b.WriteString("\tif (sl == 0u) {")
		if Rq == 1 {
			fmt.Fprintf(b, " Ls[%s] = ls; }\n", wr(0))
		} else {
			b.WriteString("\n")
			for r := range Rq {
				fmt.Fprintf(b, "\t\tLs[%s] = ls%s;\n", wr(r), sf(r))
			}
			b.WriteString("\t}\n")
		}
		b.WriteString("\tworkgroupBarrier();\n")
		for r := range Rq {
			fmt.Fprintf(b, "\tls%s = Ls[%s];\n", sf(r), wr(r))
		}
	}
	if G > 1 {
		combineParts(b, p, sf, wr, apply)
	}
	if parts {
		writeParts(b, k, a, p, sf)
		return
	}
	if Rq == 1 {
		fmt.Fprintf(b, "\tif (qi >= %du) { return; }\n", S)
	}
	for r := range Rq {
		in := "\t"
		if Rq > 1 {
			fmt.Fprintf(b, "\tif (qi%s < %du) {\n", sf(r), S)
			in = "\t\t"
		}
		p.eachOutput(func(y int, lane byte, ve string) {
			fmt.Fprintf(b, "%s{\n%s\tlet ve = %s;\n%s\tif (ve < %du) {\n%s\t\tlet ov = o%d%s.%c;\n", in, in, ve, in, E, in, y, sf(r), lane)
			b.WriteString(codegen.Indent(apply("acc", ir.OpDiv, "ov", "ls"+sf(r)), len(in)+2))
			fmt.Fprintf(b, "%s\t\tlet i = (z * %du + qi%s) * %du + ve;\n", in, S, sf(r), E)
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), len(in)+2))
			b.WriteString(codegen.Indent(stores(k, "i"), len(in)+2))
			fmt.Fprintf(b, "%s\t}\n%s}\n", in, in)
		})
		if Rq > 1 {
			b.WriteString("\t}\n")
		}
	}
	b.WriteString("}\n")
}

// eachOutput calls f for each output a thread holds: its register o{y},
// the lane of it, and its column (an expression of the thread's vb, and
// hb under Half).
func (p onlineShape) eachOutput(f func(y int, lane byte, ve string)) {
	for y := range p.ev {
		for l := range 4 {
			ve := fmt.Sprintf("vb * 4u + %du", 4*y+l)
			if p.half {
				if l >= 2 {
					break
				}
				ve = fmt.Sprintf("vb * 4u + hb * 2u + %du", l)
			}
			f(y, "xyzw"[l], ve)
		}
	}
}

// writeParts ends a kernel of the split order's parts (Blocks): each
// query row's part g, [E+2] at ((z·S + qi)·P + g)·(E+2), its outputs o
// undivided from their threads, then m and l from the row's first.
func writeParts(b *strings.Builder, k *ir.Kernel, a ir.Attention, p onlineShape, sf func(int) string) {
	for r := range p.rq() {
		fmt.Fprintf(b, "\tif (qi%s < %du) {\n", sf(r), a.S)
		fmt.Fprintf(b, "\t\tlet at = ((z * %du + qi%s) * %du + g) * %du;\n", a.S, sf(r), k.Blocks, a.E+2)
		p.eachOutput(func(y int, lane byte, ve string) {
			fmt.Fprintf(b, "\t\tif (%s < %du) { out0[at + %s] = o%d%s.%c; }\n", ve, a.E, ve, y, sf(r), lane)
		})
		fmt.Fprintf(b, "\t\tif (sl == 0u) {\n\t\t\tout0[at + %du] = mr%s;\n\t\t\tout0[at + %du] = ls%s;\n\t\t}\n\t}\n", a.E, sf(r), a.E+1, sf(r))
	}
	b.WriteString("}\n")
}

// combineParts writes the split order's combine of the parts the groups
// ran (ir/attention.go): M, the maximum of the parts' m (as order keys,
// through Mp), w = exp(m − M) by each group for its part, l·w into Lp
// and o·w into the staged rows (free once every group is past its last v
// stage; a group's rows fit its keys' rows, onlineSplitPlan), then group
// 0 sums them over the parts ascending from +0 into l and o, and the
// others leave.
func combineParts(b *strings.Builder, p onlineShape, sf, wr func(int) string, apply func(string, ir.Op, ...string) []string) {
	R, Rq, G := p.Rows, p.rq(), p.G
	RR := R * Rq
	part := func(g, r int) string { // part g's row of query row r
		if g == 0 && r == 0 {
			return "i"
		}
		return fmt.Sprintf("i + %du", g*RR+r*R)
	}
	kv := func(row string, y int) string {
		if p.Index2D {
			return fmt.Sprintf("KVs[%s][vb + %du]", row, y)
		}
		return fmt.Sprintf("KVs[(%s) * %du + vb + %du]", row, p.w4, y)
	}
	b.WriteString("\tif (sl == 0u) {\n")
	for r := range Rq {
		fmt.Fprintf(b, "\t\tMp[%s] = mr%s;\n", wr(r), sf(r))
	}
	b.WriteString("\t}\n\tworkgroupBarrier();\n")
	for r := range Rq {
		fmt.Fprintf(b, "\tvar mk%s = maxkey(Mp[%s]);\n", sf(r), part(0, r))
		for g := 1; g < G; g++ {
			fmt.Fprintf(b, "\tmk%s = combine_maxkey(mk%s, maxkey(Mp[%s]));\n", sf(r), sf(r), part(g, r))
		}
		fmt.Fprintf(b, "\tlet mm%s = unmaxkey(mk%s);\n\t{\n", sf(r), sf(r))
		b.WriteString(codegen.Indent(apply("ud", ir.OpSub, "mr"+sf(r), "mm"+sf(r)), 2))
		b.WriteString(codegen.Indent(apply("ws", ir.OpExp, "ud"), 2))
		fmt.Fprintf(b, "\t\tls%s = %s;\n", sf(r), Lang.Keep(fmt.Sprintf("ls%s * ws", sf(r))))
		for y := range p.ev {
			fmt.Fprintf(b, "\t\to%d%s = %s;\n", y, sf(r), Lang.Keep(fmt.Sprintf("o%d%s * ws", y, sf(r))))
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("\tworkgroupBarrier();\n\tif (sl == 0u) {\n")
	for r := range Rq {
		fmt.Fprintf(b, "\t\tLp[%s] = ls%s;\n", wr(r), sf(r))
	}
	b.WriteString("\t}\n")
	for r := range Rq {
		for y := range p.ev {
			fmt.Fprintf(b, "\t%s = o%d%s;\n", kv(wr(r), y), y, sf(r))
		}
	}
	b.WriteString("\tworkgroupBarrier();\n\tif (g != 0u) { return; }\n")
	for r := range Rq {
		fmt.Fprintf(b, "\tls%s = params.zero;\n", sf(r))
		for y := range p.ev {
			fmt.Fprintf(b, "\to%d%s = vec4<f32>(params.zero);\n", y, sf(r))
		}
		for g := range G {
			fmt.Fprintf(b, "\tls%s = ls%s + Lp[%s];\n", sf(r), sf(r), part(g, r))
			for y := range p.ev {
				fmt.Fprintf(b, "\to%d%s = o%d%s + %s;\n", y, sf(r), y, sf(r), kv(part(g, r), y))
			}
		}
	}
}

// attentionOnlineLoops is the online kernel's loop cost: one loop over
// the whole key blocks (a part's, in the split order).
func attentionOnlineLoops(k *ir.Kernel) int {
	a := ir.AttentionKernel(k)
	if p := onlineKernelPlan(a, attStorage, k.Blocks > 1); p.G > 1 || k.Blocks > 1 { // G is the parts under any storage
		return a.Chunk/a.Block + 1
	}
	return a.T/a.Block + 1
}
