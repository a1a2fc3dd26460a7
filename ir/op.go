package ir

import (
	"fmt"
	"math"
)

// Op is an IR operation. Everything about an op lives in its row of the op
// table (see OpInfo): code asks the table instead of switching on ops.
type Op uint8

// The operations. Each comment states the semantics; cpuref's package doc
// defines the rounding rules exactly. New ops go at the end: op numbers
// are part of cache keys.
const (
	OpInvalid   Op = iota
	OpInput        // runtime data of Shape, uploaded to the device
	OpFull         // every element = Scalar
	OpAdd          // arg0 + arg1, same shape
	OpSub          // arg0 - arg1, same shape
	OpMul          // arg0 * arg1, same shape
	OpAddScalar    // arg0 + Scalar
	OpSubScalar    // arg0 - Scalar
	OpMulScalar    // arg0 * Scalar
	OpRelu         // arg0 > 0 ? arg0 : +0
	OpPositive     // arg0 > 0 ? 1 : 0
	OpTranspose    // arg0 with its last two axes swapped (a 2-D transpose per matrix of a batch)
	OpMatmul       // arg0 [..., m,k] × arg1 [..., k,n], k ascending; rank 2-4, batch dimensions broadcast (numpy)
	OpSum          // pairwise sum of arg0 over the axes where the target Shape is 1, or all of it when Shape is []
	OpLife         // one toroidal Game of Life step of the 2-D grid arg0
	OpBroadcast    // arg0 broadcast to Shape by numpy's rule (broadcast_to): dimensions of size 1 or missing stretch
	OpReshape      // arg0's elements, same row-major order, as Shape (same element count)
	OpDiv          // arg0 / arg1, correctly rounded
	OpMaximum      // the larger of arg0 and arg1 (-0 < +0; NaN if either is)
	OpMinimum      // the smaller of arg0 and arg1
	OpDivScalar    // arg0 / Scalar
	OpMaximumScalar
	OpMinimumScalar
	OpNeg   // -arg0 (the sign bit flipped)
	OpExp   // e^arg0
	OpLog   // ln arg0
	OpTanh  // tanh arg0
	OpSqrt  // √arg0, correctly rounded
	OpRsqrt // 1/√arg0
	OpMax   // the largest element of arg0 over the axes where the target Shape is 1 (all of it when []), by maximum
	// The ops ONNX import needs (package onnx): comparisons give 1 or 0
	// (a bool as float32; false for NaN), mask selects without arithmetic.
	OpSigmoid      // 1/(e^-arg0 + 1), ONNX's reference order
	OpGreater      // arg0 > arg1 ? 1 : 0
	OpGreaterEqual // arg0 >= arg1 ? 1 : 0
	OpEqual        // arg0 == arg1 ? 1 : 0 (-0 == +0)
	OpMask         // arg0 > 0 ? arg1 : -0, so that mask(c, x) + mask(1-c, y) is where(c, x, y) bit for bit
	OpFloor        // the largest integer not above arg0, exact
	OpCeil         // the smallest integer not below arg0, exact
	OpRound        // arg0 rounded to the nearest integer, ties to even, exact
	// Convolution and pooling (NCHW), with integer attributes (AttrSpec).
	OpConv2D    // arg0 x [N,C,H,W] ⊛ arg1 w [M,C/group,kH,kW]: per output, the products over (c, kh, kw) ascending, zero-padded
	OpMaxPool2D // the maximum of each window of arg0 [N,C,H,W] over its taps inside x, (kh, kw) ascending
	OpPermute   // arg0's axes in the order of the attribute perm (numpy's transpose): a view
	// conv_transpose2d (convops): arg0 x [N,C,H,W] and arg1 w [C,M/group,kH,kW] (ONNX ConvTranspose).
	// Per output [n,m,oh,ow], one accumulator from +0 over (c of m's group, kh, kw) ascending, kw
	// fastest, adding round(x[n,c,ih,iw]·w[c,m%(M/g),kh,kw]) for each tap where ih = (oh+pT-kh·dH)/sH
	// and iw = (ow+pL-kw·dW)/sW are exact and inside x; other taps add nothing. conv2d's input
	// gradient dX is conv_transpose2d(dY, W) with conv2d's own W [M,C/g,kH,kW] as the weight and
	// its strides, pads, dilations and group, output_padding (H+pT+pB-(kH-1)·dH-1) mod sH (and W's).
	OpConvTranspose2D
	// maxpool2d_grad (cgrad): arg0 x [N,C,H,W], arg1 g [N,C,OH,OW] (maxpool2d's output gradient),
	// maxpool2d's attributes; per element of x, one accumulator from +0 over the windows that
	// select it (poolgrad.go), (oh, ow) ascending, adding g there: maxpool2d's input gradient.
	OpMaxPool2DGrad
	OpErf // the error function of arg0 (exact GELU's), by cpuref's polynomials
	// resize2d (convops): ONNX Resize over the last two axes of arg0 x [N,C,H,W], nearest or
	// linear, to [N,C,OH,OW]. Per axis the taps and weights are ir.ResizeTaps' tables (computed in
	// float64 from the attributes, the same on every backend); nearest copies x[n,c,I0h[oh],I0w[ow]];
	// linear rounds r_j = W0w·x[h_j,I0w] + W1w·x[h_j,I1w] (each product, then the sum) for h_0 = I0h,
	// h_1 = I1h, then W0h·r_0 + W1h·r_1 likewise.
	OpResize2D
	// The typed ops (issue 32): they have no float32 kernel yet (Typed
	// rows); cpuref.EvalTyped defines them, and the compiler refuses them
	// by name. Integer ops wrap in two's complement (their Int rules).
	OpCast       // arg0 converted to the node's DType as ONNX's Cast (ir.Convert); a float out of an integer's range fails the run
	OpWhere      // arg0 (bool) ? arg1 : arg2, any dtype
	OpAnd        // arg0 && arg1 (bool)
	OpOr         // arg0 || arg1 (bool)
	OpXor        // arg0 != arg1 (bool)
	OpNot        // !arg0 (bool)
	OpBitAnd     // arg0 & arg1 (integers)
	OpBitOr      // arg0 | arg1 (integers)
	OpBitXor     // arg0 ^ arg1 (integers)
	OpBitNot     // ^arg0 (integers)
	OpShiftLeft  // arg0 << arg1 (unsigned; a count of the width or more gives 0), ONNX BitShift LEFT
	OpShiftRight // arg0 >> arg1 (unsigned; a count of the width or more gives 0), ONNX BitShift RIGHT
	OpMod        // arg0 mod arg1 with the divisor's sign (integers; ONNX Mod, fmod 0); by zero fails the run
	// pad (ONNX Pad): arg0 x of rank 1-4 widened by the attribute pads (before each axis, then after
	// each); each output element copies x at, per axis, ir.Pad.Src of its index: constant mode the
	// value_bits constant outside x, reflect (numpy's, period 2(n-1)), edge (clamped) or wrap (period n).
	OpPad
	// gather (ONNX Gather): arg0 data of any dtype, arg1 int32 or int64 indices into its axis
	// attribute's dimension, a negative one counting from the end; an index outside fails the
	// run with invalid_input. The result is data's shape with that axis replaced by the indices'.
	OpGather
	// gather_elements (ONNX GatherElements): arg0 data of any dtype, arg1 int32 or int64 indices
	// of data's rank (each other dimension at most data's) along its axis attribute; the result
	// has the indices' shape and y[p] = data[p with p[axis] = arg1[p]], a negative index counting
	// from the end, one outside [-d, d) failing the run with invalid_input.
	OpGatherElements
	// attention (ir/attention.go): arg0 q [...,S,D], arg1 k [...,T,D], arg2 v [...,T,E], arg3 a mask
	// broadcasting to [...,S,T]; softmax(q·kᵀ·scale + mask)·v per query row in attention's own
	// order: the row's maximum of the scores first, then exp(t−m) summed and accumulated with v in
	// ascending key order, each output divided once; causal masks key j > query i.
	OpAttention
	// prod (ONNX ReduceProd): the product of arg0 over the axes where the target Shape is 1 (all
	// of it when []), by mul in the reductions' pairwise tree (padding leaves 1).
	OpProd
	// The ops of ir/xtrig.go, elementwise on the float dtypes: pow (arg0^arg1, C's pow), the
	// trigonometric ops (sin, cos and tan NaN from |arg0| ≥ TrigMax on) and their inverses, the
	// hyperbolic ops and theirs; cpuref's package doc states each one's algorithm and accuracy.
	OpPow
	OpSin
	OpCos
	OpTan
	OpAsin
	OpAcos
	OpAtan
	OpSinh
	OpCosh
	OpAsinh
	OpAcosh
	OpAtanh
	// scatter_nd (ONNX ScatterND, ir/scatter.go): arg0 data of any dtype, arg1 updates of its
	// dtype, arg2 int32 or int64 indices [q…, k]: data with the slice data[row] of each index row
	// replaced by (or combined with, by the reduction attribute) its update, in row-major order.
	OpScatterND
	// scatter_elements (ONNX ScatterElements, ir/scatter.go): arg0 data of any dtype, arg1
	// updates of its dtype, arg2 int32 or int64 indices of the updates' shape along the axis
	// attribute: data with element p (p[axis] = arg2[p]) replaced by (or combined with) arg1[p].
	OpScatterElements
	numOps
)

// OpInfo is one row of the op table: everything the compiler knows about
// an op. The table's completeness test (op_test.go) fails on a row that
// misses a part.
type OpInfo struct {
	Name        string // name in the text form
	Wire        string // name in protocol v1 JSON (a scalar form shares its op's)
	Args        int    // number of tensor arguments
	Scalar      bool   // uses Node.Scalar (full's value, or a scalar operand)
	Elementwise bool   // output element i depends only on element i of each argument
	Commutative bool   // arguments may be swapped without changing any bit of the result
	// Selects: the op returns one of its two arguments unchanged: the
	// first NaN when either is one, else the larger (smaller) by a total
	// order of the other values (-0 < +0). A reduction combining with it
	// therefore has the same bits under any grouping and any order of its
	// leaves, provided the first NaN in leaf order is the one returned:
	// targets may fold it in parallel lanes (codegen/c) instead of the
	// tree. TestSelects checks the claim on every such row.
	Selects bool
	// View: the op only moves values (every output element is one element
	// of arg0, unchanged), so fusion folds it into its consumers' indexing.
	View bool
	// Shaped: the node's Shape is an attribute (input, full) or a target
	// (broadcast, reshape, reductions), not only a function of the
	// arguments' shapes.
	Shaped bool
	// Combine is, for a reduction (sum, max), the binary elementwise op
	// that joins two partial results in the pairwise tree (add, maximum),
	// and Identity the bits of its padding leaf (-0, -Inf), for which
	// Combine(x, Identity) = x for every x. A reduction's target is [] (the
	// whole tensor) or the argument's shape with 1 at each reduced axis
	// (see ReduceTarget); on the wire it is written as "axes" and
	// "keepdims", not "shape".
	//
	// A reduction is a row with Kernel KernelReduce, Shaped, Shape
	// reduceShape, Combine, Identity, F64 (Combine's float64 meaning) and a
	// gradient rule, and nothing more: its reference tree (the contiguous
	// pairwise tree of Combine over each output's leaves, padded with
	// Identity to a power of two: cpuref.Reduce), its fold over a uniform
	// argument (the same tree over n copies: cpuref.ReduceFull), its float64
	// evaluation (eval64), its kernels and its wire form are derived from
	// these fields. IsReduction asks Combine; no code names sum or max to
	// know how to reduce.
	Combine  Op
	Identity uint32
	// ScalarForm is, for a binary elementwise op, its {a, scalar} form;
	// ScalarOf is, for that form, the binary op (both set by the table).
	ScalarForm, ScalarOf Op
	// Kernel is the kernel kind that computes a node of this op on its own
	// (elementwise ops and views fuse into others' kernels).
	Kernel KernelKind
	// Shape returns the result shape from the arguments' shapes, the
	// node's attributes (Attrs' layout, already checked against the specs)
	// and, for a Shaped op, the node's own target shape. It also checks
	// what the attributes' values mean (a stride ≥ 1, say).
	Shape func(node int, op Op, args []Shape, target Shape, attrs []int) (Shape, *Error)
	// Attrs declares the op's integer attributes (see AttrSpec), in the
	// order Node.Attrs holds them.
	Attrs []AttrSpec
	// Cost estimates the operations of one node, from its arguments'
	// shapes and its own.
	Cost func(args []Shape, out Shape) int64
	// CostAttrs, when set, is Cost with the node's attributes too, for an
	// op whose work the shapes do not tell (a pooling window); EstimateOps
	// prefers it.
	CostAttrs func(args []Shape, out Shape, attrs []int) int64
	// Expr is, for an elementwise op, the value of one output element from
	// the operands' elements (Arg(0), Arg(1); a scalar form's scalar is
	// Arg(1)). It is the reference (cpuref and fold evaluate it) and what
	// every code generator renders.
	Expr *X
	// F64 is the op's exact-math meaning in float64, which Expr
	// approximates in float32: for an elementwise op, the value of one
	// output element from the operands' (b is Arg(1): the second operand
	// or the scalar; math.Exp, a/b, math.Max with -0 < +0 and NaN, …); for
	// a reduction (Kernel KernelReduce), the combination of two partial
	// results. Package eval64 evaluates graphs with it, the accuracy
	// measurement compares against it and grad's checks differentiate it.
	F64 func(a, b float64) float64
	// Grad is the reverse-mode rule; NoGrad instead says why the op has
	// none, and grad refuses a graph that needs it. Leaves need neither.
	Grad   GradRule
	NoGrad string
	// Types is the op's type rule: which dtypes its operands take and
	// which it gives (see TypeRule). Validate checks every node against
	// it; an op whose kernels compute float32 only says F32Only, and a
	// backend refuses a dtype its kernels do not handle by name.
	Types TypeRule
	// Int is, for an elementwise op that takes integer or bool operands,
	// its meaning on them: one output element from the operands' (b is 0
	// for one operand), of dtype t (the operands'), in int64, which the
	// caller wraps to the result's dtype (ir.DType.Wrap); false where the
	// operation has no answer (a division by zero), which fails the run.
	Int func(t DType, a, b int64) (int64, bool)
	// Typed: the op has no float32 kernel yet (cast, where, the logical
	// and bitwise ops): only cpuref.EvalTyped computes it, and compilers
	// refuse it by name. It is elementwise, without an Expr.
	Typed bool
}

// GradRule returns the gradient that a node passes to its argument k, in
// terms of d, or false when it passes none (a gradient that is zero).
type GradRule func(d Diff, k int) (Val, bool)

// Val is a value in a gradient rule: a graph node, or a constant (the
// scalar operand of an {a, scalar} op, or a literal of the rule).
type Val struct {
	ID    NodeID
	Const bool
	C     float32
}

// C returns the constant v as a Val.
func C(v float32) Val { return Val{Const: true, C: v} }

// Diff is what a gradient rule sees of the node it differentiates and how
// it adds nodes (package grad implements it).
type Diff interface {
	Arg(k int) Val // argument k; for an {a, scalar} op, Arg(1) is the scalar
	Out() Val      // the node's value
	Grad() Val     // the gradient flowing into the node
	Shape(v Val) Shape
	// Apply adds op over args; target is the shape of a Shaped op. A binary
	// op whose second argument is a constant becomes its scalar form.
	Apply(op Op, target Shape, args ...Val) Val
	// Attrs is the node's attributes (Node.Attrs' layout, read with
	// Op.Attr), and ApplyAttrs adds an attributed op (not Shaped) over
	// args: the rules of conv2d, pooling and permute need both.
	Attrs() []int
	ApplyAttrs(op Op, attrs []int, args ...Val) Val
	Full(shape Shape, v float32) Val
}

// ZeroGrad is the rule of an op whose gradient is zero almost everywhere
// (positive): it passes nothing.
func ZeroGrad(Diff, int) (Val, bool) { return Val{}, false }

var opTable [numOps]OpInfo

// The rows. An elementwise op is one row: its scalar form, wire name and
// variants are derived from it in init.
func init() {
	rows := map[Op]OpInfo{
		OpInput: {Name: "input", Types: TypeRule{In: AnyDType, Out: OutNode}, Shaped: true, Shape: attribute, Cost: perElement},
		OpFull:  {Name: "full", Types: TypeRule{In: AnyDType, Out: OutNode}, Scalar: true, Shaped: true, Shape: attribute, Cost: perElement},
		OpAdd: {Name: "add", Types: TypeRule{In: Numeric | Float64Types}, Int: intAdd, Args: 2, Commutative: true, ScalarForm: OpAddScalar,
			Expr: Arg(0).Add(Arg(1)), F64: add64, Grad: passGrad},
		OpSub: {Name: "sub", Types: TypeRule{In: Numeric | Float64Types}, Int: intSub, Args: 2, ScalarForm: OpSubScalar, Expr: Arg(0).Sub(Arg(1)),
			F64: func(a, b float64) float64 { return a - b },
			Grad: func(d Diff, k int) (Val, bool) {
				if k == 0 {
					return d.Grad(), true
				}
				return d.Apply(OpMul, nil, d.Grad(), C(-1)), true
			}},
		OpMul: {Name: "mul", Types: TypeRule{In: Numeric | Float64Types}, Int: intMul, Args: 2, Commutative: true, ScalarForm: OpMulScalar, Expr: Arg(0).Mul(Arg(1)),
			F64:  func(a, b float64) float64 { return a * b },
			Grad: func(d Diff, k int) (Val, bool) { return d.Apply(OpMul, nil, d.Grad(), d.Arg(1-k)), true }},
		OpRelu: {Name: "relu", Types: TypeRule{In: SignedNumeric}, Int: intRelu, Args: 1, Expr: If(Arg(0).Gt(F(0)), Arg(0), F(0)),
			F64: func(a, _ float64) float64 { return if64(a > 0, a, 0) },
			Grad: func(d Diff, k int) (Val, bool) {
				return d.Apply(OpMul, nil, d.Grad(), d.Apply(OpPositive, nil, d.Arg(0))), true
			}},
		OpPositive: {Name: "positive", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: If(Arg(0).Gt(F(0)), F(1), F(0)),
			F64: func(a, _ float64) float64 { return if64(a > 0, 1, 0) }, Grad: ZeroGrad},
		OpTranspose: {Name: "transpose", Types: TypeRule{In: AnyDType}, Args: 1, View: true, Shape: transposeShape, Cost: perElement,
			Grad: func(d Diff, k int) (Val, bool) { return d.Apply(OpTranspose, nil, d.Grad()), true }},
		OpMatmul: {Name: "matmul", Types: TypeRule{In: F32Only}, Args: 2, Kernel: KernelMatmul, Shape: matmulShape,
			Cost: func(a []Shape, out Shape) int64 {
				return SatMul(2*int64(out.Len()), int64(a[0][len(a[0])-1]))
			},
			// Per batch, dA = G·Bᵀ and dB = Aᵀ·G; an argument broadcast over
			// batch dimensions gets the sum over them (sumTo).
			Grad: func(d Diff, k int) (Val, bool) {
				if k == 0 {
					return sumTo(d, d.Apply(OpMatmul, nil, d.Grad(), d.Apply(OpTranspose, nil, d.Arg(1))), d.Shape(d.Arg(0))), true
				}
				return sumTo(d, d.Apply(OpMatmul, nil, d.Apply(OpTranspose, nil, d.Arg(0)), d.Grad()), d.Shape(d.Arg(1))), true
			}},
		OpSum: {Name: "sum", Types: TypeRule{In: Numeric | Float64Types}, Args: 1, Shaped: true, Kernel: KernelReduce, Combine: OpAdd, Identity: 1 << 31,
			Shape: reduceShape, Cost: func(a []Shape, _ Shape) int64 { return int64(a[0].Len()) }, F64: add64,
			Grad: func(d Diff, k int) (Val, bool) { return broadcastBack(d, d.Grad(), d.Shape(d.Arg(0))), true }},
		OpMax: {Name: "max_reduce", Types: TypeRule{In: Numeric | Float64Types}, Wire: "max", Args: 1, Shaped: true, Kernel: KernelReduce, Combine: OpMaximum, Identity: 0xff800000,
			Shape: reduceShape, Cost: func(a []Shape, _ Shape) int64 { return int64(a[0].Len()) }, F64: math.Max, Grad: maxGrad},
		OpProd: {Name: "prod", Types: TypeRule{In: Numeric}, Args: 1, Shaped: true, Kernel: KernelReduce, Combine: OpMul, Identity: 0x3f800000,
			Shape: reduceShape, Cost: func(a []Shape, _ Shape) int64 { return int64(a[0].Len()) }, F64: func(a, b float64) float64 { return a * b },
			NoGrad: "prod's gradient (the product of the other leaves) is not a rule yet"},
		OpLife: {Name: "life", Types: TypeRule{In: F32Only}, Args: 1, Kernel: KernelLife, Shape: lifeShape,
			Cost:   func(_ []Shape, out Shape) int64 { return SatMul(9, int64(out.Len())) },
			NoGrad: "life is not differentiable"},
		OpDiv: {Name: "div", Types: TypeRule{In: Numeric | Float64Types}, Int: intDiv, Args: 2, ScalarForm: OpDivScalar, Expr: divX(Arg(0), Arg(1)),
			F64: func(a, b float64) float64 { return a / b },
			Grad: func(d Diff, k int) (Val, bool) {
				if k == 0 {
					return d.Apply(OpDiv, nil, d.Grad(), d.Arg(1)), true
				}
				return d.Apply(OpNeg, nil, d.Apply(OpDiv, nil, d.Apply(OpMul, nil, d.Grad(), d.Out()), d.Arg(1))), true
			}},
		OpMaximum: {Name: "maximum", Types: TypeRule{In: Numeric | Float64Types}, Int: intMax, Args: 2, Selects: true, ScalarForm: OpMaximumScalar, Expr: maxX(Arg(0), Arg(1)),
			F64: math.Max, Grad: pickGrad(false)},
		OpMinimum: {Name: "minimum", Types: TypeRule{In: Numeric | Float64Types}, Int: intMin, Args: 2, Selects: true, ScalarForm: OpMinimumScalar, Expr: minX(Arg(0), Arg(1)),
			F64: math.Min, Grad: pickGrad(true)},
		OpNeg: {Name: "neg", Types: TypeRule{In: SignedNumeric | Float64Types}, Int: intNeg, Args: 1, Expr: negX(Arg(0)), F64: func(a, _ float64) float64 { return -a },
			Grad: func(d Diff, k int) (Val, bool) { return d.Apply(OpNeg, nil, d.Grad()), true }},
		OpExp: {Name: "exp", Types: TypeRule{In: FloatTypes | Float64Types}, Args: 1, Expr: expX(Arg(0)), F64: unary64(math.Exp),
			Grad: func(d Diff, k int) (Val, bool) { return d.Apply(OpMul, nil, d.Grad(), d.Out()), true }},
		OpLog: {Name: "log", Types: TypeRule{In: FloatTypes | Float64Types}, Args: 1, Expr: logX(Arg(0)), F64: unary64(math.Log),
			Grad: func(d Diff, k int) (Val, bool) { return d.Apply(OpDiv, nil, d.Grad(), d.Arg(0)), true }},
		OpTanh: {Name: "tanh", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: tanhX(Arg(0)), F64: unary64(math.Tanh),
			Grad: func(d Diff, k int) (Val, bool) { // g·(1 - tanh²)
				sq := d.Apply(OpMul, nil, d.Out(), d.Out())
				return d.Apply(OpMul, nil, d.Grad(), d.Apply(OpAdd, nil, d.Apply(OpNeg, nil, sq), C(1))), true
			}},
		OpSqrt: {Name: "sqrt", Types: TypeRule{In: FloatTypes | Float64Types}, Args: 1, Expr: sqrtX(Arg(0)), F64: unary64(math.Sqrt),
			Grad: func(d Diff, k int) (Val, bool) { // g·0.5/√a
				return d.Apply(OpDiv, nil, d.Apply(OpMul, nil, d.Grad(), C(0.5)), d.Out()), true
			}},
		OpRsqrt: {Name: "rsqrt", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: divX(F(1), sqrtX(Arg(0))),
			F64: func(a, _ float64) float64 { return 1 / math.Sqrt(a) },
			Grad: func(d Diff, k int) (Val, bool) { // g·(-0.5)·rsqrt(a)/a
				return d.Apply(OpMul, nil, d.Grad(), d.Apply(OpMul, nil, d.Apply(OpDiv, nil, d.Out(), d.Arg(0)), C(-0.5))), true
			}},
		// broadcast and reshape are made by Decode's lowering of a
		// broadcasting add/sub/mul and by autodiff; on the wire they are
		// gpucc extensions ("op":"broadcast"/"reshape" with "a" and
		// "shape"), so Encode can write any IR graph and Decode reads it back.
		OpSigmoid: {Name: "sigmoid", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: Call(sigmoidFn, Arg(0)),
			F64: func(a, _ float64) float64 { return 1 / (math.Exp(-a) + 1) },
			Grad: func(d Diff, k int) (Val, bool) { // g·y·(1 - y)
				return d.Apply(OpMul, nil, d.Grad(), d.Apply(OpMul, nil, d.Out(), d.Apply(OpAdd, nil, d.Apply(OpNeg, nil, d.Out()), C(1)))), true
			}},
		OpGreater: {Name: "greater", Types: TypeRule{In: Numeric | Float64Types, Out: OutBool}, Int: intGt, Args: 2, Expr: If(Arg(0).Gt(Arg(1)), F(1), F(0)),
			F64: func(a, b float64) float64 { return if64(a > b, 1, 0) }, Grad: ZeroGrad},
		OpGreaterEqual: {Name: "greater_equal", Types: TypeRule{In: Numeric | Float64Types, Out: OutBool}, Int: intGe, Args: 2, Expr: If(Arg(0).Ge(Arg(1)), F(1), F(0)),
			F64: func(a, b float64) float64 { return if64(a >= b, 1, 0) }, Grad: ZeroGrad},
		OpEqual: {Name: "equal", Types: TypeRule{In: Numeric | SetOf(Bool) | Float64Types, Out: OutBool}, Int: intEq, Args: 2, Commutative: true, Expr: If(Arg(0).Eq(Arg(1)), F(1), F(0)),
			F64: func(a, b float64) float64 { return if64(a == b, 1, 0) }, Grad: ZeroGrad},
		OpMask: {Name: "mask", Types: TypeRule{In: F32Only}, Args: 2, Expr: If(Arg(0).Gt(F(0)), Arg(1), FBits(1<<31)),
			F64: func(a, b float64) float64 { return if64(a > 0, b, math.Copysign(0, -1)) },
			Grad: func(d Diff, k int) (Val, bool) {
				if k == 0 {
					return Val{}, false
				}
				return d.Apply(OpMask, nil, d.Arg(0), d.Grad()), true
			}},
		OpConv2D: {Name: "conv2d", Types: TypeRule{In: F32Only}, Args: 2, Kernel: KernelConv, Shape: conv2dShape, Cost: conv2dCost, Attrs: conv2dAttrs,
			Grad: conv2dGrad},
		OpMaxPool2D: {Name: "maxpool2d", Types: TypeRule{In: F32Only}, Args: 1, Kernel: KernelPool, Shape: maxpool2dShape, Cost: perElement, CostAttrs: maxpool2dCost,
			Attrs: maxpool2dAttrs, Grad: maxpoolGrad},
		OpMaxPool2DGrad: {Name: "maxpool2d_grad", Types: TypeRule{In: F32Only}, Args: 2, Kernel: KernelPoolGrad, Shape: maxpool2dGradShape, Cost: perElement,
			CostAttrs: maxpool2dGradCost, Attrs: maxpool2dAttrs,
			NoGrad: "maxpool2d_grad is a gradient; second derivatives of pooling are not rules"},
		OpPermute: {Name: "permute", Types: TypeRule{In: AnyDType}, Args: 1, View: true, Shape: permuteShape, Cost: perElement, Attrs: permuteAttrs,
			Grad: permuteGrad},
		OpConvTranspose2D: {Name: "conv_transpose2d", Types: TypeRule{In: F32Only}, Args: 2, Kernel: KernelConvTranspose, Shape: convTranspose2dShape,
			Cost: convTranspose2dCost, Attrs: convTranspose2dAttrs,
			NoGrad: "conv_transpose2d's gradients (a conv2d of the output gradient, and of x with it) are not rules yet"},
		OpErf: {Name: "erf", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: erfX(Arg(0)), F64: unary64(math.Erf),
			Grad: func(d Diff, k int) (Val, bool) { // g·2/√π·e^(-x²)
				e := d.Apply(OpExp, nil, d.Apply(OpNeg, nil, d.Apply(OpMul, nil, d.Arg(0), d.Arg(0))))
				return d.Apply(OpMul, nil, d.Grad(), d.Apply(OpMul, nil, e, C(2/math.SqrtPi))), true
			}},
		OpResize2D: {Name: "resize2d", Types: TypeRule{In: F32Only}, Args: 1, Kernel: KernelResize, Shape: resize2dShape, Cost: perElement,
			CostAttrs: resize2dCost, Attrs: resize2dAttrs,
			NoGrad: "resize2d's gradient (the output gradient scattered back through the taps) is not a rule yet"},
		OpPad: {Name: "pad", Types: TypeRule{In: F32Only}, Args: 1, Kernel: KernelPad, Shape: padShape, Cost: perElement,
			Attrs: padAttrs, NoGrad: "pad's gradient (the output gradient summed back onto the elements each border copies) is not a rule yet"},
		OpFloor: {Name: "floor", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: floorX(Arg(0)), F64: unary64(math.Floor), Grad: ZeroGrad},
		OpCeil:  {Name: "ceil", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: ceilX(Arg(0)), F64: unary64(math.Ceil), Grad: ZeroGrad},
		OpRound: {Name: "round", Types: TypeRule{In: FloatTypes}, Args: 1, Expr: roundX(Arg(0)), F64: unary64(math.RoundToEven), Grad: ZeroGrad},
		OpBroadcast: {Name: "broadcast", Types: TypeRule{In: AnyDType}, Args: 1, View: true, Shaped: true, Shape: broadcastShape, Cost: perElement,
			Grad: broadcastGrad},
		OpReshape: {Name: "reshape", Types: TypeRule{In: AnyDType}, Args: 1, View: true, Shaped: true, Shape: reshapeShape, Cost: perElement,
			Grad: func(d Diff, k int) (Val, bool) { return reshape(d, d.Grad(), d.Shape(d.Arg(0))), true }},
		OpCast: {Name: "cast", Args: 1, Types: TypeRule{In: AnyDType, Out: OutNode},
			NoGrad: "cast has no gradient rule yet"},
		OpWhere: {Name: "where", Args: 3, Types: TypeRule{In: AnyDType, Cond: true},
			NoGrad: "where has no gradient rule yet (mask is float32's)"},
		OpAnd:        {Name: "and", Args: 2, Commutative: true, Types: TypeRule{In: SetOf(Bool)}, Int: intAnd, NoGrad: "a logical op"},
		OpOr:         {Name: "or", Args: 2, Commutative: true, Types: TypeRule{In: SetOf(Bool)}, Int: intOr, NoGrad: "a logical op"},
		OpXor:        {Name: "xor", Args: 2, Commutative: true, Types: TypeRule{In: SetOf(Bool)}, Int: intXor, NoGrad: "a logical op"},
		OpNot:        {Name: "not", Args: 1, Types: TypeRule{In: SetOf(Bool)}, Int: intNot, NoGrad: "a logical op"},
		OpBitAnd:     {Name: "bit_and", Args: 2, Commutative: true, Types: TypeRule{In: IntTypes}, Int: intAnd, NoGrad: "an integer op"},
		OpBitOr:      {Name: "bit_or", Args: 2, Commutative: true, Types: TypeRule{In: IntTypes}, Int: intOr, NoGrad: "an integer op"},
		OpBitXor:     {Name: "bit_xor", Args: 2, Commutative: true, Types: TypeRule{In: IntTypes}, Int: intXor, NoGrad: "an integer op"},
		OpBitNot:     {Name: "bit_not", Args: 1, Types: TypeRule{In: IntTypes}, Int: intBitNot, NoGrad: "an integer op"},
		OpShiftLeft:  {Name: "shift_left", Args: 2, Types: TypeRule{In: Unsigned}, Int: intShl, NoGrad: "an integer op"},
		OpShiftRight: {Name: "shift_right", Args: 2, Types: TypeRule{In: Unsigned}, Int: intShr, NoGrad: "an integer op"},
		OpMod:        {Name: "mod", Args: 2, Types: TypeRule{In: IntTypes}, Int: intMod, NoGrad: "an integer op"},
		OpGather: {Name: "gather", Args: 2, Types: TypeRule{In: AnyDType, Index: true}, Shape: gatherShape, Cost: perElement,
			Attrs: gatherAttrs, Typed: true, Grad: gatherGrad},
		OpGatherElements: {Name: "gather_elements", Args: 2, Types: TypeRule{In: AnyDType, Index: true}, Shape: gatherElementsShape,
			Cost: perElement, Attrs: axisAttrs, Typed: true, Grad: gatherElementsGrad},
		OpScatterND: {Name: "scatter_nd", Args: 3, Types: TypeRule{In: AnyDType, Index: true}, Shape: scatterNDShape, Cost: func(a []Shape, out Shape) int64 { return scatterNDCost(a, out, nil) }, CostAttrs: scatterNDCost,
			Attrs: scatterNDAttrs, Typed: true, NoGrad: "scatter_nd's gradient (a gather of the output gradient) is not a rule yet"},
		OpScatterElements: {Name: "scatter_elements", Args: 3, Types: TypeRule{In: AnyDType, Index: true}, Shape: scatterElementsShape,
			Cost: func(a []Shape, out Shape) int64 { return scatterElementsCost(a, out, nil) }, CostAttrs: scatterElementsCost, Attrs: scatterElementsAttrs, Typed: true, NoGrad: "scatter_elements' gradient (a gather of the output gradient) is not a rule yet"},
		OpAttention: {Name: "attention", Types: TypeRule{In: F32Only}, Args: 4, Kernel: KernelAttention, Shape: attentionShape,
			Cost: attentionCost, Attrs: attentionAttrs, NoGrad: "attention's gradient is not a rule yet"},
		OpPow: {Name: "pow", Types: TypeRule{In: FloatTypes | Float64Types}, Args: 2, Expr: Call(powFn, Arg(0), Arg(1)), F64: math.Pow,
			NoGrad: "pow's gradient is not a rule yet"},
		OpSin:   unaryRow("sin", sinFn, reduced(math.Sin)),
		OpCos:   unaryRow("cos", cosFn, reduced(math.Cos)),
		OpTan:   unaryRow("tan", tanFn, reduced(math.Tan)),
		OpAsin:  unaryRow("asin", asinFn, math.Asin),
		OpAcos:  unaryRow("acos", acosFn, math.Acos),
		OpAtan:  unaryRow("atan", atanFn, math.Atan),
		OpSinh:  unaryRow("sinh", sinhFn, math.Sinh),
		OpCosh:  unaryRow("cosh", coshFn, math.Cosh),
		OpAsinh: unaryRow("asinh", asinhFn, math.Asinh),
		OpAcosh: unaryRow("acosh", acoshFn, math.Acosh),
		OpAtanh: unaryRow("atanh", atanhFn, math.Atanh),
	}
	for op, r := range rows {
		if r.Wire == "" {
			r.Wire = r.Name
		}
		if r.Expr != nil {
			r.Elementwise = true
			if r.Shape == nil {
				r.Shape = elementwiseShape
			}
			if r.Cost == nil {
				r.Cost = weighted(r.Expr)
			}
		}
		if r.Shape == nil && r.Args > 0 && !r.Types.In.Has(F32) || op == OpCast || op == OpWhere {
			r.Typed, r.Elementwise, r.Shape, r.Cost = true, true, elementwiseShape, perElement
		}
		opTable[op] = r
		if f := r.ScalarForm; f != 0 {
			opTable[f] = OpInfo{Name: r.Name + "_scalar", Wire: r.Wire, Args: 1, Scalar: true,
				Elementwise: true, ScalarOf: op, Shape: elementwiseShape, Cost: r.Cost, Expr: r.Expr, F64: r.F64,
				Grad: r.Grad, NoGrad: r.NoGrad,
				// Node.Scalar is a float32: a scalar form takes the float dtypes.
				Types: TypeRule{In: r.Types.In & FloatTypes, Out: r.Types.Out}} // its Arg(1) is a constant: Apply picks scalar forms
		}
	}
	opTable[OpInvalid] = OpInfo{Name: "invalid"}
	for op := OpInput; op < numOps; op++ {
		checkAttrSpecs(op, opTable[op].Attrs)
	}
	for op := OpInput; op < numOps; op++ {
		if opTable[op].ScalarOf == 0 {
			byWire[opTable[op].Wire] = op
		}
	}
}

// byWire maps each wire name to its op (the tensor form, for ops that also
// have a scalar form).
var byWire = map[string]Op{}

// WireOp returns the op named wire in protocol v1 and, for a binary op
// that has one, its {a, scalar} form.
func WireOp(wire string) (op, scalarForm Op, ok bool) {
	op, ok = byWire[wire]
	if !ok {
		return 0, 0, false
	}
	return op, opTable[op].ScalarForm, true
}

func add64(a, b float64) float64 { return a + b }

// reduced is f below TrigMax and NaN from it on: sin, cos and tan do not
// reduce larger arguments (ir/xtrig.go), by definition.
func reduced(f func(float64) float64) func(float64) float64 {
	return func(a float64) float64 {
		if math.Abs(a) >= TrigMax {
			return math.NaN()
		}
		return f(a)
	}
}

// unaryRow is the row of an elementwise op of one float operand computed
// by fn (ir/xtrig.go), whose exact meaning is f64.
func unaryRow(name string, fn *Func, f64 func(float64) float64) OpInfo {
	return OpInfo{Name: name, Types: TypeRule{In: FloatTypes}, Args: 1, Expr: Call(fn, Arg(0)), F64: unary64(f64),
		NoGrad: name + "'s gradient is not a rule yet"}
}

// unary64 is f as an F64 of one operand.
func unary64(f func(float64) float64) func(a, b float64) float64 {
	return func(a, _ float64) float64 { return f(a) }
}

// if64 returns c ? t : f.
func if64(c bool, t, f float64) float64 {
	if c {
		return t
	}
	return f
}

// passGrad passes the upstream gradient through unchanged (add).
func passGrad(d Diff, k int) (Val, bool) { return d.Grad(), true }

// reshape returns v as shape s: v itself when it has that shape already.
func reshape(d Diff, v Val, s Shape) Val {
	if d.Shape(v).Equal(s) {
		return v
	}
	return d.Apply(OpReshape, s, v)
}

// broadcastGrad sums the gradient over the broadcast dimensions (where
// the argument, right-aligned, has size 1 or none): a keepdims sum (OpSum
// to the result's shape with 1 there, the reference's pairwise tree per
// output), then a reshape to the argument's shape.
func broadcastGrad(d Diff, k int) (Val, bool) { return sumTo(d, d.Grad(), d.Shape(d.Arg(0))), true }

// sumTo returns g, of a shape that s broadcasts to, summed back to s: a
// keepdims sum over the dimensions where s, right-aligned, has size 1 or
// none, then a reshape to s (g itself when its shape is s).
func sumTo(d Diff, g Val, s Shape) Val {
	out := d.Shape(g)
	off := len(out) - len(s)
	t := append(Shape{}, out...)
	for i := range t {
		if i < off || s[i-off] == 1 {
			t[i] = 1
		}
	}
	if !t.Equal(out) {
		g = d.Apply(OpSum, t, g)
	}
	return reshape(d, g, s)
}

// broadcastBack returns v, of a reduction's target shape, broadcast back
// to the argument's shape s: a target [] or one whose kept axes are
// trailing (leading axes reduced) is reshaped to the kept dimensions and
// repeated over the leading ones; other targets need numpy's broadcast.
func broadcastBack(d Diff, v Val, s Shape) Val {
	t := d.Shape(v)
	if t.Equal(s) {
		return v
	}
	lead := 0
	for lead < len(t) && t[lead] == 1 {
		lead++
	}
	if IsSuffix(t[lead:], s) {
		return d.Apply(OpBroadcast, s, reshape(d, v, t[lead:]))
	}
	return d.Apply(OpBroadcast, s, v)
}

// maxGrad is max's rule (PyTorch's amax): the gradient goes to the
// elements equal to the max, split evenly among ties. An element x equals
// the max m exactly when m - x > 0 fails (m ≥ x, and m - x is 0 only for
// x = m; NaN, for infinite ties, fails too).
func maxGrad(d Diff, k int) (Val, bool) {
	s := d.Shape(d.Arg(0))
	m := broadcastBack(d, d.Out(), s)
	notBelow := d.Apply(OpPositive, nil, d.Apply(OpSub, nil, m, d.Arg(0)))
	mask := d.Apply(OpAdd, nil, d.Apply(OpNeg, nil, notBelow), C(1))
	ties := d.Apply(OpSum, d.Shape(d.Out()), mask)
	share := d.Apply(OpDiv, nil, d.Grad(), ties)
	return d.Apply(OpMul, nil, broadcastBack(d, share, s), mask), true
}

// reduceShape is the shape rule of reductions: the target is [] (every
// axis) or has the argument's rank with each dimension the argument's or 1.
func reduceShape(node int, op Op, args []Shape, target Shape, _ []int) (Shape, *Error) {
	if len(target) == 0 {
		return target, nil
	}
	ok := len(target) == len(args[0])
	for d := 0; ok && d < len(target); d++ {
		ok = target[d] == args[0][d] || target[d] == 1
	}
	if !ok {
		return nil, Errorf(CodeInvalidGraph, node, "shape", "%s of %v to %v: the target must be [] or the argument's shape with 1 at each reduced axis", op.Info().Wire, args[0], target)
	}
	return target, nil
}

func perElement(_ []Shape, out Shape) int64 { return int64(out.Len()) }

// weighted is the cost rule of an elementwise op: per element, the
// operations of its expression (one for the seed's ops, which are one
// operation or one comparison and select).
func weighted(x *X) func([]Shape, Shape) int64 {
	w := int64(0)
	for _, n := range Inline(x).Nodes() { // what a target that inlines every call runs
		if n.Op != XArg && n.Op != XConst && n.Op != XUConst && n.Op != XSelect {
			w++
		}
	}
	return func(_ []Shape, out Shape) int64 { return SatMul(w, int64(out.Len())) }
}

// pickGrad is maximum's rule (minimum's with smaller): the gradient goes
// to a where a is the larger (smaller) one, else to b, so ties go to b.
func pickGrad(smaller bool) GradRule {
	return func(d Diff, k int) (Val, bool) {
		diff := d.Apply(OpSub, nil, d.Arg(0), d.Arg(1))
		if smaller {
			diff = d.Apply(OpNeg, nil, diff)
		}
		ga := d.Apply(OpMul, nil, d.Grad(), d.Apply(OpPositive, nil, diff))
		if k == 0 {
			return ga, true
		}
		return d.Apply(OpSub, nil, d.Grad(), ga), true
	}
}

func attribute(node int, op Op, _ []Shape, target Shape, _ []int) (Shape, *Error) { return target, nil }

func elementwiseShape(node int, op Op, args []Shape, _ Shape, _ []int) (Shape, *Error) {
	for _, a := range args[1:] {
		if !a.Equal(args[0]) {
			return nil, Errorf(CodeInvalidGraph, node, "b", "%s needs equal shapes, got %v and %v", op.Info().Wire, args[0], a)
		}
	}
	return args[0], nil
}

// transposeShape: the last two axes swapped, for rank 2 to 4 (the ranks a
// batched matmul has).
func transposeShape(node int, op Op, args []Shape, _ Shape, _ []int) (Shape, *Error) {
	a := args[0]
	if len(a) < 2 || len(a) > MaxMatmulRank {
		return nil, Errorf(CodeInvalidGraph, node, "a", "transpose needs a tensor of rank 2 to %d, got shape %v", MaxMatmulRank, a)
	}
	r := len(a)
	return append(a[:r-2:r-2], a[r-1], a[r-2]), nil
}

// MaxMatmulRank is the largest rank of a matmul's operands (and of a
// transpose): two batch dimensions, [B,H,m,k] as attention has.
const MaxMatmulRank = 4

// matmulShape: [..., m,k] × [..., k,n] is [..., m,n], each operand of rank
// 2 to MaxMatmulRank, the batch dimensions (all but the last two)
// broadcast by numpy's rule, as numpy's matmul and ONNX MatMul do.
func matmulShape(node int, op Op, args []Shape, _ Shape, _ []int) (Shape, *Error) {
	a, b := args[0], args[1]
	if len(a) < 2 || len(b) < 2 || len(a) > MaxMatmulRank || len(b) > MaxMatmulRank {
		return nil, Errorf(CodeInvalidGraph, node, "a", "matmul needs tensors of rank 2 to %d, got %v and %v", MaxMatmulRank, a, b)
	}
	ra, rb := len(a), len(b)
	if a[ra-1] != b[rb-2] {
		return nil, Errorf(CodeInvalidGraph, node, "b", "matmul inner dimensions differ: %v × %v", a, b)
	}
	batch, ok := BroadcastShape(a[:ra-2], b[:rb-2])
	if !ok {
		return nil, Errorf(CodeInvalidGraph, node, "b", "matmul batch dimensions of %v and %v do not broadcast", a, b)
	}
	return append(batch, a[ra-2], b[rb-1]), nil
}

func lifeShape(node int, op Op, args []Shape, _ Shape, _ []int) (Shape, *Error) {
	if len(args[0]) != 2 {
		return nil, Errorf(CodeInvalidGraph, node, "a", "life needs a 2-D grid, got shape %v", args[0])
	}
	return args[0], nil
}

func broadcastShape(node int, op Op, args []Shape, target Shape, _ []int) (Shape, *Error) {
	if !BroadcastsTo(args[0], target) {
		return nil, Errorf(CodeInvalidGraph, node, "shape", "broadcast of %v to %v: right-aligned with the target, each of the argument's dimensions must equal the target's or be 1 (numpy's broadcast_to)", args[0], target)
	}
	return target, nil
}

func reshapeShape(node int, op Op, args []Shape, target Shape, _ []int) (Shape, *Error) {
	if args[0].Len() != target.Len() {
		return nil, Errorf(CodeInvalidGraph, node, "shape", "reshape of %v (%d elements) to %v (%d elements)", args[0], args[0].Len(), target, target.Len())
	}
	return target, nil
}

// Info returns the op table entry of op.
func (op Op) Info() OpInfo {
	if op >= numOps {
		return opTable[OpInvalid]
	}
	return opTable[op]
}

// String returns the op's text-form name.
func (op Op) String() string {
	if op >= numOps || op == OpInvalid {
		return fmt.Sprintf("op(%d)", uint8(op))
	}
	return opTable[op].Name
}

// IsElementwise reports whether op is elementwise.
func (op Op) IsElementwise() bool { return op.Info().Elementwise }

// IsReduction reports whether op is a reduction (its row has a Combine).
func (op Op) IsReduction() bool { return op.Info().Combine != 0 }

// IsView reports whether op only moves values (transpose, broadcast,
// reshape).
func (op Op) IsView() bool { return op.Info().View }

// Ops returns every valid op, in table order.
func Ops() []Op {
	ops := make([]Op, 0, numOps-1)
	for op := OpInput; op < numOps; op++ {
		ops = append(ops, op)
	}
	return ops
}
