package ir

import "slices"

// Builder builds a Graph from Go, in the spirit of the seed's
// (a * b).relu(). Errors (a shape mismatch, say) are kept and returned by
// Build, so expressions chain without error checks:
//
//	b := ir.NewBuilder()
//	x := b.Input(ir.Shape{3}, []float32{-2, 3, 4})
//	y := b.Input(ir.Shape{3}, []float32{10, 20, 30})
//	b.Output("values", x.Mul(y).Relu())
//	g, err := b.Build(ir.Limits{})
type Builder struct {
	g        Graph
	err      *Error
	maxNodes int // SetMaxNodes's bound, 0 for none
}

// Tensor is a node under construction. The zero Tensor belongs to no
// builder: operations on it give the zero Tensor, and a builder that
// receives one (as an output or an operand) fails at Build.
type Tensor struct {
	b  *Builder
	id NodeID
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{} }

// ID returns the node id of t (-1 for the zero Tensor or after an error).
func (t Tensor) ID() NodeID {
	if t.b == nil {
		return -1
	}
	return t.id
}

// Shape returns t's shape (nil for the zero Tensor or after an error).
func (t Tensor) Shape() Shape {
	if t.b == nil || t.b.err != nil || t.id < 0 {
		return nil
	}
	return t.b.g.Nodes[t.id].Shape
}

// Err returns the error that stopped the builder, or nil. After it every
// operation gives a Tensor of nil shape, and Build returns it; code that
// reads shapes between operations checks it first.
func (b *Builder) Err() *Error { return b.err }

// SetMaxNodes makes the builder fail with limit_exceeded (MaxNodes) when
// it would hold more than n nodes (n ≤ 0: no bound, the default), as
// Build's Validate would refuse them later: an importer that expands a
// model stops at the host's limit as it builds, before it allocates the
// rest. A test sets a small n to stop an importer at each of its steps.
func (b *Builder) SetMaxNodes(n int) { b.maxNodes = n }

func (b *Builder) add(n Node) Tensor {
	if b.err != nil {
		return Tensor{b, -1}
	}
	i := len(b.g.Nodes)
	if b.maxNodes > 0 && i >= b.maxNodes {
		b.err = LimitErrorf("MaxNodes", i, "nodes", "more than %d nodes exceed the limit of %d", b.maxNodes, b.maxNodes)
		return Tensor{b, -1}
	}
	if n.Op.Info().Args > 0 {
		args := make([]Shape, len(n.Args))
		types := make([]DType, len(n.Args))
		for k, a := range n.Args {
			if a < 0 || int(a) >= i {
				b.err = Errorf(CodeInvalidGraph, i, argField(k), "tensor from another builder or an earlier error")
				return Tensor{b, -1}
			}
			args[k] = b.g.Nodes[a].Shape
			types[k] = b.g.Nodes[a].DType
		}
		t, err := ResultDType(i, n.Op, types, n.DType)
		if err != nil {
			b.err = err
			return Tensor{b, -1}
		}
		n.DType = t
		if n.Op.Info().Shaped {
			if err := CheckTarget(i, n.Op, args[0], n.Shape); err != nil {
				b.err = err
				return Tensor{b, -1}
			}
		} else {
			s, err := InferShape(i, n.Op, args, n.Attrs)
			if err != nil {
				b.err = err
				return Tensor{b, -1}
			}
			n.Shape = s
		}
	}
	b.g.Nodes = append(b.g.Nodes, n)
	return Tensor{b, NodeID(i)}
}

// Input adds runtime data of the given shape. data is not copied.
func (b *Builder) Input(shape Shape, data []float32) Tensor {
	return b.add(Node{Op: OpInput, Shape: append(Shape{}, shape...), Data: data})
}

// NamedInput adds an input named name (unique among inputs).
func (b *Builder) NamedInput(name string, shape Shape, data []float32) Tensor {
	return b.add(Node{Op: OpInput, Shape: append(Shape{}, shape...), Data: data, Name: name})
}

// Param adds a trainable parameter: an input named name, marked Param.
func (b *Builder) Param(name string, shape Shape, data []float32) Tensor {
	return b.add(Node{Op: OpInput, Shape: append(Shape{}, shape...), Data: data, Name: name, Param: true})
}

// Full adds a tensor whose elements all equal v.
func (b *Builder) Full(shape Shape, v float32) Tensor {
	return b.add(Node{Op: OpFull, Shape: append(Shape{}, shape...), Scalar: v})
}

// TypedInput adds an input named name (none when "") of dtype t: data
// holds a float dtype's values (already rounded to it), ints an integer or
// bool dtype's; the other is nil. Neither is copied.
func (b *Builder) TypedInput(name string, t DType, shape Shape, data []float32, ints []int64) Tensor {
	return b.add(Node{Op: OpInput, DType: t, Shape: append(Shape{}, shape...), Data: data, Ints: ints, Name: name})
}

// FullOf adds a tensor of dtype t whose elements all equal v: a float
// dtype's value in f (a value of t), an integer or bool dtype's in i.
func (b *Builder) FullOf(t DType, shape Shape, f float32, i int64) Tensor {
	n := Node{Op: OpFull, DType: t, Shape: append(Shape{}, shape...)}
	if t.IsFloat() {
		n.Scalar = f
	} else {
		n.Ints = []int64{i}
	}
	return b.add(n)
}

// Where returns t (bool) ? x : y, element by element, of x's and y's
// dtype; the three have one shape.
func (t Tensor) Where(x, y Tensor) Tensor { return t.ApplyAttrs(OpWhere, nil, x, y) }

// Gather returns t's elements along axis (negative: from the end) at the
// int32 or int64 indices idx (ONNX's Gather): t's shape with that axis
// replaced by idx's.
func (t Tensor) Gather(idx Tensor, axis int) Tensor {
	return t.ApplyAttrs(OpGather, []int{axis}, idx)
}

// GatherElements returns t's elements along axis at the int32 or int64
// indices idx of t's rank (ONNX's GatherElements): idx's shape.
func (t Tensor) GatherElements(idx Tensor, axis int) Tensor {
	return t.ApplyAttrs(OpGatherElements, []int{axis}, idx)
}

// Cast returns t converted to dtype dt as ONNX's Cast (see ir.Convert).
func (t Tensor) Cast(dt DType) Tensor { return t.ApplyTo(dt, OpCast) }

// DType returns t's dtype (F32 for the zero Tensor or after an error).
func (t Tensor) DType() DType {
	if t.b == nil || t.b.err != nil || t.id < 0 {
		return F32
	}
	return t.b.g.Nodes[t.id].DType
}

// Output names t as a result.
func (b *Builder) Output(name string, t Tensor) {
	if t.b != b && b.err == nil {
		b.err = Errorf(CodeInvalidGraph, -1, "outputs", "output %s: %s", Quote(name), foreign(t))
	}
	b.g.Outputs = append(b.g.Outputs, Output{Name: name, ID: t.id})
}

// foreign says why t cannot be used with another builder.
func foreign(t Tensor) string {
	if t.b == nil {
		return "the zero Tensor, not made by a Builder"
	}
	return "a tensor from another builder"
}

// Build validates the graph against limits and returns it.
func (b *Builder) Build(limits Limits) (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	g := b.g.Clone()
	for i := range g.Nodes {
		g.Nodes[i].Data = b.g.Nodes[i].Data
	}
	if err := Validate(g, limits); err != nil {
		return nil, err
	}
	return g, nil
}

func (t Tensor) unary(op Op, s float32) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	return t.b.add(Node{Op: op, Args: []NodeID{t.id}, Scalar: s})
}

func (t Tensor) binary(op Op, u Tensor) Tensor { return t.binaryTo(op, u, F32) }

// binaryTo is binary giving a node that says dtype dt (OutBool's choice,
// OutNode's dtype; other rules ignore it).
func (t Tensor) binaryTo(op Op, u Tensor, dt DType) Tensor {
	if u.b != t.b {
		b, field, other := t.b, "b", u
		if b == nil {
			b, field, other = u.b, "a", t
		}
		if b.err == nil {
			b.err = Errorf(CodeInvalidGraph, len(b.g.Nodes), field, "%s", foreign(other))
		}
		return Tensor{b, -1}
	}
	if t.b == nil {
		return Tensor{}
	}
	if op.IsElementwise() && t.b.err == nil {
		// numpy's rule: each operand whose shape is not the broadcast
		// shape gets an explicit broadcast node.
		if a, b := t.Shape(), u.Shape(); !a.Equal(b) {
			s, err := broadcastBinary(len(t.b.g.Nodes), op, a, b)
			if err != nil {
				t.b.err = err
				return Tensor{t.b, -1}
			}
			if !a.Equal(s) {
				t = t.Broadcast(s)
			}
			if !b.Equal(s) {
				u = u.Broadcast(s)
			}
		}
	}
	return t.b.add(Node{Op: op, Args: []NodeID{t.id, u.id}, DType: dt})
}

// ApplyTo is Apply for a node that says dtype dt: a comparison's Bool
// over float32 operands (which give float32 1 or 0 by default, protocol
// v1's comparisons), a cast's target.
func (t Tensor) ApplyTo(dt DType, op Op, us ...Tensor) Tensor {
	if len(us) == 1 {
		return t.binaryTo(op, us[0], dt)
	}
	if t.b == nil {
		return Tensor{}
	}
	return t.b.add(Node{Op: op, Args: []NodeID{t.id}, DType: dt})
}

// Add returns t + u. Binary ops broadcast both operands by numpy's rule:
// shapes are right-aligned, and each dimension of size 1 (or missing)
// stretches to the other's ([4,16] + [16], [4,1] * [1,5], [] against any).
func (t Tensor) Add(u Tensor) Tensor { return t.binary(OpAdd, u) }

// Sub returns t - u (broadcasting as Add).
func (t Tensor) Sub(u Tensor) Tensor { return t.binary(OpSub, u) }

// Mul returns t * u (broadcasting as Add).
func (t Tensor) Mul(u Tensor) Tensor { return t.binary(OpMul, u) }

// AddScalar returns t + s.
func (t Tensor) AddScalar(s float32) Tensor { return t.unary(OpAddScalar, s) }

// SubScalar returns t - s.
func (t Tensor) SubScalar(s float32) Tensor { return t.unary(OpSubScalar, s) }

// MulScalar returns t * s.
func (t Tensor) MulScalar(s float32) Tensor { return t.unary(OpMulScalar, s) }

// Relu returns max(t, +0) elementwise.
func (t Tensor) Relu() Tensor { return t.unary(OpRelu, 0) }

// Positive returns 1 where t > 0, else 0.
func (t Tensor) Positive() Tensor { return t.unary(OpPositive, 0) }

// T returns the transpose of a 2-D tensor.
func (t Tensor) T() Tensor { return t.unary(OpTranspose, 0) }

// MatMul returns t × u for [m,k] × [k,n].
func (t Tensor) MatMul(u Tensor) Tensor { return t.binary(OpMatmul, u) }

// Sum returns the pairwise sum of all elements, shape [].
func (t Tensor) Sum() Tensor { return t.reduce(OpSum, false, nil) }

// SumAxes returns the pairwise sum of t over axes (negative axes count
// from the end; none given: every axis), keeping each reduced axis as a
// dimension of 1 when keepdims, else dropping it. Each output's leaves are
// the reduced elements in row-major order, summed by the whole sum's tree.
func (t Tensor) SumAxes(keepdims bool, axes ...int) Tensor { return t.reduce(OpSum, keepdims, axes) }

// MaxAxes returns the largest element of t over axes (as SumAxes), by
// maximum: -0 < +0, NaN if any element is.
func (t Tensor) MaxAxes(keepdims bool, axes ...int) Tensor { return t.reduce(OpMax, keepdims, axes) }

// ProdAxes returns the product of t over axes (as SumAxes), by mul in the
// same pairwise tree.
func (t Tensor) ProdAxes(keepdims bool, axes ...int) Tensor { return t.reduce(OpProd, keepdims, axes) }

func (t Tensor) reduce(op Op, keepdims bool, axes []int) Tensor {
	if t.b == nil || t.b.err != nil {
		return Tensor{t.b, -1}
	}
	target, result, err := ReduceTarget(len(t.b.g.Nodes), t.Shape(), axes, len(axes) == 0, keepdims)
	if err != nil {
		t.b.err = err
		return Tensor{t.b, -1}
	}
	r := t.b.add(Node{Op: op, Args: []NodeID{t.id}, Shape: target})
	if !result.Equal(target) {
		r = r.Reshape(result)
	}
	return r
}

// Life returns one toroidal Game of Life step of a 2-D grid.
func (t Tensor) Life() Tensor { return t.unary(OpLife, 0) }

// Broadcast returns t broadcast to shape by numpy's rule (broadcast_to):
// right-aligned with shape, each of t's dimensions equals shape's or is 1.
func (t Tensor) Broadcast(shape Shape) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	return t.b.add(Node{Op: OpBroadcast, Args: []NodeID{t.id}, Shape: append(Shape{}, shape...)})
}

// Reshape returns t's elements, in the same row-major order, as shape (of
// the same element count).
func (t Tensor) Reshape(shape Shape) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	return t.b.add(Node{Op: OpReshape, Args: []NodeID{t.id}, Shape: append(Shape{}, shape...)})
}

// Div returns t / u (broadcasting as Add), correctly rounded.
func (t Tensor) Div(u Tensor) Tensor { return t.binary(OpDiv, u) }

// DivScalar returns t / s.
func (t Tensor) DivScalar(s float32) Tensor { return t.unary(OpDivScalar, s) }

// Maximum returns the larger of t and u elementwise (-0 < +0, NaN if
// either is NaN).
func (t Tensor) Maximum(u Tensor) Tensor { return t.binary(OpMaximum, u) }

// MaximumScalar returns the larger of t and s.
func (t Tensor) MaximumScalar(s float32) Tensor { return t.unary(OpMaximumScalar, s) }

// Minimum returns the smaller of t and u elementwise.
func (t Tensor) Minimum(u Tensor) Tensor { return t.binary(OpMinimum, u) }

// MinimumScalar returns the smaller of t and s.
func (t Tensor) MinimumScalar(s float32) Tensor { return t.unary(OpMinimumScalar, s) }

// Neg returns -t.
func (t Tensor) Neg() Tensor { return t.unary(OpNeg, 0) }

// Exp returns e^t elementwise.
func (t Tensor) Exp() Tensor { return t.unary(OpExp, 0) }

// Log returns ln t elementwise.
func (t Tensor) Log() Tensor { return t.unary(OpLog, 0) }

// Tanh returns tanh t elementwise.
func (t Tensor) Tanh() Tensor { return t.unary(OpTanh, 0) }

// Sqrt returns √t elementwise, correctly rounded.
func (t Tensor) Sqrt() Tensor { return t.unary(OpSqrt, 0) }

// Rsqrt returns 1/√t elementwise.
func (t Tensor) Rsqrt() Tensor { return t.unary(OpRsqrt, 0) }

// Apply returns op (an elementwise op of the op table) applied to t and
// the tensors us; ApplyScalar applies a scalar form to t and s. They reach
// every op, the named methods above the common ones.
func (t Tensor) Apply(op Op, us ...Tensor) Tensor {
	if len(us) == 1 {
		return t.binary(op, us[0])
	}
	return t.unary(op, 0)
}

// ApplyScalar returns the scalar form op applied to t and s.
func (t Tensor) ApplyScalar(op Op, s float32) Tensor { return t.unary(op, s) }

// ApplyShaped returns the Shaped op (broadcast, reshape, …) applied to t
// with the target shape, which the op's shape rule checks: with Apply it
// reaches every op of the table.
func (t Tensor) ApplyShaped(op Op, shape Shape) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	return t.b.add(Node{Op: op, Args: []NodeID{t.id}, Shape: append(Shape{}, shape...)})
}

// ApplyAttrs returns op, an op with attributes (see AttrSpec), applied to
// t and the tensors us with attrs in Node.Attrs' layout (PackAttrs makes
// it); the op's shape rule checks both.
func (t Tensor) ApplyAttrs(op Op, attrs []int, us ...Tensor) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	args := []NodeID{t.id}
	for _, u := range us {
		if u.b != t.b {
			if t.b.err == nil {
				t.b.err = Errorf(CodeInvalidGraph, len(t.b.g.Nodes), argField(len(args)), "%s", foreign(u))
			}
			return Tensor{t.b, -1}
		}
		args = append(args, u.id)
	}
	if len(args) != op.Info().Args {
		if t.b.err == nil {
			t.b.err = Errorf(CodeInvalidGraph, len(t.b.g.Nodes), "op", "%v takes %d arguments, got %d", op, op.Info().Args, len(args))
		}
		return Tensor{t.b, -1}
	}
	return t.b.add(Node{Op: op, Args: args, Attrs: slices.Clone(attrs)})
}

// Conv2D returns conv2d of t (x [N,C,H,W]) and w ([M,C/group,kH,kW]) with
// the attributes given by name (strides, pads, dilations, group; those
// left out take their defaults).
func (t Tensor) Conv2D(w Tensor, attrs map[string][]int) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpConv2D, attrs)
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpConv2D, a, w)
}

// MaxPool2D returns maxpool2d of t (x [N,C,H,W]) with the attributes given
// by name (kernel_shape, required; strides, pads, dilations).
func (t Tensor) MaxPool2D(attrs map[string][]int) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpMaxPool2D, attrs)
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpMaxPool2D, a)
}
