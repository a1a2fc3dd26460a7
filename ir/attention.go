package ir

import (
	"fmt"
	"math"
	"slices"
)

// attention: softmax(q·kᵀ·scale + mask)·v as one op, so that one kernel
// computes it and the [S, T] scores never reach memory (issue 33 item 4).
//
// # Why a new order, and which
//
// The unfused graph (matmul, scale, mask, softmax, matmul) rounds in an
// order that a fused kernel could keep only by computing every score three
// times (the row's maximum, the pairwise tree of its exps, then p·v with
// p = exp(s-m)/sum as softmax divides) and dividing every one of the S·T
// probabilities: at seq 2048, d 64 that is 3·268 M products for the scores
// beside 268 M for p·v, 8.4 M exact exps and 4.2 M exact divisions (≈ 190
// integer instructions each: 0.05 ms of the H200 alone, half of PyTorch
// eager's whole 0.092 ms). The order below computes each score twice (its
// row's maximum first, then one pass that sums exp(s-m) and accumulates
// exp(s-m)·v), takes one exp per score and divides only the S·E outputs
// (131 k at seq 2048): 2·268 M + 268 M products, 4.2 M exps, 0.13 M
// divisions. A flash-style online softmax would save the second score pass
// but rescales its running sums at every tile edge, which makes the tile
// width part of the bits, the same on every backend; here the maximum is
// exact before anything is summed, so nothing is rescaled and every target
// may tile rows and keys as it likes. The sums run in ascending key order,
// as matmul's own accumulator does, so the error is matmul's.
//
// # The online order, for long rows
//
// Where the keys are many (Attention.Block, from the shapes alone), the
// kernels score each pair once instead: flash attention's online softmax,
// which streams the keys in blocks of AttentionBlock and never holds a
// row's scores. The block width is part of the bits, so it is fixed
// (AttentionBlock) and every target blocks the keys at the same edges.
// For each batch index and query row i:
//
//	t_j as below
//	m = -MaxFloat32 (the most negative finite float32), l = +0, o_e = +0
//	for each block of keys [b, min(b+B, T)), b = 0, B, 2B, …:
//	  m' = maximum of m, t_b … (the op table's, as below)
//	  c  = exp(round(m − m'))
//	  l = round(l·c), o_e = round(o_e·c)
//	  for j ascending in the block: p = exp(round(t_j − m')),
//	    l = round(l + p), o_e = round(o_e + round(p·v[j,e]))
//	  m = m'
//	out[i,e] = div(o_e, l)
//
// m starts at -MaxFloat32, not -Inf, so that no difference is -Inf − -Inf:
// a block of -Inf scores leaves m finite, its p are exp(-Inf) = +0 and c
// is 1 or, once a finite score arrives, exp(-Inf) = +0 times sums that
// are +0 (NaN where a masked key met an infinite v, as below). A fully
// masked row ends with l = +0 and o_e = +0: div gives NaN, as softmax of
// a row of -Inf does (and NaN where v is infinite, as the order below).
// c ≤ 1 always (m' ≥ m), so the rescale never overflows; a NaN score
// makes m' and so every output NaN. Over at most B keys the online order
// gives the full order's bits (one block: c multiplies +0 sums, m' is the
// row's maximum), so the choice matters only past B keys.
//
// # The split order (AttentionSplit parts; off unless set)
//
// Where AttentionSplit is 2 or more and the online order's keys span two
// blocks or more (Attention.Chunk, from the shapes and the knob alone),
// the keys are cut into parts of Chunk keys, [0, W), [W, 2W), … (W =
// Chunk, a multiple of AttentionBlock: the fewest whole blocks that make
// at most AttentionSplit parts; the last stops at T). Each part c runs
// the online order above over its own keys alone (its blocks from its
// first key, m from -MaxFloat32, l = o_e = +0), ending with m_c, l_c and
// o_c,e undivided. Then, per query row:
//
//	M = maximum of m_0 … m_{P-1} (the op table's, as below)
//	L = +0, O_e = +0; for c ascending: w = exp(round(m_c − M)),
//	  L = round(L + round(l_c·w)), O_e = round(O_e + round(o_c,e·w))
//	out[i,e] = div(O_e, L)
//
// so that a GPU runs the parts side by side, P times the threads where
// the query rows are few (one head of 512 rows fills 32 workgroups of 16
// rows on a GPU of 132 cores): under passes.Options.SplitSums (every GPU
// target's) a kernel of the parts alone (KernelAttention with Blocks =
// P, one part of one row tile a workgroup) and a combine kernel
// (KernelAttentionCombine); else one kernel. w ≤ 1 (m_c ≤ M), so nothing
// overflows; a part whose keys are all masked has m_c = -MaxFloat32,
// l_c = +0 and o_c = +0 (NaN where v is infinite), so w is +0 beside a
// finite M and it adds +0; a fully masked row has M = -MaxFloat32, w = 1,
// L = +0 and a NaN output; a NaN score makes M and every output NaN. The
// parts' edges depend on T, so a prompt's row and the same row decoded
// alone at a shorter T may round apart: the split is a knob, off by
// default. On an H100 (2026-12-06, bench/RESULTS.md) one head of 512
// rows took 0.0413 ms in one kernel and 0.0239 in 4 parts, of 2048 rows
// 0.1292 and 0.1177 in 2, while 4096 rows and heads of 128 lost in any.
//
// # The full-row order (cpuref.Attention computes it where Block is 0)
//
// For each batch index and query row i, with j over the T keys:
//
//	a_j = matmul's accumulator of q[i,:]·k[j,:] (d ascending from +0, each
//	      product rounded, then each sum)
//	t_j = round(round(a_j·scale) + mask[i,j]); with causal, t_j = -Inf for
//	      every j > i (selected, not added)
//	m   = maximum of t_0 … t_{T-1} (the op table's: -0 < +0, the first NaN)
//	l   = +0, o_e = +0; for j ascending: p = exp(round(t_j − m)),
//	      l = round(l + p), o_e = round(o_e + round(p·v[j,e]))
//	out[i,e] = div(o_e, l)
//
// where exp, sub and div are the op table's exact expressions. Every key
// is visited, masked or not: a masked key's p is +0, and +0·v is NaN for
// an infinite v, as ONNX's reference (which multiplies the probabilities
// by v) gives. A fully masked row (every t_j = -Inf) has m = -Inf, every
// t_j − m NaN and so a NaN output, as softmax of a row of -Inf gives.

// AttentionBlock is the online order's key block (B above): 32 keys, the
// WGSL kernel's tile of 16 query rows by 16 threads, two keys a thread.
const AttentionBlock = 32

// AttentionOnlineFrom is the fewest keys (T) for which attention takes
// the online order; below it the full-row order. The online kernels
// score each pair once where the full-row ones score it twice. Heads
// wider than AttentionOnlineMaxHead keep the full-row order (the WGSL
// kernel holds a q row in registers). It is a variable only so that a
// benchmark can time both orders in one process (bench/attn_bench_test.go);
// set it before anything compiles, never while a graph runs: it changes
// bits. 1, every length: on the H200 (2026-12-05, bench/h200/lead-2026-12-05,
// after TestAttentionOnline/webgpu gave cpuref's bits on NVIDIA's driver)
// the online kernel ran d 64 attention at 128, 256, 512, 2048 and 4096
// keys in 0.023, 0.032, 0.047, 0.143 and 0.531 ms against the full-row
// default tile's 0.025, 0.035, 0.054, 0.172 and 0.642. One order at every
// length also keeps a prompt filled in one run (generate's prefill) and
// decoded a token a step to the same bits whatever the cache's length.
var AttentionOnlineFrom = 1

// AttentionSplit is the most parts the split order cuts an online
// attention's keys into (see "The split order"); 0 or 1: no split. Like
// AttentionOnlineFrom it is a variable so that a benchmark can time both
// orders in one process; set it before anything compiles: it changes
// bits. At most MaxAttentionSplit.
var AttentionSplit = 0

// MaxAttentionSplit bounds AttentionSplit: a WGSL workgroup runs its
// parts side by side where they are not split into kernels of their own.
const MaxAttentionSplit = 8

// attentionChunk is the split order's part width for t keys (see
// Attention.Chunk): 0 where there is no split.
func attentionChunk(t, block int) int {
	p := min(AttentionSplit, MaxAttentionSplit)
	nb := (t + block - 1) / max(block, 1)
	if block == 0 || p < 2 || nb < 2 {
		return 0
	}
	return (nb + p - 1) / p * block
}

// AttentionOnlineMaxHead is the widest q row (D) and v row (E) the online
// order takes.
const AttentionOnlineMaxHead = 128

// MaxAttentionRank is the largest rank of attention's q, k and v: 4
// ([B,H,S,D]), and 5 for grouped-query heads read in place
// ([B,G,N,S,D], GroupAttention).
const MaxAttentionRank = 5

// attentionAttrs are attention's attributes: the scale as the bits of a
// float32 in two 16-bit halves, high first (as pad's value_bits), and
// causal (1: key j > query i is masked).
var attentionAttrs = []AttrSpec{
	{Name: "scale_bits", Len: 2},
	{Name: "causal", Len: 1, Default: []int{0}},
}

// Attention is the geometry of an attention node: q [...,S,D], k
// [...,T,D], v [...,T,E] of one batch shape, the mask broadcasting to
// [...,S,T], the result [...,S,E].
type Attention struct {
	Batch     Shape
	S, T      int
	D, E      int
	Scale     float32
	Causal    bool
	MaskShape Shape
	// Block is the online order's key block (AttentionBlock) where the
	// shapes take it (AttentionOnlineFrom keys or more, heads of at most
	// AttentionOnlineMaxHead), else 0: the full-row order.
	Block int
	// Chunk is the split order's part width in keys (a multiple of Block)
	// where AttentionSplit cuts the keys into two parts or more, else 0.
	Chunk int
}

// Parts returns the split order's parts: ⌈T / Chunk⌉, or 1 without a
// split.
func (a Attention) Parts() int {
	if a.Chunk == 0 {
		return 1
	}
	return (a.T + a.Chunk - 1) / a.Chunk
}

// attentionBlock is the key block of attention over T keys with heads of
// d and e: AttentionBlock or 0 (see Attention.Block).
func attentionBlock(t, d, e int) int {
	if t >= AttentionOnlineFrom && d <= AttentionOnlineMaxHead && e <= AttentionOnlineMaxHead {
		return AttentionBlock
	}
	return 0
}

// Order says which rounding order attention takes, for --explain.
func (a Attention) Order() string {
	if a.Chunk > 0 {
		return fmt.Sprintf("online softmax, key blocks of %d (%d keys ≥ %d, heads ≤ %d): each score once, in %d parts of %d keys combined (split order, ir.AttentionSplit %d)", a.Block, a.T, AttentionOnlineFrom, AttentionOnlineMaxHead, a.Parts(), a.Chunk, AttentionSplit)
	}
	if a.Block > 0 {
		return fmt.Sprintf("online softmax, key blocks of %d (%d keys ≥ %d, heads ≤ %d): each score once", a.Block, a.T, AttentionOnlineFrom, AttentionOnlineMaxHead)
	}
	return fmt.Sprintf("full rows (%d keys < %d, or heads over %d): each score twice, the row's maximum first", a.T, AttentionOnlineFrom, AttentionOnlineMaxHead)
}

// AttentionOf returns the geometry of attention over args (q, k, v, mask:
// a validated node's) with attrs.
func AttentionOf(args []Shape, attrs []int) Attention {
	q, k, v := args[0], args[1], args[2]
	r := len(q)
	sb := OpAttention.Attr(attrs, "scale_bits")
	block := attentionBlock(k[r-2], q[r-1], v[r-1])
	return Attention{Batch: slices.Clone(q[:r-2]), S: q[r-2], D: q[r-1], T: k[r-2], E: v[r-1],
		Scale:  math.Float32frombits(uint32(sb[0])<<16 | uint32(sb[1])),
		Causal: OpAttention.Attr(attrs, "causal")[0] == 1, MaskShape: args[3], Block: block, Chunk: attentionChunk(k[r-2], block)}
}

// PartsShape returns the shape of the split order's parts,
// [...,S,P,E+2]: per query row and part, its undivided o, m and l.
func (a Attention) PartsShape() Shape {
	return append(slices.Clone(a.Batch), a.S, a.Parts(), a.E+2)
}

// validateAttentionCombine checks an attention combine kernel: the parts
// [...,S,P,E+2] (P ≥ 2) as its first operand, read plainly, and a Shape
// of [...,S,E].
func validateAttentionCombine(k *Kernel) string {
	if len(k.Inputs) < 1 {
		return "attention_combine needs the parts as its first operand"
	}
	in, r := k.Inputs[0], len(k.Shape)
	if r < 2 || r > MaxAttentionRank || len(in.Shape) != r+1 || !in.Shape[:r-1].Equal(k.Shape[:r-1]) ||
		in.Shape[r-1] < 2 || in.Shape[r] != k.Shape[r-1]+2 {
		return fmt.Sprintf("attention_combine of parts %v gives %v: want parts [...,S,P,E+2] of [...,S,E], P ≥ 2", in.Shape, k.Shape)
	}
	if !in.Plain() {
		return "attention_combine reads its parts plainly (row-major, from offset 0)"
	}
	return ""
}

// attentionCombineFlops counts the combine's operations: per output and
// part, a maximum, an exp (about 40), a subtraction and two products and
// sums; a division; and the epilogue's.
func attentionCombineFlops(k *Kernel) int64 {
	p := int64(k.Inputs[0].Shape[len(k.Shape)-1])
	return SatMul(int64(k.Shape.Len()), SatAdd(46*p+1, BodyFlops(k.Body)))
}

// Scores returns the shape of the scores, [...,S,T].
func (a Attention) Scores() Shape { return append(slices.Clone(a.Batch), a.S, a.T) }

// Out returns the result's shape, [...,S,E].
func (a Attention) Out() Shape { return append(slices.Clone(a.Batch), a.S, a.E) }

// AttentionAttrs returns attention's attributes for scale and causal.
func AttentionAttrs(scale float32, causal bool) map[string][]int {
	b := math.Float32bits(scale)
	c := 0
	if causal {
		c = 1
	}
	return map[string][]int{"scale_bits": {int(b >> 16), int(b & 0xffff)}, "causal": {c}}
}

// attentionShape is attention's shape rule: q, k, v of rank 2 to
// MaxAttentionRank with one batch shape, k's and q's last dimension
// equal, k's and v's rows equal, a mask that broadcasts to the scores.
func attentionShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	q, k, v, mask := args[0], args[1], args[2], args[3]
	bad := func(field, format string, a ...any) (Shape, *Error) {
		return nil, Errorf(CodeInvalidGraph, node, field, format, a...)
	}
	r := len(q)
	if r < 2 || r > MaxAttentionRank || len(k) != r || len(v) != r {
		return bad("a", "attention takes q, k, v of one rank, 2 to %d, got %v, %v, %v", MaxAttentionRank, q, k, v)
	}
	if !q[:r-2].Equal(k[:r-2]) || !q[:r-2].Equal(v[:r-2]) {
		return bad("b", "attention's q, k, v need one batch shape, got %v, %v, %v", q, k, v)
	}
	if q[r-1] != k[r-1] {
		return bad("b", "attention's k %v has rows of %d, q %v of %d", k, k[r-1], q, q[r-1])
	}
	if k[r-2] != v[r-2] {
		return bad("c", "attention's v %v has %d rows, k %v has %d", v, v[r-2], k, k[r-2])
	}
	for _, h := range op.Attr(attrs, "scale_bits") {
		if h < 0 || h > 0xffff {
			return bad("scale_bits", "attention scale_bits must be two 16-bit halves, got %v", op.Attr(attrs, "scale_bits"))
		}
	}
	if c := op.Attr(attrs, "causal")[0]; c != 0 && c != 1 {
		return bad("causal", "attention causal must be 0 or 1, got %d", c)
	}
	a := AttentionOf(args, attrs)
	if s, ok := BroadcastShape(mask, a.Scores()); !ok || !s.Equal(a.Scores()) {
		return bad("d", "attention's mask %v does not broadcast to the scores %v", mask, a.Scores())
	}
	return a.Out(), nil
}

// attentionCost counts attention's operations: two passes of D products
// and sums per score, an exp (about 40 operations), and E products and
// sums per score for p·v.
func attentionCost(args []Shape, out Shape) int64 {
	q, k, v := args[0], args[1], args[2]
	r := len(q)
	scores := SatMul(int64(Shape(q[:r-1]).Len()), int64(k[r-2]))
	return SatMul(scores, int64(4*q[r-1]+2*v[r-1]+48))
}

// AttentionKernel returns the geometry of attention kernel k (a validated
// one's).
func AttentionKernel(k *Kernel) Attention {
	return AttentionOf(attentionArgs(k), k.Attrs)
}

// attentionArgs returns the shapes of an attention kernel's q, k, v and
// mask: [] for a kernel without a mask operand.
func attentionArgs(k *Kernel) []Shape {
	args := []Shape{k.Inputs[0].Shape, k.Inputs[1].Shape, k.Inputs[2].Shape, {}}
	if k.Masked() {
		args[3] = k.Inputs[3].Shape
	}
	return args
}

// Masked reports whether attention kernel k reads a mask: Inputs[3], where
// its own operands are four (K). A kernel without one adds nothing to its
// scores (an attention node whose mask is a full of -0, which adds
// nothing: t + -0 is t for every t). Until 2026-12-06 the mask was told
// from an epilogue's operand by its place alone, so an unmasked attention
// whose epilogue read a tensor (a residual) read that tensor as its mask.
func (k *Kernel) Masked() bool {
	return k.Kind == KernelAttention && k.K == 4 && len(k.Inputs) >= 4
}

// validateAttention checks an attention kernel: q, k, v and optionally
// the mask as its operands, the mask read as the scores' shape,
// attributes that attention's shape rule accepts, and a Shape that is its
// output.
func validateAttention(k *Kernel) string {
	if k.K != 3 && k.K != 4 || len(k.Inputs) < k.K {
		return fmt.Sprintf("attention has %d operands of its own (K: 3 for q, k, v, 4 with a mask), of %d", k.K, len(k.Inputs))
	}
	if err := checkAttrs(-1, OpAttention, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "attention attributes: " + err.Msg
	}
	args := attentionArgs(k)
	out, err := attentionShape(-1, OpAttention, args, nil, k.Attrs)
	if err != nil {
		return "attention: " + err.Msg
	}
	if k.Blocks > 1 {
		a := AttentionOf(args, k.Attrs)
		if a.Parts() != k.Blocks {
			return fmt.Sprintf("attention over %d keys in %d parts, which the split order (ir.AttentionSplit %d) cuts into %d", a.T, k.Blocks, AttentionSplit, a.Parts())
		}
		if len(k.Body) != 1 || k.Body[0].Kind != InstrAcc {
			return "attention's parts have no epilogue: the combine runs it"
		}
		out = a.PartsShape()
	}
	if !out.Equal(k.Shape) {
		return fmt.Sprintf("attention of %v gives %v, kernel shape is %v", args, out, k.Shape)
	}
	if a := AttentionOf(args, k.Attrs); k.Masked() && !k.Inputs[3].Shape.Equal(a.Scores()) {
		return fmt.Sprintf("attention's mask operand is %v, want it read as the scores %v", k.Inputs[3].Shape, a.Scores())
	}
	return ""
}

// Attention returns softmax(t·kᵀ·scale + mask)·v in attention's order
// (see OpAttention): t is q [...,S,D], k [...,T,D], v [...,T,E], mask
// any shape that broadcasts to [...,S,T] (a full of -0 for none: t + -0
// is t for every t); causal masks key j > query i.
func (t Tensor) Attention(k, v, mask Tensor, scale float32, causal bool) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpAttention, AttentionAttrs(scale, causal))
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpAttention, a, k, v, mask)
}
