package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestTyped16Backends: int16 and uint16 (ir.DeviceDTypes beyond protocol
// v1's) give cpu's bits on native, wasm and webgpu, and fail where cpu
// fails with its code and message: every op over each, casts to and from
// every device dtype, wrap-around at ±2^15 and 2^16, MIN / -1, shifts by
// the width, the range's edges through casts, a 9000-leaf sum
// (irtest.Typed16), division by zero and casts past the range
// (irtest.Typed16Faults), each under both non-finite policies.
func TestTyped16Backends(t *testing.T) {
	sameTypedOnDevices(t, append(irtest.Typed16(), irtest.Typed16Faults()...))
}

// TestTypedU64Backends: uint64 (carried in int64, of [0, 2^63-1] only)
// gives cpu's bits on native, wasm and webgpu where its results stay in
// the carrier (every row, reductions, views, gathers, casts to and from
// every device dtype: irtest.TypedU64), and where a result is 2^63 or more
// (add, sub below 0, mul, shl, bitnot, a negative cast, a sum) the kernel
// faults and the run is refused by name as cpu refuses it (unsupported,
// its node and message), division by zero and a cast past the range fail
// with integer_fault (irtest.TypedU64Faults).
func TestTypedU64Backends(t *testing.T) {
	sameTypedOnDevices(t, append(irtest.TypedU64(), irtest.TypedU64Faults()...))
}

// sameTypedOnDevices checks each case with sameTyped on every backend of
// typedBackends, under both non-finite policies.
func sameTypedOnDevices(t *testing.T, cases []irtest.Case) {
	nonFinite := func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }
	cpu, cpuNF := open(t, "cpu"), open(t, "cpu", nonFinite)
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt, rtNF := open(t, name), open(t, name, nonFinite)
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					sameTyped(t, cpu, rt, c.Graph)
					sameTyped(t, cpuNF, rtNF, c.Graph)
				})
			}
		})
	}
}
