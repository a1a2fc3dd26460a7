package gpucc

import (
	"encoding/json"
	"math"

	"github.com/gpucc/gpucc/ir"
)

// float64 values (ir.F64) are carried as their IEEE binary64 bits in
// Tensor.Ints, computed by the reference (the cpu backend) and by the C
// targets, native and wasm (ir.CDTypes: C's double, with the reference's
// bits; exp, log and pow by the reference's own algorithms,
// cpuref.Exp64, Log64, Pow64); webgpu and webgl2, whose shading languages have no
// 64-bit float, refuse them by name (ir.CheckDTypes). Every NaN of a
// float64 output reads as the quiet NaN 0x7ff8000000000000 on every
// backend (canonicalNaN64), as float32's read as 0x7fc00000: NaN payloads
// are the hardware's and never reach a non-NaN result. These are the
// host's checks and encodings of them, as tensor.go's are float32's.

// firstNonFinite64 returns the index of the first ±Inf or NaN among
// float64 bits, or -1.
func firstNonFinite64(bits []int64) int {
	for k, b := range bits {
		if x := ir.F64Value(b); math.IsNaN(x) || math.IsInf(x, 0) {
			return k
		}
	}
	return -1
}

// checkFinite64 is checkFinite of a float64 output: non_finite_output
// naming the element; nil for another dtype.
func checkFinite64(backendName, what string, dt ir.DType, bits []int64) error {
	if !dt.IsFloat64() {
		return nil
	}
	if k := firstNonFinite64(bits); k >= 0 {
		return ir.Errorf(ir.CodeNonFiniteOutput, -1, "", "%s: %s element %d is %v; outputs must be finite", backendName, what, k, ir.F64Value(bits[k]))
	}
	return nil
}

// quietNaN64 is the NaN a float64 output gives (canonicalNaN64), as
// QuietNaN is float32's.
const quietNaN64 = 0x7ff8000000000000

// canonicalNaN64 returns a float64 output's bits with every NaN the quiet
// NaN quietNaN64 (a copy when it changes any), as canonicalNaN does for
// float32; other dtypes' values unchanged.
func canonicalNaN64(dt ir.DType, bits []int64) []int64 {
	if !dt.IsFloat64() {
		return bits
	}
	var out []int64
	for k, b := range bits {
		if math.IsNaN(ir.F64Value(b)) && b != quietNaN64 {
			if out == nil {
				out = append([]int64(nil), bits...)
			}
			out[k] = quietNaN64
		}
	}
	if out == nil {
		return bits
	}
	return out
}

// jsonFloat64s is a float64 tensor's data for MarshalJSON: its values
// (Go's shortest form that reads back to the same bits), ±Inf and NaN as
// the strings "Infinity", "-Infinity" and "NaN".
type jsonFloat64s []int64

func (d jsonFloat64s) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for k, v := range d {
		if k > 0 {
			b = append(b, ',')
		}
		switch x := ir.F64Value(v); {
		case x != x:
			b = append(b, `"NaN"`...)
		case math.IsInf(x, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(x, -1):
			b = append(b, `"-Infinity"`...)
		default:
			e, err := json.Marshal(x)
			if err != nil {
				return nil, err
			}
			b = append(b, e...)
		}
	}
	return append(b, ']'), nil
}
