package backend

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/gpucc/gpucc/ir"
)

// Typed graphs (issue 32): a graph holding a value of a dtype other than
// float32, or a typed op (cast, where, the logical and bitwise ops), does
// not go through Seal and Device.Compile, whose programs are float32. A
// Device that runs such graphs implements TypedDevice as well; the runtime
// hands it the validated graph itself (package gpucc's compileTyped), and
// a Device without it keeps refusing typed graphs by name (unsupported).
//
// The contract, in one place for every backend:
//
//   - Compile once: CompileTyped(ctx, &TypedProgram{Graph: g}, st) turns
//     the graph into code and compiles it through the Device's caches (the
//     artifact cache of Options.Cache, which --cache-dir controls), keyed
//     by the generated source, so that a second Compile of the same graph
//     structure, in this process or another, hits the cache. Input data
//     are not part of the program: they come with each run.
//   - Run many times: RunTyped(ctx, call) takes each input node's value as
//     host bytes at its dtype's width (TypedBytes: little-endian, float16
//     and bfloat16 as their 16 bits, bool as one byte 0 or 1, int64 as 8
//     bytes) and fills each output's bytes the same way, which the runtime
//     decodes with TypedValues. The values must be cpuref.EvalTyped's bit
//     for bit.
//   - A fault is a run with no right answer (an integer division or modulo
//     by zero, a float-to-integer cast of NaN, ±Inf or an out-of-range
//     value, a gather index outside its axis). The kernels set a flag, the
//     backend checks it after the run and returns a *TypedFault naming the
//     first faulting node (in graph order, as the reference stops at it);
//     no output is then defined. The runtime turns it into the reference's
//     own error for that run (code and message: integer_fault,
//     invalid_input naming the op and the index), so that a faulting run
//     reads the same on every backend.
//   - An op or dtype the backend's code does not hold yet makes
//     CompileTyped fail with an ir error of code unsupported naming the
//     node (the runtime passes it on as it is).
//
// Neither method validates: the graph is valid (ir.Validate under the
// Runtime's limits) and every input value is within its dtype (checked by
// the runtime). A TypedDevice and its executables are used by one
// goroutine at a time, as a Device is.
type TypedDevice interface {
	CompileTyped(ctx context.Context, p *TypedProgram, st *Stats) (TypedExecutable, error)
}

// TypedDTyper is implemented by a TypedDevice whose typed code holds
// dtypes beyond ir.DeviceDTypes (the C backends, native and wasm:
// ir.CDTypes, float64 too). The runtime refuses a graph with a value of
// any other dtype by name (unsupported) before CompileTyped; a device
// without it holds ir.DeviceDTypes.
type TypedDTyper interface {
	TypedDTypes() ir.DTypeSet
}

// TypedProgram is a typed graph handed to TypedDevice.CompileTyped.
type TypedProgram struct {
	// Graph is validated and not modified by the backend (it may keep it).
	// Its input nodes' data are not the run's: each run gives them.
	Graph *ir.Graph
}

// TypedExecutable is a compiled typed graph.
type TypedExecutable interface {
	// RunTyped runs the graph once on call.Inputs and fills call.Outputs.
	// It returns a *TypedFault for a run with no right answer, ctx.Err()
	// once ctx is done, a *Error otherwise.
	RunTyped(ctx context.Context, call *TypedCall) error
	// Release frees what CompileTyped made; the Device's caches may keep it.
	Release()
}

// KernelCounter is a TypedExecutable that says how many kernels one run
// dispatches (webgpu: one per typed node, and its float32 islands'). One
// without it runs its graph as one function (native's and wasm's C).
type KernelCounter interface {
	Kernels() int
}

// TypedCall is one run of a TypedExecutable.
type TypedCall struct {
	// Inputs holds, by graph node, each input node's value (TypedBytes:
	// Len·Size bytes of its dtype); nil for every other node.
	Inputs [][]byte
	// Same, when not nil, says by graph node that Inputs[i] holds the
	// bytes this executable's previous RunTyped got for node i (an input
	// the run does not give: the graph's embedded data, a model's
	// weights). A backend whose storage for node i still holds them (no
	// other executable wrote it since) may skip copying them again; any
	// other must copy. A hint only: the bytes are always there.
	Same []bool
	// Bufs, when not nil, holds by graph node a buffer of this Device
	// (Alloc's, or one a run kept) holding an input node's value in place
	// of Inputs[i] (then nil): a DeviceTensor input, bound where it is. Its
	// length is the value's 32-bit words: TypedBytes' layout padded to
	// whole words, at least one (a float32 value's length). The runtime
	// gives it only to a Device whose Info.TypedBuffers says so; the run
	// does not write it.
	Bufs []Buffer
	// Donate, when not nil, says by graph node that Bufs[i] is given to
	// the run (the runtime's RunOptions.Donate): the run may write it
	// (a scatter whose data it is, computed in place, where only that
	// scatter reads the input) and may hand it over as a kept output's
	// buffer, emptying Bufs[i] (its Release then frees nothing). The
	// runtime releases Bufs[i] after the run either way, so its old
	// handle is never read again.
	Donate []bool
	// Keep, when not nil, says by graph output to leave an output on the
	// device (Info.TypedBuffers only): RunTyped sets Kept[k] to a new
	// Buffer of the output's words (Bufs' layout), which the caller then owns, and leaves
	// Outputs[k] nil; or, where it cannot hand over a buffer of its own (an
	// input returned as it is, a node kept under two names), it fills
	// Outputs[k] instead and the runtime copies it to the device.
	Keep []bool
	Kept []Buffer
	// Outputs is filled by RunTyped: by graph output (Graph.Outputs), the
	// output node's value, Len·Size bytes of its dtype. The runtime gives
	// a nil slice; the backend allocates it.
	Outputs [][]byte
	Stats   *Stats // never nil
	// KernelTimes asks the run to submit each kernel alone and wait for it
	// (the runtime's RunOptions.KernelTimes), appending each one's time
	// to Times: a float32 island's kernels under their names prefixed
	// with "island N/", a typed node's under "node N", its op the kind.
	// A backend that cannot leaves Times nil (TypedKernelTimer says which
	// can).
	KernelTimes bool
	Times       []KernelTime
}

// TypedKernelTimer is a TypedExecutable whose runs can time each kernel
// alone (TypedCall.KernelTimes).
type TypedKernelTimer interface {
	TimesKernels() bool
}

// TypedFault is a typed run with no right answer, found by a kernel's
// fault flag: Code is ir.CodeIntegerFault or ir.CodeInvalidInput (a
// gather index outside its axis), Node the first node that faulted.
type TypedFault struct {
	Code ir.Code
	Node int
}

func (f *TypedFault) Error() string { return fmt.Sprintf("%s at node %d", f.Code, f.Node) }

// ErrorCode returns the fault's code.
func (f *TypedFault) ErrorCode() ir.Code { return f.Code }

// Is reports whether target is f's code (errors.Is(err, ir.ErrIntegerFault)).
func (f *TypedFault) Is(target error) bool {
	c, ok := target.(ir.Code)
	return ok && c == f.Code
}

// TypedBytes encodes a value of dtype t (floats in f, already rounded to
// t; integers and bool in i, within t's range) as a backend holds it: n
// elements of t.Size() bytes each, little-endian.
func TypedBytes(t ir.DType, f []float32, i []int64) []byte {
	n := len(i)
	if t.IsFloat() {
		n = len(f)
	}
	b := make([]byte, n*t.Size())
	if t == ir.F32 && littleEndian && n > 0 { // the bytes as they are
		copy(b, unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*n))
		return b
	}
	for k := range n {
		switch t {
		case ir.F32:
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(f[k]))
		case ir.F16:
			binary.LittleEndian.PutUint16(b[2*k:], ir.F16Bits(f[k]))
		case ir.BF16:
			binary.LittleEndian.PutUint16(b[2*k:], ir.BF16Bits(f[k]))
		default:
			putInt(b[k*t.Size():], t.Size(), i[k])
		}
	}
	return b
}

// TypedValues decodes n elements of dtype t from b (TypedBytes' layout):
// floats (float32 values, the narrow types widened exactly) or integers,
// sign-extended for a signed dtype.
func TypedValues(t ir.DType, b []byte) (f []float32, i []int64) {
	n := len(b) / t.Size()
	if t.IsFloat() {
		f = make([]float32, n)
	} else {
		i = make([]int64, n)
	}
	if t == ir.F32 && littleEndian && n > 0 { // the bytes as they are
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*n), b)
		return f, nil
	}
	for k := range n {
		switch t {
		case ir.F32:
			f[k] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:]))
		case ir.F16:
			f[k] = ir.F16Float(binary.LittleEndian.Uint16(b[2*k:]))
		case ir.BF16:
			f[k] = ir.BF16Float(binary.LittleEndian.Uint16(b[2*k:]))
		default:
			i[k] = getInt(b[k*t.Size():], t)
		}
	}
	return f, i
}

// littleEndian says the host stores a float32 as TypedBytes does, so that
// float32 values convert by a copy of their bytes.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// putInt writes v's low size bytes, little-endian.
func putInt(b []byte, size int, v int64) {
	for j := range size {
		b[j] = byte(v >> (8 * j))
	}
}

// getInt reads one element of integer dtype t, sign-extending a signed one.
func getInt(b []byte, t ir.DType) int64 {
	var u uint64
	for j := range t.Size() {
		u |= uint64(b[j]) << (8 * j)
	}
	if s := 64 - t.Bits(); t.Signed() && s > 0 {
		return int64(u<<s) >> s
	}
	return int64(u)
}
