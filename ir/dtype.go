package ir

import (
	"math"
	"math/bits"
	"strconv"
)

// DType is the element type of a tensor value. The zero value is F32, so
// every graph written before dtypes existed keeps its meaning.
//
// Values: a float dtype (F32, F16, BF16) carries []float32 (Node.Data), an
// F16 or BF16 value already rounded to its type (F16Round, BF16Round); an
// integer dtype or Bool carries []int64 (Node.Ints), each value within the
// dtype's range (Range; Bool is 0 or 1); F64 carries its values' IEEE
// binary64 bits (math.Float64bits) in []int64 (Node.Ints), so that it
// moves through every 8-byte carrier as int64 does, and only the rows that
// name it compute on it (IsFloat64). Device storage is the dtype's own
// width (Size).
//
// uint64 is carried in int64 too: its values are [0, 2^63-1], and a value
// beyond (an input, a cast, an op's result) is refused by name, never
// reinterpreted. float64 is computed by the reference (the cpu backend)
// and C (native, wasm: CDTypes), and int16, uint16 and uint64 by the
// reference, C and WGSL (webgpu): the other targets refuse them by name
// (DeviceDTypes);
// protocol v1 names none of the four (ProtocolDTypes). Everything else a dtype means is a row of dtypeTable: code
// asks the table (Size, IsFloat, Range, Wrap, …) instead of switching on
// dtypes.
type DType uint8

// The dtypes. New dtypes go at the end: dtype numbers are part of cache
// keys.
const (
	F32  DType = iota // IEEE binary32
	F16               // IEEE binary16, computed in float32 and rounded after every op
	BF16              // bfloat16 (binary32's top 16 bits), computed as F16 is
	I32               // two's complement 32-bit integer
	I64               // two's complement 64-bit integer
	U8                // unsigned 8-bit integer
	I8                // two's complement 8-bit integer
	U32               // unsigned 32-bit integer
	Bool              // false (0) or true (1), one byte
	I16               // two's complement 16-bit integer
	U16               // unsigned 16-bit integer
	U64               // unsigned 64-bit integer, of [0, 2^63-1] only (carried in int64)
	F64               // IEEE binary64, its bits carried in Node.Ints
	numDTypes
)

// dtypeInfo is one row of the dtype table.
type dtypeInfo struct {
	name  string // numpy's and protocol v1's name
	size  int    // bytes per element in device and host storage
	float bool   // carries float32 values (F32, F16, BF16)
	f64   bool   // carries IEEE binary64 bits in []int64 (F64)
	// bits is, for an integer dtype, its width, and min and max its range
	// (Bool: 0 and 1); round, for a float dtype, rounds a float32 to it.
	bits     int
	min, max int64
	round    func(float32) float32
	sig      int // a float dtype's significand bits, the implicit one included
}

var dtypeTable = [numDTypes]dtypeInfo{
	F32:  {name: "float32", size: 4, float: true, round: func(v float32) float32 { return v }, sig: 24},
	F16:  {name: "float16", size: 2, float: true, round: F16Round, sig: 11},
	BF16: {name: "bfloat16", size: 2, float: true, round: BF16Round, sig: 8},
	I32:  {name: "int32", size: 4, bits: 32, min: math.MinInt32, max: math.MaxInt32},
	I64:  {name: "int64", size: 8, bits: 64, min: math.MinInt64, max: math.MaxInt64},
	U8:   {name: "uint8", size: 1, bits: 8, min: 0, max: math.MaxUint8},
	I8:   {name: "int8", size: 1, bits: 8, min: math.MinInt8, max: math.MaxInt8},
	U32:  {name: "uint32", size: 4, bits: 32, min: 0, max: math.MaxUint32},
	Bool: {name: "bool", size: 1, bits: 1, min: 0, max: 1},
	I16:  {name: "int16", size: 2, bits: 16, min: math.MinInt16, max: math.MaxInt16},
	U16:  {name: "uint16", size: 2, bits: 16, min: 0, max: math.MaxUint16},
	U64:  {name: "uint64", size: 8, bits: 64, min: 0, max: math.MaxInt64},
	// F64's "range" is every bit pattern of its carrier: Wrap leaves it.
	F64: {name: "float64", size: 8, f64: true, bits: 64, min: math.MinInt64, max: math.MaxInt64},
}

// DTypes returns protocol v1's dtypes (ProtocolDTypes), which every
// target holds, the page's included, in table order: the ones the
// differential tests and generators run everywhere.
func DTypes() []DType {
	var out []DType
	for _, t := range AllDTypes() {
		if ProtocolDTypes.Has(t) {
			out = append(out, t)
		}
	}
	return out
}

// AllDTypes returns every dtype of the table, in table order: DTypes,
// int16, uint16 and uint64 (DeviceDTypes beyond the protocol's) and the
// reference's own, float64.
func AllDTypes() []DType {
	out := make([]DType, numDTypes)
	for t := range out {
		out[t] = DType(t)
	}
	return out
}

// Valid reports whether t is a dtype of the table.
func (t DType) Valid() bool { return t < numDTypes }

func (t DType) info() dtypeInfo {
	if t >= numDTypes {
		panic("ir: dtype(" + itoa(int(t)) + ") is not in the dtype table")
	}
	return dtypeTable[t]
}

// Size returns the bytes one element of t takes: 4, 2, 2, 4, 8, 1, 1, 4, 1,
// 2, 2, 8, 8.
func (t DType) Size() int { return t.info().size }

// String returns t's numpy and protocol name ("float32", "int64", "bool", …).
func (t DType) String() string {
	if t >= numDTypes {
		return "dtype(" + itoa(int(t)) + ")"
	}
	return dtypeTable[t].name
}

// IsFloat reports whether t carries float32 values (F32, F16, BF16).
func (t DType) IsFloat() bool { return t.info().float }

// IsFloat64 reports whether t is F64: IEEE binary64 values carried as
// their bits in []int64.
func (t DType) IsFloat64() bool { return t.info().f64 }

// IsInt reports whether t is an integer dtype (not Bool, not a float).
func (t DType) IsInt() bool { i := t.info(); return !i.float && !i.f64 && t != Bool }

// InRange reports whether v is a value t holds: an integer within Range
// (uint64's values beyond 2^63-1 are not: they have no int64 carrier),
// any bits for F64. Wrap's result is in range for every dtype but U64.
func (t DType) InRange(v int64) bool { i := t.info(); return v >= i.min && v <= i.max }

// Bits returns an integer dtype's width (Bool: 1; F64: 64; F32, F16 and BF16: 0).
func (t DType) Bits() int { return t.info().bits }

// Range returns the least and greatest value of an integer dtype or Bool.
func (t DType) Range() (lo, hi int64) { i := t.info(); return i.min, i.max }

// Signed reports whether an integer dtype has negative values.
func (t DType) Signed() bool { return t.info().min < 0 }

// Wrap returns v reduced to t's range in two's complement (an integer
// dtype: its low Bits bits, sign-extended when t is signed), as numpy and
// ONNX wrap integer arithmetic and integer casts. Bool gives v != 0.
func (t DType) Wrap(v int64) int64 {
	i := t.info()
	switch {
	case t == Bool:
		if v != 0 {
			return 1
		}
		return 0
	case i.bits == 64:
		return v
	case i.min < 0:
		s := 64 - uint(i.bits)
		return v << s >> s
	}
	return int64(uint64(v) & (1<<uint(i.bits) - 1))
}

// Round returns the float32 v rounded to float dtype t (ties to even;
// overflow to ±Inf, NaN kept): v itself for F32.
func (t DType) Round(v float32) float32 { return t.info().round(v) }

// Holds reports whether v is a value of float dtype t: Round leaves its
// bits unchanged.
func (t DType) Holds(v float32) bool { return math.Float32bits(t.Round(v)) == math.Float32bits(v) }

// ParseDType returns the dtype named s (String's names).
func ParseDType(s string) (DType, bool) {
	for t, r := range dtypeTable {
		if r.name == s {
			return DType(t), true
		}
	}
	return 0, false
}

// DTypeSet is a set of dtypes, one bit each.
type DTypeSet uint16

// SetOf returns the set of ts.
func SetOf(ts ...DType) DTypeSet {
	var s DTypeSet
	for _, t := range ts {
		s |= 1 << t
	}
	return s
}

// Has reports whether t is in s.
func (s DTypeSet) Has(t DType) bool { return t < numDTypes && s&(1<<t) != 0 }

// The dtype sets the op table's type rules use.
var (
	AnyDType   = DTypeSet(1<<numDTypes - 1)
	FloatTypes = SetOf(F32, F16, BF16)
	IntTypes   = SetOf(I32, I64, U8, I8, U32, I16, U16, U64)
	Numeric    = FloatTypes | IntTypes
	// SignedNumeric is the floats and the signed integers (neg, relu).
	SignedNumeric = FloatTypes | SetOf(I32, I64, I8, I16)
	// Unsigned is the unsigned integers (ONNX's BitShift).
	Unsigned = SetOf(U8, U32, U16, U64)
	// Float64Types is float64 alone: the rows that compute it name it.
	Float64Types = SetOf(F64)
	// ProtocolDTypes are protocol v1's dtypes, which every compiled target
	// (C, WGSL, GLSL) holds.
	ProtocolDTypes = SetOf(F32, F16, BF16, I32, I64, U8, I8, U32, Bool)
	// DeviceDTypes are the dtypes the compiled targets of native, wasm and
	// webgpu (C, WGSL) hold: the protocol's, int16 and uint16, stored in
	// 16 bits and computed as the other integers are (sign- or
	// zero-extended, wrapped by the store), and uint64 in its int64
	// carrier, whose kernels fault on a result of 2^63 or more as the
	// reference refuses it (codegen.CheckedU64). float64 is the
	// reference's and C's (CDTypes), refused by name on webgpu; WebGL2's
	// typed passes hold ProtocolDTypes only.
	DeviceDTypes = ProtocolDTypes | SetOf(I16, U16, U64)
	// CDTypes are the dtypes the C targets (native, wasm) hold: the
	// device's and float64, as C's double (wasm's f64), whose + - * / and
	// sqrt are IEEE binary64's correctly rounded operations, the
	// reference's bits. WGSL and GLSL ES have no 64-bit float: webgpu
	// and webgl2 refuse float64 by name.
	CDTypes = DeviceDTypes | Float64Types
	// F32Only is float32 alone: an op whose kernels compute float32 only.
	F32Only = SetOf(F32)
)

// String lists s's dtypes.
func (s DTypeSet) String() string {
	out := ""
	for t := range numDTypes {
		if s.Has(t) {
			if out != "" {
				out += ", "
			}
			out += t.String()
		}
	}
	return "{" + out + "}"
}

// F16Bits returns the binary16 bits nearest to v (ties to even): ±Inf
// from 65520 up, subnormals down to 2^-24, a quiet NaN for NaN.
func F16Bits(v float32) uint16 {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // binary16's biased exponent
	switch {
	case e >= 31:
		return sign | 0x7c00
	case e <= 0: // subnormal in binary16 (or zero): units of 2^-24
		if e < -10 { // below 2^-25, half the least subnormal: rounds to zero
			return sign
		}
		m := man | 0x800000 // e ≥ -10: a float32 normal
		shift := uint(14 - e)
		q, rem, half := m>>shift, m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && q&1 == 1 {
			q++ // may carry into the least normal: its encoding
		}
		return sign | uint16(q)
	}
	q := uint32(e)<<10 | man>>13
	if rem := man & 0x1fff; rem > 0x1000 || rem == 0x1000 && q&1 == 1 {
		q++ // a carry into the exponent is the next binade, or +Inf
	}
	return sign | uint16(q)
}

// F16Float returns the float32 value of binary16 bits h (exact).
func F16Float(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0: // zero or subnormal: man·2^-24, exact in float32
		return math.Float32frombits(sign | math.Float32bits(float32(man)*0x1p-24))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// F16Round returns v rounded to binary16, as a float32.
func F16Round(v float32) float32 { return F16Float(F16Bits(v)) }

// BF16Bits returns the bfloat16 bits nearest to v (ties to even; a quiet
// NaN for NaN).
func BF16Bits(v float32) uint16 {
	b := math.Float32bits(v)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16Float returns the float32 value of bfloat16 bits h (exact).
func BF16Float(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// BF16Round returns v rounded to bfloat16, as a float32.
func BF16Round(v float32) float32 { return BF16Float(BF16Bits(v)) }

// IntToFloat returns the integer v converted to float dtype t, rounded once
// (ties to even) from its exact value: never through a wider float first,
// whose rounding could move a value onto a tie of t's (2^31+2^23+1 is
// bfloat16's 2^31+2^24, not the 2^31 float32 would tie it to). A value
// beyond t's range gives ±Inf.
func IntToFloat(t DType, v int64) float32 {
	u, neg := uint64(v), v < 0
	if neg {
		u = -u
	}
	p := t.info().sig
	if n := bits.Len64(u); n > p {
		shift := uint(n - p)
		q, rem, half := u>>shift, u&(1<<shift-1), uint64(1)<<(shift-1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
		u = q << shift // p+1 bits at most: exact in float64
	}
	f := float32(float64(u)) // exact: u has at most 25 significant bits
	if neg {
		f = -f
	}
	return t.Round(f) // exact, or ±Inf beyond t's range
}

// FloatToInt returns float v converted to integer dtype t or Bool as ONNX's
// Cast does: truncated toward zero (Bool: v != 0, NaN included). It is
// false for NaN, ±Inf and a value whose truncation is outside t's range,
// which has no right answer: the run fails instead of inventing one.
func FloatToInt(t DType, v float32) (int64, bool) { return Float64ToInt(t, float64(v)) }

// Float64ToInt is FloatToInt of a float64 value (exact: v is truncated,
// never rounded to float32 first).
func Float64ToInt(t DType, v float64) (int64, bool) {
	if t == Bool {
		if v != 0 {
			return 1, true
		}
		return 0, true
	}
	f := math.Trunc(v)
	lo, hi := t.Range()
	// float64(hi) rounds up to 2^63 for int64: compare below it.
	if f != f || f < float64(lo) || f >= float64(hi)+1 || t == I64 && f >= 0x1p63 {
		return 0, false
	}
	return int64(f), true
}

// Convert returns one value of dtype from converted to dtype to, as
// ONNX's Cast: a float value is f, an integer or bool value (or float64's
// bits) i; the result is (float, int, ok) in to's carrier. Float to float
// rounds once from the exact value, integer to float likewise
// (IntToFloat), float to integer truncates (FloatToInt; not ok out of
// range or for NaN), integer to integer wraps (Wrap; not ok where the
// wrapped value has no carrier: a uint64 of 2^63 or more), anything to
// Bool is != 0. float64 converts as convert64 says.
func Convert(from, to DType, f float32, i int64) (float32, int64, bool) {
	switch {
	case from.IsFloat64() || to.IsFloat64():
		return convert64(from, to, f, i)
	case from.IsFloat() && to.IsFloat():
		return to.Round(f), 0, true
	case to.IsFloat():
		return IntToFloat(to, i), 0, true
	case from.IsFloat():
		v, ok := FloatToInt(to, f)
		return 0, v, ok
	}
	if w := to.Wrap(i); to.InRange(w) {
		return 0, w, true
	}
	return 0, 0, false
}

// convert64 is Convert where from or to is F64: the value as a float64 x
// (float64's own bits; a narrower float widened exactly; an integer or
// bool rounded once to nearest even, as Go's and C's conversion does),
// then to's: float64's bits, a narrower float rounded once from x
// (RoundFloat64), an integer truncated from x (Float64ToInt; not ok out of
// range or for NaN), Bool x != 0.
func convert64(from, to DType, f float32, i int64) (float32, int64, bool) {
	var x float64
	switch {
	case from.IsFloat64():
		x = math.Float64frombits(uint64(i))
	case from.IsFloat():
		x = float64(f)
	default:
		x = float64(i)
	}
	switch {
	case to.IsFloat64():
		return 0, int64(math.Float64bits(x)), true
	case to.IsFloat():
		return RoundFloat64(to, x), 0, true
	}
	v, ok := Float64ToInt(to, x)
	return 0, v, ok
}

// F64Bits returns x's bits as float64's carrier holds them; F64Value the
// value of carried bits.
func F64Bits(x float64) int64  { return int64(math.Float64bits(x)) }
func F64Value(b int64) float64 { return math.Float64frombits(uint64(b)) }

func itoa(i int) string { return strconv.Itoa(i) }

// TypeRule is an op's rule of dtypes: which dtypes its operands take and
// which dtype its node gives. Validate checks every node against its row's
// rule; the Builder derives a node's dtype from it.
type TypeRule struct {
	// In is the dtypes the operands may have; every operand has the same
	// one (but Cond's first). For a leaf (input, full), the dtypes the
	// node may have.
	In DTypeSet
	// Cond: the first operand is Bool and the others share one dtype of
	// In (where).
	Cond bool
	// Index: the last operand is int32 or int64 indices, whatever the
	// others' dtype (gather).
	Index bool
	// Out says which dtype the node gives.
	Out OutRule
}

// OutRule says which dtype a node gives.
type OutRule uint8

// The result rules.
const (
	// OutSame: the (value) operands' dtype.
	OutSame OutRule = iota
	// OutBool: Bool. Over float32 operands the node may say float32
	// instead and get 1 or 0: protocol v1's comparisons, which every graph
	// before dtypes used.
	OutBool
	// OutNode: the node's own DType, any dtype (a leaf's attribute; cast's
	// target).
	OutNode
)

// ResultDType returns the dtype a node of op over operands of dtypes args
// gives, where the node says want (OutNode's dtype; OutBool's choice of
// float32 over float32 operands), or an error naming node and the operand
// that breaks op's type rule.
func ResultDType(node int, op Op, args []DType, want DType) (DType, *Error) {
	r := op.Info().Types
	if !want.Valid() {
		return 0, Errorf(CodeInvalidGraph, node, "dtype", "dtype(%d) is not a dtype", int(want))
	}
	if len(args) == 0 {
		if !r.In.Has(want) {
			return 0, Errorf(CodeInvalidGraph, node, "dtype", "%v takes dtypes %v, not %v", op, r.In, want)
		}
		return want, nil
	}
	first := 0
	if r.Cond {
		if args[0] != Bool {
			return 0, Errorf(CodeInvalidGraph, node, "a", "%v's condition must be bool, got %v", op, args[0])
		}
		first = 1
	}
	t := args[first]
	last := len(args)
	if r.Index {
		last--
		if a := args[last]; a != I32 && a != I64 {
			return 0, Errorf(CodeInvalidGraph, node, argField(last), "%v's indices must be int32 or int64, got %v", op, a)
		}
	}
	for k := first; k < last; k++ {
		if !r.In.Has(args[k]) {
			return 0, Errorf(CodeInvalidGraph, node, argField(k), "%v takes dtypes %v, got %v (cast it first)", op, r.In, args[k])
		}
		if args[k] != t {
			return 0, Errorf(CodeInvalidGraph, node, argField(k), "%v needs operands of one dtype, got %v and %v (cast one first)", op, t, args[k])
		}
	}
	switch r.Out {
	case OutBool:
		if t == F32 && want == F32 {
			return F32, nil
		}
		return Bool, nil
	case OutNode:
		return want, nil
	}
	return t, nil
}

// The integer meanings of the op table's rows (OpInfo.Int): exact in
// int64 for every dtype's values, the caller wrapping the result to the
// dtype (two's complement). Go's int64 arithmetic wraps too, and its
// MinInt64 / -1 is MinInt64 (the wrapped quotient) and MinInt64 % -1 is 0.
func intAdd(_ DType, a, b int64) (int64, bool)  { return a + b, true }
func intSub(_ DType, a, b int64) (int64, bool)  { return a - b, true }
func intMul(_ DType, a, b int64) (int64, bool)  { return a * b, true }
func intNeg(_ DType, a, _ int64) (int64, bool)  { return -a, true }
func intMax(_ DType, a, b int64) (int64, bool)  { return max(a, b), true }
func intMin(_ DType, a, b int64) (int64, bool)  { return min(a, b), true }
func intRelu(_ DType, a, _ int64) (int64, bool) { return max(a, 0), true }
func intGt(_ DType, a, b int64) (int64, bool)   { return b2i(a > b), true }
func intGe(_ DType, a, b int64) (int64, bool)   { return b2i(a >= b), true }
func intEq(_ DType, a, b int64) (int64, bool)   { return b2i(a == b), true }
func intAnd(_ DType, a, b int64) (int64, bool)  { return a & b, true }
func intOr(_ DType, a, b int64) (int64, bool)   { return a | b, true }
func intXor(_ DType, a, b int64) (int64, bool)  { return a ^ b, true }
func intNot(_ DType, a, _ int64) (int64, bool)  { return a ^ 1, true }
func intBitNot(_ DType, a, _ int64) (int64, bool) {
	return ^a, true
}

// intDiv truncates toward zero, as ONNX's Div of integers (C's) does; a
// division by zero has no answer.
func intDiv(_ DType, a, b int64) (int64, bool) {
	if b == 0 {
		return 0, false
	}
	return a / b, true
}

// intMod is ONNX's Mod with fmod 0 (Python's %): the remainder takes the
// divisor's sign; by zero it has no answer.
func intMod(_ DType, a, b int64) (int64, bool) {
	if b == 0 {
		return 0, false
	}
	r := a % b
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r, true
}

// intShl and intShr shift an unsigned value (non-negative in int64); a
// count of the dtype's width or more gives 0 (numpy's), where C and WGSL
// leave it undefined or take it modulo the width.
func intShl(t DType, a, b int64) (int64, bool) {
	if b >= int64(t.Bits()) {
		return 0, true
	}
	return a << uint(b), true
}

func intShr(t DType, a, b int64) (int64, bool) {
	if b >= int64(t.Bits()) {
		return 0, true
	}
	return a >> uint(b), true
}

func b2i(c bool) int64 {
	if c {
		return 1
	}
	return 0
}

// RoundFloat64 returns x rounded once to float dtype t (ties to even): a
// decimal read as float64 reaches float16 or bfloat16 without a second
// rounding's error, by rounding to odd at float32 first (float32's 24 bits
// are at least p+2 of either format's p, so the odd bit decides what a tie
// would have).
func RoundFloat64(t DType, x float64) float32 {
	y := float32(x)
	if t == F32 || float64(y) == x || math.IsInf(float64(y), 0) {
		return t.Round(y)
	}
	b := math.Float32bits(y)
	if math.Abs(float64(y)) > math.Abs(x) {
		b-- // toward zero: the magnitude's bits are ordered
	}
	return t.Round(math.Float32frombits(b | 1))
}

// CheckDTypes returns unsupported naming the first node of g whose dtype
// is not in set, and target (the backend that does not hold it), or nil:
// a backend whose code holds only DeviceDTypes asks it before compiling,
// so that float64 (and on WebGL2 int16, uint16 and uint64) is refused by name, never
// stored in another dtype's width.
func CheckDTypes(g *Graph, set DTypeSet, target string) *Error {
	for i := range g.Nodes {
		if t := g.Nodes[i].DType; !set.Has(t) {
			return Errorf(CodeUnsupported, i, "dtype", "a %v value: the %s backend computes %v; the cpu backend (the reference) computes %v too", t, target, set, t)
		}
	}
	return nil
}
