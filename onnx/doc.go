// Package onnx imports ONNX models as gpucc graphs.
//
// Load reads a serialized ModelProto with google.golang.org/protobuf's
// protowire against onnx.proto's field numbers (the schema is not copied
// here; wire.go reads the fields it needs). Decoding is bounded like
// ir.Decode: the model's bytes by Limits.MaxGraphBytes, its nodes and
// initializers by MaxNodes, every tensor by MaxElements and all tensors
// together by MaxStorageBytes (a constant the import makes at its
// carrier's bytes), each checked before anything of that size
// is allocated; a model over them is refused with limit_exceeded.
// External data files are refused: gpucc reads the one file. What
// decoding allocates besides the model's own bytes is charged before it
// is allocated, at most DecodeBytesPerByte bytes a byte of model plus
// DecodeSlack (a budget of structure sizes; weights stay sub-slices of
// the model), so Load allocates at most DecodeBytesPerByte+1 (6) bytes a
// byte of model plus about 3 MiB, within 8× for every repeated field
// (gpucc serve charges that to --max-memory before it imports a body);
// and the import is linear in the model (TestDecodeMemory,
// TestDecodeMemoryFile, TestImportLinear, TestBatchNormScanLinear).
// Every shape and size the importer computes from the model's numbers
// (Expand, Tile, Range, ConstantOfShape, Slice, Split, DepthToSpace,
// Reshape, Concat, the gathers' index tables, folding) is checked
// arithmetic (dims.go: dimProduct and dimSum, which never wrap)
// bounded by the limits before anything of that size exists, and after
// every node each value holds at most MaxElements elements, no dimension
// over it: a shape huge only in an intermediate (an Expand to [2^31-1,
// 2^31-1] that a Slice would cut) is refused with limit_exceeded at the
// node that makes it, not computed lazily (testdata/crafted). The graph
// being built holds at most MaxNodes nodes (ir.Builder.SetMaxNodes): a
// model that expands past it is refused at the node that would pass it,
// before the rest is built. A tensor's data is allocated for the bytes
// it holds, so one whose dimensions claim more is refused for them, and
// graph inputs count at their carriers' bytes (4 an element for a float
// dtype, 8 for an integer, bool or float64 one), so the placeholders an
// import makes for its inputs, before any data is given them, take at
// most MaxStorageBytes (TestHostileModels, TestHostileInputs). After the builder fails
// no rule's step matters: the import fails with the builder's error
// whatever the rule does next, panic included (importer.rule,
// TestBuilderStops); a rule's panic with the builder intact is a bug,
// reported as internal, never a crash.
// Opsets past MaxOpset are refused. LoadContext stops with the timeout
// code when its context is done.
//
// LayerNormalization is computed as ONNX's reference writes it, so a row
// whose squared deviations overflow float32 (|x - mean| past about
// 1.8e19) has an infinite variance and outputs zeros there, as ONNX
// Runtime gives; ir.Tensor.LayerNorm, the Go composite, scales first and
// does not overflow.
//
// A graph input of float64, int16, uint16 or uint64 keeps its dtype: ir's
// dtypes beyond protocol v1's, computed by the cpu backend (int16, uint16
// and uint64 by native, wasm and webgpu too) and refused by name by the
// other backends. float64 is never narrowed: the elementwise rows that name
// it, Cast, Where, Gather, CumSum (cumSumOp), Einsum and the reductions
// whose every step is a float64 row compute it in float64; any other op
// refuses it by name. Einsum (einsum.go) multiplies its operands over the
// union of their letters and sums the letters the output does not name,
// in the operands' dtype.
//
// gpucc computes in float32 and its shapes are static. So, at import:
//   - every integer and bool value (shapes, indices, masks) is a constant,
//     and the ops on it fold: Shape, Gather, Concat, Cast, Range,
//     ConstantOfShape, Unsqueeze, Squeeze, Slice, comparisons, Where, the
//     bitwise ops and BitShift (bitwise.go, by the rows the run time
//     computes them by), …;
//   - a dynamic dimension of a graph input is bound by Options.InputShapes;
//     an integer or bool graph input can be fixed by Options.Constants;
//   - float32 ops map onto table ops and the Builder's composites (Gemm
//     and MatMul onto matmul, Softmax, LogSoftmax, LayerNormalization and
//     the reductions onto the composites), each written as the float32
//     operations of ONNX's reference, in its order (ops.go);
//   - Gather, GatherElements, Slice, Split and Concat of run-time tensors
//     (their indices constants) and the losses (NegativeLogLikelihoodLoss,
//     SoftmaxCrossEntropyLoss, their labels constants) select exactly: a
//     1/0 mask of equal(position, index) and a sum of mask(M, x), which
//     passes the selected element's bits (losses.go). It costs the axis's
//     length per output element and the mask must fit a tensor: a large
//     embedding table is refused. Transpose is the permute view. ArgMax
//     and ArgMin are reductions of positions (argops.go), their indices
//     exact float32 integers;
//   - an integer or bool graph output is returned as float32 values;
//   - If (control.go) with a condition known at import imports the chosen
//     branch inline; on a run-time condition both branches run and each
//     output is selected with where, bit for bit, when the branches'
//     outputs agree in shape and dtype (else refused by name). Branches
//     nest up to MaxGraphDepth deep; their names stay in their scope;
//   - Loop and Scan (control.go) with a trip count known at import (Loop's
//     M and condition constant or folding; Scan's axis length) unroll:
//     the body imported once per iteration, scan outputs stacked. All
//     loops of a model together unroll at most Limits.MaxNodes body nodes
//     (each body counted one at least), else limit_exceeded; a run-time
//     trip count or condition is refused by name (no device loop);
//   - Conv, ConvTranspose and the poolings map onto conv2d,
//     conv_transpose2d, maxpool2d and their composites (conv.go), and a
//     BatchNormalization in inference mode after a Conv with constant
//     parameters folds into the convolution's weight and bias (bnfold.go:
//     the fold's arithmetic and its bound; Options.KeepBatchNorm keeps
//     the composition).
//
// What gpucc cannot run exactly (an op, attribute, element type, a
// matmul of rank over 4, …) is refused with ir.CodeUnsupported
// and a message naming the op, the node and the opset; it is never
// approximated. Supported lists the ops, and testdata/node_tests.txt what
// the ONNX backend node tests give (TestNodeTests regenerates them with
// Debian's python3-onnx and runs them on every backend).
package onnx
