package irtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// Attention masks (AttentionCase.Mask).
const (
	MaskNone    = iota // a full of -0: every score unchanged
	MaskPadding        // [B,1,1,T]: 0, with -Inf (-3e38) on batch z's last z keys
	MaskCausal         // the causal attribute
	MaskDense          // [S,T] random values with -Inf (-3e38) sprinkled in
	MaskRowOff         // [S,T] with query row 0 fully -Inf (a NaN row; -3e38: a uniform one)
	MaskLead           // [S,T] random values with the first half of every row's keys -Inf (-3e38)
)

// AttentionCase is one attention: q [B,H,S,D], k [B,H,T,D], v [B,H,T,E]
// (B and H of 0 drop the axis), a mask, the scale, and Extremes for q, k
// and v drawn from Extremes instead of Values.
type AttentionCase struct {
	Name        string
	B, H        int
	S, T, D, E  int
	Mask        int
	Scale       float32
	Extremes    bool
	HeadsInView bool // q, k, v read through a head split: [B,S,H·D] reshaped and permuted
	// Groups, above 1, gives k and v H/Groups heads, each repeated Groups
	// times (reshape, broadcast, reshape, as repeat_kv), which
	// ir.GroupAttention then reads in place: grouped-query attention over
	// [B,H/Groups,Groups,...] (B and H above 0).
	Groups int
	// NonFinite masks with -Inf (the graph is built under
	// ir.Limits.NonFinite); otherwise with -3e38, which exp still takes
	// to +0 but leaves a fully masked row finite.
	NonFinite bool
	// Residual adds q to the output (D = E) in a third output: an
	// epilogue load of the output's shape, which is not a mask (with T =
	// E it has the scores' shape too).
	Residual bool
}

// batch is the case's batch shape.
func (c AttentionCase) batch() ir.Shape {
	var s ir.Shape
	if c.B > 0 {
		s = append(s, c.B)
	}
	if c.H > 0 {
		s = append(s, c.H)
	}
	return s
}

// Graph builds the case with inputs from seed.
func (c AttentionCase) Graph(seed uint64) *ir.Graph {
	b := ir.NewBuilder()
	vals := func(k uint64, n int) []float32 {
		if c.Extremes {
			return Extremes(seed+k, n)
		}
		return Values(seed+k, n, 2)
	}
	in := func(k uint64, rows, cols int) ir.Tensor {
		s := append(c.batch(), rows, cols)
		if c.HeadsInView && c.B > 0 && c.H > 0 {
			x := b.Input(ir.Shape{c.B, rows, c.H * cols}, vals(k, s.Len()))
			return x.Reshape(ir.Shape{c.B, rows, c.H, cols}).Permute(0, 2, 1, 3)
		}
		return b.Input(s, vals(k, s.Len()))
	}
	q, k, v := in(1, c.S, c.D), in(2, c.T, c.D), in(3, c.T, c.E)
	if c.Groups > 1 {
		G, N := c.H/c.Groups, c.Groups
		repeat := func(k uint64, rows, cols int) ir.Tensor {
			x := b.Input(ir.Shape{c.B, G, rows, cols}, vals(k, c.B*G*rows*cols))
			return x.Reshape(ir.Shape{c.B, G, 1, rows, cols}).Broadcast(ir.Shape{c.B, G, N, rows, cols}).Reshape(ir.Shape{c.B, c.H, rows, cols})
		}
		k, v = repeat(2, c.T, c.D), repeat(3, c.T, c.E)
	}
	// Limits wide enough for sequences of 4096 (the defaults' 10^8
	// operations stop at a few hundred).
	off, lim := float32(-3e38), ir.Limits{MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}
	if c.NonFinite {
		off, lim.NonFinite = float32(math.Inf(-1)), true
	}
	var mask ir.Tensor
	switch c.Mask {
	case MaskPadding:
		bs := max(c.B, 1)
		m := make([]float32, bs*c.T)
		for z := range bs {
			for j := c.T - z; j < c.T; j++ { // batch z pads its last z keys
				m[z*c.T+j] = off
			}
		}
		shape := ir.Shape{c.T}
		if c.B > 0 {
			shape = ir.Shape{c.B, 1, c.T}
			if c.H > 0 {
				shape = ir.Shape{c.B, 1, 1, c.T}
			}
		}
		mask = b.Input(shape, m)
	case MaskDense, MaskRowOff, MaskLead:
		m := Values(seed+4, c.S*c.T, 3)
		for i := range m {
			if c.Mask == MaskLead {
				if i%c.T < (c.T+1)/2 {
					m[i] = off
				}
				continue
			}
			if i%5 == 3 || c.Mask == MaskRowOff && i < c.T {
				m[i] = off
			}
		}
		mask = b.Input(ir.Shape{c.S, c.T}, m)
	default:
		mask = b.Full(ir.Shape{}, float32(math.Copysign(0, -1)))
	}
	y := q.Attention(k, v, mask, c.Scale, c.Mask == MaskCausal)
	b.Output("y", y)
	b.Output("y2", y.MulScalar(2)) // an epilogue
	if c.Residual {
		b.Output("y3", y.Add(q))
	}
	g, err := b.Build(lim)
	if err != nil {
		panic("irtest: " + err.Error())
	}
	if c.Groups > 1 {
		g = ir.GroupAttention(g)
	}
	return g
}

// AttentionEdges are the attentions every backend must reproduce: a
// single key, short and odd sequences, head dims 64 and 128, causal,
// padding and dense masks, a fully masked row (NaN), extreme values,
// heads read through a view, each side of the online order's bound, and
// grouped-query heads read in place.
func AttentionEdges() []AttentionCase {
	cs := []AttentionCase{
		{Name: "seq1", S: 1, T: 1, D: 8, E: 8, Scale: 0.5},
		{Name: "seq7-causal", H: 2, S: 7, T: 7, D: 16, E: 16, Scale: 0.25, Mask: MaskCausal},
		{Name: "seq7-padding", B: 2, H: 2, S: 7, T: 7, D: 8, E: 8, Scale: 0.35355338, Mask: MaskPadding},
		{Name: "cross-5x9", B: 1, H: 3, S: 5, T: 9, D: 4, E: 6, Scale: 1, Mask: MaskNone},
		{Name: "dense-mask", S: 6, T: 10, D: 8, E: 3, Scale: 0.125, Mask: MaskDense},
		{Name: "row-off", S: 4, T: 5, D: 4, E: 4, Scale: 0.5, Mask: MaskRowOff},
		{Name: "extremes", H: 2, S: 5, T: 6, D: 8, E: 8, Scale: 0.125, Extremes: true},
		{Name: "extremes-causal", S: 6, T: 6, D: 4, E: 4, Scale: 3, Extremes: true, Mask: MaskCausal},
		{Name: "heads-view", B: 2, H: 2, S: 5, T: 5, D: 8, E: 8, Scale: 0.35355338, HeadsInView: true, Mask: MaskCausal},
		{Name: "d64", H: 1, S: 9, T: 9, D: 64, E: 64, Scale: 0.125, Mask: MaskCausal},
		{Name: "d128", S: 3, T: 4, D: 128, E: 128, Scale: 0.088388346},
		// q added to the output, its operand after v: no mask (T = E,
		// where until 2026-12-06 it was read as one), and a padding mask.
		{Name: "residual", S: 5, T: 8, D: 8, E: 8, Scale: 0.5, Residual: true},
		{Name: "residual-padding", B: 2, S: 5, T: 8, D: 8, E: 8, Scale: 0.5, Mask: MaskPadding, Residual: true},
	}
	// Each side of the bound where attention takes the online order
	// (ir.AttentionOnlineFrom): the last full-row length, the first online
	// one, padded, and one past it with its first half of keys masked.
	if f := ir.AttentionOnlineFrom; f > 1 && f <= 1<<12 {
		cs = append(cs,
			AttentionCase{Name: "full-below-bound", S: 3, T: f - 1, D: 4, E: 4, Scale: 0.5},
			AttentionCase{Name: "online-at-bound", B: 2, S: 3, T: f, D: 4, E: 4, Scale: 0.5, Mask: MaskPadding},
			AttentionCase{Name: "online-lead", S: 3, T: f + 1, D: 4, E: 3, Scale: 0.5, Mask: MaskLead})
	}
	// Grouped-query heads read in place (rank 5, k and v broadcast).
	cs = append(cs,
		AttentionCase{Name: "grouped-padding", B: 2, H: 4, Groups: 2, S: 3, T: 7, D: 8, E: 8, Scale: 0.35355338, Mask: MaskPadding},
		AttentionCase{Name: "grouped-causal", B: 1, H: 6, Groups: 3, S: 5, T: 5, D: 4, E: 6, Scale: 0.5, Mask: MaskCausal})
	return cs
}

// Attentions returns the suite's attentions: each of AttentionEdges.
func Attentions() []Case {
	var cs []Case
	for k, c := range AttentionEdges() {
		cs = append(cs, Case{"attention/" + c.Name, c.Graph(uint64(600 + 10*k))})
	}
	return cs
}

func init() {
	// q is x as [S,D] (its last axis D), k, v and a mask of random sizes.
	attributed[ir.OpAttention] = func(r *rand.Rand, x ir.Tensor, like func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		if len(s) != 2 {
			d := 1
			if len(s) > 0 {
				d = s[len(s)-1]
			}
			x = x.Reshape(ir.Shape{s.Len() / d, d})
		}
		s = x.Shape()
		t, e := 1+r.IntN(6), 1+r.IntN(5)
		if s[0]*e > maxRandomElements {
			return ir.Tensor{}, false
		}
		mask := like(ir.Shape{s[0], t})
		if r.IntN(2) == 0 {
			mask = like(ir.Shape{t})
		}
		return x.Attention(like(ir.Shape{t, s[1]}), like(ir.Shape{t, e}), mask, float32(r.IntN(4)+1)/4, r.IntN(2) == 0), true
	}
	attributedCases[ir.OpAttention] = func() []OpCase {
		var cs []OpCase
		for _, c := range []struct {
			q, k, v, mask ir.Shape
			causal        bool
		}{
			{ir.Shape{3, 4}, ir.Shape{5, 4}, ir.Shape{5, 2}, ir.Shape{3, 5}, false},
			{ir.Shape{2, 4, 3}, ir.Shape{2, 4, 3}, ir.Shape{2, 4, 3}, ir.Shape{4}, true},
		} {
			attrs, err := ir.PackAttrs(ir.OpAttention, ir.AttentionAttrs(0.5, c.causal))
			if err != nil {
				panic(fmt.Sprintf("irtest: %v", err))
			}
			cs = append(cs, OpCase{Op: ir.OpAttention, Args: []ir.Shape{c.q, c.k, c.v, c.mask}, Attrs: attrs})
		}
		return cs
	}
}
