package codegen

import (
	"fmt"
	"math"

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
