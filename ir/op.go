package ir

import "fmt"

// Op is an IR operation. Its properties live in the op table; see Info.
type Op uint8

// The operations. Each comment states the semantics; cpuref's package doc
// defines the rounding rules exactly.
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
	OpTranspose    // 2-D transpose of arg0
	OpMatmul       // arg0 [m,k] × arg1 [k,n], k ascending
	OpSum          // whole-tensor pairwise sum of arg0, shape []
	OpLife         // one toroidal Game of Life step of the 2-D grid arg0
	OpBroadcast    // arg0 repeated to Shape: out[i] = arg0[i % len(arg0)]; arg0's shape is a trailing suffix of Shape
	OpReshape      // arg0's elements, same row-major order, as Shape (same element count)
	numOps
)

// OpInfo describes one Op.
type OpInfo struct {
	Name        string // name in the text form
	Wire        string // name in protocol v1 JSON
	Args        int    // number of tensor arguments
	Scalar      bool   // uses Node.Scalar
	Elementwise bool   // output element i depends only on element i of each argument
	Commutative bool   // arguments may be swapped without changing any bit of the result
	// View: the op only moves values (every output element is one element
	// of arg0, unchanged), so fusion folds it into its consumers' indexing.
	View bool
	// Shaped: the node's Shape is an attribute (input, full) or a target
	// (broadcast, reshape), not only a function of the arguments' shapes.
	Shaped bool
}

var opTable = [numOps]OpInfo{
	OpInvalid:   {Name: "invalid"},
	OpInput:     {Name: "input", Wire: "input", Shaped: true},
	OpFull:      {Name: "full", Wire: "full", Scalar: true, Shaped: true},
	OpAdd:       {Name: "add", Wire: "add", Args: 2, Elementwise: true, Commutative: true},
	OpSub:       {Name: "sub", Wire: "sub", Args: 2, Elementwise: true},
	OpMul:       {Name: "mul", Wire: "mul", Args: 2, Elementwise: true, Commutative: true},
	OpAddScalar: {Name: "add_scalar", Wire: "add", Args: 1, Scalar: true, Elementwise: true},
	OpSubScalar: {Name: "sub_scalar", Wire: "sub", Args: 1, Scalar: true, Elementwise: true},
	OpMulScalar: {Name: "mul_scalar", Wire: "mul", Args: 1, Scalar: true, Elementwise: true},
	OpRelu:      {Name: "relu", Wire: "relu", Args: 1, Elementwise: true},
	OpPositive:  {Name: "positive", Wire: "positive", Args: 1, Elementwise: true},
	OpTranspose: {Name: "transpose", Wire: "transpose", Args: 1, View: true},
	OpMatmul:    {Name: "matmul", Wire: "matmul", Args: 2},
	OpSum:       {Name: "sum", Wire: "sum", Args: 1},
	OpLife:      {Name: "life", Wire: "life", Args: 1},
	// broadcast and reshape are made by Decode's lowering of a broadcasting
	// add/sub/mul and by autodiff; on the wire they are gpucc extensions
	// ("op":"broadcast"/"reshape" with "a" and "shape"), so Encode can write
	// any IR graph and Decode reads it back.
	OpBroadcast: {Name: "broadcast", Wire: "broadcast", Args: 1, View: true, Shaped: true},
	OpReshape:   {Name: "reshape", Wire: "reshape", Args: 1, View: true, Shaped: true},
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
