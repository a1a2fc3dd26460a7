package onnx

import (
	"fmt"

	"github.com/gpucc/gpucc/ir"
)

// The recurrent layers: RNN, GRU and LSTM, unrolled over the sequence
// into table ops. Each step is written as ONNX's reference
// (onnx/backend/test/case/node/{rnn,gru,lstm}.py) computes it, in its
// order: a gate is (x·Wᵀ + H·Rᵀ) + (Wb + Rb), each product a matmul
// summed in k order, so the result differs from the reference only where
// its BLAS sums in another order or a table op (exp, tanh) rounds
// differently. The weights may be constants (a model's initializers,
// sliced here) or run-time inputs (sliced by the graph). Unrolling makes
// the graph grow with the sequence: about 25 nodes a step and direction
// for RNN, 60 for LSTM (TestRecurrent logs them), within Limits.MaxNodes.
// sequence_lens is taken when it is a constant equal to seq_length for
// every batch entry, and refused otherwise.
var rnnRules = map[string]rule{
	"RNN":  {since: 7, attrs: rnnAttrs, fn: recurrent(rnnCell{})},
	"GRU":  {since: 7, attrs: append([]string{"linear_before_reset"}, rnnAttrs...), fn: recurrent(gruCell{})},
	"LSTM": {since: 7, attrs: append([]string{"input_forget"}, rnnAttrs...), fn: recurrent(lstmCell{})},
}

var rnnAttrs = []string{"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout"}

// activation is one of the functions a recurrent layer's activations
// attribute names (a row of activationFns), with its alpha and beta.
type activation struct {
	name        string
	alpha, beta float32
}

// activationFn is an activation function: its formula and the alpha and
// beta ONNX defines by default, and how many of them it takes (what a
// recurrent layer's activation_alpha and _beta lists give, in order).
type activationFn struct {
	f           func(b *ir.Builder, x ir.Tensor, alpha, beta float32) ir.Tensor
	alpha, beta float32
	params      int
}

// activationFns is what the ops of these names compute (ops.go's rules
// call them) and what a recurrent layer's activations may name; a name
// not here is refused.
var activationFns = map[string]activationFn{
	// 1/(e^-x + 1), the reference's order.
	"Sigmoid": {f: func(b *ir.Builder, x ir.Tensor, _, _ float32) ir.Tensor {
		return b.Full(x.Shape(), 1).Div(x.Neg().Exp().AddScalar(1))
	}},
	"Tanh": {f: func(b *ir.Builder, x ir.Tensor, _, _ float32) ir.Tensor { return x.Tanh() }},
	"Relu": {f: func(b *ir.Builder, x ir.Tensor, _, _ float32) ir.Tensor { return x.Relu() }},
	// x/(1 + |x|).
	"Softsign": {f: func(b *ir.Builder, x ir.Tensor, _, _ float32) ir.Tensor {
		return x.Div(x.Maximum(x.Neg()).AddScalar(1))
	}},
	// log(e^x + 1), the reference's form (it overflows where e^x does).
	"Softplus": {f: func(b *ir.Builder, x ir.Tensor, _, _ float32) ir.Tensor { return x.Exp().AddScalar(1).Log() }},
	// min(max(x·alpha + beta, 0), 1) (numpy's clip).
	"HardSigmoid": {alpha: 0.2, beta: 0.5, params: 2, f: func(b *ir.Builder, x ir.Tensor, alpha, beta float32) ir.Tensor {
		return x.MulScalar(alpha).AddScalar(beta).MaximumScalar(0).MinimumScalar(1)
	}},
	// relu(x) + min(x, 0)·alpha.
	"LeakyRelu": {alpha: 0.01, params: 1, f: func(b *ir.Builder, x ir.Tensor, alpha, _ float32) ir.Tensor {
		return x.Relu().Add(x.MinimumScalar(0).MulScalar(alpha))
	}},
	// relu(x) + (e^min(x,0) - 1)·alpha.
	"Elu": {alpha: 1, params: 1, f: func(b *ir.Builder, x ir.Tensor, alpha, _ float32) ir.Tensor {
		return x.Relu().Add(x.MinimumScalar(0).Exp().SubScalar(1).MulScalar(alpha))
	}},
	// x where x > alpha (or NaN), else 0.
	"ThresholdedRelu": {alpha: 1, params: 1, f: func(b *ir.Builder, x ir.Tensor, alpha, _ float32) ir.Tensor {
		keep := x.Apply(ir.OpGreater, b.Full(x.Shape(), alpha)).Maximum(isNaN(x))
		return where(keep, x, b.Full(x.Shape(), 0))
	}},
	// x·alpha + beta (recurrent layers only).
	"Affine": {alpha: 1, params: 2, f: func(b *ir.Builder, x ir.Tensor, alpha, beta float32) ir.Tensor {
		return x.MulScalar(alpha).AddScalar(beta)
	}},
	// tanh(x·beta)·alpha (recurrent layers only).
	"ScaledTanh": {alpha: 1, beta: 1, params: 2, f: func(b *ir.Builder, x ir.Tensor, alpha, beta float32) ir.Tensor {
		return x.MulScalar(beta).Tanh().MulScalar(alpha)
	}},
}

// activationOp imports the op of an activationFns row, reading its
// alpha and beta attributes.
func activationOp(name string) func(c *importer) ([]value, *ir.Error) {
	a := activationFns[name]
	return func(c *importer) ([]value, *ir.Error) {
		alpha, beta := c.attrFloat("alpha", a.alpha), c.attrFloat("beta", a.beta)
		return c.unaryOp(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return a.f(b, x, alpha, beta) })
	}
}

// cell is one recurrent layer's step.
type cell interface {
	gates() int         // weight blocks in W and R (RNN 1, GRU 3, LSTM 4)
	defaults() []string // the activations of one direction, when the attribute is absent
	outputs() int       // Y, Y_h and, for LSTM, Y_c
	check(*importer) *ir.Error
	// step computes the state after input x ([batch, input]) from state
	// s (H, and C for LSTM) with direction d's weights w.
	step(c *importer, l *layer, d int, w *weights, x ir.Tensor, s []ir.Tensor) []ir.Tensor
}

// layer holds a recurrent node's shapes and attributes once read.
type layer struct {
	seq, batch, input, hidden, dirs int
	gates                           int            // blocks of W and R
	acts                            [][]activation // per direction
	clip                            float32        // 0: none
}

// recurrent imports a recurrent node with cell k.
func recurrent(k cell) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		if err := k.check(c); err != nil {
			return nil, err
		}
		x, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		if len(x.Shape()) != 3 {
			return nil, c.invalid("X has shape %v, not [seq_length, batch_size, input_size]", x.Shape())
		}
		layout := c.attrInt("layout", 0)
		if layout != 0 && layout != 1 {
			return nil, c.invalid("layout %d is neither 0 nor 1", layout)
		}
		if layout == 1 {
			x = x.Permute(1, 0, 2)
		}
		l := &layer{seq: x.Shape()[0], batch: x.Shape()[1], input: x.Shape()[2]}
		switch dir := c.attrStr("direction", "forward"); dir {
		case "forward", "reverse":
			l.dirs = 1
		case "bidirectional":
			l.dirs = 2
		default:
			return nil, c.invalid("direction %s is not forward, reverse or bidirectional", ir.Quote(dir))
		}
		w, r := c.in(1), c.in(2)
		if w == nil || r == nil {
			return nil, c.invalid("W and R are required")
		}
		ws, rs := w.shape(), r.shape()
		h := int(c.attrInt("hidden_size", 0))
		if len(rs) == 3 && h == 0 {
			h = rs[2]
		}
		l.hidden, l.gates = h, k.gates()
		g := l.gates
		if h <= 0 || len(ws) != 3 || len(rs) != 3 || ws[0] != l.dirs || ws[1] != g*h || ws[2] != l.input || rs[0] != l.dirs || rs[1] != g*h || rs[2] != h {
			return nil, c.invalid("W %v and R %v do not fit %d direction(s), hidden size %d, input size %d and %d gate(s)", ws, rs, l.dirs, h, l.input, g)
		}
		if err := c.wantShape(3, "B", l.dirs, 2*g*h); err != nil {
			return nil, err
		}
		if c.in(4) != nil {
			lens, err := c.ints(4, "sequence_lens")
			if err != nil {
				return nil, err
			}
			for _, n := range lens {
				if n != int64(l.seq) {
					return nil, c.refuse("sequence_lens %v: gpucc runs every sequence of a batch to seq_length %d", lens, l.seq)
				}
			}
		}
		for j, name := range []string{"initial_h", "initial_c"}[:k.outputs()-1] {
			s := []int{l.dirs, l.batch, h}
			if layout == 1 {
				s[0], s[1] = s[1], s[0]
			}
			if err := c.wantShape(5+j, name, s...); err != nil {
				return nil, err
			}
		}
		if k.gates() == 4 {
			if err := c.wantShape(7, "P", l.dirs, 3*h); err != nil {
				return nil, err
			}
		}
		if l.acts, err = c.activations(k.defaults(), l.dirs); err != nil {
			return nil, err
		}
		l.clip = c.attrFloat("clip", 0)
		if l.clip < 0 {
			return nil, c.invalid("clip %v is negative", l.clip)
		}

		reverse := c.attrStr("direction", "forward") == "reverse"
		hs := make([][]ir.Tensor, l.dirs) // per direction, H at each time
		final := make([][]ir.Tensor, l.dirs)
		for d := range l.dirs {
			w, err := c.weightsOf(l, d, k.gates() == 4)
			if err != nil {
				return nil, err
			}
			state := make([]ir.Tensor, k.outputs()-1)
			for j := range state {
				if c.in(5+j) == nil {
					state[j] = c.zeros(ir.Shape{l.batch, h})
				} else if state[j], err = c.initialState(5+j, d, layout); err != nil {
					return nil, err
				}
			}
			hs[d] = make([]ir.Tensor, l.seq)
			for i := range l.seq {
				t := i
				if reverse || d == 1 {
					t = l.seq - 1 - i
				}
				xt, err := c.rnnStep(x, t)
				if err != nil {
					return nil, err
				}
				state = k.step(c, l, d, w, xt, state)
				hs[d][t] = state[0]
			}
			final[d] = state
		}

		outs := make([]value, k.outputs())
		if len(c.n.outputs) > 0 && c.n.outputs[0] != "" {
			parts := make([][]ir.Tensor, l.seq)
			for t := range parts {
				for d := range l.dirs {
					parts[t] = append(parts[t], hs[d][t])
				}
			}
			y, err := c.stack(parts)
			if err != nil {
				return nil, err
			}
			if layout == 1 {
				y = y.Permute(2, 0, 1, 3)
			}
			outs[0] = rtValue(y)
		}
		for j := 1; j < k.outputs(); j++ {
			parts := [][]ir.Tensor{nil}
			for d := range l.dirs {
				parts[0] = append(parts[0], final[d][j-1])
			}
			y, err := c.stack(parts)
			if err != nil {
				return nil, err
			}
			y = reshape(y, ir.Shape{l.dirs, l.batch, h})
			if layout == 1 {
				y = y.Permute(1, 0, 2)
			}
			outs[j] = rtValue(y)
		}
		return outs, nil
	}
}

// wantShape checks that the optional input k, when present, has shape s.
func (c *importer) wantShape(k int, what string, s ...int) *ir.Error {
	if v := c.in(k); v != nil && !ir.Shape(v.shape()).Equal(s) {
		return c.invalid("%s has shape %v, not %v", what, v.shape(), s)
	}
	return nil
}

// activations reads the activations attribute (and its alphas and betas)
// for dirs directions, or defs for each.
func (c *importer) activations(defs []string, dirs int) ([][]activation, *ir.Error) {
	var names []string
	if a := c.attr("activations"); a != nil {
		for _, s := range a.strings {
			names = append(names, string(s))
		}
		if len(names) != len(defs)*dirs {
			return nil, c.invalid("activations lists %d functions, not %d (%d a direction)", len(names), len(defs)*dirs, len(defs))
		}
	} else {
		for range dirs {
			names = append(names, defs...)
		}
	}
	var alphas, betas []float32
	if a := c.attr("activation_alpha"); a != nil {
		alphas = a.floats
	}
	if a := c.attr("activation_beta"); a != nil {
		betas = a.floats
	}
	acts := make([][]activation, dirs)
	for i, name := range names {
		fn, ok := activationFns[name]
		if !ok {
			return nil, c.refuse("activation %s is not supported", ir.Quote(name))
		}
		// The alphas and betas are consumed in order by the functions
		// that take them (ONNX Runtime's reading of the spec).
		a := activation{name: name, alpha: fn.alpha, beta: fn.beta}
		if fn.params >= 1 && len(alphas) > 0 {
			a.alpha, alphas = alphas[0], alphas[1:]
		}
		if fn.params >= 2 && len(betas) > 0 {
			a.beta, betas = betas[0], betas[1:]
		}
		acts[i/len(defs)] = append(acts[i/len(defs)], a)
	}
	return acts, nil
}

// act applies direction d's activation j, after the clip when there is one.
func (l *layer) act(c *importer, d, j int, x ir.Tensor) ir.Tensor {
	if l.clip > 0 {
		x = x.MaximumScalar(-l.clip).MinimumScalar(l.clip)
	}
	a := l.acts[d][j]
	return activationFns[a.name].f(c.b, x, a.alpha, a.beta)
}

// rnnStep returns X[t] as [batch, input].
func (c *importer) rnnStep(x ir.Tensor, t int) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	if s[0] > 1 {
		var err *ir.Error
		if x, err = c.takeAlong(x, 0, []int64{int64(t)}); err != nil {
			return ir.Tensor{}, err
		}
	}
	return reshape(x, ir.Shape{s[1], s[2]}), nil
}

// rnnSlice returns direction d of input k ([dirs, R, ...]) with rows
// [lo, lo+n) of its axis 1: [n, ...]. A constant is sliced here, a
// run-time input by the graph.
func (c *importer) rnnSlice(k, d, lo, n int) (ir.Tensor, *ir.Error) {
	v := c.in(k)
	s := v.shape()
	inner := ir.Shape(s[2:]).Len()
	out := append(ir.Shape{n}, s[2:]...)
	if v.c != nil && v.c.Type == Float32 {
		t, err := c.newConst(Float32, out)
		if err != nil {
			return ir.Tensor{}, err
		}
		start := (d*s[1] + lo) * inner
		copy(t.Float32, v.c.Float32[start:start+n*inner])
		return c.runtime(&value{c: t}, fmt.Sprintf("input %d", k))
	}
	x, err := c.rtIn(k)
	if err != nil {
		return ir.Tensor{}, err
	}
	if lo != 0 || n != s[1] {
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = int64(lo + i)
		}
		if x, err = c.takeAlong(x, 1, idx); err != nil {
			return ir.Tensor{}, err
		}
	}
	if s[0] > 1 {
		if x, err = c.takeAlong(x, 0, []int64{int64(d)}); err != nil {
			return ir.Tensor{}, err
		}
	}
	return reshape(x, out), nil
}

// weights are one direction's weights, sliced once: per gate block g,
// W_gᵀ ([input, hidden]), R_gᵀ ([hidden, hidden]), Wb_g and Rb_g
// ([1, hidden]; +0s without B, which the reference adds too: they turn
// a -0 sum into +0) and, for LSTM, the peepholes P_i, P_o, P_f ([1,
// hidden]; nil without P).
type weights struct {
	w, r, wb, rb, p []ir.Tensor
	b               []ir.Tensor // Wb_g + Rb_g, the reference's np.add(*np.split(B, 2))
}

func (c *importer) weightsOf(l *layer, d int, peepholes bool) (*weights, *ir.Error) {
	w := &weights{}
	h := l.hidden
	row := func(k, j int) (ir.Tensor, *ir.Error) { // block j of input k's 2-D slice d, as [1, hidden]
		if c.in(k) == nil {
			return c.zeros(ir.Shape{1, h}), nil
		}
		t, err := c.rnnSlice(k, d, j*h, h)
		return reshape(t, ir.Shape{1, h}), err
	}
	for g := range l.gates {
		wg, err := c.rnnSlice(1, d, g*h, h)
		if err != nil {
			return nil, err
		}
		rg, err := c.rnnSlice(2, d, g*h, h)
		if err != nil {
			return nil, err
		}
		wb, err := row(3, g)
		if err != nil {
			return nil, err
		}
		rb, err := row(3, l.gates+g)
		if err != nil {
			return nil, err
		}
		w.w, w.r, w.wb, w.rb = append(w.w, wg.T()), append(w.r, rg.T()), append(w.wb, wb), append(w.rb, rb)
		w.b = append(w.b, wb.Add(rb))
	}
	if peepholes && c.in(7) != nil {
		for j := range 3 {
			p, err := row(7, j)
			if err != nil {
				return nil, err
			}
			w.p = append(w.p, p)
		}
	}
	return w, nil
}

// gate is (x·W_gᵀ + H·R_gᵀ) + (Wb_g + Rb_g), every gate's pre-activation
// in the reference's order.
func (w *weights) gate(g int, x, h ir.Tensor) ir.Tensor {
	return x.MatMul(w.w[g]).Add(h.MatMul(w.r[g])).Add(w.b[g])
}

// initialState returns direction d of the initial state input k
// ([dirs, batch, hidden], or [batch, dirs, hidden] in layout 1) as
// [batch, hidden].
func (c *importer) initialState(k, d int, layout int64) (ir.Tensor, *ir.Error) {
	if layout == 0 {
		s := c.in(k).shape()
		return c.rnnSlice(k, d, 0, s[1])
	}
	x, err := c.rtIn(k)
	if err != nil {
		return ir.Tensor{}, err
	}
	s := x.Shape()
	if s[1] > 1 {
		if x, err = c.takeAlong(x, 1, []int64{int64(d)}); err != nil {
			return ir.Tensor{}, err
		}
	}
	return reshape(x, ir.Shape{s[0], s[2]}), nil
}

// stack places parts[t][d] ([batch, hidden] each) at [t, d] of a
// [len(parts), len(parts[0]), batch, hidden] tensor: each part masked
// into place (-0 elsewhere) and the pieces added, x + -0 being x.
func (c *importer) stack(parts [][]ir.Tensor) (ir.Tensor, *ir.Error) {
	seq, dirs := len(parts), len(parts[0])
	s := parts[0][0].Shape()
	out := ir.Shape{seq, dirs, s[0], s[1]}
	if seq*dirs == 1 {
		return reshape(parts[0][0], out), nil
	}
	var y ir.Tensor
	for t := range seq {
		for d := range dirs {
			sel, err := c.newConst(Float32, []int{seq, dirs, 1, 1})
			if err != nil {
				return ir.Tensor{}, err
			}
			sel.Float32[t*dirs+d] = 1
			m, err := c.runtime(&value{c: sel}, "a selector")
			if err != nil {
				return ir.Tensor{}, err
			}
			p := m.Apply(ir.OpMask, reshape(parts[t][d], ir.Shape{1, 1, s[0], s[1]}))
			if t == 0 && d == 0 {
				y = p
			} else {
				y = y.Add(p)
			}
		}
	}
	return y, nil
}

// rnnCell: H = f(x·Wᵀ + H·Rᵀ + (Wb + Rb)).
type rnnCell struct{}

func (rnnCell) gates() int                { return 1 }
func (rnnCell) defaults() []string        { return []string{"Tanh"} }
func (rnnCell) outputs() int              { return 2 }
func (rnnCell) check(*importer) *ir.Error { return nil }
func (rnnCell) step(c *importer, l *layer, d int, w *weights, x ir.Tensor, s []ir.Tensor) []ir.Tensor {
	return []ir.Tensor{l.act(c, d, 0, w.gate(0, x, s[0]))}
}

// gruCell: z, r = f(x·W_{z,r}ᵀ + H·R_{z,r}ᵀ + (Wb + Rb)); the candidate
// g(x·W_hᵀ + (r⊙H)·R_hᵀ + Wb_h + Rb_h), or with linear_before_reset
// g(x·W_hᵀ + r⊙(H·R_hᵀ + Rb_h) + Wb_h); H = (1 - z)⊙h + z⊙H.
type gruCell struct{}

func (gruCell) gates() int         { return 3 }
func (gruCell) defaults() []string { return []string{"Sigmoid", "Tanh"} }
func (gruCell) outputs() int       { return 2 }
func (gruCell) check(c *importer) *ir.Error {
	if lbr := c.attrInt("linear_before_reset", 0); lbr != 0 && lbr != 1 {
		return c.invalid("linear_before_reset %d is neither 0 nor 1", lbr)
	}
	return nil
}
func (gruCell) step(c *importer, l *layer, d int, w *weights, x ir.Tensor, s []ir.Tensor) []ir.Tensor {
	h := s[0]
	z, r := l.act(c, d, 0, w.gate(0, x, h)), l.act(c, d, 0, w.gate(1, x, h))
	var pre ir.Tensor
	if c.attrInt("linear_before_reset", 0) != 0 {
		pre = x.MatMul(w.w[2]).Add(r.Mul(h.MatMul(w.r[2]).Add(w.rb[2]))).Add(w.wb[2])
	} else {
		pre = x.MatMul(w.w[2]).Add(r.Mul(h).MatMul(w.r[2])).Add(w.wb[2]).Add(w.rb[2])
	}
	cand := l.act(c, d, 1, pre)
	return []ir.Tensor{c.b.Full(z.Shape(), 1).Sub(z).Mul(cand).Add(z.Mul(h))}
}

// lstmCell, in the reference's order: gates i, o, f, c from
// x·Wᵀ + H·Rᵀ + (Wb + Rb); i = f(i + P_i⊙C), f = f(f + P_f⊙C), c = g(c),
// C' = f⊙C + i⊙c, o = f(o + P_o⊙C'), H' = o⊙h(C'). Without P the
// reference still adds 0⊙C (NaN where C is infinite), and so does this.
type lstmCell struct{}

func (lstmCell) gates() int         { return 4 }
func (lstmCell) defaults() []string { return []string{"Sigmoid", "Tanh", "Tanh"} }
func (lstmCell) outputs() int       { return 3 }
func (lstmCell) check(c *importer) *ir.Error {
	if n := c.attrInt("input_forget", 0); n != 0 {
		return c.refuse("input_forget %d: gpucc runs LSTM with separate input and forget gates", n)
	}
	return nil
}
func (lstmCell) step(c *importer, l *layer, d int, w *weights, x ir.Tensor, s []ir.Tensor) []ir.Tensor {
	h, cs := s[0], s[1]
	peep := func(j int, state ir.Tensor) ir.Tensor { // P_j⊙state, j = 0 (i), 1 (o), 2 (f)
		if w.p == nil {
			return state.MulScalar(0)
		}
		return w.p[j].Mul(state)
	}
	i := l.act(c, d, 0, w.gate(0, x, h).Add(peep(0, cs)))
	f := l.act(c, d, 0, w.gate(2, x, h).Add(peep(2, cs)))
	cc := l.act(c, d, 1, w.gate(3, x, h))
	cn := f.Mul(cs).Add(i.Mul(cc))
	o := l.act(c, d, 0, w.gate(1, x, h).Add(peep(1, cn)))
	return []ir.Tensor{o.Mul(l.act(c, d, 2, cn)), cn}
}
