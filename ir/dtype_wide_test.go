package ir_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestWideDTypeRanges: int16 and uint16 wrap at their edges as int8 and
// uint8 do; uint64 holds [0, 2^63-1] only, and what wraps beyond is out of
// its range (InRange), never reinterpreted; float64's carrier is any bits.
func TestWideDTypeRanges(t *testing.T) {
	for _, c := range []struct {
		t    ir.DType
		v    int64
		want int64
	}{
		{ir.I16, 32767, 32767}, {ir.I16, 32768, -32768}, {ir.I16, -32769, 32767}, {ir.I16, 65535, -1},
		{ir.U16, -1, 65535}, {ir.U16, 65536, 0}, {ir.U16, 65535, 65535},
		{ir.U64, math.MaxInt64, math.MaxInt64}, {ir.U64, -1, -1},
		{ir.F64, ir.F64Bits(-0.0), ir.F64Bits(-0.0)},
	} {
		if got := c.t.Wrap(c.v); got != c.want {
			t.Errorf("%v.Wrap(%d) = %d, want %d", c.t, c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		t  ir.DType
		v  int64
		ok bool
	}{
		{ir.U64, 0, true}, {ir.U64, math.MaxInt64, true}, {ir.U64, -1, false}, {ir.U64, math.MinInt64, false},
		{ir.I16, -32768, true}, {ir.I16, 32768, false}, {ir.U16, -1, false}, {ir.U16, 65535, true},
		{ir.F64, ir.F64Bits(math.NaN()), true}, {ir.F64, ir.F64Bits(math.Inf(-1)), true},
	} {
		if got := c.t.InRange(c.v); got != c.ok {
			t.Errorf("%v.InRange(%d) = %v, want %v", c.t, c.v, got, c.ok)
		}
	}
	if !ir.Unsigned.Has(ir.U16) || !ir.Unsigned.Has(ir.U64) || !ir.SignedNumeric.Has(ir.I16) || ir.SignedNumeric.Has(ir.U64) {
		t.Errorf("Unsigned %v, SignedNumeric %v", ir.Unsigned, ir.SignedNumeric)
	}
}

// TestConvertFloat64: Cast to and from float64 rounds once from the exact
// value (float16 from a float64 tie-breaker below float32's precision, an
// int64 to float64), keeps -0, NaN and ±Inf, and fails where the result
// has no carrier or no answer (NaN or 2^63 to an integer, a negative
// integer to uint64).
func TestConvertFloat64(t *testing.T) {
	type res struct {
		f  float32
		i  int64
		ok bool
	}
	b := ir.F64Bits
	// 1 + 2^-11 + 2^-40: above float16's tie between 1 and 1 + 2^-10, but
	// float32 rounds it onto the tie, which a second rounding takes to 1.
	above := 1 + 0x1p-11 + 0x1p-40
	for _, c := range []struct {
		name     string
		from, to ir.DType
		f        float32
		i        int64
		want     res
	}{
		{"f64 tie-breaker to f16", ir.F64, ir.F16, 0, b(above), res{1 + 0x1p-10, 0, true}},
		{"f64 2^128 to f32", ir.F64, ir.F32, 0, b(0x1p128), res{float32(math.Inf(1)), 0, true}},
		{"f64 -0 to f32", ir.F64, ir.F32, 0, b(math.Copysign(0, -1)), res{float32(math.Copysign(0, -1)), 0, true}},
		{"f64 least subnormal to f32", ir.F64, ir.F32, 0, b(0x1p-149), res{0x1p-149, 0, true}},
		{"f64 half the least subnormal to f32", ir.F64, ir.F32, 0, b(0x1p-150), res{0, 0, true}},
		{"f32 -0 to f64", ir.F32, ir.F64, float32(math.Copysign(0, -1)), 0, res{0, b(math.Copysign(0, -1)), true}},
		{"f16 65504 to f64", ir.F16, ir.F64, 65504, 0, res{0, b(65504), true}},
		{"int64 max to f64", ir.I64, ir.F64, 0, math.MaxInt64, res{0, b(0x1p63), true}},
		{"int64 2^53+1 to f64", ir.I64, ir.F64, 0, 1<<53 + 1, res{0, b(0x1p53), true}},
		{"uint16 65535 to f64", ir.U16, ir.F64, 0, 65535, res{0, b(65535), true}},
		{"bool to f64", ir.Bool, ir.F64, 0, 1, res{0, b(1), true}},
		{"f64 NaN to bool", ir.F64, ir.Bool, 0, b(math.NaN()), res{0, 1, true}},
		{"f64 -0 to bool", ir.F64, ir.Bool, 0, b(math.Copysign(0, -1)), res{0, 0, true}},
		{"f64 NaN to int32", ir.F64, ir.I32, 0, b(math.NaN()), res{0, 0, false}},
		{"f64 2^31-0.5 to int32", ir.F64, ir.I32, 0, b(0x1p31 - 0.5), res{0, math.MaxInt32, true}},
		{"f64 2^31 to int32", ir.F64, ir.I32, 0, b(0x1p31), res{0, 0, false}},
		{"f64 -2^63 to int64", ir.F64, ir.I64, 0, b(-0x1p63), res{0, math.MinInt64, true}},
		{"f64 2^63 to int64", ir.F64, ir.I64, 0, b(0x1p63), res{0, 0, false}},
		{"f64 2^63 to uint64", ir.F64, ir.U64, 0, b(0x1p63), res{0, 0, false}},
		{"f64 2^63-1024 to uint64", ir.F64, ir.U64, 0, b(0x1p63 - 1024), res{0, 1<<63 - 1024, true}},
		{"f64 -0.5 to uint16", ir.F64, ir.U16, 0, b(-0.5), res{0, 0, true}},
		{"f64 -1 to uint16", ir.F64, ir.U16, 0, b(-1), res{0, 0, false}},
		{"f64 65535.9 to uint16", ir.F64, ir.U16, 0, b(65535.9), res{0, 65535, true}},
		{"f64 -32768.9 to int16", ir.F64, ir.I16, 0, b(-32768.9), res{0, -32768, true}},
		{"f64 NaN to f64 keeps its bits", ir.F64, ir.F64, 0, 0x7ff8000000000123, res{0, 0x7ff8000000000123, true}},
		{"int64 -1 to uint64", ir.I64, ir.U64, 0, -1, res{0, 0, false}},
		{"int32 -1 to uint16", ir.I32, ir.U16, 0, -1, res{0, 65535, true}},
		{"uint64 2^63-1 to int32", ir.U64, ir.I32, 0, math.MaxInt64, res{0, -1, true}},
		{"uint64 2^63-1 to f32", ir.U64, ir.F32, 0, math.MaxInt64, res{0x1p63, 0, true}},
		{"f32 9.2e18 to uint64", ir.F32, ir.U64, 9.2e18, 0, res{0, int64(float32(9.2e18)), true}},
	} {
		f, i, ok := ir.Convert(c.from, c.to, c.f, c.i)
		if got := (res{f, i, ok}); math.Float32bits(got.f) != math.Float32bits(c.want.f) || got.i != c.want.i || got.ok != c.want.ok {
			t.Errorf("%s: Convert = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCheckDTypes: a backend that holds DeviceDTypes refuses a graph with
// a float64 value by name, naming the node, and one that holds
// ProtocolDTypes (webgl2) an int16, uint16 or uint64 value too.
func TestCheckDTypes(t *testing.T) {
	for _, dt := range []ir.DType{ir.I16, ir.U16, ir.U64} {
		if !ir.DeviceDTypes.Has(dt) || ir.ProtocolDTypes.Has(dt) {
			t.Errorf("%v is a device dtype (%v) but not protocol v1's (%v)", dt, ir.DeviceDTypes, ir.ProtocolDTypes)
		}
	}
	if ir.DeviceDTypes.Has(ir.F64) {
		t.Errorf("float64 is the reference's only, not a device dtype (%v)", ir.DeviceDTypes)
	}
	for _, dt := range []ir.DType{ir.F64, ir.I16, ir.U16, ir.U64} {
		set := ir.DeviceDTypes
		if set.Has(dt) {
			set = ir.ProtocolDTypes
		}
		b := ir.NewBuilder()
		x := b.TypedInput("x", ir.I32, ir.Shape{2}, nil, []int64{1, 2})
		b.Output("y", x.Cast(dt))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		err = ir.CheckDTypes(g, set, "webgpu")
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || e.Node != 1 || !strings.Contains(e.Error(), dt.String()) {
			t.Errorf("%v: got %v, want unsupported at node 1 naming the dtype", dt, err)
		}
		if err := ir.CheckDTypes(g, ir.AnyDType, "cpu"); err != nil {
			t.Errorf("%v: %v", dt, err)
		}
	}
}

// TestDecodeRefusesReferenceDTypes: protocol v1 graphs keep their nine
// dtypes; float64 and the 16-bit and uint64 integers are refused by name
// (unsupported), never read as another dtype's data.
func TestDecodeRefusesReferenceDTypes(t *testing.T) {
	for _, name := range []string{"float64", "int16", "uint16", "uint64"} {
		doc := `{"version":1,"nodes":[{"id":0,"op":"input","dtype":"` + name + `","shape":[1],"data":[1]}],"outputs":[{"name":"y","id":0}]}`
		_, err := ir.DecodeBytes([]byte(doc), ir.Limits{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || !strings.Contains(e.Error(), name) {
			t.Errorf("%s: got %v, want unsupported naming it", name, err)
		}
	}
}
