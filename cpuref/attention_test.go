package cpuref_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// onlineByHand is the online order as ir/attention.go writes it, one
// query row at a time, each float32 operation rounded by a conversion and
// exp, sub, div and maximum from the op table: the specification that
// cpuref.Attention must meet where a.Block is set; with a.Chunk set too,
// the split order: each part's online order (partByHand), the parts
// combined in ascending order.
func onlineByHand(q, k, v, mask []float32, a ir.Attention) []float32 {
	x := func(op ir.Op, p, r float32) float32 { return cpuref.EvalX(op.Info().Expr, p, r, false) }
	mx := func(p, r float32) float32 { return cpuref.EvalX(ir.OpMax.Info().Combine.Info().Expr, p, r, false) }
	out := make([]float32, a.S*a.E)
	for i := range a.S {
		t := make([]float32, a.T)
		for j := range a.T {
			var acc float32
			for d := range a.D {
				acc = float32(acc + float32(q[i*a.D+d]*k[j*a.D+d]))
			}
			t[j] = float32(float32(acc*a.Scale) + mask[i*a.T+j])
		}
		if a.Chunk == 0 {
			_, l, o := partByHand(t, v, a)
			for e := range o {
				out[i*a.E+e] = x(ir.OpDiv, o[e], l)
			}
			continue
		}
		var ms, ls []float32
		var os [][]float32
		M := float32(math.Inf(-1))
		for lo := 0; lo < a.T; lo += a.Chunk {
			hi := min(lo+a.Chunk, a.T)
			m, l, o := partByHand(t[lo:hi], v[lo*a.E:hi*a.E], a)
			ms, ls, os = append(ms, m), append(ls, l), append(os, o)
			M = mx(M, m)
		}
		L, O := float32(0), make([]float32, a.E)
		for c := range ms {
			w := x(ir.OpExp, x(ir.OpSub, ms[c], M), 0)
			L = float32(L + float32(ls[c]*w))
			for e := range O {
				O[e] = float32(O[e] + float32(os[c][e]*w))
			}
		}
		for e := range O {
			out[i*a.E+e] = x(ir.OpDiv, O[e], L)
		}
	}
	return out
}

// partByHand is the online order over one row's scores t and v's rows
// of the same keys, from the first: its final m, l and o, undivided.
func partByHand(t, v []float32, a ir.Attention) (float32, float32, []float32) {
	x := func(op ir.Op, p, r float32) float32 { return cpuref.EvalX(op.Info().Expr, p, r, false) }
	mx := func(p, r float32) float32 { return cpuref.EvalX(ir.OpMax.Info().Combine.Info().Expr, p, r, false) }
	T := len(t)
	m, l := float32(-math.MaxFloat32), float32(0)
	o := make([]float32, a.E)
	for b := 0; b < T; b += a.Block {
		mn := m
		for j := b; j < min(b+a.Block, T); j++ {
			mn = mx(mn, t[j])
		}
		c := x(ir.OpExp, x(ir.OpSub, m, mn), 0)
		l = float32(l * c)
		for e := range o {
			o[e] = float32(o[e] * c)
		}
		for j := b; j < min(b+a.Block, T); j++ {
			p := x(ir.OpExp, x(ir.OpSub, t[j], mn), 0)
			l = float32(l + p)
			for e := range o {
				o[e] = float32(o[e] + float32(p*v[j*a.E+e]))
			}
		}
		m = mn
	}
	return m, l, o
}

// TestAttentionOnlineOrder: cpuref.Attention with a.Block set computes
// the online order of ir/attention.go (onlineByHand's bits, NaNs as NaN)
// over rows whose first blocks are -Inf, a fully masked row, -3e38 and
// random masks, extreme values; its bits differ from the full-row order's
// somewhere over 100 random keys (else the order would not be new), and
// within one block (T ≤ Block) they are the full-row order's.
func TestAttentionOnlineOrder(t *testing.T) {
	inf := float32(math.Inf(-1))
	for _, c := range []struct {
		name    string
		s, t    int
		d, e    int
		extreme bool
		mask    func(i, j int) float32
	}{
		{"random-100", 6, 100, 8, 5, false, nil},
		{"lead-off-100", 3, 100, 8, 8, false, func(i, j int) float32 {
			if j < 70 {
				return inf
			}
			return 0
		}},
		{"row-off-70", 3, 70, 4, 4, false, func(i, j int) float32 {
			if i == 0 || j%5 == 3 {
				return inf
			}
			return 0
		}},
		{"minus-3e38-65", 4, 65, 4, 3, false, func(i, j int) float32 {
			if j < 40 {
				return -3e38
			}
			return 0
		}},
		{"extremes-70", 5, 70, 8, 8, true, nil},
		{"one-block-32", 7, 32, 8, 8, false, nil},
		{"one-block-9", 7, 9, 8, 8, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := func(seed uint64, n int) []float32 {
				if c.extreme {
					return irtest.Extremes(seed, n)
				}
				return irtest.Values(seed, n, 2)
			}
			q, k, v := vals(1, c.s*c.d), vals(2, c.t*c.d), vals(3, c.t*c.e)
			mask := irtest.Values(4, c.s*c.t, 3)
			if c.mask != nil {
				for i := range c.s {
					for j := range c.t {
						mask[i*c.t+j] = c.mask(i, j)
					}
				}
			}
			a := ir.Attention{S: c.s, T: c.t, D: c.d, E: c.e, Scale: 0.35, Block: ir.AttentionBlock}
			got, want := cpuref.Attention(q, k, v, mask, a), onlineByHand(q, k, v, mask, a)
			full := a
			full.Block = 0
			rows := cpuref.Attention(q, k, v, mask, full)
			differs := false
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("y[%d] = %v (%#08x), the online order gives %v (%#08x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
				differs = differs || math.Float32bits(got[i]) != math.Float32bits(rows[i]) && !(got[i] != got[i] && rows[i] != rows[i])
			}
			if c.t <= a.Block && differs || c.name == "random-100" && !differs {
				t.Errorf("the online order differs from the full-row order: %v, want %v (keys %d, block %d)", differs, !differs, c.t, a.Block)
			}
			if c.name == "row-off-70" {
				for i, y := range got {
					if nan := y != y; nan != (i < c.e) {
						t.Errorf("y[%d] = %v: want NaN exactly in the fully masked row 0", i, y)
					}
				}
			}
		})
	}
}

// TestAttentionSplitOrder: with a.Chunk set, cpuref.Attention computes
// the split order of ir/attention.go (onlineByHand's bits, NaNs as NaN):
// parts of one block and of two, a last part of one key, parts wholly
// -Inf (the lead's first half), -3e38, a fully masked row (NaN exactly
// there), extremes; its bits differ from the online order's somewhere
// over 100 random keys (else the order would not be new).
func TestAttentionSplitOrder(t *testing.T) {
	inf := float32(math.Inf(-1))
	for _, c := range []struct {
		name      string
		s, t      int
		d, e      int
		chunk     int
		extreme   bool
		mask      func(i, j int) float32
		wantDiffs bool
	}{
		{"random-100-by-32", 6, 100, 8, 5, 32, false, nil, true},
		{"random-100-by-64", 6, 100, 8, 5, 64, false, nil, true},
		{"last-part-one-key-65", 4, 65, 8, 4, 64, false, nil, false},
		{"lead-off-100", 3, 100, 8, 8, 32, false, func(i, j int) float32 {
			if j < 70 {
				return inf
			}
			return 0
		}, false},
		{"row-off-70", 3, 70, 4, 4, 32, false, func(i, j int) float32 {
			if i == 0 || j%5 == 3 {
				return inf
			}
			return 0
		}, false},
		{"minus-3e38-65", 4, 65, 4, 3, 32, false, func(i, j int) float32 {
			if j < 40 {
				return -3e38
			}
			return 0
		}, false},
		{"extremes-70", 5, 70, 8, 8, 32, true, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := func(seed uint64, n int) []float32 {
				if c.extreme {
					return irtest.Extremes(seed, n)
				}
				return irtest.Values(seed, n, 2)
			}
			q, k, v := vals(1, c.s*c.d), vals(2, c.t*c.d), vals(3, c.t*c.e)
			mask := irtest.Values(4, c.s*c.t, 3)
			if c.mask != nil {
				for i := range c.s {
					for j := range c.t {
						mask[i*c.t+j] = c.mask(i, j)
					}
				}
			}
			a := ir.Attention{S: c.s, T: c.t, D: c.d, E: c.e, Scale: 0.35, Block: ir.AttentionBlock, Chunk: c.chunk}
			got, want := cpuref.Attention(q, k, v, mask, a), onlineByHand(q, k, v, mask, a)
			whole := a
			whole.Chunk = 0
			online := cpuref.Attention(q, k, v, mask, whole)
			differs := false
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("y[%d] = %v (%#08x), the split order gives %v (%#08x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
				differs = differs || math.Float32bits(got[i]) != math.Float32bits(online[i]) && !(got[i] != got[i] && online[i] != online[i])
			}
			if c.wantDiffs && !differs {
				t.Errorf("the split order gives the online order's bits over %d keys in parts of %d", c.t, c.chunk)
			}
			if c.name == "row-off-70" {
				for i, y := range got {
					if nan := y != y; nan != (i < c.e) {
						t.Errorf("y[%d] = %v: want NaN exactly in the fully masked row 0", i, y)
					}
				}
			}
		})
	}
}
