package onnx

import (
	"github.com/gpucc/gpucc/ir"
)

// trainingDomain is the ONNX domain of the optimizers' update rules.
const trainingDomain = "ai.onnx.preview.training"

// trainingRules are the ops of trainingDomain gpucc imports: Adagrad, Adam
// and Momentum, each one step of the update ONNX's reference
// (onnx/backend/test/case/node/{adagrad,adam,momentum}.py) writes, in its
// order, in float32. The reference's Python mixes float64 into its scalar
// arithmetic (r / (1 + t·decay) is a float64); gpucc computes every step
// in float32 (the step count T widened exactly up to 2^24), which agrees
// within the node tests' tolerance.
var trainingRules = map[string]rule{
	"Adagrad":  {attrs: []string{"decay_factor", "epsilon", "norm_coefficient"}, fn: adagradOp},
	"Adam":     {attrs: []string{"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"}, fn: adamOp},
	"Momentum": {attrs: []string{"alpha", "beta", "mode", "norm_coefficient"}, fn: momentumOp},
}

// optimizerInputs returns R and T (float32 scalars at run time) and the
// groups of per-tensor inputs (X, G, and the accumulators: k groups of n
// each, in the node's order X1..Xn, G1..Gn, …).
func (c *importer) optimizerInputs(k int) (r, t ir.Tensor, groups [][]ir.Tensor, err *ir.Error) {
	m := c.nin() - 2
	if m <= 0 || m%k != 0 {
		return r, t, nil, c.invalid("%d inputs: R, T and %d groups of equal size", c.nin(), k)
	}
	if r, err = c.rtIn(0); err != nil {
		return r, t, nil, err
	}
	tv := c.in(1)
	switch {
	case tv == nil:
		return r, t, nil, c.invalid("input 1 (T) is missing")
	case tv.set && tv.rt.DType().IsInt():
		t = tv.rt.Cast(ir.F32)
	case tv.set:
		return r, t, nil, c.refuse("T is a run-time %v tensor, not an integer", tv.rt.DType())
	default:
		ts, err := c.ints(1, "T")
		if err != nil {
			return r, t, nil, err
		}
		if len(ts) != 1 {
			return r, t, nil, c.invalid("T holds %d values, not one", len(ts))
		}
		t = c.b.Full(ir.Shape{}, float32(ts[0]))
	}
	if r.Shape().Len() != 1 || t.Shape().Len() != 1 {
		return r, t, nil, c.invalid("R and T are scalars, got shapes %v and %v", r.Shape(), t.Shape())
	}
	n := m / k
	groups = make([][]ir.Tensor, k)
	for g := range k {
		for i := range n {
			x, err := c.rtIn(2 + g*n + i)
			if err != nil {
				return r, t, nil, err
			}
			if g > 0 && !x.Shape().Equal(groups[0][i].Shape()) {
				return r, t, nil, c.invalid("input %d has shape %v, its X's is %v", 2+g*n+i, x.Shape(), groups[0][i].Shape())
			}
			groups[g] = append(groups[g], x)
		}
	}
	return r.Reshape(ir.Shape{}), t.Reshape(ir.Shape{}), groups, nil
}

// scalarTo returns the scalar s broadcast to shape.
func scalarTo(s ir.Tensor, shape ir.Shape) ir.Tensor {
	if len(shape) == 0 {
		return s
	}
	return s.Broadcast(shape)
}

// adagradOp: r' = R / (1 + T·decay_factor); g' = norm_coefficient·X + G;
// H' = H + g'·g'; X' = X - r'·g' / (√H' + epsilon).
func adagradOp(c *importer) ([]value, *ir.Error) {
	r, t, gs, err := c.optimizerInputs(3)
	if err != nil {
		return nil, err
	}
	decay, eps, norm := c.attrFloat("decay_factor", 0), c.attrFloat("epsilon", 0), c.attrFloat("norm_coefficient", 0)
	rAdj := r.Div(t.MulScalar(decay).AddScalar(1))
	xs, hs := make([]value, len(gs[0])), make([]value, len(gs[0]))
	for i, x := range gs[0] {
		g, h := gs[1][i], gs[2][i]
		gr := x.MulScalar(norm).Add(g)
		hNew := h.Add(gr.Mul(gr))
		hSqrt := hNew.Sqrt().AddScalar(eps)
		xs[i] = rtValue(x.Sub(scalarTo(rAdj, x.Shape()).Mul(gr).Div(hSqrt)))
		hs[i] = rtValue(hNew)
	}
	return append(xs, hs...), nil
}

// adamOp: g' = norm_coefficient·X + G; V' = alpha·V + (1 - alpha)·g';
// H' = beta·H + (1 - beta)·(g'·g'); r' = R·√(1 - beta^T) / (1 - alpha^T)
// where T > 0, else R; X' = (1 - norm_coefficient_post)·(X - r'·(V' /
// (√H' + epsilon))).
func adamOp(c *importer) ([]value, *ir.Error) {
	r, t, gs, err := c.optimizerInputs(4)
	if err != nil {
		return nil, err
	}
	alpha, beta := c.attrFloat("alpha", 0.9), c.attrFloat("beta", 0.999)
	eps, norm, post := c.attrFloat("epsilon", 0), c.attrFloat("norm_coefficient", 0), c.attrFloat("norm_coefficient_post", 0)
	pow := func(base float32) ir.Tensor { return c.b.Full(ir.Shape{}, base).Apply(ir.OpPow, t) }
	corrected := r.Mul(c.b.Full(ir.Shape{}, 1).Sub(pow(beta)).Sqrt()).Div(c.b.Full(ir.Shape{}, 1).Sub(pow(alpha)))
	rAdj := where(t.Apply(ir.OpGreater, c.b.Full(ir.Shape{}, 0)), corrected, r)
	n := len(gs[0])
	out := make([]value, 3*n)
	for i, x := range gs[0] {
		g, v, h := gs[1][i], gs[2][i], gs[3][i]
		gr := x.MulScalar(norm).Add(g)
		vNew := v.MulScalar(alpha).Add(gr.MulScalar(1 - alpha))
		hNew := h.MulScalar(beta).Add(gr.Mul(gr).MulScalar(1 - beta))
		hSqrt := hNew.Sqrt().AddScalar(eps)
		xNew := x.Sub(scalarTo(rAdj, x.Shape()).Mul(vNew.Div(hSqrt)))
		out[i], out[n+i], out[2*n+i] = rtValue(xNew.MulScalar(1-post)), rtValue(vNew), rtValue(hNew)
	}
	return out, nil
}

// momentumOp: g' = norm_coefficient·X + G; b' = beta where T > 0, else 1;
// V' = alpha·V + b'·g'; X' = X - R·V' (standard) or X - R·(g' + alpha·V')
// (nesterov).
func momentumOp(c *importer) ([]value, *ir.Error) {
	r, t, gs, err := c.optimizerInputs(3)
	if err != nil {
		return nil, err
	}
	alpha, beta, norm := c.attrFloat("alpha", 0), c.attrFloat("beta", 0), c.attrFloat("norm_coefficient", 0)
	mode := c.attrStr("mode", "")
	if mode != "standard" && mode != "nesterov" {
		return nil, c.invalid("mode %s is neither standard nor nesterov", ir.Quote(mode))
	}
	bAdj := where(t.Apply(ir.OpGreater, c.b.Full(ir.Shape{}, 0)), c.b.Full(ir.Shape{}, beta), c.b.Full(ir.Shape{}, 1))
	n := len(gs[0])
	out := make([]value, 2*n)
	for i, x := range gs[0] {
		g, v := gs[1][i], gs[2][i]
		s := x.Shape()
		gr := x.MulScalar(norm).Add(g)
		vNew := v.MulScalar(alpha).Add(scalarTo(bAdj, s).Mul(gr))
		step := vNew
		if mode == "nesterov" {
			step = gr.Add(vNew.MulScalar(alpha))
		}
		out[i], out[n+i] = rtValue(x.Sub(scalarTo(r, s).Mul(step))), rtValue(vNew)
	}
	return out, nil
}
