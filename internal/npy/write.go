package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// descrs is each dtype's descr as Write spells it (numpy.save's own).
var descrs = map[string]string{"float32": "<f4", "float64": "<f8", "int32": "<i4", "int64": "<i8", "bool": "|b1",
	"float16": "<f2", "uint8": "|u1", "int8": "|i1", "uint32": "<u4", "int16": "<i2", "uint16": "<u2", "uint64": "<u8"}

// intRanges are the integer dtypes' ranges that Write checks.
var intRanges = map[string][2]int64{"int32": {math.MinInt32, math.MaxInt32}, "bool": {0, 1},
	"uint8": {0, math.MaxUint8}, "int8": {math.MinInt8, math.MaxInt8}, "uint32": {0, math.MaxUint32},
	"int16": {math.MinInt16, math.MaxInt16}, "uint16": {0, math.MaxUint16}, "uint64": {0, math.MaxInt64}}

// Write encodes a as one .npy file of format version 1.0 (2.0 when the
// header needs more than 65535 bytes), little-endian and in C order, as
// numpy.save writes it: the header padded with spaces to a multiple of 64
// bytes and ended by a newline. a's values are the slice of its dtype
// (Float32, Float64, or Int64 for int32, int64 and bool), one per element
// of its shape; an int32 or bool value out of its dtype's range is an error.
func Write(w io.Writer, a *Array) error {
	descr, ok := descrs[a.DType]
	if !ok {
		return fmt.Errorf("npy: dtype %q; gpucc writes float32, float64, float16, int32, int64, uint8, int8, uint32 and bool", a.DType)
	}
	n := 1
	for _, d := range a.Shape {
		if d < 0 {
			return fmt.Errorf("npy: shape %v has a negative dimension", a.Shape)
		}
		n *= d
	}
	var have int
	switch a.DType {
	case "float32", "float16":
		have = len(a.Float32)
	case "float64":
		have = len(a.Float64)
	default:
		have = len(a.Int64)
	}
	if have != n {
		return fmt.Errorf("npy: shape %v holds %d values, the array has %d", a.Shape, n, have)
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = strconv.Itoa(d)
	}
	shape := strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape)
	pre := 10 // magic, version, 2-byte length
	if len(dict)+1+pre > math.MaxUint16 {
		pre = 12
	}
	total := (pre + len(dict) + 1 + 63) / 64 * 64
	header := dict + strings.Repeat(" ", total-pre-len(dict)-1) + "\n"
	buf := make([]byte, 0, total+n*8)
	if pre == 10 {
		buf = append(buf, "\x93NUMPY\x01\x00"...)
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(header)))
	} else {
		buf = append(buf, "\x93NUMPY\x02\x00"...)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(header)))
	}
	buf = append(buf, header...)
	switch a.DType {
	case "float32":
		for _, v := range a.Float32 {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	case "float64":
		for _, v := range a.Float64 {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
	case "float16":
		for i, v := range a.Float32 {
			if ir.F16Round(v) != v && v == v {
				return fmt.Errorf("npy: float16 value %v at element %d is not a float16", v, i)
			}
			buf = binary.LittleEndian.AppendUint16(buf, ir.F16Bits(v))
		}
	case "int64":
		for _, v := range a.Int64 {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
		}
	case "int16", "uint16", "uint64":
		r := intRanges[a.DType]
		for i, v := range a.Int64 {
			if v < r[0] || v > r[1] {
				return fmt.Errorf("npy: %s value %d at element %d is out of range", a.DType, v, i)
			}
			if a.DType == "uint64" {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
			} else {
				buf = binary.LittleEndian.AppendUint16(buf, uint16(v))
			}
		}
	default: // int32, uint32 (4 bytes), bool, uint8, int8 (1 byte), checked against their ranges
		r := intRanges[a.DType]
		for i, v := range a.Int64 {
			if v < r[0] || v > r[1] {
				return fmt.Errorf("npy: %s value %d at element %d is out of range", a.DType, v, i)
			}
			if a.DType == "int32" || a.DType == "uint32" {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
			} else {
				buf = append(buf, byte(v))
			}
		}
	}
	_, err := w.Write(buf)
	return err
}
