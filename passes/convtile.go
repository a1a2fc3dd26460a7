package passes

import "github.com/gpucc/gpucc/ir"

// TileConv is the implicit GEMM's tile for convolutions of at least 64
// output channels a group that it cuts into WaveGroups workgroups or
// more: 128 pixels × 64 channels, 8×8 a thread, 128 threads, k-step 8
// (6.2 KiB). Matmul's rule gives the ResNet 3×3 64→64 convolution at
// batch 32 its 64×64 tile of 4×4 a thread (TileMedium: 0.532 ms exact on
// the H200); this ran it in 0.453 ms exact and 0.329 fast, the best of 9
// tiles with 256×64 8×8 (0.441, 0.329) and 64×64 8×8 (0.447, 0.335),
// which make 2× and ½× the workgroups (bench/h200/convk-2026-12-02/visit1/bench_conv.txt).
var TileConv = ir.Tile{BM: 128, BN: 64, TM: 8, TN: 8, BK: 8, Vector: 1}

// WindowTaps is the most taps (KH·KW) the window kernel of a depthwise
// convolution unrolls; a larger kernel runs as an implicit GEMM.
const WindowTaps = 64

// convTile chooses a conv kernel's tile (see ir.Tile). A convolution
// whose outputs each read one input channel (CG = 1: depthwise, and any
// one-channel input) with at most WindowTaps taps, whose input window
// fits the device's workgroup memory, gets the window kernel's tile
// (windowTile). Any other runs as an implicit GEMM (ir.Conv2D.GEMM) of
// [M,K]×[K,N] (M pixels, N channels of a group), tiled by matmul's rules
// with scalar loads (a patch's elements are not contiguous in x): at
// least 128 pixels and 64 channels that TileConv cuts into WaveGroups
// workgroups take TileConv, any other matmul's choose (without tuned
// tiles, which are measured for matmuls); then fit and deepen, as for a
// matmul. Options.Tile overrides the GEMM's rule, as it does a matmul's. Tiling never changes a
// result: each output keeps one accumulator walking (c, kh, kw) in
// ascending order.
func convTile(k *ir.Kernel, o Options) error {
	c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	if o.Tile == nil {
		if t, ok := windowTile(c, o); ok {
			k.Tile = t
			return nil
		}
	}
	m, n, kk := c.GEMM()
	q := &ir.Kernel{Kind: ir.KernelMatmul, M: m, N: n, K: kk,
		Inputs: []ir.Operand{ir.PlainOperand(0, ir.Shape{m, kk}), ir.PlainOperand(1, ir.Shape{kk, n})}}
	o.TileFor = nil
	t := pick(q, o, rule)
	if o.Tile == nil && m >= TileConv.BM && n >= TileConv.BN && groups(q, TileConv) >= WaveGroups {
		t = TileConv
	}
	t.Vector, t.Stages, t.Opts = 1, 0, 0 // the matmul kernel's options are not the GEMM's
	if o.Tile != nil && o.Tile.Stages == 2 {
		t.Stages = 2 // a forced s2 tile is the double-buffered GEMM
	}
	if o.Tile == nil && !o.KeepConvTile {
		t = spreadConv(q, c.Group, t, workgroupStorage(o))
	}
	t, ok := deepen(fit(t, o), kk, o)
	if !ok && o.MaxInvocations > 0 {
		return ir.Errorf(ir.CodeLimitExceeded, int(k.Nodes[len(k.Nodes)-1]), "",
			"conv2d with %d taps per output needs %d k-tiles of %d per workgroup, more than a WebGPU kernel may loop (%d)",
			kk, ir.MatmulLoopCost(kk, t.BK), t.BK, ir.LoopBudget)
	}
	k.Tile = t
	return nil
}

// windowTile is the window kernel's tile for convolution c, when it has
// one: columns per workgroup the output's width split evenly into pieces
// of at most 64, as many thread rows as make 256 threads (or the device's
// limit), and TM rows per thread, the most (up to 8, and 96 products a
// thread) whose row tiles cut the output's height with under 1/16 of it
// idle, else the least idle, and no more thread rows than the rows of a
// row tile need. The tile shrinks (rows per thread, thread
// rows, columns) until its input window fits the workgroup memory; ok is
// false when even one output's does not.
func windowTile(c ir.Conv2D, o Options) (t ir.Tile, ok bool) {
	taps := c.KH * c.KW
	if c.CG != 1 || taps > WindowTaps {
		return ir.Tile{}, false
	}
	threads := 256
	if o.MaxInvocations > 0 {
		threads = min(threads, o.MaxInvocations)
	}
	pieces := (c.OW + 63) / 64
	tw := min((c.OW+pieces-1)/pieces, threads)
	ty := max(1, min(threads/tw, c.OH))
	most := min(8, max(1, 96/taps), (c.OH+ty-1)/ty)
	tm, idle := 1, c.OH
	for r := most; r >= 1; r-- {
		rows := ty * r
		span := (c.OH + rows - 1) / rows * rows
		if w := span - c.OH; 16*w < span {
			tm, idle = r, w
			break
		} else if w < idle {
			tm, idle = r, w
		}
	}
	tiles := (c.OH + ty*tm - 1) / (ty * tm)
	ty = ((c.OH+tiles-1)/tiles + tm - 1) / tm // no thread row wholly past the output
	fits := func(rows, cols int) bool {
		h, w := c.Window(rows, cols)
		return 4*h*w <= workgroupStorage(o)
	}
	for !fits(ty*tm, tw) {
		switch {
		case tm > 1:
			tm--
		case ty > 1:
			ty /= 2
		case tw > 1:
			tw /= 2
		default:
			return ir.Tile{}, false
		}
	}
	return ir.Tile{BM: ty * tm, BN: tw, TM: tm, TN: 1, BK: 0, Vector: 1}, true
}

// ConvLadder are the implicit GEMM's tiles spreadConv steps down, largest
// output tile first: each has 64 to 256 threads and at most 6.1 KiB of
// workgroup memory (WebGPU's default limits hold them all).
var ConvLadder = []ir.Tile{
	TileConv,
	{BM: 64, BN: 64, TM: 8, TN: 8, BK: 8, Vector: 1},
	TileMedium,
	{BM: 32, BN: 64, TM: 4, TN: 8, BK: 8, Vector: 1},
	TileSmall,
	{BM: 16, BN: 32, TM: 1, TN: 2, BK: 16, Vector: 1},
	{BM: 32, BN: 16, TM: 2, TN: 1, BK: 16, Vector: 1},
	{BM: 16, BN: 16, TM: 1, TN: 1, BK: 16, Vector: 1},
}

// spreadConv returns the tile for implicit GEMM q (pixels × channels of
// a group, run for each of groups) in place of the rule's t when t cuts
// it into fewer than WaveGroups workgroups: the first of ConvLadder no
// larger than t that makes WaveGroups or more, else the one that makes
// the most (the first of those), double-buffered (Stages 2: with few
// workgroups a unit has little else to hide its loads behind) where both
// stages fit the workgroup memory (storage bytes). An exact
// convolution cannot split its taps among workgroups (each output is one
// accumulator walking them in order), so at batch 1, where ResNet-18's
// 3×3 stages have 49 to 3136 pixels, only smaller tiles can keep more of
// a large GPU's units busy: 256 channels at 14×14 made 8 workgroups of
// the rule's 64×128, 208 of 16×16. On the H200 (2026-12-05,
// bench/h200/lead-2026-12-05) that stage's 3×3 convolution ran in
// 0.314 ms under the rule's tile, 0.081 under 16×16 and 0.066 under
// 16×16 double-buffered; 128 channels at 28×28 in 0.166, 0.060 and
// 0.051; 512 at 7×7 in 0.204, 0.103 and 0.088.
func spreadConv(q *ir.Kernel, convGroups int, t ir.Tile, storage int) ir.Tile {
	if groups(q, t)*convGroups >= WaveGroups {
		return t
	}
	best := t
	for _, c := range ConvLadder {
		if c.BM*c.BN > t.BM*t.BN {
			continue
		}
		g := groups(q, c) * convGroups
		if g >= WaveGroups {
			best = c
			break
		}
		if g > groups(q, best)*convGroups {
			best = c
		}
	}
	staged := best
	staged.Stages = 2
	if best != t && TileBytes(staged) <= storage {
		best = staged
	}
	return best
}
