// Package grad differentiates gpucc graphs in reverse mode and builds
// training steps from them.
//
// Step turns a graph with a scalar loss and named parameters (inputs
// marked Param) into one plain SGD step: a graph that computes the loss,
// the graph's other outputs and, for every parameter p, p - lr·∂loss/∂p.
// The backward pass is ordinary IR, so it is folded, fused, compiled and
// run like any other graph, on every backend, with cpuref's rounding: each
// gradient op, the product lr·grad and the subtraction round to float32 on
// their own, as PyTorch's `p -= lr * p.grad` does in float32.
//
// # Rules
//
// Each op's rule is in its row of the op table (ir.OpInfo.Grad), which
// reads the node's attributes (ir.Diff.Attrs) and may add attributed
// nodes (ir.Diff.ApplyAttrs: a permute, a convolution); an op
// that has none says why (ir.OpInfo.NoGrad), and Step refuses a graph in
// which such an op lies between a parameter and the loss. With g the
// gradient flowing into a node (the upstream gradient):
//
//	add(a, b)          ga += g, gb += g
//	sub(a, b)          ga += g, gb += mul_scalar(g, -1)
//	mul(a, b)          ga += mul(g, b), gb += mul(g, a)
//	add/sub_scalar(a)  ga += g
//	mul_scalar(a, s)   ga += mul_scalar(g, s)
//	div(a, b)          ga += div(g, b), gb += neg(div(mul(g, out), b))
//	maximum(a, b)      ga += mul(g, positive(sub(a, b))), gb += sub(g, that): ties go to b
//	minimum(a, b)      the same with neg(sub(a, b))
//	neg(a)             ga += neg(g)
//	exp(a)             ga += mul(g, out)
//	log(a)             ga += div(g, a)
//	tanh(a)            ga += mul(g, add_scalar(neg(mul(out, out)), 1))
//	sqrt(a)            ga += div(mul_scalar(g, 0.5), out)
//	rsqrt(a)           ga += mul(g, mul_scalar(div(out, a), -0.5))
//	relu(a)            ga += mul(g, positive(a))
//	positive(a)        no gradient (it is piecewise constant)
//	greater(a, b)      no gradient (piecewise constant), as greater_equal and equal:
//	greater_equal(a, b) no gradient
//	equal(a, b)        no gradient
//	floor(a)           no gradient (piecewise constant)
//	ceil(a)            no gradient
//	round(a)           no gradient
//	sigmoid(a)         ga += mul(g, mul(out, add_scalar(neg(out), 1)))
//	erf(a)             ga += mul(g, mul_scalar(exp(neg(mul(a, a))), 2/√π))
//	pow(a, b)          no gradient yet: an error as for conv2d
//	sin, cos           no gradient yet (ir/xtrig.go's ops, so the rows below)
//	tan, asin          as sin
//	acos, atan         as sin
//	sinh, cosh         as sin
//	asinh, acosh       as sin
//	atanh(a)           as sin
//	mask(c, b)         gb += mask(c, g); no gradient to c
//	transpose(a)       ga += transpose(g)
//	matmul(a, b)       ga += matmul(g, transpose(b)), gb += matmul(transpose(a), g), per
//	                   matrix of a batch; an operand broadcast over batch dimensions gets the
//	                   sum over them, as broadcast's rule
//	sum(a, axes)       ga += broadcast(g) to a's shape
//	max(a, axes)       ga += broadcast(div(g, ties)) · mask, mask = 1 where a equals the
//	                   max, ties = sum(mask) per output: g shared among the tied maxima
//	broadcast(b) to S  gb += reshape(sum(g) over the broadcast dimensions (keepdims),
//	                   b's shape)
//	reshape(a)         ga += reshape(g) to a's shape
//	permute(a, perm)   ga += permute(g, inverse of perm)
//	life(a)            not differentiable: an error if it lies between a
//	                   parameter and the loss
//	conv2d(x, w)       gx += conv_transpose2d(g, w) with conv2d's strides, pads,
//	                   dilations and group, output_padding the rows (columns)
//	                   past the last window; gw += conv2d(x', g') of x and g
//	                   with batch and channels swapped (permutes), strides and
//	                   dilations swapped, bottom/right pads less those rows,
//	                   then permuted back (ir/conv.go): each element one
//	                   accumulator over (n, oh, ow) ascending
//	conv_transpose2d(x, w) no gradient yet (conv2d of g, and of x with g,
//	                   not rules yet): an error as for conv2d
//	maxpool2d(x)       gx += maxpool2d_grad(x, g), the same attributes: each
//	                   window's g goes to its selected tap, the first (kh, kw
//	                   ascending) holding the window's maximum (PyTorch's
//	                   routing of ties; +0 beats -0, the first NaN wins)
//	gather(x, i, axis) gx += scatter_elements(full(0) of x's shape, g, i broadcast), add,
//	                   along axis, as [outer, d, inner] ← [outer, i's elements, inner]:
//	                   each element the gradients of the outputs that read it, added
//	                   from +0 in the outputs' row-major order; no gradient to i
//	gather_elements(x, i, axis) gx += scatter_elements(full(0), g, i, axis, add)
//	maxpool2d_grad(x, g) not differentiated (second derivatives of pooling):
//	                   an error if it lies between a parameter and the loss
//	resize2d(x)        no gradient yet (g scattered back through the taps
//	                   is not a rule yet): an error as for conv2d
//	cast(a)            no gradient yet: an error as for conv2d
//	where(c, a, b)     no gradient yet (mask is float32's rule)
//	and, or            not differentiable: bool values (so xor, not)
//	xor, not           as and
//	bit_and, bit_or    not differentiable: integer values (so the rows below)
//	bit_xor, bit_not   as bit_and
//	shift_left, shift_right as bit_and
//	mod(a, b)          as bit_and
//	scatter_nd(x, u, i) no gradient yet (a gather of g, and g less what is
//	                   overwritten): an error as for conv2d
//	scatter_elements(x, u, i) as scatter_nd
//	pad(x)             no gradient yet (g summed back onto the elements each
//	                   border copies is not a rule yet): an error as for conv2d
//	attention          no gradient yet: an error as for conv2d
//	prod(a, axes)      no gradient yet (the product of the other leaves): an
//	                   error as for conv2d
//	input, full        leaves
//
// The loss's own gradient is full([], 1). When a node feeds several
// consumers, its gradient is the sum of their contributions, added in a
// fixed order: consumers by decreasing node id (the order the reverse
// sweep visits them), and within one consumer a before b. The first
// contribution is used as is; each later one is added to the running sum
// with one add node. Gradients are built only for nodes that depend on a
// parameter and that the loss depends on.
package grad

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// unlimited validates invariants without host policy: limits are the
// runner's to apply (gpucc.Runtime.Compile does, with its own).
var unlimited = ir.Limits{MaxNodes: math.MaxInt32, MaxElements: math.MaxInt64 / 8,
	MaxStorageBytes: math.MaxInt64, MaxOps: math.MaxInt64, MaxOutputs: math.MaxInt32}

// Step returns the graph of one SGD step of g on the output named loss
// (which must have shape []) with learning rate lr. Its outputs are the
// loss, the other outputs of g in their order, then, for every parameter
// p of g in node order, an output named p's name holding
// p - lr·∂loss/∂p (p itself when the loss does not depend on p). g is not
// modified; the result shares its input data.
func Step(g *ir.Graph, loss string, lr float32) (*ir.Graph, error) {
	if err := ir.ValidateStructure(g, unlimited); err != nil {
		return nil, err
	}
	if float32(math.Abs(float64(lr))) > math.MaxFloat32 || lr != lr {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "lr", "learning rate %v is not a finite float32", lr)
	}
	lossID, err := lossNode(g, loss)
	if err != nil {
		return nil, err
	}
	b, grads, err := backward(g, lossID)
	if err != nil {
		return nil, err
	}
	out := b.g
	out.Outputs = []ir.Output{{Name: loss, ID: lossID}}
	names := map[string]bool{loss: true}
	for _, o := range g.Outputs {
		if o.Name != loss {
			out.Outputs = append(out.Outputs, o)
			names[o.Name] = true
		}
	}
	for _, p := range g.Params() {
		if names[p.Name] {
			return nil, ir.Errorf(ir.CodeInvalidGraph, int(p.ID), "name", "parameter %q has the name of an output; the step returns the update under it", p.Name)
		}
		upd := p.ID
		if gp, ok := grads[p.ID]; ok {
			upd = b.node(ir.OpSub, nil, 0, p.ID, b.node(ir.OpMulScalar, nil, lr, gp))
		}
		out.Outputs = append(out.Outputs, ir.Output{Name: p.Name, ID: upd})
	}
	if b.err != nil {
		return nil, b.err
	}
	if err := ir.ValidateStructure(out, unlimited); err != nil {
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "grad: the step graph is invalid: %v", err)
	}
	return out, nil
}

// lossNode returns the node of the output named loss, which must be a
// scalar.
func lossNode(g *ir.Graph, loss string) (ir.NodeID, error) {
	for _, o := range g.Outputs {
		if o.Name == loss {
			if s := g.Nodes[o.ID].Shape; len(s) != 0 {
				return 0, ir.Errorf(ir.CodeInvalidGraph, int(o.ID), "loss", "loss %q has shape %v; it must be a scalar (shape [])", loss, s)
			}
			return o.ID, nil
		}
	}
	return 0, ir.Errorf(ir.CodeInvalidGraph, -1, "loss", "no output named %q", loss)
}

// builder appends nodes to a graph, inferring their shapes. The first
// error is kept in err; later calls then do nothing.
type builder struct {
	g   *ir.Graph
	err *ir.Error
}

// node appends op over args (shape is the target of broadcast, reshape and
// full; nil otherwise) and returns its id.
func (b *builder) node(op ir.Op, shape ir.Shape, scalar float32, args ...ir.NodeID) ir.NodeID {
	return b.attrNode(op, nil, shape, scalar, args...)
}

// attrNode is node with the node's attributes (Node.Attrs' layout; nil
// for an op without attributes).
func (b *builder) attrNode(op ir.Op, attrs []int, shape ir.Shape, scalar float32, args ...ir.NodeID) ir.NodeID {
	if b.err != nil {
		return 0
	}
	i := len(b.g.Nodes)
	shapes := make([]ir.Shape, len(args))
	types := make([]ir.DType, len(args))
	for k, a := range args {
		shapes[k] = b.g.Nodes[a].Shape
		types[k] = b.g.Nodes[a].DType
	}
	// The node's dtype by its op's type rule: float32 for a gradient, the
	// indices' own for a rule that moves them (gather's broadcast).
	dt, derr := ir.ResultDType(i, op, types, ir.F32)
	if derr != nil {
		b.err = ir.Errorf(ir.CodeInternal, i, "", "grad: %v", derr)
		return 0
	}
	if !op.Info().Shaped {
		s, err := ir.InferShape(i, op, shapes, attrs)
		if err != nil {
			b.err = ir.Errorf(ir.CodeInternal, i, "", "grad: %v", err)
			return 0
		}
		shape = s
	}
	b.g.Nodes = append(b.g.Nodes, ir.Node{Op: op, Args: args, Shape: append(ir.Shape{}, shape...), Scalar: scalar,
		Attrs: append([]int(nil), attrs...), DType: dt})
	return ir.NodeID(i)
}

// backward returns g extended with the gradient of node loss with respect
// to every node between a parameter and the loss, and the gradient node of
// each parameter the loss depends on.
func backward(g *ir.Graph, loss ir.NodeID) (*builder, map[ir.NodeID]ir.NodeID, error) {
	b := &builder{g: g.Clone()}
	for i := range g.Nodes { // Clone shares data; keep it shared, never written
		b.g.Nodes[i].Data = g.Nodes[i].Data
	}
	// dep[v]: v depends on a parameter, so gradients flow into it.
	dep := make([]bool, len(g.Nodes))
	for i, n := range g.Nodes {
		dep[i] = n.Op == ir.OpInput && n.Param
		for _, a := range n.Args {
			dep[i] = dep[i] || dep[a]
		}
	}
	grad := map[ir.NodeID]ir.NodeID{loss: b.node(ir.OpFull, ir.Shape{}, 1)}
	accumulate := func(v, contrib ir.NodeID) {
		if prev, ok := grad[v]; ok {
			contrib = b.node(ir.OpAdd, nil, 0, prev, contrib)
		}
		grad[v] = contrib
	}
	for i := int(loss); i >= 0; i-- {
		gi, ok := grad[ir.NodeID(i)]
		if !ok || !dep[i] {
			continue
		}
		n := &g.Nodes[i]
		info := n.Op.Info()
		if len(n.Args) > 0 && info.Grad == nil {
			why := info.NoGrad
			if why == "" {
				why = "it has no gradient rule"
			}
			return nil, nil, ir.Errorf(ir.CodeInvalidGraph, i, "op", "cannot differentiate %v: %s, and it lies between a parameter and the loss", n.Op, why)
		}
		for k, a := range n.Args {
			if dep[a] {
				if c, ok := info.Grad(&diff{b: b, n: n, id: ir.NodeID(i), g: gi}, k); ok && b.err == nil {
					accumulate(a, b.id(c))
				}
			}
		}
		if b.err != nil {
			return nil, nil, b.err
		}
	}
	params := map[ir.NodeID]ir.NodeID{}
	for _, p := range g.Params() {
		if gp, ok := grad[p.ID]; ok {
			params[p.ID] = gp
		}
	}
	return b, params, nil
}

// diff is what a gradient rule (ir.OpInfo.Grad) sees of node n, whose
// upstream gradient is g.
type diff struct {
	b  *builder
	n  *ir.Node
	id ir.NodeID
	g  ir.NodeID
}

func (d *diff) Arg(k int) ir.Val {
	if k >= len(d.n.Args) { // the scalar operand of an {a, scalar} op
		return ir.C(d.n.Scalar)
	}
	return ir.Val{ID: d.n.Args[k]}
}

func (d *diff) Out() ir.Val  { return ir.Val{ID: d.id} }
func (d *diff) Attrs() []int { return d.n.Attrs }
func (d *diff) Grad() ir.Val { return ir.Val{ID: d.g} }

func (d *diff) Shape(v ir.Val) ir.Shape {
	if v.Const || d.b.err != nil {
		return ir.Shape{}
	}
	return d.b.g.Nodes[v.ID].Shape
}

func (d *diff) Apply(op ir.Op, target ir.Shape, args ...ir.Val) ir.Val {
	var scalar float32
	if len(args) == 2 && args[1].Const {
		if f := op.Info().ScalarForm; f != 0 {
			op, scalar, args = f, args[1].C, args[:1]
		}
	}
	ids := make([]ir.NodeID, len(args))
	for k, a := range args {
		ids[k] = d.b.id(a)
	}
	return ir.Val{ID: d.b.node(op, target, scalar, ids...)}
}

func (d *diff) ApplyAttrs(op ir.Op, attrs []int, args ...ir.Val) ir.Val {
	ids := make([]ir.NodeID, len(args))
	for k, a := range args {
		ids[k] = d.b.id(a)
	}
	return ir.Val{ID: d.b.attrNode(op, attrs, nil, 0, ids...)}
}

func (d *diff) Full(shape ir.Shape, v float32) ir.Val {
	return ir.Val{ID: d.b.node(ir.OpFull, shape, v)}
}

// id returns the node of v, adding a full of shape [] for a constant that
// a rule uses as a tensor (which no rule of the table does).
func (b *builder) id(v ir.Val) ir.NodeID {
	if v.Const {
		if b.err == nil {
			b.err = ir.Errorf(ir.CodeInternal, -1, "", "grad: a rule used the constant %v where a tensor is needed", v.C)
		}
		return 0
	}
	return v.ID
}
