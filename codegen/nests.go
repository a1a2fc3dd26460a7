package codegen

import (
	"fmt"
	"math"

	"github.com/gpucc/gpucc/ir"
)

// nests holds, by kernel kind, the nest of each direct kernel kind: one
// description that C, WGSL and GLSL all render (a kind a target writes
// another way, such as C's and WGSL's tiled convolutions, is that
// target's own row). A target's writer row for a kind names NestOf.
var nests = [ir.NumKernelKinds]func(k *ir.Kernel) *Nest{
	ir.KernelConv:             convNest,
	ir.KernelPool:             poolNest,
	ir.KernelPoolGrad:         poolGradNest,
	ir.KernelConvTranspose:    convTransposeNest,
	ir.KernelResize:           resizeNest,
	ir.KernelPad:              padNest,
	ir.KernelAttention:        attentionNest,
	ir.KernelAttentionCombine: attentionCombineNest,
}

// NestOf returns the nest of kernel k, built once while a generator
// holds k (MemoNests; the nest is then shared and must not be modified).
// A kind without one is a bug of the target's writer table that asked,
// and panics naming it.
func NestOf(k *ir.Kernel) *Nest {
	if !HasNest(k.Kind) {
		panic(fmt.Sprintf("codegen: BUG: kernel kind %v has no nest", k.Kind))
	}
	if v, ok := nestMemo.Load(k); ok {
		s := v.(*nestSlot)
		s.once.Do(func() { s.n = nests[k.Kind](k) })
		return s.n
	}
	return nests[k.Kind](k)
}

// HasNest reports whether kernels of kind are written from a nest.
func HasNest(kind ir.KernelKind) bool { return kind.Valid() && nests[kind] != nil }

// negInf is the bits of -Inf, max pooling's start.
const negInf = 0xff800000

// inside is the guard of a padded position (ph, pw) that lands on x: pads
// top and left of pt and pl, x of h×w.
func inside(ph, pw Expr, pt, pl, h, w int) Expr {
	return ph.Ge(N(pt)).And(ph.Lt(N(pt + h))).And(pw.Ge(N(pl))).And(pw.Lt(N(pl + w)))
}

// convNest is a direct convolution (cpuref.Conv2D): per output one
// accumulator from +0 over (c, kh, kw) ascending, each product rounded on
// its own before it is added, x read as +0 in the padding.
func convNest(k *ir.Kernel) *Nest {
	c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	ph, pw := V("ph"), V("pw")
	return &Nest{Name: "conv", Dims: []string{"n", "m", "oh", "ow"}, Acc: "acc", DType: F32, Body: []Stmt{
		Let(Idx, "c0", V("m").Div(N(c.MG)).Mul(N(c.CG))),
		Var(Val(F32), "acc", Opaque(0)),
		For("ci", c.CG,
			For("kh", c.KH,
				Let(Idx, "ph", V("oh").Mul(N(c.SH)).Add(V("kh").Mul(N(c.DH)))),
				For("kw", c.KW,
					Let(Idx, "pw", V("ow").Mul(N(c.SW)).Add(V("kw").Mul(N(c.DW)))),
					Var(Val(F32), "xv", Opaque(0)),
					If(inside(ph, pw, c.PT, c.PL, c.H, c.W),
						Set("xv", Load(0, V("n"), V("c0").Add(V("ci")), ph.Sub(N(c.PT)), pw.Sub(N(c.PL))))),
					Let(Val(F32), "p", Prod(V("xv"), Load(1, V("m"), V("ci"), V("kh"), V("kw")))),
					Set("acc", V("acc").Add(V("p")))))),
	}}
}

// poolNest is a max pooling (cpuref.MaxPool2D): per output one
// accumulator from -Inf taking maximum (the op table's) with each tap
// inside x, (kh, kw) ascending.
func poolNest(k *ir.Kernel) *Nest {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	return &Nest{Name: "pool", Dims: []string{"n", "ch", "oh", "ow"}, Acc: "acc", DType: F32, Body: []Stmt{
		Var(Val(F32), "acc", Opaque(negInf)),
		poolTaps(c, V("oh"), V("ow"), "kh", "kw",
			Fold("mx", ir.OpMax, "acc", "xv"),
			Set("acc", V("mx"))),
	}}
}

// poolTaps walks the taps (th, tw) of the window at output (oh, ow),
// ascending, and runs body at each inside x with its value xv.
func poolTaps(c ir.Pool2D, oh, ow Expr, th, tw string, body ...Stmt) Stmt {
	ph, pw := V("ph"), V("pw")
	body = append([]Stmt{Let(Val(F32), "xv", Load(0, V("n"), V("ch"), ph.Sub(N(c.PT)), pw.Sub(N(c.PL))))}, body...)
	return For(th, c.KH,
		Let(Idx, "ph", oh.Mul(N(c.SH)).Add(V(th).Mul(N(c.DH)))),
		For(tw, c.KW,
			Let(Idx, "pw", ow.Mul(N(c.SW)).Add(V(tw).Mul(N(c.DW)))),
			If(inside(ph, pw, c.PT, c.PL, c.H, c.W), body...)))
}

// poolGradNest is maxpool2d's input gradient (cpuref.MaxPool2DGrad): per
// element of x one accumulator from +0 over the windows holding it, (oh,
// ow) ascending (kh, kw descending), adding the window's gradient where
// the window selects the element. The selection walks the window as pool
// does: its first tap, then each where the maximum's bits change.
func poolGradNest(k *ir.Kernel) *Nest {
	c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	none := N(c.KH * c.KW)
	// qh = oh·sH: the window's first row in the padded input.
	return &Nest{Name: "pool_grad", Dims: []string{"n", "ch", "h", "w"}, Acc: "acc", DType: F32, Body: []Stmt{
		Var(Val(F32), "acc", Opaque(0)),
		For("jh", c.KH,
			Let(Idx, "kh", N(c.KH-1).Sub(V("jh"))),
			Skip(V("h").Add(N(c.PT)).Lt(V("kh").Mul(N(c.DH)))),
			Let(Idx, "qh", V("h").Add(N(c.PT)).Sub(V("kh").Mul(N(c.DH)))),
			Skip(V("qh").Mod(N(c.SH)).Ne(N(0)).Or(V("qh").Div(N(c.SH)).Ge(N(c.OH)))),
			Let(Idx, "oh", V("qh").Div(N(c.SH))),
			For("jw", c.KW,
				Let(Idx, "kw", N(c.KW-1).Sub(V("jw"))),
				Skip(V("w").Add(N(c.PL)).Lt(V("kw").Mul(N(c.DW)))),
				Let(Idx, "qw", V("w").Add(N(c.PL)).Sub(V("kw").Mul(N(c.DW)))),
				Skip(V("qw").Mod(N(c.SW)).Ne(N(0)).Or(V("qw").Div(N(c.SW)).Ge(N(c.OW)))),
				Let(Idx, "ow", V("qw").Div(N(c.SW))),
				Var(Val(F32), "m", Opaque(negInf)),
				Var(Idx, "sel", none),
				poolTaps(c, V("oh"), V("ow"), "th", "tw",
					Fold("mx", ir.OpMax, "m", "xv"),
					If(V("sel").Eq(none).Or(Bits(V("mx")).Ne(Bits(V("m")))),
						Set("sel", V("th").Mul(N(c.KW)).Add(V("tw")))),
					Set("m", V("mx"))),
				If(V("sel").Eq(V("kh").Mul(N(c.KW)).Add(V("kw"))),
					Set("acc", V("acc").Add(Load(1, V("n"), V("ch"), V("oh"), V("ow"))))))),
	}}
}

// convTransposeNest is a direct transposed convolution
// (cpuref.ConvTranspose2D): per output one accumulator from +0 over (c,
// kh, kw) ascending, adding a rounded product for each tap that lands on
// an element of x: th = oh+pT-kh·dH ≥ 0 a multiple of sH with th/sH < H,
// and likewise for w. kh and kw only grow, so the first tap past the top
// (left) edge ends its loop.
func convTransposeNest(k *ir.Kernel) *Nest {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	th, tw := V("th"), V("tw")
	return &Nest{Name: "conv_transpose", Dims: []string{"n", "m", "oh", "ow"}, Acc: "acc", DType: F32, Body: []Stmt{
		Let(Idx, "c0", V("m").Div(N(c.MG)).Mul(N(c.CG))),
		Let(Idx, "mm", V("m").Mod(N(c.MG))),
		Let(Idx, "ph", V("oh").Add(N(c.PT))),
		Let(Idx, "pw", V("ow").Add(N(c.PL))),
		Var(Val(F32), "acc", Opaque(0)),
		For("ci", c.CG,
			For("kh", c.KH,
				Stop(V("ph").Lt(V("kh").Mul(N(c.DH)))),
				Let(Idx, "th", V("ph").Sub(V("kh").Mul(N(c.DH)))),
				Skip(th.Mod(N(c.SH)).Ne(N(0)).Or(th.Div(N(c.SH)).Ge(N(c.H)))),
				For("kw", c.KW,
					Stop(V("pw").Lt(V("kw").Mul(N(c.DW)))),
					Let(Idx, "tw", V("pw").Sub(V("kw").Mul(N(c.DW)))),
					Skip(tw.Mod(N(c.SW)).Ne(N(0)).Or(tw.Div(N(c.SW)).Ge(N(c.W)))),
					Let(Val(F32), "p", Prod(
						Load(0, V("n"), V("c0").Add(V("ci")), th.Div(N(c.SH)), tw.Div(N(c.SW))),
						Load(1, V("c0").Add(V("ci")), V("mm"), V("kh"), V("kw")))),
					Set("acc", V("acc").Add(V("p")))))),
	}}
}

// resizeNest is a 2-D resize (cpuref.Resize2D) from the taps of
// ir.ResizeTaps, embedded as the tables taps_h over the rows and taps_w
// over the columns (I0 for each output, then I1, then W0's and W1's
// bits): nearest copies the tap; linear rounds each product and each
// sum, the columns first.
func resizeNest(k *ir.Kernel) *Nest {
	r := ir.Resize2DOf(k.Inputs[0].Shape, k.Attrs)
	n := &Nest{Name: "resize", Dims: []string{"n", "ch", "oh", "ow"}, Acc: "acc", DType: F32,
		Tables: []Table{{"taps_h", resizeVals(r.Rows)}, {"taps_w", resizeVals(r.Cols)}}}
	oh, ow := V("oh"), V("ow")
	x := func(h, w Expr) Expr { return Load(0, V("n"), V("ch"), h, w) }
	rows := []Expr{At("taps_h", oh)}
	if r.Rows.Linear() {
		rows = append(rows, At("taps_h", N(r.OH).Add(oh)))
	}
	for j, h := range rows {
		hj, rj := "h"+string(rune('0'+j)), "r"+string(rune('0'+j))
		n.Body = append(n.Body, Let(Idx, hj, h))
		if !r.Cols.Linear() {
			n.Body = append(n.Body, Let(Val(F32), rj, x(V(hj), At("taps_w", ow))))
			continue
		}
		p0, p1 := "p"+string(rune('0'+j))+"0", "p"+string(rune('0'+j))+"1"
		n.Body = append(n.Body,
			Let(Val(F32), p0, Prod(Float(At("taps_w", N(2*r.OW).Add(ow))), x(V(hj), At("taps_w", ow)))),
			Let(Val(F32), p1, Prod(Float(At("taps_w", N(3*r.OW).Add(ow))), x(V(hj), At("taps_w", N(r.OW).Add(ow))))),
			Let(Val(F32), rj, V(p0).Add(V(p1))))
	}
	if !r.Rows.Linear() {
		n.Body = append(n.Body, Let(Val(F32), "acc", V("r0")))
		return n
	}
	n.Body = append(n.Body,
		Let(Val(F32), "q0", Prod(Float(At("taps_h", N(2*r.OH).Add(oh))), V("r0"))),
		Let(Val(F32), "q1", Prod(Float(At("taps_h", N(3*r.OH).Add(oh))), V("r1"))),
		Let(Val(F32), "acc", V("q0").Add(V("q1"))))
	return n
}

// resizeVals is one axis's resize taps (ir.ResizeTaps) as the u32 values a
// kernel embeds, in order: I0 for each output, then I1, then the bits of
// W0 and of W1 (linear only).
func resizeVals(a ir.ResizeAxis) []uint32 {
	var vals []uint32
	for _, i := range a.I0 {
		vals = append(vals, uint32(i))
	}
	for _, i := range a.I1 {
		vals = append(vals, uint32(i))
	}
	for _, w := range a.W0 {
		vals = append(vals, math.Float32bits(w))
	}
	for _, w := range a.W1 {
		vals = append(vals, math.Float32bits(w))
	}
	return vals
}

// padNest is a pad (cpuref.Pad): at output element a, along each axis d
// the element of x it copies (ir.Pad.Src as index arithmetic on
// constants, u the output index less the pad before the axis, taken
// modulo the period by adding a multiple of it first: wrap n, reflect
// 2(n-1)); in constant mode the constant where a[d] falls outside x on an
// axis that has a pad. A negative pad (a crop) shifts the index the other
// way.
func padNest(k *ir.Kernel) *Nest {
	p := ir.PadOf(k.Inputs[0].Shape, k.Attrs)
	r := len(p.Out)
	n := &Nest{Name: "pad", Dims: make([]string, r), Acc: "acc", DType: F32}
	idx := make([]Expr, r)
	var guard []Expr
	for d := range r {
		a, i := fmt.Sprintf("a%d", d), fmt.Sprintf("i%d", d)
		n.Dims[d] = a
		x, b := p.In[d], p.Begin[d]
		o := V(a)
		idx[d] = V(i)
		var e Expr
		switch p.Mode {
		case ir.PadConstant:
			if b > 0 {
				guard = append(guard, o.Ge(N(b)))
			}
			if b+x < p.Out[d] {
				guard = append(guard, o.Lt(N(b+x)))
			}
			idx[d] = shifted(o, -b) // read only inside the guard
			continue
		case ir.PadEdge: // clamp(a - b, 0, n-1), as u = max(a, b) - b
			u := shifted(o, -min(b, 0)) // a crop: a - b ≥ 0
			if b > 0 {
				u = V(fmt.Sprintf("u%d", d))
				n.Body = append(n.Body, Let(Idx, u.name, Sel(o.Lt(N(b)), N(b), o).Sub(N(b))))
			}
			e = Sel(u.Lt(N(x)), u, N(x-1))
		case ir.PadWrap:
			e = shifted(o, (x-b%x)%x).Mod(N(x))
		case ir.PadReflect:
			if x == 1 {
				e = N(0)
				break
			}
			per, u := 2*(x-1), fmt.Sprintf("u%d", d)
			n.Body = append(n.Body, Let(Idx, u, shifted(o, (per-b%per)%per).Mod(N(per))))
			e = Sel(V(u).Lt(N(x)), V(u), N(per).Sub(V(u)))
		}
		n.Body = append(n.Body, Let(Idx, i, e))
	}
	if len(guard) == 0 {
		n.Body = append(n.Body, Let(Val(F32), "acc", Load(0, idx...)))
		return n
	}
	n.Params = []float32{p.Value}
	cond := guard[0]
	for _, g := range guard[1:] {
		cond = cond.And(g)
	}
	n.Body = append(n.Body,
		Var(Val(F32), "acc", Param(0)),
		If(cond, Set("acc", Load(0, idx...))))
	return n
}

// shifted is o + c, or o for c = 0; o - |c| for c < 0 (inside the guard
// that keeps it ≥ 0: index arithmetic is unsigned on some targets).
func shifted(o Expr, c int) Expr {
	switch {
	case c == 0:
		return o
	case c < 0:
		return o.Sub(N(-c))
	}
	return o.Add(N(c))
}
