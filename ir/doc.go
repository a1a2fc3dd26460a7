// Package ir holds gpucc's intermediate representation: a typed tensor graph
// that passes rewrite and code generators read.
//
// A Graph is a slice of Nodes in topological order. A node's NodeID is its
// index in that slice. What each Op means, how many arguments it takes and
// whether it is elementwise is data, in the op table (see OpInfo); code asks
// the table instead of switching on ops.
//
// Invariants, enforced by Validate and relied upon by every pass and backend:
//
//   - every argument of node i refers to a node j < i, so the graph is acyclic;
//   - every node's Shape is the one InferShape computes from its arguments,
//     or, for broadcast and reshape, a target CheckTarget accepts (the
//     argument's shape broadcasts to it by numpy's rule; the same element
//     count);
//   - every dimension is at least 1, and no shape holds more than
//     Limits.MaxElements elements (zero-sized tensors are refused);
//   - every node's DType is the one its op's type rule (OpInfo.Types,
//     ResultDType) gives over its arguments' dtypes: float32, the zero
//     value, unless a node says otherwise, so graphs from before dtypes
//     keep their meaning;
//   - input data has exactly as many elements as its shape and every value
//     (input data, full values, scalars) is a finite float32, unless the
//     caller's Limits.NonFinite allows ±Inf and NaN (host policy: the
//     seed's finite rule is the default, for guest graphs); a float16 or
//     bfloat16 value is already rounded to its dtype, and an integer or
//     bool dtype's values are in Node.Ints, each within its range (see
//     DType);
//   - only inputs carry Name and Param; input names are unique, no input
//     is named DefaultInputName(i) for an unnamed input i, and every
//     Param input is named;
//   - there is at least one output, output names are unique and non-empty;
//   - the graph is within the caller's Limits (never the graph's own).
//
// Graphs arrive as protocol v1 JSON (Decode) or are built in Go (Builder).
// Both paths end in Validate, so nothing downstream sees an unchecked graph.
// The Builder's composites (GELU, Softmax, LogSoftmax, CrossEntropy, Mean,
// Variance, LayerNorm) are lowered to table ops and have no op of their
// own; each documents its exact sequence of float32 operations.
//
// A hostile document cannot make Decode allocate much more than its own
// size: Decode streams it, and allocates in all at most 4 bytes per byte
// of document plus 1 MiB (TestDecodeMemory measures floods of empty nodes,
// huge shapes, deep nesting, long chains and 512 nodes at the element
// limit). The document itself is bounded by Limits.MaxGraphBytes, which
// follows the storage limit unless set.
package ir
