package codegen

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// attentionNest is attention (cpuref.Attention) per output element
// [...,i,e]: the scores' maximum over the keys, then, key by key
// ascending, exp(t − m) summed into l and its product with v[j,e] into o,
// and o divided by l. Each score is matmul's accumulator of q[i,:]·k[j,:]
// (d ascending, unrolled, so that a row of 4096 keys runs 2·4097 loop
// trips, within ir.LoopBudget), rounded times the scale (Params[0]), plus
// the mask, or -Inf past the diagonal when causal. It is written once and
// rendered by C, WGSL and GLSL alike; every element recomputes its row's
// scores, which a target that shares them across a row's E outputs (a
// workgroup per query block) may do instead, in the same order.
func attentionNest(k *ir.Kernel) *Nest {
	a := ir.AttentionKernel(k)
	n := &Nest{Name: "attention", Acc: "acc", DType: F32, Params: []float32{a.Scale}}
	var batch []Expr
	for d := range a.Batch {
		name := fmt.Sprintf("z%d", d)
		n.Dims = append(n.Dims, name)
		batch = append(batch, V(name))
	}
	n.Dims = append(n.Dims, "qi", "ve")
	at := func(idx ...Expr) []Expr { return append(append([]Expr(nil), batch...), idx...) }
	i, j, e := V("qi"), V("kj"), V("ve")
	// score declares t, key j's score for query i.
	score := func() []Stmt {
		ss := []Stmt{Var(Val(F32), "sc", Opaque(0))}
		for d := range a.D {
			ss = append(ss, Set("sc", V("sc").Add(Prod(Load(0, at(i, N(d))...), Load(1, at(j, N(d))...)))))
		}
		t := Prod(V("sc"), Param(0))
		if k.Masked() {
			t = t.Add(Load(3, at(i, j)...))
		}
		if a.Causal {
			t = Sel(i.Lt(j), Opaque(math.Float32bits(float32(math.Inf(-1)))), t)
		}
		return append(ss, Let(Val(F32), "ts", t))
	}
	if k.Blocks > 1 {
		// The parts ([...,S,P,E+2]): element px of part pc is its o at
		// v column px, then its m and its l.
		n.Dims = append(n.Dims[:len(a.Batch)], "qi", "pc", "px")
		n.Body = append([]Stmt{Let(Idx, "ve", Sel(V("px").Lt(N(a.E)), V("px"), N(0)))}, attentionPartNest(a, score, at(j, e))...)
		n.Body = append(n.Body, Let(Val(F32), "acc", Sel(V("px").Lt(N(a.E)), V("os"), Sel(V("px").Eq(N(a.E)), V("mr"), V("ls")))))
		return n
	}
	if a.Chunk > 0 {
		n.Body = attentionSplitNest(a, score, at(j, e))
		return n
	}
	if a.Block > 0 {
		n.Body = attentionOnlineNest(a, score, at(j, e))
		return n
	}
	maxPass := append(score(), Fold("mx", ir.OpMax, "mr", "ts"), Set("mr", V("mx")))
	sumPass := append(score(),
		Apply("us", ir.OpSub, "ts", "mr"),
		Apply("ps", ir.OpExp, "us"),
		Set("ls", V("ls").Add(V("ps"))),
		Set("os", V("os").Add(Prod(V("ps"), Load(2, at(j, e)...)))))
	n.Body = []Stmt{
		Var(Val(F32), "mr", Opaque(negInf)),
		For("kj", a.T, maxPass...),
		Var(Val(F32), "ls", Opaque(0)),
		Var(Val(F32), "os", Opaque(0)),
		For("kj", a.T, sumPass...),
		Apply("acc", ir.OpDiv, "os", "ls"),
	}
	return n
}

// attentionOnlineNest is the nest's body in the online order
// (ir/attention.go): blocks kb of a.Block keys (the last stops at T),
// each scored twice, first for its maximum m' (from m, -MaxFloat32
// first), then, after l and o are rounded times c = exp(m − m'), for
// p = exp(t − m') into l and p·v into o; o / l at the end. score declares
// ts for key kj; vAt indexes v[kj, e].
func attentionOnlineNest(a ir.Attention, score func() []Stmt, vAt []Expr) []Stmt {
	key := []Stmt{Let(Idx, "kj", V("kb").Mul(N(a.Block)).Add(V("ki"))), Stop(V("kj").Ge(N(a.T)))}
	maxPass := append(append(slices.Clone(key), score()...), Fold("mx", ir.OpMax, "mn", "ts"), Set("mn", V("mx")))
	sumPass := append(append(slices.Clone(key), score()...),
		Apply("us", ir.OpSub, "ts", "mn"),
		Apply("ps", ir.OpExp, "us"),
		Set("ls", V("ls").Add(V("ps"))),
		Set("os", V("os").Add(Prod(V("ps"), Load(2, vAt...)))))
	block := []Stmt{
		Var(Val(F32), "mn", V("mr")),
		For("ki", a.Block, maxPass...),
		Apply("ud", ir.OpSub, "mr", "mn"),
		Apply("cs", ir.OpExp, "ud"),
		Set("ls", Prod(V("ls"), V("cs"))),
		Set("os", Prod(V("os"), V("cs"))),
		For("ki", a.Block, sumPass...),
		Set("mr", V("mn")),
	}
	return []Stmt{
		Var(Val(F32), "mr", Opaque(0xff7fffff)), // -MaxFloat32
		Var(Val(F32), "ls", Opaque(0)),
		Var(Val(F32), "os", Opaque(0)),
		For("kb", (a.T+a.Block-1)/a.Block, block...),
		Apply("acc", ir.OpDiv, "os", "ls"),
	}
}

// attentionPartNest is part pc's online order in the split order
// (ir/attention.go): attentionOnlineNest's blocks over keys pc·Chunk …
// (the last part's stopping at T), leaving the part's m, l and o
// undivided in mr, ls and os.
func attentionPartNest(a ir.Attention, score func() []Stmt, vAt []Expr) []Stmt {
	key := []Stmt{Let(Idx, "kj", V("pc").Mul(N(a.Chunk)).Add(V("kb").Mul(N(a.Block))).Add(V("ki"))), Stop(V("kj").Ge(N(a.T)))}
	blockMax := append(append(slices.Clone(key), score()...), Fold("mx", ir.OpMax, "mn", "ts"), Set("mn", V("mx")))
	blockSum := append(append(slices.Clone(key), score()...),
		Apply("us", ir.OpSub, "ts", "mn"),
		Apply("ps", ir.OpExp, "us"),
		Set("ls", V("ls").Add(V("ps"))),
		Set("os", V("os").Add(Prod(V("ps"), Load(2, vAt...)))))
	block := []Stmt{
		Stop(V("pc").Mul(N(a.Chunk)).Add(V("kb").Mul(N(a.Block))).Ge(N(a.T))),
		Var(Val(F32), "mn", V("mr")),
		For("ki", a.Block, blockMax...),
		Apply("ud", ir.OpSub, "mr", "mn"),
		Apply("cs", ir.OpExp, "ud"),
		Set("ls", Prod(V("ls"), V("cs"))),
		Set("os", Prod(V("os"), V("cs"))),
		For("ki", a.Block, blockSum...),
		Set("mr", V("mn")),
	}
	return []Stmt{
		Var(Val(F32), "mr", Opaque(0xff7fffff)), // -MaxFloat32
		Var(Val(F32), "ls", Opaque(0)),
		Var(Val(F32), "os", Opaque(0)),
		For("kb", a.Chunk/a.Block, block...),
	}
}

// attentionCombineNest is the split order's combine (ir/attention.go)
// per output element [...,i,e] of the parts [...,S,P,E+2] a
// KernelAttention with Blocks wrote: M folds the parts' m from the
// first, then for each part ascending w = exp(m − M), L += l·w and
// O += o·w (each product rounded on its own), and O / L.
func attentionCombineNest(k *ir.Kernel) *Nest {
	r := len(k.Shape)
	P, E := k.Inputs[0].Shape[r-1], k.Shape[r-1]
	n := &Nest{Name: "attention_combine", Acc: "acc", DType: F32}
	var batch []Expr
	for d := range r - 2 {
		name := fmt.Sprintf("z%d", d)
		n.Dims = append(n.Dims, name)
		batch = append(batch, V(name))
	}
	n.Dims = append(n.Dims, "qi", "ve")
	part := func(c, x Expr) Expr { return Load(0, append(append([]Expr(nil), batch...), V("qi"), c, x)...) }
	n.Body = []Stmt{
		Var(Val(F32), "mm", part(N(0), N(E))),
		For("pc", P-1, Let(Val(F32), "mc", part(V("pc").Add(N(1)), N(E))), Fold("mx", ir.OpMax, "mm", "mc"), Set("mm", V("mx"))),
		Var(Val(F32), "lt", Opaque(0)),
		Var(Val(F32), "ot", Opaque(0)),
		For("pc", P,
			Let(Val(F32), "mc", part(V("pc"), N(E))),
			Apply("ug", ir.OpSub, "mc", "mm"),
			Apply("ws", ir.OpExp, "ug"),
			Set("lt", V("lt").Add(Prod(part(V("pc"), N(E+1)), V("ws")))),
			Set("ot", V("ot").Add(Prod(part(V("pc"), V("ve")), V("ws"))))),
		Apply("acc", ir.OpDiv, "ot", "lt"),
	}
	return n
}

// attentionSplitNest is the nest's body in the split order
// (ir/attention.go): M, the maximum of -MaxFloat32 and every score (the
// parts' final maxima folded: maximum selects, so any grouping gives
// these bits), in a pass of its own; then for each part pc ascending its
// online order (attentionOnlineNest's blocks over keys pc·Chunk …, the
// last stopping at T), w = exp(m − M), L += l·w and O += o·w; O / L at
// the end.
func attentionSplitNest(a ir.Attention, score func() []Stmt, vAt []Expr) []Stmt {
	maxPass := append(score(), Fold("mx", ir.OpMax, "mm", "ts"), Set("mm", V("mx")))
	part := append(attentionPartNest(a, score, vAt),
		Apply("ug", ir.OpSub, "mr", "mm"),
		Apply("ws", ir.OpExp, "ug"),
		Set("lt", V("lt").Add(Prod(V("ls"), V("ws")))),
		Set("ot", V("ot").Add(Prod(V("os"), V("ws")))),
	)
	return []Stmt{
		Var(Val(F32), "mm", Opaque(0xff7fffff)),
		For("kj", a.T, maxPass...),
		Var(Val(F32), "lt", Opaque(0)),
		Var(Val(F32), "ot", Opaque(0)),
		For("pc", a.Parts(), part...),
		Apply("acc", ir.OpDiv, "ot", "lt"),
	}
}
