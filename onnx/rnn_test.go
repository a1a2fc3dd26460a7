package onnx_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"google.golang.org/protobuf/encoding/protowire"
)

// rnnCase is one recurrent node: its kind, sizes and attributes.
type rnnCase struct {
	op                         string // RNN, GRU, LSTM
	seq, batch, input, hidden  int
	direction                  string
	layout                     int64
	clip                       float32
	acts                       []string
	alphas, betas              []float32
	lbr                        int64 // GRU's linear_before_reset
	bias, initial, peep, noOut bool
}

func (c rnnCase) gates() int { return map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}[c.op] }
func (c rnnCase) dirs() int {
	if c.direction == "bidirectional" {
		return 2
	}
	return 1
}

// rnnData is a case's random inputs, by ONNX input name.
type rnnData map[string][]float32

func (c rnnCase) shapes() map[string][]int64 {
	d, g, h := int64(c.dirs()), int64(c.gates()), int64(c.hidden)
	x := []int64{int64(c.seq), int64(c.batch), int64(c.input)}
	if c.layout == 1 {
		x[0], x[1] = x[1], x[0]
	}
	s := map[string][]int64{"X": x, "W": {d, g * h, int64(c.input)}, "R": {d, g * h, h}}
	if c.bias {
		s["B"] = []int64{d, 2 * g * h}
	}
	if c.initial {
		st := []int64{d, int64(c.batch), h}
		if c.layout == 1 {
			st = []int64{int64(c.batch), d, h}
		}
		s["initial_h"] = st
		if c.op == "LSTM" {
			s["initial_c"] = st
		}
	}
	if c.peep {
		s["P"] = []int64{d, 3 * h}
	}
	return s
}

func (c rnnCase) data(seed uint64) rnnData {
	r := rand.New(rand.NewPCG(seed, 7))
	d := rnnData{}
	for name, s := range c.shapes() {
		n := 1
		for _, k := range s {
			n *= int(k)
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.7)
		}
		d[name] = v
	}
	return d
}

// model writes the case's node, with the weights (W, R, B, P) as
// initializers when consts, else as graph inputs.
func (c rnnCase) model(d rnnData, consts bool) []byte {
	order := []string{"X", "W", "R", "B", "", "initial_h", "initial_c", "P"}
	shapes := c.shapes()
	var ins []string
	var inits, inputs []msg
	for _, name := range order {
		if _, ok := shapes[name]; !ok {
			ins = append(ins, "")
			continue
		}
		ins = append(ins, name)
		if consts && (name == "W" || name == "R" || name == "B" || name == "P") {
			inits = append(inits, floats(name, shapes[name], d[name]...))
		} else {
			inputs = append(inputs, valueInfo(name, shapes[name]...))
		}
	}
	for len(ins) > 0 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1]
	}
	attrs := []msg{attrInt("hidden_size", int64(c.hidden)), attrStr("direction", c.direction), attrInt("layout", c.layout)}
	if c.clip > 0 {
		attrs = append(attrs, attrFloat("clip", c.clip))
	}
	if c.acts != nil {
		attrs = append(attrs, attrStrs("activations", c.acts...))
	}
	if c.alphas != nil {
		attrs = append(attrs, attrFloats("activation_alpha", c.alphas...))
	}
	if c.betas != nil {
		attrs = append(attrs, attrFloats("activation_beta", c.betas...))
	}
	if c.op == "GRU" {
		attrs = append(attrs, attrInt("linear_before_reset", c.lbr))
	}
	outs := []string{"Y", "Y_h"}
	if c.op == "LSTM" {
		outs = append(outs, "Y_c")
	}
	if c.noOut {
		outs[0] = ""
	}
	var vis []msg
	for _, o := range outs {
		if o != "" {
			vis = append(vis, valueInfo(o))
		}
	}
	return model(14, graph([]msg{node(c.op, "rnn", ins, outs, attrs...)}, inits, inputs, vis))
}

func attrStrs(name string, vs ...string) msg {
	m := msg(nil).str(1, name).varint(20, 8)
	for _, v := range vs {
		m = m.str(9, v)
	}
	return m
}

func attrFloats(name string, vs ...float32) msg {
	var packed []byte
	for _, v := range vs {
		packed = protowire.AppendFixed32(packed, math.Float32bits(v))
	}
	return msg(nil).str(1, name).varint(20, 6).bytes(7, packed)
}

// reference computes the case in float64 from ONNX's operator spec,
// written apart from the importer: every output by name.
func (c rnnCase) reference(d rnnData) map[string][]float64 {
	S, B, I, H, D, G := c.seq, c.batch, c.input, c.hidden, c.dirs(), c.gates()
	x := func(t, b, i int) float64 {
		if c.layout == 1 {
			return float64(d["X"][(b*S+t)*I+i])
		}
		return float64(d["X"][(t*B+b)*I+i])
	}
	w := func(k string, dir, row, col, cols int) float64 { return float64(d[k][(dir*G*H+row)*cols+col]) }
	bias := func(dir, j int) float64 {
		if d["B"] == nil {
			return 0
		}
		return float64(d["B"][dir*2*G*H+j])
	}
	defs := map[string][]string{"RNN": {"Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "LSTM": {"Sigmoid", "Tanh", "Tanh"}}[c.op]
	acts := c.acts
	if acts == nil {
		for range D {
			acts = append(acts, defs...)
		}
	}
	type fn func(float64) float64
	alphas, betas := append([]float32(nil), c.alphas...), append([]float32(nil), c.betas...)
	take := func(l *[]float32, def float64) float64 {
		if len(*l) == 0 {
			return def
		}
		v := float64((*l)[0])
		*l = (*l)[1:]
		return v
	}
	var fns []fn
	for _, a := range acts {
		switch a {
		case "Sigmoid":
			fns = append(fns, func(v float64) float64 { return 1 / (1 + math.Exp(-v)) })
		case "Tanh":
			fns = append(fns, math.Tanh)
		case "Relu":
			fns = append(fns, func(v float64) float64 { return math.Max(v, 0) })
		case "HardSigmoid":
			al, be := take(&alphas, 0.2), take(&betas, 0.5)
			fns = append(fns, func(v float64) float64 { return math.Min(math.Max(al*v+be, 0), 1) })
		case "LeakyRelu":
			al := take(&alphas, 0.01)
			fns = append(fns, func(v float64) float64 { return math.Max(v, 0) + al*math.Min(v, 0) })
		case "Affine":
			al, be := take(&alphas, 1), take(&betas, 0)
			fns = append(fns, func(v float64) float64 { return al*v + be })
		default:
			panic(a)
		}
	}
	act := func(dir, j int, v float64) float64 {
		if c.clip > 0 {
			v = math.Max(-float64(c.clip), math.Min(float64(c.clip), v))
		}
		return fns[dir*len(defs)+j](v)
	}
	state := func(name string, dir, b, h int) float64 {
		if d[name] == nil {
			return 0
		}
		if c.layout == 1 {
			return float64(d[name][(b*D+dir)*H+h])
		}
		return float64(d[name][(dir*B+b)*H+h])
	}
	Y := make([]float64, S*D*B*H)
	Yh, Yc := make([]float64, D*B*H), make([]float64, D*B*H)
	for dir := range D {
		h, cs := make([]float64, B*H), make([]float64, B*H)
		for b := range B {
			for j := range H {
				h[b*H+j], cs[b*H+j] = state("initial_h", dir, b, j), state("initial_c", dir, b, j)
			}
		}
		for step := range S {
			t := step
			if c.direction == "reverse" || dir == 1 {
				t = S - 1 - step
			}
			// pre[g][b*H+j]: x·W_gᵀ + H·R_gᵀ + Wb_g + Rb_g
			pre := func(g int, hh []float64, withRb bool) []float64 {
				out := make([]float64, B*H)
				for b := range B {
					for j := range H {
						s := bias(dir, g*H+j)
						for i := range I {
							s += x(t, b, i) * w("W", dir, g*H+j, i, I)
						}
						if withRb {
							s += bias(dir, (G+g)*H+j)
						}
						for k := range H {
							s += hh[b*H+k] * w("R", dir, g*H+j, k, H)
						}
						out[b*H+j] = s
					}
				}
				return out
			}
			nh := make([]float64, B*H)
			switch c.op {
			case "RNN":
				p := pre(0, h, true)
				for k := range nh {
					nh[k] = act(dir, 0, p[k])
				}
			case "GRU":
				z, r := pre(0, h, true), pre(1, h, true)
				for k := range z {
					z[k], r[k] = act(dir, 0, z[k]), act(dir, 0, r[k])
				}
				for b := range B {
					for j := range H {
						xw, hr, rh := bias(dir, 2*H+j), bias(dir, (G+2)*H+j), 0.0
						for i := range I {
							xw += x(t, b, i) * w("W", dir, 2*H+j, i, I)
						}
						for k := range H {
							if c.lbr != 0 {
								rh += h[b*H+k] * w("R", dir, 2*H+j, k, H)
							} else {
								rh += r[b*H+k] * h[b*H+k] * w("R", dir, 2*H+j, k, H)
							}
						}
						var v float64
						if c.lbr != 0 {
							v = xw + r[b*H+j]*(rh+hr)
						} else {
							v = xw + rh + hr
						}
						hc := act(dir, 1, v)
						nh[b*H+j] = (1-z[b*H+j])*hc + z[b*H+j]*h[b*H+j]
					}
				}
			case "LSTM":
				gi, gotil, gf, gc := pre(0, h, true), pre(1, h, true), pre(2, h, true), pre(3, h, true)
				p := func(k, j int) float64 {
					if d["P"] == nil {
						return 0
					}
					return float64(d["P"][dir*3*H+k*H+j])
				}
				nc := make([]float64, B*H)
				for b := range B {
					for j := range H {
						k := b*H + j
						i := act(dir, 0, gi[k]+p(0, j)*cs[k])
						f := act(dir, 0, gf[k]+p(2, j)*cs[k])
						nc[k] = f*cs[k] + i*act(dir, 1, gc[k])
						o := act(dir, 0, gotil[k]+p(1, j)*nc[k])
						nh[k] = o * act(dir, 2, nc[k])
					}
				}
				cs = nc
			}
			h = nh
			for b := range B {
				for j := range H {
					if c.layout == 1 {
						Y[((b*S+t)*D+dir)*H+j] = h[b*H+j]
					} else {
						Y[((t*D+dir)*B+b)*H+j] = h[b*H+j]
					}
				}
			}
		}
		for b := range B {
			for j := range H {
				k := (dir*B+b)*H + j
				if c.layout == 1 {
					k = (b*D+dir)*H + j
				}
				Yh[k], Yc[k] = h[b*H+j], cs[b*H+j]
			}
		}
	}
	out := map[string][]float64{"Y_h": Yh}
	if !c.noOut {
		out["Y"] = Y
	}
	if c.op == "LSTM" {
		out["Y_c"] = Yc
	}
	return out
}

// TestRecurrent imports RNN, GRU and LSTM nodes over directions,
// layouts, clips, activations with their alphas and betas, biases,
// initial states and peepholes, and checks cpuref's outputs against a
// float64 evaluation of ONNX's spec (relative 2e-5: float32 rounding
// over a few steps), and that weights given as initializers and as
// run-time inputs give the same bits.
func TestRecurrent(t *testing.T) {
	for _, c := range []rnnCase{
		{op: "RNN", seq: 4, batch: 2, input: 3, hidden: 5, direction: "forward", bias: true},
		{op: "RNN", seq: 3, batch: 1, input: 2, hidden: 3, direction: "bidirectional", acts: []string{"Relu", "Affine"}, alphas: []float32{0.5}, betas: []float32{0.25}, initial: true},
		{op: "GRU", seq: 3, batch: 2, input: 3, hidden: 4, direction: "reverse", layout: 1, lbr: 1, bias: true, initial: true},
		{op: "GRU", seq: 2, batch: 3, input: 2, hidden: 3, direction: "bidirectional", acts: []string{"HardSigmoid", "LeakyRelu", "Sigmoid", "Tanh"}, alphas: []float32{0.3, 0.05}, betas: []float32{0.4}, noOut: true},
		{op: "LSTM", seq: 3, batch: 2, input: 3, hidden: 4, direction: "bidirectional", bias: true, initial: true, peep: true, clip: 1.5},
		{op: "LSTM", seq: 1, batch: 2, input: 4, hidden: 3, direction: "forward", layout: 1, bias: true, initial: true},
		{op: "LSTM", seq: 5, batch: 1, input: 2, hidden: 2, direction: "reverse"},
	} {
		name := fmt.Sprintf("%s/%s/seq%d/layout%d", c.op, c.direction, c.seq, c.layout)
		t.Run(name, func(t *testing.T) {
			d := c.data(uint64(c.seq*100 + c.hidden))
			want := c.reference(d)
			var bits []map[string][]uint32
			for _, consts := range []bool{true, false} {
				g, err := onnx.Load(bytes.NewReader(c.model(d, consts)), onnx.Options{Limits: ir.Limits{MaxNodes: 4096}})
				if err != nil {
					t.Fatalf("consts %v: %v", consts, err)
				}
				t.Logf("consts %v: %d nodes", consts, len(g.Nodes))
				for name, v := range d {
					if g.Input(name) >= 0 {
						if err := g.SetInput(name, v); err != nil {
							t.Fatal(err)
						}
					}
				}
				got := outputs(g)
				bits = append(bits, got)
				if len(got) != len(want) {
					t.Fatalf("outputs %v, want %d", keys(got), len(want))
				}
				for o, w := range want {
					g := got[o]
					if len(g) != len(w) {
						t.Fatalf("%s: %d values, want %d", o, len(g), len(w))
					}
					for i := range w {
						v := float64(math.Float32frombits(g[i]))
						if math.Abs(v-w[i]) > 2e-5*(1+math.Abs(w[i])) {
							t.Errorf("consts %v: %s[%d] = %v, float64 spec %v", consts, o, i, v, w[i])
						}
					}
				}
			}
			if diff := cmp.Diff(bits[0], bits[1]); diff != "" {
				t.Errorf("initializer and run-time weights differ (-init +input):\n%s", diff)
			}
		})
	}
}

func keys(m map[string][]uint32) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	return k
}
