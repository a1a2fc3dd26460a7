package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestWideIntDTypes: int16, uint16 and uint64 (<i2, <u2, <u8) read and
// write back at their edges; a uint64 of 2^63 or more, which gpucc's int64
// carrier does not hold, is refused by name on read and write.
func TestWideIntDTypes(t *testing.T) {
	for _, a := range []*Array{
		{DType: "int16", Shape: []int{3}, Int64: []int64{math.MinInt16, 0, math.MaxInt16}},
		{DType: "uint16", Shape: []int{2}, Int64: []int64{0, math.MaxUint16}},
		{DType: "uint64", Shape: []int{2}, Int64: []int64{0, math.MaxInt64}},
	} {
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("%s: %v", a.DType, err)
		}
		back, err := Read(&buf, 1<<20)
		if err != nil || !sameBits(back, a) {
			t.Errorf("%s read back: %+v, %v", a.DType, back, err)
		}
	}
	if _, err := Read(bytes.NewReader(save("<u8", []int{1}, false, le64(1<<63))), 8); err == nil || !strings.Contains(err.Error(), "2^63") {
		t.Errorf("a uint64 of 2^63: %v, want a refusal naming 2^63", err)
	}
	if err := Write(&bytes.Buffer{}, &Array{DType: "uint16", Shape: []int{1}, Int64: []int64{65536}}); err == nil {
		t.Error("a uint16 of 65536 was written")
	}
	b := binary.LittleEndian.AppendUint16(nil, 0x8000)
	if a, err := Read(bytes.NewReader(save("<i2", []int{1}, false, b)), 8); err != nil || a.Int64[0] != math.MinInt16 {
		t.Errorf("<i2 0x8000: %+v %v", a, err)
	}
}

// TestCarried: a float64 array's values become gpucc's carrier bits and
// back (-0, NaN's payload and the least subnormal kept); an integer
// array's are its Int64.
func TestCarried(t *testing.T) {
	xs := []float64{math.Copysign(0, -1), 0x1p-1074, math.Float64frombits(0x7ff8000000000123), -1.5}
	a := &Array{DType: "float64", Shape: []int{4}, Float64: xs}
	c := a.Carried()
	for i, x := range xs {
		if uint64(c[i]) != math.Float64bits(x) {
			t.Errorf("element %d: %#x, want %#x", i, c[i], math.Float64bits(x))
		}
	}
	back := FromCarried(ir.F64, a.Shape, c)
	if !sameBits(back, a) {
		t.Errorf("FromCarried: %+v", back)
	}
	ints := &Array{DType: "int16", Shape: []int{1}, Int64: []int64{-5}}
	if !slices.Equal(ints.Carried(), ints.Int64) || !sameBits(FromCarried(ir.I16, ints.Shape, ints.Int64), ints) {
		t.Error("an int16 array's carrier is not its Int64")
	}
}
