package passes

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// Tiles the tiling pass chooses from. Large is the vec4 kernel's; the
// others are for the scalar kernel.
var (
	TileLarge = ir.Tile{BM: 128, BN: 128, TM: 8, TN: 8, BK: 16, Vector: 4} // best of the H200 sweep
	// TileWide is the vec4 kernel's tile for outputs that TileLarge cuts
	// into fewer than WaveGroups workgroups: the H200's tuned winner for
	// 1024³ (15.4 TFLOP/s against TileLarge's 9.6) and 256³ (0.74 against
	// 0.47), bench/h200/tune-2026-12-01.json. A 1024×1024 output (a
	// weight gradient) is 64 workgroups of TileLarge, half the H200 idle.
	TileWide   = ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4}
	TileMedium = ir.Tile{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1}
	TileSmall  = ir.Tile{BM: 32, BN: 32, TM: 2, TN: 2, BK: 16, Vector: 1}
	// TileRow is the vec4 kernel's tile for a one-row product (M = 1, a
	// decoding step's matrix-vector products): the H200's tuned winner for
	// 1x4096x4096, 0.125 ms against TileSmall's 1.16
	// (bench/h200/tune-2026-12-01.json); 31 of its 32 rows idle cost less
	// than TileSmall's scalar reads, one column pair a thread.
	TileRow = ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 4}
	// TileFallback needs 64 threads and 512 bytes: it fits any device.
	TileFallback = ir.Tile{BM: 8, BN: 8, TM: 1, TN: 1, BK: 8, Vector: 1}
)

// WaveGroups is the fewest workgroups a matmul's tile should make: a
// large GPU runs about one workgroup per compute unit at once (the H200
// has 132), and an exact matmul cannot split K to make more (each output
// is one accumulator walking k in order), so fewer workgroups leave
// units idle for the whole kernel.
const WaveGroups = 128

// RowMinN is the narrowest one-row product that gets TileRow: narrower
// ones (attention's per-head q·kᵀ over a short cache) keep the small tile.
const RowMinN = 256

// NarrowSide is the widest output side (N, or M) that gets a narrow tile.
const NarrowSide = 32

// tile chooses each matmul kernel's tile from its shape and the device's
// limits: large matrices whose operands can be read four elements at a
// time get the vec4 kernel's 128×128 tile (8×8 outputs per thread), or
// its 64×128 one where 128×128 makes fewer than WaveGroups workgroups,
// or one output a thread (single) where even that makes fewer than
// WaveGroups/4; an output with a side of at most NarrowSide (a last
// layer's 16 classes, and its weight gradient) gets a narrow tile (see
// narrow), one output per thread and no thread idle; others a 64×64 tile, or a 32×32 one when
// small or when 64×64 makes fewer than WaveGroups workgroups (the [2048,64]
// product of attention at sequence 2048: 32 of 64×64, 128 of 32×32). A tile
// that needs more threads or workgroup memory than the device allows is
// replaced by the next smaller one. Options.Tile overrides the choice, and
// so does a well-formed tuned tile from Options.TileFor unless it starves
// the output of workgroups the rule gives it (starves).
// A k-step too shallow for a long K is deepened until the kernel's k-tile
// loop fits ir.LoopBudget; for a workgroup backend (MaxInvocations set)
// a K that no tile fits is refused with limit_exceeded, never run short.
// Tiling never changes a result: every output keeps one accumulator that
// walks k in ascending order.
func tile(st *State) error {
	if t := st.Options.Tile; t != nil && !generable(*t) {
		// a tile no generator can emit: a zero side divides by zero, a
		// negative one never ends a staging loop
		return ir.Errorf(ir.CodeUsage, -1, "tile", "Options.Tile %+v cannot be generated (%s)", *t, tileRules)
	}
	for i := range st.Program.Kernels {
		k := &st.Program.Kernels[i]
		if k.Kind == ir.KernelConv {
			if err := convTile(k, st.Options); err != nil {
				return err
			}
			continue
		}
		if k.Kind != ir.KernelMatmul {
			continue
		}
		t, ok := deepen(fit(choose(k, st.Options), st.Options), k.K, st.Options)
		if !ok && st.Options.MaxInvocations > 0 {
			return ir.Errorf(ir.CodeLimitExceeded, int(k.Nodes[len(k.Nodes)-1]), "",
				"matmul with K=%d needs %d k-tiles of %d per workgroup, more than a WebGPU kernel may loop (%d)",
				k.K, ir.MatmulLoopCost(k.K, t.BK), t.BK, ir.LoopBudget)
		}
		if b := k.Batch(); b > MaxBatchGroups && st.Options.MaxInvocations > 0 {
			return ir.Errorf(ir.CodeLimitExceeded, int(k.Nodes[len(k.Nodes)-1]), "",
				"matmul over a batch of %d matrices, more than a WebGPU dispatch has workgroups along z (%d)", b, MaxBatchGroups)
		}
		k.Tile = t
	}
	return nil
}

// MaxBatchGroups is the most matrices one batched matmul kernel
// multiplies on a workgroup backend: one workgroup row along z each, and
// WebGPU's maxComputeWorkgroupsPerDimension is 65535.
const MaxBatchGroups = 65535

// deepen doubles t's k-step until a matmul over K fits ir.LoopBudget
// or the tile would outgrow the workgroup memory in o; ok is false when it
// does not fit.
func deepen(t ir.Tile, K int, o Options) (ir.Tile, bool) {
	for ir.MatmulLoopCost(K, t.BK) > ir.LoopBudget {
		d := t
		d.BK *= 2
		if TileBytes(d) > workgroupStorage(o) {
			return t, false
		}
		t = d
	}
	return t, true
}

// workgroupStorage is o's workgroup memory limit, WebGPU's default 16 KiB
// when unset.
func workgroupStorage(o Options) int {
	if o.MaxWorkgroupStorage <= 0 {
		return 16384
	}
	return o.MaxWorkgroupStorage
}

// choose picks matmul k's tile from its shape, before the device's
// limits: the override, else a tuned tile (see starves), else
// matmulRule's.
func choose(k *ir.Kernel, o Options) ir.Tile { return pick(k, o, matmulRule) }

// pick is choose with base the rule: o.Tile, else o.TileFor's tile where
// it is well formed and does not starve k, else base's.
func pick(k *ir.Kernel, o Options, base func(*ir.Kernel) ir.Tile) ir.Tile {
	over := o.Tile
	if over == nil && o.TileFor != nil {
		if t := o.TileFor.TileFor(k); t != nil && WellFormed(*t) && !starves(k, *t, base(k)) {
			over = t
		}
	}
	if over == nil {
		return base(k)
	}
	t := *over
	if t.Vector == 4 && !vec4Operands(k) {
		t.Vector = 1
	}
	if t.Vector != 4 {
		t.Stages, t.Opts = 0, 0 // the scalar matmul has one form
	}
	return t
}

// starves reports whether a tuned tile t would cut k's output into fewer
// than WaveGroups/4 workgroups where the rule's tile r makes at least
// that many. A table is keyed by shape classes (runtime/gpu/tune's Class:
// a side of 65 to 1024 is "m" whatever its length), and the H200's tile
// tuned at 1024³ would give a transformer block's [128,256] products 4
// workgroups: 0.042 ms on an H100 where one output a thread takes 0.010
// (2026-12-06).
func starves(k *ir.Kernel, t, r ir.Tile) bool {
	return groups(k, t) < WaveGroups/4 && groups(k, r) >= WaveGroups/4
}

// matmulRule is a matmul's rule: rule's tile, except that an output too
// small for TileWide to make WaveGroups/4 workgroups gets single's, and a
// narrow tile deepStep's k-step. (Convolutions keep rule's tile, which
// spreadConv spreads; their deeper k-steps are not measured.)
func matmulRule(k *ir.Kernel) ir.Tile {
	switch t := rule(k); {
	case t == TileWide && groups(k, TileWide) < WaveGroups/4:
		return single(k)
	case t == narrow(k):
		t.BK = deepStep(k.K)
		return t
	default:
		return t
	}
}

// rule is the tiling rule's tile for k (see tile).
func rule(k *ir.Kernel) ir.Tile {
	switch {
	case k.M == 1 && k.N >= RowMinN && vec4Operands(k):
		return TileRow
	case k.M >= 128 && k.N >= 128 && vec4Operands(k):
		if groups(k, TileLarge) < WaveGroups {
			return TileWide
		}
		return TileLarge
	case min(k.M, k.N) <= NarrowSide && max(k.M, k.N) > NarrowSide && k.M*k.N >= 128*128:
		return narrow(k)
	case k.M*k.N >= 128*128 && groups(k, TileMedium) >= WaveGroups:
		return TileMedium
	}
	return TileSmall
}

// single is the tile of an output too small for TileWide to make
// WaveGroups/4 workgroups (a transformer block's [128,256] at sequence
// 128 made 4, on 132 SMs): one output a thread, 256 threads, k-steps of
// 64 where K is at least DeepK. On an H100 (2026-12-06) 128x256x256
// took 0.0417 ms under TileWide and 0.0102 under this tile, 128x256x768
// 0.0429 and 0.0157 (TileSmall's 32x32/2x2: 0.0159 and 0.0162).
func single(k *ir.Kernel) ir.Tile {
	return ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: deepStep(k.K), Vector: 1}
}

// deepStep is the k-step of a tile of one output a thread: 64 where K is
// at least DeepK, else 16. With one output a thread each k-step's loads
// wait on memory with little else to run; a deeper step waits a quarter
// as often.
func deepStep(K int) int {
	if K >= DeepK {
		return 64
	}
	return 16
}

// DeepK is the shortest K a tile of one output a thread walks 64 at a
// time (deepStep).
const DeepK = 256

// groups is how many workgroups tile t cuts k's output into.
func groups(k *ir.Kernel, t ir.Tile) int {
	return ((k.M + t.BM - 1) / t.BM) * ((k.N + t.BN - 1) / t.BN) * k.Batch()
}

// narrow is the tile of a matmul whose output has a narrow side s (at most
// NarrowSide): that side padded to a power of two (at least 8) across, 256
// threads, one output each. A 64×64 tile over [1024,16] made 16
// workgroups with three threads in four idle; this makes 64, all busy,
// as many threads as outputs: the most an exact matmul has. A matmul's
// takes deepStep's k-step (matmulRule): on an H100 (2026-12-06) the
// weight gradient 1024x4096x16 (A read transposed) took 0.107 ms at k16
// and 0.072 at k64, the layer 4096x1024x16 0.0372 and 0.0338.
func narrow(k *ir.Kernel) ir.Tile {
	s := 8
	for s < min(k.M, k.N) {
		s *= 2
	}
	if k.N <= k.M {
		return ir.Tile{BM: 256 / s, BN: s, TM: 1, TN: 1, BK: 16, Vector: 1}
	}
	return ir.Tile{BM: s, BN: 256 / s, TM: 1, TN: 1, BK: 16, Vector: 1}
}

// WellFormed reports whether t is a tile the generators can emit (the
// tuner's search space asks it too): positive
// sizes, register tiles that divide the workgroup tile, and for vec4
// kernels register tiles and a k-step in whole vec4s. A tuned table is read
// from disk; a tile that fails this is ignored (the rule applies).
func WellFormed(t ir.Tile) bool {
	const most = 1024
	for _, n := range []int{t.BM, t.BN, t.TM, t.TN, t.BK} {
		if n <= 0 || n > most {
			return false
		}
	}
	if t.BM%t.TM != 0 || t.BN%t.TN != 0 || t.TM > 16 || t.TN > 16 {
		return false
	}
	if t.Stages < 0 || t.Stages > 2 || t.Stages > 0 && t.Vector != 4 {
		return false
	}
	if t.Opts != 0 && (t.Stages != 2 || t.Opts&^(ir.TileLean|ir.TileUnroll|ir.TileWarp) != 0) {
		return false // the options are the double-buffered vec4 kernel's
	}
	if tx, ty := t.BN/t.TN, t.BM/t.TM; t.Opts&ir.TileWarp != 0 && (tx%8 != 0 || ty%4 != 0) {
		return false // a warp's 8×4 block of threads must tile the thread grid
	}
	switch t.Vector {
	case 1:
		return true
	case 4:
		return t.TM%4 == 0 && t.TN%4 == 0 && t.BK%4 == 0
	}
	return false
}

// vec4Operands reports whether each matmul operand can be read four
// contiguous elements at a time along the direction its tile is loaded.
func vec4Operands(k *ir.Kernel) bool {
	a, b := k.Inputs[0], k.Inputs[1]
	at, bt := a.MatrixTransposed(), b.MatrixTransposed()
	aOK := !at && k.K%4 == 0 || at && k.M%4 == 0
	bOK := !bt && k.N%4 == 0 || bt && k.K%4 == 0
	return aOK && bOK
}

// fit shrinks t until it fits the device's workgroup limits in o (zero
// limits mean WebGPU's defaults: 256 invocations, 16 KiB of workgroup
// memory).
func fit(t ir.Tile, o Options) ir.Tile {
	threads, storage := o.MaxInvocations, workgroupStorage(o)
	if threads <= 0 {
		threads = 256
	}
	for _, smaller := range []ir.Tile{t, TileLarge, TileWide, TileMedium, TileSmall} {
		if smaller.Vector == 4 && t.Vector != 4 {
			continue // only a vec4-capable kernel may take a vec4 tile
		}
		if tileThreads(smaller) <= threads && TileBytes(smaller) <= storage && TileBytes(smaller) <= TileBytes(t) {
			return smaller
		}
	}
	return TileFallback
}

// tileThreads is the workgroup size of t's kernel.
func tileThreads(t ir.Tile) int { return (t.BM / t.TM) * (t.BN / t.TN) }

// TileBytes is the workgroup memory t's kernel stages A and B through
// (the scalar kernel pads a row of each tile it loads along k by one
// element: at most two, see codegen/wgsl's matmul; the staged vec4 kernel
// and the double-buffered conv GEMM keep Stages copies).
func TileBytes(t ir.Tile) int {
	if t.Vector == 4 {
		return 4 * t.BK * (t.BM + t.BN) * max(1, t.Stages)
	}
	return 4 * t.BK * (t.BM + t.BN + 2) * max(1, t.Stages)
}

// ParseTile reads a tile written BMxBN/TMxTNkBK, optionally followed by
// v4 (the vec4 kernel) and then s1 or s2 (its staged form, ir.Tile.Stages;
// without v4, s2 is the conv GEMM's double-buffered form), and after v4s2
// the letters of its options (ir.Tile.Opts: l lean, u unroll, w warp,
// in that order): "128x128/8x8k16v4s2", "64x128/8x8k8v4s2luw",
// "16x16/1x1k16s2".
// The benchmarks and their environment variables name tiles this way. A
// tile the generators cannot emit is refused.
func ParseTile(s string) (ir.Tile, error) {
	t := ir.Tile{Vector: 1}
	rest := s
	for _, o := range tileOptLetters {
		if r, ok := strings.CutSuffix(rest, o.letter); ok {
			t.Opts |= o.opt
			rest = r
		}
	}
	if i := strings.LastIndexByte(rest, 's'); i > 0 {
		fmt.Sscanf(rest[i:], "s%d", &t.Stages)
		rest = rest[:i]
	}
	if r, ok := strings.CutSuffix(rest, "v4"); ok {
		t.Vector, rest = 4, r
	}
	fmt.Sscanf(rest, "%dx%d/%dx%dk%d", &t.BM, &t.BN, &t.TM, &t.TN, &t.BK)
	if TileString(t) != s { // nothing left over, nothing read twice
		return ir.Tile{}, fmt.Errorf("tile %q is not BMxBN/TMxTNkBK[v4][s1|s2][l][u][w]", s)
	}
	if !generable(t) {
		return ir.Tile{}, fmt.Errorf("tile %q cannot be generated (%s)", s, tileRules)
	}
	return t, nil
}

// tileRules say what generable asks of a tile.
const tileRules = "sides from 1 to 1024, register tiles that divide the workgroup tile; v4 needs multiples of 4; s1 needs v4; l, u and w need v4s2, w a thread grid of 8k×4k"

// generable reports whether t, as ParseTile gives it or Options.Tile
// forces it, is a tile the generators can emit (WellFormed): s2 without
// v4 is the double-buffered conv GEMM (a matmul runs it as its scalar
// kernel), and Vector 0 is the scalar kernel's, as the generators read it.
func generable(t ir.Tile) bool {
	if t.Vector == 0 {
		t.Vector = 1
	}
	if t.Vector == 1 && t.Stages == 2 {
		t.Stages = 0
	}
	return WellFormed(t)
}

// TileString writes t as ParseTile reads it.
func TileString(t ir.Tile) string {
	s := fmt.Sprintf("%dx%d/%dx%dk%d", t.BM, t.BN, t.TM, t.TN, t.BK)
	if t.Vector == 4 {
		s += "v4"
	}
	if t.Stages != 0 {
		s += fmt.Sprintf("s%d", t.Stages)
	}
	for j := len(tileOptLetters) - 1; j >= 0; j-- {
		if o := tileOptLetters[j]; t.Opts&o.opt != 0 {
			s += o.letter
		}
	}
	return s
}

// tileOptLetters name ir.Tile.Opts in a tile's text, last letter first.
var tileOptLetters = []struct {
	letter string
	opt    ir.TileOpts
}{{"w", ir.TileWarp}, {"u", ir.TileUnroll}, {"l", ir.TileLean}}
