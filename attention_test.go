package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// attentionGraph is the fixture's attention block: softmax(q·kᵀ·scale, 1)·v,
// then LayerNorm along axis 1 without gain or bias.
func attentionGraph(t testing.TB, fx *digitsFixture) *ir.Graph {
	t.Helper()
	a := fx.Attention
	s := ir.Shape{a.Seq, a.D}
	b := ir.NewBuilder()
	q := b.NamedInput("q", s, a.Inputs["q"].f32(t))
	k := b.NamedInput("k", s, a.Inputs["k"].f32(t))
	v := b.NamedInput("v", s, a.Inputs["v"].f32(t))
	b.Output("y", q.MatMul(k.T()).MulScalar(a.Scale).Softmax(1).MatMul(v).LayerNorm(1, a.Eps))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAttentionFixture runs the attention block (sequence 256, d 64) on
// every backend: the output is within fixtureBound of PyTorch's float64
// result, and bit-identical to cpuref on every backend (a GPU that flushes
// subnormals may return cpuref.EvalFlushed's value instead).
func TestAttentionFixture(t *testing.T) {
	fx := loadDigitsFixture(t)
	g := attentionGraph(t, fx)
	want := fx.Attention.Float64.Out.f64(t)
	bound := fixtureBound(want, fx.Attention.Float32.Out.f64(t))
	ref := cpuref.Eval(g)[g.Outputs[0].ID]
	r, diff := withinFixture(t, "attention", ref, want, bound)
	t32, vs32 := 0.0, 0.0
	for i, w := range fx.Attention.Float32.Out.f64(t) {
		t32 = max(t32, abs64(w-want[i]))
		vs32 = max(vs32, abs64(float64(ref[i])-w))
	}
	t.Logf("attention: largest |gpucc − torch float64| %.3g (%.3g of the bound); |torch float32 − float64| %.3g; |gpucc − torch float32| %.3g", diff, r, t32, vs32)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			exe, err := rt.Compile(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			res, err := exe.Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			// bit for bit, a GPU's flushed subnormals aside (cpuref's one
			// stated departure: exp underflows to subnormals here)
			compare(t, rt, g, map[string][]float32{"y": ref}, map[string][]float32{"y": res.Outputs["y"].Data})
		})
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// attentionCases are AttentionEdges, each also with -Inf masks (built
// under the non-finite policy) where it masks anything.
func attentionCases() []irtest.AttentionCase {
	var cs []irtest.AttentionCase
	for _, c := range irtest.AttentionEdges() {
		cs = append(cs, c)
		if c.Mask == irtest.MaskPadding || c.Mask == irtest.MaskDense || c.Mask == irtest.MaskRowOff || c.Mask == irtest.MaskLead {
			c.Name += "-inf"
			c.NonFinite = true
			cs = append(cs, c)
		}
	}
	return cs
}

// TestAttentionFuses: attention and its elementwise epilogue are one
// kernel, its q, k and v read in place through a head split's reshape and
// permute, its mask broadcast by strides.
func TestAttentionFuses(t *testing.T) {
	for _, c := range attentionCases() {
		outputs := 2 // y and its epilogue's y2
		if c.Residual {
			outputs = 3 // and y + q
		}
		checkOneKernel(t, c.Name, c.Graph(1), ir.KernelAttention, outputs)
	}
}

// TestAttentionEdges: every edge of irtest.AttentionEdges (a single key,
// odd sequences, head dims 64 and 128, causal, padding and dense masks, a
// fully masked row, extremes, heads through a view), with finite and -Inf
// masks, gives cpuref's bits on every backend; a fully masked row under
// -Inf is NaN there, as softmax of a row of -Inf is.
func TestAttentionEdges(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			fin := open(t, be)
			inf := open(t, be, func(o *gpucc.Options) { o.Limits.NonFinite = true })
			for k, c := range attentionCases() {
				g := c.Graph(uint64(700 + k))
				t.Run(c.Name, func(t *testing.T) {
					if !c.NonFinite {
						checkRun(t, fin, g)
						return
					}
					checkNonFinite(t, inf, g)
				})
			}
		})
	}
}

// TestAttentionRowOffIsNaN: a query row whose every key is masked with
// -Inf gives NaN in cpuref (then every backend, by TestAttentionEdges),
// and the other rows stay finite.
func TestAttentionRowOffIsNaN(t *testing.T) {
	c := irtest.AttentionCase{Name: "row-off", S: 4, T: 5, D: 4, E: 4, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true}
	g := c.Graph(1)
	y := cpuref.Eval(g)[g.Outputs[0].ID]
	for i, v := range y {
		if nan := v != v; nan != (i < c.E) {
			t.Errorf("y[%d] = %v: want NaN exactly in row 0", i, v)
		}
	}
}

// TestAttentionLengths: sequences 64 and 512 at head dims 64 and 128,
// causal and padding-masked with -Inf, give cpuref's bits on every
// backend: the WGSL row's key tiles, partial last tiles and workgroups of
// 16 (8) query rows, the C row's blocks of 8 keys. Without -short, causal
// sequences of 2048 and 4096 at d 64 too, on native and webgpu (cpuref
// takes minutes over 4096).
func TestAttentionLengths(t *testing.T) {
	type sized struct {
		irtest.AttentionCase
		long bool
	}
	var cases []sized
	for _, s := range []int{64, 512} {
		cases = append(cases,
			sized{irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d64-causal", s), H: 1, S: s, T: s, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}, false},
			sized{irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d128-padding", s), B: 2, S: s, T: s, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskPadding, NonFinite: true}, false})
	}
	if !testing.Short() {
		for _, s := range []int{2048, 4096} {
			cases = append(cases, sized{irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d64-causal", s), S: s, T: s, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}, true})
		}
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) {
				o.Limits = ir.Limits{NonFinite: true, MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
			})
			for k, c := range cases {
				if c.long && be != "native" && be != "webgpu" {
					continue
				}
				t.Run(c.Name, func(t *testing.T) { checkNonFinite(t, rt, c.Graph(uint64(900+k))) })
			}
		})
	}
}

// AttTileVariants are the sliced WGSL kernel's shapes that
// TestAttentionTiles checks: the default, more rows or more slices per
// workgroup (one key a thread is refused: it broke bits on the H200), a workgroup of 128 threads, four that
// read k and v from their buffers (Direct; 8x32k64g's threads hold vec2
// outputs at d 64), two that keep scores in registers between the passes
// (8x32k64gc64 every whole tile's below 2048 keys, 16x16k32gc4 the first
// two tiles' only, looping over the rest), and the first kernel (rows).
var attTileVariants = []wgsl.AttTile{
	wgsl.DefaultAttTile,
	{Rows: 32, Slices: 8, Keys: 32},
	{Rows: 16, Slices: 8, Keys: 32},
	{Rows: 8, Slices: 32, Keys: 32},
	{Rows: 64, Slices: 4, Keys: 16},
	{Rows: 16, Slices: 16, Keys: 64, Direct: true},
	{Rows: 32, Slices: 8, Keys: 32, Direct: true},
	{Rows: 8, Slices: 16, Keys: 32, Direct: true},
	{Rows: 8, Slices: 32, Keys: 64, Direct: true},
	{Rows: 8, Slices: 32, Keys: 64, Direct: true, Cache: 64},
	{Rows: 16, Slices: 16, Keys: 32, Direct: true, Cache: 4},
	{},
}

// TestAttentionTiles: on webgpu, every variant of the attention kernel
// (wgsl.AttentionTile) gives cpuref's bits on every edge of
// irtest.AttentionEdges (head dims 4 to 128, odd widths, causal, padding
// and dense masks, a fully masked row, extremes, heads through a view) and
// on sequences whose last key tile and last workgroup are partial (67 and
// 130 keys at d 64, causal; 45 at d 128 with a -Inf padding mask),
// batched: the tile changes no bit. A head wider than the sliced kernel
// holds (d 160) falls back to the rows kernel, with cpuref's bits too.
func TestAttentionTiles(t *testing.T) {
	if !slices.Contains(backends, "webgpu") {
		t.Skip("webgpu is not among the backends")
	}
	cases := irtest.AttentionEdges()
	cases = append(cases,
		irtest.AttentionCase{Name: "seq67-d64-causal", H: 2, S: 67, T: 67, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal, NonFinite: true},
		irtest.AttentionCase{Name: "seq130-d64-causal", S: 130, T: 130, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal, NonFinite: true},
		irtest.AttentionCase{Name: "seq45-d128-padding", B: 2, S: 45, T: 45, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskPadding, NonFinite: true},
		irtest.AttentionCase{Name: "d160-rows", S: 5, T: 7, D: 160, E: 160, Scale: 0.0625})
	defer func(old wgsl.AttTile) { wgsl.AttentionTile = old }(wgsl.AttentionTile)
	for _, tile := range attTileVariants {
		t.Run("webgpu/"+tile.String(), func(t *testing.T) {
			wgsl.AttentionTile = tile
			fin := open(t, "webgpu")
			inf := open(t, "webgpu", func(o *gpucc.Options) { o.Limits.NonFinite = true })
			for k, c := range cases {
				g := c.Graph(uint64(700 + k))
				t.Run(c.Name, func(t *testing.T) {
					if !c.NonFinite {
						checkRun(t, fin, g)
						return
					}
					checkNonFinite(t, inf, g)
				})
			}
		})
	}
}

// tileShare reports whether tile j of a tile test runs case i: every case
// under every tile in the full tier; under -short, one case in every
// `every`, rotated by the tile, so each tile still runs some of the cases
// and each case still runs under some of the tiles. What the short tier
// pays for is lavapipe compiling a kernel for each tile and case, and a
// fresh machine (CI's) has no Mesa shader cache: TestAttentionSpanTiles
// alone took 940 s of a clean clone's 2 cores with every pair.
func tileShare(j, i, every int) bool { return !testing.Short() || (i+j)%every == 0 }

// onlineFrom makes attention over n keys or more take the online order
// (ir.AttentionOnlineFrom) for the rest of the test.
func onlineFrom(t testing.TB, n int) {
	old := ir.AttentionOnlineFrom
	ir.AttentionOnlineFrom = n
	t.Cleanup(func() { ir.AttentionOnlineFrom = old })
}

// onlineCases are the online order's edges: sequences of 1, 2, a block
// less one, a block, a block and one, and 130 keys (four whole blocks and
// a partial one), at head dims 64 and 128, plain, causal and with a -Inf
// padding mask; a fully masked row (NaN) and a row's first blocks all
// -Inf (-3e38) before finite keys; a dense -Inf mask; extremes (±3e38, subnormals,
// ±0) plain and causal; queries fewer than keys; odd head widths; heads
// read through a view.
func onlineCases() []irtest.AttentionCase {
	bl := ir.AttentionBlock
	var cs []irtest.AttentionCase
	for _, s := range []int{1, 2, bl - 1, bl, bl + 1, 130} {
		for _, d := range []int{64, 128} {
			sc := float32(1 / math.Sqrt(float64(d)))
			cs = append(cs,
				irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d%d", s, d), S: s, T: s, D: d, E: d, Scale: sc},
				irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d%d-causal", s, d), H: 2, S: s, T: s, D: d, E: d, Scale: sc, Mask: irtest.MaskCausal},
				irtest.AttentionCase{Name: fmt.Sprintf("seq%d-d%d-padding", s, d), B: 2, S: s, T: s, D: d, E: d, Scale: sc, Mask: irtest.MaskPadding, NonFinite: true})
		}
	}
	return append(cs,
		irtest.AttentionCase{Name: "row-off-70", S: 4, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true},
		irtest.AttentionCase{Name: "lead-off-100", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead, NonFinite: true},
		irtest.AttentionCase{Name: "lead-off-100-finite", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead},
		irtest.AttentionCase{Name: "dense-67", S: 6, T: 67, D: 8, E: 3, Scale: 0.125, Mask: irtest.MaskDense, NonFinite: true},
		irtest.AttentionCase{Name: "extremes-70", H: 2, S: 5, T: 70, D: 8, E: 8, Scale: 0.125, Extremes: true},
		irtest.AttentionCase{Name: "extremes-causal-66", S: 66, T: 66, D: 4, E: 4, Scale: 3, Extremes: true, Mask: irtest.MaskCausal},
		irtest.AttentionCase{Name: "cross-5x100", B: 1, H: 3, S: 5, T: 100, D: 4, E: 6, Scale: 1},
		irtest.AttentionCase{Name: "odd-d12-e7", S: 19, T: 77, D: 12, E: 7, Scale: 0.3},
		irtest.AttentionCase{Name: "heads-view-50", B: 2, H: 2, S: 17, T: 50, D: 8, E: 8, Scale: 0.35355338, HeadsInView: true, Mask: irtest.MaskCausal})
}

// TestAttentionOnline: with every attention in the online order, each of
// onlineCases gives cpuref's bits on every backend (NaNs as the quiet
// NaN, on webgpu a subnormal flushed as cpuref.EvalFlushed's). Without
// -short, causal sequences of 2048 at d 64 and 128 too, on native and
// webgpu.
func TestAttentionOnline(t *testing.T) {
	onlineFrom(t, 1)
	type sized struct {
		irtest.AttentionCase
		long bool
	}
	var cases []sized
	for _, c := range onlineCases() {
		cases = append(cases, sized{c, false})
	}
	if !testing.Short() {
		for _, d := range []int{64, 128} {
			cases = append(cases, sized{irtest.AttentionCase{Name: fmt.Sprintf("seq2048-d%d-causal", d), S: 2048, T: 2048, D: d, E: d, Scale: 0.125, Mask: irtest.MaskCausal}, true})
		}
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be, func(o *gpucc.Options) {
				o.Limits = ir.Limits{NonFinite: true, MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
			})
			for k, c := range cases {
				if c.long && be != "native" && be != "webgpu" {
					continue
				}
				t.Run(c.Name, func(t *testing.T) { checkNonFinite(t, rt, c.Graph(uint64(1100+k))) })
			}
		})
	}
}

// onlineTileVariants are the online kernel's shapes that
// TestAttentionOnlineTiles checks (bench/device.sh times them).
var onlineTileVariants = []wgsl.OnlineTile{{Rows: 8, Slices: 32}, {Rows: 32, Slices: 8}, {Rows: 64, Slices: 4},
	{Rows: 16, Slices: 16, TreeMax: true}, {Rows: 16, Slices: 16, RowC: true}, {Rows: 16, Slices: 16, VecP: true},
	{Rows: 16, Slices: 16, RowL: true}, {Rows: 16, Slices: 16}, allFlags(16, 16), allFlags(32, 8),
	{Rows: 8, Slices: 32, Half: true}, {Rows: 16, Slices: 16, TwoLevel: true}, halfTwo(8, 32), halfTwo(16, 16),
	{Rows: 8, Slices: 16, RowBlock: 2}, {Rows: 16, Slices: 16, RowBlock: 2, Index2D: true}, {Rows: 8, Slices: 32, RowBlock: 2, Half: true},
	rowBlock(allFlags(8, 16), 2, false), rowBlock(halfTwo(8, 32), 2, false), rowBlock(allFlags(16, 8), 2, true), rowBlock(halfTwo(4, 32), 4, false)}

// rowBlock is tile t with rows query rows a thread (RowBlock), and
// TwoLevel where two is set.
func rowBlock(t wgsl.OnlineTile, rows int, two bool) wgsl.OnlineTile {
	t.RowBlock = rows
	t.TwoLevel = t.TwoLevel || two
	return t
}

// halfTwo is allFlags(rows, slices) with Half and TwoLevel too.
func halfTwo(rows, slices int) wgsl.OnlineTile {
	t := allFlags(rows, slices)
	t.Half, t.TwoLevel = true, true
	return t
}

// allFlags is the online tile of rows × slices with every flag set.
func allFlags(rows, slices int) wgsl.OnlineTile {
	return wgsl.OnlineTile{Rows: rows, Slices: slices, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true}
}

// TestAttentionOnlineTiles: on webgpu, each online kernel shape other
// than the default (wgsl.AttentionOnlineTile; TestAttentionOnline runs
// the default) gives cpuref's bits over partial blocks and workgroups,
// d 64 and 128 (where 8x32 does not fit and takes the default), causal,
// -Inf masks, leading -Inf blocks and a fully masked row: the shape
// changes no bit.
func TestAttentionOnlineTiles(t *testing.T) {
	if !slices.Contains(backends, "webgpu") {
		t.Skip("webgpu is not among the backends")
	}
	onlineFrom(t, 1)
	defer func(old wgsl.OnlineTile) { wgsl.AttentionOnlineTile = old }(wgsl.AttentionOnlineTile)
	bl := ir.AttentionBlock
	cases := []irtest.AttentionCase{
		{Name: "seq-block+1-d64-causal", H: 2, S: bl + 1, T: bl + 1, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal},
		{Name: "seq130-d64-causal", S: 130, T: 130, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal},
		{Name: "seq67-d128-padding", B: 2, S: 67, T: 67, D: 128, E: 128, Scale: 0.088388346, Mask: irtest.MaskPadding, NonFinite: true},
		{Name: "lead-off-100", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead, NonFinite: true},
		{Name: "row-off-70", S: 4, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true},
		{Name: "odd-d12-e7", S: 19, T: 77, D: 12, E: 7, Scale: 0.3},
		// 29 query rows: a workgroup of 16 (8 threads' rows × 2) whose
		// second rows are partly past S.
		{Name: "rows29-keys100-d64-dense", B: 2, S: 29, T: 100, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskDense, NonFinite: true},
	}
	var online []partsCase // the online order: no split
	for _, c := range cases {
		online = append(online, partsCase{c, 0})
	}
	runPartsTiles(t, onlineTileVariants, online, 3, 1200)
}
