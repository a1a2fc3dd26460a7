package ir_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestFuseAttention: the patterns exporters write become one attention
// node whose value is cpuref's attention of the same q, k, v, mask and
// scale, bit for bit, and within four times matmul's error bound of the
// unfused graph's; patterns that differ are left alone.
func TestFuseAttention(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	type parts struct{ q, k, v, kt, mask ir.Tensor }
	in := func(b *ir.Builder, seed uint64, s ir.Shape) ir.Tensor {
		return b.Input(s, irtest.Values(seed, s.Len(), 2))
	}
	// mk returns q [2,5,8], k [2,7,8], v [2,7,4], kᵀ as a permute of k,
	// and a [7] mask.
	mk := func(b *ir.Builder) parts {
		p := parts{q: in(b, 1, ir.Shape{2, 5, 8}), k: in(b, 2, ir.Shape{2, 7, 8}), v: in(b, 3, ir.Shape{2, 7, 4}), mask: in(b, 4, ir.Shape{7})}
		p.kt = p.k.Permute(0, 2, 1)
		return p
	}
	cases := []struct {
		name  string
		fused int
		graph func(b *ir.Builder, p parts) ir.Tensor
		// want is the attention it must equal (nil: fused must be 0)
		want func(b *ir.Builder, p parts) ir.Tensor
	}{
		{"scale-mask", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.q.MatMul(p.kt).MulScalar(0.3).Add(p.mask).Softmax(2).MatMul(p.v)
			},
			func(b *ir.Builder, p parts) ir.Tensor { return p.q.Attention(p.k, p.v, p.mask, 0.3, false) }},
		{"mask-first", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.mask.Broadcast(ir.Shape{2, 5, 7}).Add(p.q.MatMul(p.kt).MulScalar(0.3)).Softmax(-1).MatMul(p.v)
			},
			func(b *ir.Builder, p parts) ir.Tensor { return p.q.Attention(p.k, p.v, p.mask, 0.3, false) }},
		{"div-by-8", 1,
			func(b *ir.Builder, p parts) ir.Tensor { return p.q.MatMul(p.kt).DivScalar(8).Softmax(2).MatMul(p.v) },
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.q.Attention(p.k, p.v, b.Full(ir.Shape{}, negZero), 0.125, false)
			}},
		{"mul-by-full", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.q.MatMul(p.kt).Mul(b.Full(ir.Shape{}, 0.7)).Add(p.mask).Softmax(2).MatMul(p.v)
			},
			func(b *ir.Builder, p parts) ir.Tensor { return p.q.Attention(p.k, p.v, p.mask, 0.7, false) }},
		{"prescaled-no-mask", 1, // SDPA's export: q and k scaled before the product
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.q.MulScalar(0.5).MatMul(p.kt.MulScalar(0.5)).Softmax(2).MatMul(p.v)
			},
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.q.MulScalar(0.5).Attention(p.kt.MulScalar(0.5).Permute(0, 2, 1), p.v, b.Full(ir.Shape{}, negZero), 1, false)
			}},
		{"keys-given-transposed", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				kt := in(b, 5, ir.Shape{2, 8, 7})
				return p.q.MatMul(kt).MulScalar(0.3).Softmax(2).MatMul(p.v)
			},
			func(b *ir.Builder, p parts) ir.Tensor {
				return p.q.Attention(in(b, 5, ir.Shape{2, 8, 7}).Permute(0, 2, 1), p.v, b.Full(ir.Shape{}, negZero), 0.3, false)
			}},
		{"div-by-3", 0, func(b *ir.Builder, p parts) ir.Tensor { return p.q.MatMul(p.kt).DivScalar(3).Softmax(2).MatMul(p.v) }, nil},
		{"softmax-over-queries", 0, func(b *ir.Builder, p parts) ir.Tensor {
			return p.q.MatMul(p.kt).MulScalar(0.3).Softmax(1).MatMul(p.v)
		}, nil},
		{"probabilities-read-twice", 0, func(b *ir.Builder, p parts) ir.Tensor {
			s := p.q.MatMul(p.kt).MulScalar(0.3).Softmax(2)
			b.Output("p", s)
			return s.MatMul(p.v)
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := ir.NewBuilder()
			b.Output("y", c.graph(b, mk(b)))
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			f, n := ir.FuseAttention(g)
			if n != c.fused {
				t.Fatalf("fused %d, want %d:\n%s", n, c.fused, f)
			}
			if n == 0 {
				if f != g {
					t.Error("a graph without the pattern was rewritten")
				}
				return
			}
			if err := ir.Validate(f, ir.Limits{}); err != nil {
				t.Fatalf("fused graph: %v\n%s", err, f)
			}
			wb := ir.NewBuilder()
			wb.Output("y", c.want(wb, mk(wb)))
			w, err := wb.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got, want, unfused := cpuref.Eval(f)[f.Outputs[0].ID], cpuref.Eval(w)[w.Outputs[0].ID], cpuref.Eval(g)[g.Outputs[0].ID]
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v, attention's %v", i, got[i], want[i])
				}
				// matmul's bound over T = 7 keys of |p·v| ≤ |v| ≤ 2, four times
				if d := math.Abs(float64(got[i] - unfused[i])); d > 4*7*0x1p-24*2 {
					t.Errorf("y[%d] = %v, the unfused graph's %v: %.3g apart", i, got[i], unfused[i], d)
				}
			}
		})
	}
}

// TestFuseCausalWhere: masked_fill(mask, -Inf) as the ONNX importer
// writes Where (mask(c, -Inf) + mask(1-c, scores)) over a constant c that
// is 1 exactly past the diagonal becomes causal attention, bit for bit the
// explicit one; a constant one element off becomes attention adding
// mask(c, -Inf) (TestFuseBoolMask).
func TestFuseCausalWhere(t *testing.T) {
	const s = 6
	causal := make([]float32, s*s)
	for i := range s {
		for j := range s {
			if j > i {
				causal[i*s+j] = 1
			}
		}
	}
	off := append([]float32(nil), causal...)
	off[s] = 1 // row 1 masks key 0 too
	for _, c := range []struct {
		name string
		mask []float32
		want int
	}{{"causal", causal, 1}, {"one-off", off, 1}} {
		b := ir.NewBuilder()
		q, k, v := b.Input(ir.Shape{2, s, 4}, irtest.Values(1, 2*s*4, 2)), b.Input(ir.Shape{2, s, 4}, irtest.Values(2, 2*s*4, 2)), b.Input(ir.Shape{2, s, 3}, irtest.Values(3, 2*s*3, 2))
		m := b.Input(ir.Shape{s, s}, c.mask)
		scores := q.MatMul(k.Permute(0, 2, 1)).DivScalar(2)
		inf := m.Apply(ir.OpMask, b.Full(ir.Shape{}, float32(math.Inf(-1))).Broadcast(ir.Shape{s, s}))
		where := inf.Broadcast(ir.Shape{2, s, s}).Add(m.Neg().AddScalar(1).Broadcast(ir.Shape{2, s, s}).Apply(ir.OpMask, scores))
		b.Output("y", where.Softmax(2).MatMul(v))
		g, err := b.Build(ir.Limits{NonFinite: true})
		if err != nil {
			t.Fatal(err)
		}
		f, n := ir.FuseAttention(g)
		if n != c.want {
			t.Fatalf("%s: fused %d, want %d", c.name, n, c.want)
		}
		if n == 0 {
			continue
		}
		wb := ir.NewBuilder()
		wq, wk, wv := wb.Input(ir.Shape{2, s, 4}, irtest.Values(1, 2*s*4, 2)), wb.Input(ir.Shape{2, s, 4}, irtest.Values(2, 2*s*4, 2)), wb.Input(ir.Shape{2, s, 3}, irtest.Values(3, 2*s*3, 2))
		if c.name == "causal" {
			wb.Output("y", wq.Attention(wk, wv, wb.Full(ir.Shape{}, float32(math.Copysign(0, -1))), 0.5, true))
		} else {
			wm := wb.Input(ir.Shape{s, s}, c.mask).Apply(ir.OpMask, wb.Full(ir.Shape{}, float32(math.Inf(-1))).Broadcast(ir.Shape{s, s}))
			wb.Output("y", wq.Attention(wk, wv, wm, 0.5, false))
		}
		w, err := wb.Build(ir.Limits{NonFinite: true})
		if err != nil {
			t.Fatal(err)
		}
		got, want := cpuref.Eval(f)[f.Outputs[0].ID], cpuref.Eval(w)[w.Outputs[0].ID]
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: y[%d] = %v, causal attention's %v", c.name, i, got[i], want[i])
			}
		}
	}
}

// TestFuseBoolMask: masked_fill over a run-time bool (a cast of a
// comparison, or and/not of such), as the importer writes ONNX's
// Where(c, -Inf, scores) or Where(c, scores, -Inf), becomes attention
// adding the where's mask(a, -Inf) node (a the -Inf side's condition),
// bit for bit the explicit attention, and within matmul's bound of the
// unfused graph; conditions not known to be 0/1 or not complementary are
// left alone. At the limit it differs from the where as the additive mask
// of PyTorch's SDPA and ONNX's Attention does: a masked score of +Inf
// makes its row NaN.
func TestFuseBoolMask(t *testing.T) {
	const S, T = 3, 7
	inf := float32(math.Inf(-1))
	type parts struct{ q, k, v, pos, lim ir.Tensor }
	mk := func(b *ir.Builder, big bool) parts {
		k := irtest.Values(2, 2*T*4, 2)
		if big { // key 6, masked for every query, scores +Inf for query 0
			for d := range 4 {
				k[6*4+d] = 3e38
			}
		}
		q := irtest.Values(1, 2*S*4, 2)
		for d := range 4 {
			q[d] = 1
		}
		return parts{q: b.Input(ir.Shape{2, S, 4}, q), k: b.Input(ir.Shape{2, T, 4}, k),
			v:   b.Input(ir.Shape{2, T, 3}, irtest.Values(3, 2*T*3, 2)),
			pos: b.Input(ir.Shape{T}, []float32{0, 1, 2, 3, 4, 5, 6}), lim: b.NamedInput("len", ir.Shape{}, []float32{4.5})}
	}
	st := ir.Shape{2, S, T}
	scores := func(p parts) ir.Tensor { return p.q.MatMul(p.k.Permute(0, 2, 1)).MulScalar(0.5) }
	// hide is 1 for the keys past len (run time), keep its complement.
	hide := func(p parts) ir.Tensor {
		return p.pos.ApplyTo(ir.Bool, ir.OpGreater, p.lim.Broadcast(ir.Shape{T})).Cast(ir.F32)
	}
	not := func(c ir.Tensor) ir.Tensor { return c.Neg().AddScalar(1) }
	full := func(b *ir.Builder, s ir.Shape) ir.Tensor { return b.Full(ir.Shape{}, inf).Broadcast(s) }
	cases := []struct {
		name  string
		fused int
		graph func(b *ir.Builder, p parts) ir.Tensor
		mask  func(b *ir.Builder, p parts) ir.Tensor // the mask the attention adds
	}{
		{"where-c-inf-scores", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				h := hide(p)
				return h.Apply(ir.OpMask, full(b, ir.Shape{T})).Broadcast(st).Add(not(h).Broadcast(st).Apply(ir.OpMask, scores(p)))
			},
			func(b *ir.Builder, p parts) ir.Tensor { return hide(p).Apply(ir.OpMask, full(b, ir.Shape{T})) }},
		{"where-c-scores-inf", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				keep := not(hide(p)).Reshape(ir.Shape{1, T})
				return keep.Broadcast(st).Apply(ir.OpMask, scores(p)).Add(not(keep).Apply(ir.OpMask, full(b, ir.Shape{1, T})).Broadcast(st))
			},
			func(b *ir.Builder, p parts) ir.Tensor {
				return not(not(hide(p)).Reshape(ir.Shape{1, T})).Apply(ir.OpMask, full(b, ir.Shape{1, T}))
			}},
		{"and-of-bools", 1,
			func(b *ir.Builder, p parts) ir.Tensor {
				h := hide(p).Mul(p.pos.ApplyTo(ir.Bool, ir.OpGreater, b.Full(ir.Shape{T}, 0)).Cast(ir.F32))
				return h.Apply(ir.OpMask, full(b, ir.Shape{T})).Broadcast(st).Add(not(h).Broadcast(st).Apply(ir.OpMask, scores(p)))
			},
			func(b *ir.Builder, p parts) ir.Tensor {
				h := hide(p).Mul(p.pos.ApplyTo(ir.Bool, ir.OpGreater, b.Full(ir.Shape{T}, 0)).Cast(ir.F32))
				return h.Apply(ir.OpMask, full(b, ir.Shape{T}))
			}},
		{"float-condition", 0, // pos is not known to be 0 or 1
			func(b *ir.Builder, p parts) ir.Tensor {
				h := p.pos.Add(p.lim.Broadcast(ir.Shape{T}))
				return h.Apply(ir.OpMask, full(b, ir.Shape{T})).Broadcast(st).Add(not(h).Broadcast(st).Apply(ir.OpMask, scores(p)))
			}, nil},
		{"not-complementary", 0,
			func(b *ir.Builder, p parts) ir.Tensor {
				h := hide(p)
				return h.Apply(ir.OpMask, full(b, ir.Shape{T})).Broadcast(st).Add(h.Broadcast(st).Apply(ir.OpMask, scores(p)))
			}, nil},
	}
	for _, c := range cases {
		for _, big := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/big=%v", c.name, big), func(t *testing.T) {
				b := ir.NewBuilder()
				p := mk(b, big)
				b.Output("y", c.graph(b, p).Softmax(2).MatMul(p.v))
				g, err := b.Build(ir.Limits{NonFinite: true})
				if err != nil {
					t.Fatal(err)
				}
				f, n := ir.FuseAttention(g)
				if n != c.fused {
					t.Fatalf("fused %d, want %d:\n%s", n, c.fused, f)
				}
				if n == 0 {
					return
				}
				if err := ir.Validate(f, ir.Limits{NonFinite: true}); err != nil {
					t.Fatalf("fused graph: %v\n%s", err, f)
				}
				wb := ir.NewBuilder()
				wp := mk(wb, big)
				wb.Output("y", wp.q.Attention(wp.k, wp.v, c.mask(wb, wp), 0.5, false))
				w, err := wb.Build(ir.Limits{NonFinite: true})
				if err != nil {
					t.Fatal(err)
				}
				ev := func(g *ir.Graph) []float32 {
					v, err := cpuref.EvalTyped(g)
					if err != nil {
						t.Fatal(err)
					}
					return v[g.Outputs[0].ID].F
				}
				got, want, unfused := ev(f), ev(w), ev(g)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("y[%d] = %v, attention's %v", i, got[i], want[i])
					}
					if big && i < 3 { // query 0 of batch 0 scores key 6, masked, at +Inf
						if !math.IsNaN(float64(got[i])) || math.IsNaN(float64(unfused[i])) {
							t.Errorf("y[%d] = %v, unfused %v: want NaN (the additive mask's) where the where gives a number", i, got[i], unfused[i])
						}
						continue
					}
					if d := math.Abs(float64(got[i] - unfused[i])); d > 4*T*0x1p-24*2 {
						t.Errorf("y[%d] = %v, the unfused graph's %v: %.3g apart", i, got[i], unfused[i], d)
					}
				}
			})
		}
	}
}
