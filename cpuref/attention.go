package cpuref

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// Attention returns attention of q [...,S,D], k [...,T,D], v [...,T,E]
// and mask (row-major, already of the scores' shape [...,S,T]; nil for
// none, which is a mask of -0) in its
// reference order (see ir/attention.go and the package doc): per query
// row the scores' maximum, then exp(t − m) summed and accumulated with v
// in ascending key order, each output divided once; or, where a.Block is
// set (long rows), the online order over key blocks of a.Block, and where
// a.Chunk is set too, the split order over parts of a.Chunk keys.
func Attention(q, k, v, mask []float32, a ir.Attention) []float32 {
	return exact.attention(q, k, v, mask, a, nil)
}

// online holds the compiled expressions and scratch of onlineRow.
type online struct {
	mx, sub, exp, div program
	scratch           []uint32
	o, ls             []float32 // E each
	u, p              []float32 // T each
	po                []float32 // the split order's parts' o: Parts·E
	pm, pl            []float32 // and their m and l: Parts each
}

// onlineRow writes one query row's outputs (E) from its scores t (T) and
// v (T·E) in the online order (ir/attention.go), or, where a.Chunk is
// set, the split order: each part of a.Chunk keys in the online order,
// the parts combined in ascending order.
func (ar arith) onlineRow(out, t, v []float32, a ir.Attention, w online) {
	E := a.E
	if a.Chunk == 0 {
		_, l := ar.onlinePart(w.o, t, v, a, w)
		for e := range w.ls {
			w.ls[e] = l
		}
		w.div.runSlice(out, w.o, w.ls, 0, ar, w.scratch)
		return
	}
	ar.onlineParts(t, v, a, w)
	ar.combineParts(out, a.Parts(), E, w)
}

// onlineParts runs each part of a.Chunk keys of the split order in the
// online order into w.po, w.pm and w.pl (o undivided, m and l).
func (ar arith) onlineParts(t, v []float32, a ir.Attention, w online) {
	E := a.E
	for c := range a.Parts() {
		lo, hi := c*a.Chunk, min((c+1)*a.Chunk, a.T)
		w.pm[c], w.pl[c] = ar.onlinePart(w.po[c*E:(c+1)*E], t[lo:hi], v[lo*E:hi*E], a, w)
	}
}

// combineParts writes out (E) from the split order's P parts in w.po,
// w.pm and w.pl: M the parts' maximum, then L and O over the parts
// ascending with w = exp(m − M), and O / L.
func (ar arith) combineParts(out []float32, P, E int, w online) {
	M := []float32{w.pm[0]}
	for c := 1; c < P; c++ {
		w.mx.runSlice(M, M, w.pm[c:c+1], 0, ar, w.scratch)
	}
	var L float32
	clear(w.o)
	wc := []float32{0}
	for c := range P {
		w.sub.runSlice(wc, w.pm[c:c+1], M, 0, ar, w.scratch)
		w.exp.runSlice(wc, wc, nil, 0, ar, w.scratch)
		L = ar.add(L, ar.mul(w.pl[c], wc[0]))
		for e, oc := range w.po[c*E : (c+1)*E] {
			w.o[e] = ar.add(w.o[e], ar.mul(oc, wc[0]))
		}
	}
	for e := range w.ls {
		w.ls[e] = L
	}
	w.div.runSlice(out, w.o, w.ls, 0, ar, w.scratch)
}

// newOnline returns the expressions and scratch of the online and split
// orders for T keys, E outputs and P parts.
func newOnline(T, E, P int) online {
	sub, exp, div, mx := compile(ir.OpSub.Info().Expr), compile(ir.OpExp.Info().Expr), compile(ir.OpDiv.Info().Expr), compile(ir.OpMax.Info().Combine.Info().Expr)
	return online{mx: mx, sub: sub, exp: exp, div: div, scratch: make([]uint32, max(len(sub), len(exp), len(div), len(mx))*chunk),
		o: make([]float32, E), ls: make([]float32, E), u: make([]float32, T), p: make([]float32, T),
		po: make([]float32, P*E), pm: make([]float32, P), pl: make([]float32, P)}
}

// attentionCombine returns the split order's combine of parts [rows,P,E+2]
// (attentionParts'), [rows,E], as attention ends a row, checking stop
// (when not nil) before each row.
func (ar arith) attentionCombine(parts []float32, P, E int, stop func() bool) []float32 {
	rows := len(parts) / (P * (E + 2))
	out := make([]float32, rows*E)
	w := newOnline(0, E, P)
	for r := range rows {
		if stop != nil && stop() {
			return out
		}
		row := parts[r*P*(E+2) : (r+1)*P*(E+2)]
		for c := range P {
			pc := row[c*(E+2) : (c+1)*(E+2)]
			copy(w.po[c*E:(c+1)*E], pc[:E])
			w.pm[c], w.pl[c] = pc[E], pc[E+1]
		}
		ar.combineParts(out[r*E:(r+1)*E], P, E, w)
	}
	return out
}

// onlinePart accumulates into o (E, cleared first) the online order over
// the keys of t and v (from the part's first key): key blocks of
// a.Block, a running maximum from -MaxFloat32, the sums rescaled by
// exp(m − m') at each block. It returns the final m and l (o and l
// undivided).
func (ar arith) onlinePart(o, t, v []float32, a ir.Attention, w online) (float32, float32) {
	E, T := a.E, len(t)
	m := []float32{-math.MaxFloat32}
	mn, c := []float32{0}, []float32{0}
	var l float32
	clear(o)
	for b := 0; b < T; b += a.Block {
		end := min(b+a.Block, T)
		mn[0] = m[0]
		for j := b; j < end; j++ {
			w.mx.runSlice(mn, mn, t[j:j+1], 0, ar, w.scratch)
		}
		w.sub.runSlice(c, m, mn, 0, ar, w.scratch)
		w.exp.runSlice(c, c, nil, 0, ar, w.scratch)
		l = ar.mul(l, c[0])
		for e := range E {
			o[e] = ar.mul(o[e], c[0])
		}
		u, p := w.u[:end-b], w.p[:end-b]
		w.sub.runSlice(u, t[b:end], nil, mn[0], ar, w.scratch)
		w.exp.runSlice(p, u, nil, 0, ar, w.scratch)
		for x, pj := range p {
			l = ar.add(l, pj)
			vj := v[(b+x)*E : (b+x+1)*E]
			for e := range E {
				o[e] = ar.add(o[e], ar.mul(pj, vj[e]))
			}
		}
		m[0] = mn[0]
	}
	return m[0], l
}

// attention is Attention, checking stop (when not nil) before each query
// row and returning early, the rest zero, once it reports true.
func (ar arith) attention(q, k, v, mask []float32, a ir.Attention, stop func() bool) []float32 {
	return ar.attend(q, k, v, mask, a, false, stop)
}

// attentionParts returns the split order's parts of attention a (a.Chunk
// set) as a KernelAttention with Blocks writes them, [...,S,P,E+2]: per
// query row and part its undivided o, m and l; checking stop as attention
// does.
func (ar arith) attentionParts(q, k, v, mask []float32, a ir.Attention, stop func() bool) []float32 {
	return ar.attend(q, k, v, mask, a, true, stop)
}

// attend computes each query row's scores, then its outputs (parts
// false) or, in the split order (a.Chunk set), its parts undivided
// (parts true: [P,E+2] a row, attentionParts' layout).
func (ar arith) attend(q, k, v, mask []float32, a ir.Attention, parts bool, stop func() bool) []float32 {
	S, T, D, E, P := a.S, a.T, a.D, a.E, a.Parts()
	width := E // a row's outputs
	if parts {
		width = P * (E + 2)
	}
	out := make([]float32, a.Batch.Len()*S*width)
	w := newOnline(T, E, P)
	t, ms := make([]float32, T), make([]float32, T)
	negInf := float32(math.Inf(-1))
	for z := range a.Batch.Len() {
		qz, kz, vz := q[z*S*D:(z+1)*S*D], k[z*T*D:(z+1)*T*D], v[z*T*E:(z+1)*T*E]
		for i := range S {
			if stop != nil && stop() {
				return out
			}
			row := z*S + i
			for j := range T {
				var acc float32
				for d := range D {
					acc = ar.add(acc, ar.mul(qz[i*D+d], kz[j*D+d]))
				}
				t[j] = ar.mul(acc, a.Scale)
				if mask != nil { // none: + -0, which changes no t
					t[j] = ar.add(t[j], mask[row*T+j])
				}
				if a.Causal && j > i {
					t[j] = negInf
				}
			}
			dst := out[row*width : (row+1)*width]
			if parts {
				ar.onlineParts(t, vz, a, w)
				for c := range P {
					pc := dst[c*(E+2) : (c+1)*(E+2)]
					copy(pc, w.po[c*E:(c+1)*E])
					pc[E], pc[E+1] = w.pm[c], w.pl[c]
				}
				continue
			}
			if a.Block > 0 {
				ar.onlineRow(dst, t, vz, a, w)
				continue
			}
			// m by maximum from -Inf, left to right (any grouping gives
			// these bits: maximum selects).
			m := []float32{negInf}
			for j := range T {
				w.mx.runSlice(m, m, t[j:j+1], 0, ar, w.scratch)
			}
			for j := range ms {
				ms[j] = m[0]
			}
			w.sub.runSlice(w.u, t, ms, 0, ar, w.scratch)
			w.exp.runSlice(w.p, w.u, nil, 0, ar, w.scratch)
			var l float32
			clear(w.o)
			for j := range T {
				l = ar.add(l, w.p[j])
				for e := range E {
					w.o[e] = ar.add(w.o[e], ar.mul(w.p[j], vz[j*E+e]))
				}
			}
			for e := range w.ls {
				w.ls[e] = l
			}
			w.div.runSlice(dst, w.o, w.ls, 0, ar, w.scratch)
		}
	}
	return out
}
