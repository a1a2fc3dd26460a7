package ir

import (
	"math"
	"strconv"
)

// Limits is host policy: how large a graph the host accepts. The caller sets
// it; a graph never can. Zero fields mean "use the default".
type Limits struct {
	MaxNodes        int   // nodes per graph
	MaxElements     int64 // elements per tensor
	MaxStorageBytes int64 // summed logical storage of all nodes, each element its dtype's Size (4 bytes for float32)
	MaxOps          int64 // estimated operations (see EstimateOps)
	// MaxKernelOps bounds the code of one kernel: the operations of one
	// element of its body with every call inlined (see KernelOps), which
	// is what GPU drivers compile. 511 fused tanh once made 13 MB of WGSL
	// that lavapipe had not compiled after ten minutes.
	MaxKernelOps int64
	MaxOutputs   int // named outputs
	// MaxOutputBytes bounds the summed outputs, each element its dtype's Size, each
	// output counted (two outputs of one node count twice): what a host
	// hands back. Zero means MaxStorageBytes.
	MaxOutputBytes int64
	// MaxGraphBytes bounds the protocol JSON Decode reads. Zero means
	// GraphBytesPerStorageByte × MaxStorageBytes (256 MiB at the default
	// 32 MiB), so a host that raises its storage limit can still be sent
	// graphs that use it.
	MaxGraphBytes int64
	// MaxAttrValues bounds the integer attribute values of one node (see
	// AttrSpec): Decode stops reading a list at it, before allocating more.
	MaxAttrValues int
	// NonFinite allows ±Inf and NaN in input data, full values, scalars
	// and outputs, with cpuref's IEEE semantics (a softmax's -Inf entries
	// give exact zeros; a NaN output is returned, as the quiet NaN
	// 0x7fc00000). It is host policy, not an IR invariant: false, the
	// zero value, is the seed's rule for guest graphs (protocol v1 JSON,
	// serve): every value in and out is a finite float32, and a non-finite
	// output fails the run with non_finite_output. ONNX models, whose
	// masks hold -Inf, are imported and run with it set.
	NonFinite bool
}

// GraphBytesPerStorageByte scales the default MaxGraphBytes with
// MaxStorageBytes. A float32 of 4 storage bytes takes at most 15 bytes of
// JSON in its shortest form ("-1.1754944e-38,"), and no more than the
// storage limit can be input data, so twice that leaves room for spacing
// and longer spellings.
const GraphBytesPerStorageByte = 8

// DefaultLimits returns the seed's defaults: 512 nodes, 1,048,576 elements
// per tensor, 32 MiB of storage, 100 million operations, 16 outputs,
// 16,384 operations of code per kernel (46 tanh, 61 div or 260 exp: about
// a minute of lavapipe's compiler on a busy 2-core machine) and 4,096
// attribute values per node.
// MaxOutputBytes and MaxGraphBytes are zero: they follow MaxStorageBytes
// (see WithDefaults).
func DefaultLimits() Limits {
	return Limits{
		MaxNodes:        512,
		MaxElements:     1 << 20,
		MaxStorageBytes: 32 << 20,
		MaxOps:          100_000_000,
		MaxOutputs:      16,
		MaxKernelOps:    16384,
		MaxAttrValues:   4096,
	}
}

// WithDefaults returns l with every zero (or negative) field filled in:
// the limits a host enforces.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxNodes <= 0 {
		l.MaxNodes = d.MaxNodes
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxStorageBytes <= 0 {
		l.MaxStorageBytes = d.MaxStorageBytes
	}
	if l.MaxOps <= 0 {
		l.MaxOps = d.MaxOps
	}
	if l.MaxOutputs <= 0 {
		l.MaxOutputs = d.MaxOutputs
	}
	if l.MaxKernelOps <= 0 {
		l.MaxKernelOps = d.MaxKernelOps
	}
	if l.MaxAttrValues <= 0 {
		l.MaxAttrValues = d.MaxAttrValues
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = l.MaxStorageBytes
	}
	if l.MaxGraphBytes <= 0 {
		l.MaxGraphBytes = SatMul(GraphBytesPerStorageByte, l.MaxStorageBytes)
	}
	return l
}

// MaxRank is the largest tensor rank the IR accepts.
const MaxRank = 8

// SatAdd returns a+b for non-negative a and b, or math.MaxInt64 when that
// overflows. Totals checked against limits saturate instead of wrapping to
// a small number that passes.
func SatAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SatMul returns a·b for non-negative a and b, or math.MaxInt64 when that
// overflows.
func SatMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// over reports whether a saturating total exceeds limit. A saturated total
// is over even a limit of MaxInt64: the true value did not fit.
func over(total, limit int64) bool { return total > limit || total == math.MaxInt64 }

// total formats a saturating total for an error message.
func total(v int64) string {
	if v == math.MaxInt64 {
		return "more than 2^63-1"
	}
	return strconv.FormatInt(v, 10)
}

// KernelOps returns the size of kernel k's code: per element, the
// operations of each op of its body with every call inlined (an op's Cost
// for one element), plus one for each other instruction. It does not
// depend on the kernel's shape.
func KernelOps(k *Kernel) int64 {
	n := int64(0)
	for _, in := range k.Body {
		if in.Kind == InstrOp && in.Op.Info().Elementwise {
			n = SatAdd(n, in.Op.Info().Cost(nil, Shape{}))
			continue
		}
		n = SatAdd(n, 1)
	}
	return n
}

// CheckKernels refuses a program with a kernel whose code (KernelOps) is
// over l.MaxKernelOps (the default where it is zero), with
// CodeLimitExceeded at the kernel's last node.
func CheckKernels(p *Program, l Limits) error {
	l = l.withDefaults()
	for i := range p.Kernels {
		k := &p.Kernels[i]
		if ops := KernelOps(k); over(ops, l.MaxKernelOps) {
			node := -1
			if len(k.Nodes) > 0 {
				node = int(k.Nodes[len(k.Nodes)-1])
			}
			return LimitErrorf("MaxKernelOps", node, "op", "kernel %s has %s operations of code per element, over the limit of %d (or split the chain)",
				k.Name, total(ops), l.MaxKernelOps)
		}
	}
	return nil
}
