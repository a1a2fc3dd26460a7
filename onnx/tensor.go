package onnx

import (
	"encoding/binary"
	"io"
	"math"
	"strconv"

	"github.com/gpucc/gpucc/ir"
	"google.golang.org/protobuf/encoding/protowire"
)

// DataType is an ONNX element type (TensorProto.DataType).
type DataType int32

// The element types the importer reads. gpucc computes in float32; the
// others are read as constants (shapes, indices, masks) and folded at
// import.
const (
	Float32 DataType = 1
	Uint8   DataType = 2
	Int8    DataType = 3
	Uint16  DataType = 4
	Int16   DataType = 5
	Int32   DataType = 6
	Int64   DataType = 7
	String  DataType = 8
	Bool    DataType = 9
	Float16 DataType = 10
	Float64 DataType = 11
	Uint32  DataType = 12
	Uint64  DataType = 13
	// BFloat16 is bfloat16: a test's data and a graph input only, as
	// Float16 (ReadTensor).
	BFloat16 DataType = 16
)

var typeNames = map[DataType]string{
	Float32: "float32", Uint8: "uint8", Int8: "int8", Uint16: "uint16", Int16: "int16", Int32: "int32",
	Int64: "int64", String: "string", Bool: "bool", Float16: "float16", Float64: "float64", Uint32: "uint32",
	Uint64: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16",
}

func (t DataType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return "dtype(" + strconv.Itoa(int(t)) + ")"
}

// irDTypes are the ONNX element types gpucc has a dtype for: one table,
// built once (irDType built it on every call, 1.3 KB a call: serve's form
// of 20,000 parts allocated 26 MB in it).
var irDTypes = map[DataType]ir.DType{Float32: ir.F32, Float16: ir.F16, 16: ir.BF16, Int32: ir.I32, Int64: ir.I64,
	Uint8: ir.U8, Int8: ir.I8, Uint32: ir.U32, Bool: ir.Bool, Int16: ir.I16, Uint16: ir.U16, Uint64: ir.U64,
	Float64: ir.F64}

// irDType returns the gpucc dtype of ONNX element type t, if it has one.
func (t DataType) irDType() (ir.DType, bool) {
	d, ok := irDTypes[t]
	return d, ok
}

// DataTypeOf returns the ONNX element type of gpucc's dtype dt.
func DataTypeOf(dt ir.DType) DataType {
	for t, d := range irDTypes {
		if d == dt {
			return t
		}
	}
	return 0
}

// isInt reports whether t is an integer type or bool: held in Tensor.Int64.
func (t DataType) isInt() bool {
	switch t {
	case Uint8, Int8, Uint16, Int16, Int32, Int64, Bool, Uint32, Uint64:
		return true
	}
	return false
}

// size is the byte size of one element in raw_data.
func (t DataType) size() int {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16:
		return 2
	case Float32, Int32, Uint32:
		return 4
	case Int64, Float64, Uint64:
		return 8
	}
	return 0
}

// Tensor is an ONNX tensor value: an initializer, a constant, a test's
// input or output. Exactly one data slice is used, by Type: Float32 for
// float32, Float64 for float64 and Int64 for every integer type and bool
// (widened; uint64 values above 2^63-1 are refused). Dimensions may be 0.
type Tensor struct {
	Name    string
	Type    DataType
	Shape   []int
	Float32 []float32
	Float64 []float64
	Int64   []int64
}

// Len returns the number of elements.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// ReadTensor reads one serialized TensorProto (an ONNX test's
// input_0.pb, say) within limits: at most MaxGraphBytes bytes and
// MaxElements elements.
func ReadTensor(r io.Reader, limits ir.Limits) (t *Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, importPanic(p, "tensor")
		}
	}()
	l := limits.WithDefaults()
	raw, rerr := readAll(r, l.MaxGraphBytes)
	if rerr != nil {
		return nil, rerr
	}
	bud := newBudget(l, len(raw))
	tp, perr := decodeTensor(raw, bud, "tensor")
	if perr != nil {
		return nil, perr
	}
	var storage int64
	dt := DataType(tp.dataType)
	narrow := dt == Float16 || dt == BFloat16
	if narrow { // float16 and bfloat16 data: their bits as uint16, then their values
		tp.dataType = int32(Uint16)
	}
	t, perr = convertTensor(&tp, l, &storage, "tensor")
	if perr != nil {
		return nil, perr
	}
	if narrow {
		t.narrow(dt)
	}
	return t, nil
}

// narrow makes t, read as uint16 bits, the float16 or bfloat16 tensor
// they encode (dt): its values in Float32, each exactly the narrow value.
func (t *Tensor) narrow(dt DataType) {
	decode := ir.F16Float
	if dt == BFloat16 {
		decode = ir.BF16Float
	}
	t.Type, t.Float32 = dt, make([]float32, len(t.Int64))
	for i, b := range t.Int64 {
		t.Float32[i] = decode(uint16(b))
	}
	t.Int64 = nil
}

// convertTensor checks tp against the limits (its element count, and the
// running storage total at 4 bytes an element) and only then converts its
// data. External data is refused: gpucc reads one file.
func convertTensor(tp *tensorProto, l ir.Limits, storage *int64, where string) (*Tensor, *ir.Error) {
	name := tp.name
	dt := DataType(tp.dataType)
	switch {
	case tp.external:
		return nil, ir.Errorf(ir.CodeUnsupported, -1, where, "tensor %s keeps its data in an external file; gpucc reads the model file only (save the model with its data inside)", ir.Quote(name))
	case tp.segment:
		return nil, ir.Errorf(ir.CodeUnsupported, -1, where, "tensor %s is a segment of a larger tensor", ir.Quote(name))
	case tp.strings > 0 || dt == String:
		return nil, ir.Errorf(ir.CodeUnsupported, -1, where, "tensor %s holds strings", ir.Quote(name))
	case !dt.isInt() && dt != Float32 && dt != Float64:
		return nil, ir.Errorf(ir.CodeUnsupported, -1, where, "tensor %s has element type %v; gpucc reads float32, float64, the integer types and bool", ir.Quote(name), dt)
	}
	if len(tp.dims) > ir.MaxRank {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, where, "tensor %s has rank %d, over the maximum rank %d", ir.Quote(name), len(tp.dims), ir.MaxRank)
	}
	shape := make([]int, len(tp.dims))
	n := int64(1)
	for k, d := range tp.dims {
		if d < 0 {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, where, "tensor %s has dimension %d of %d", ir.Quote(name), k, d)
		}
		if d > l.MaxElements || (d > 0 && n > l.MaxElements/d) {
			return nil, ir.LimitErrorf("MaxElements", -1, where, "tensor %s of dimensions %v exceeds the limit of %d elements per tensor", ir.Quote(name), tp.dims, l.MaxElements)
		}
		n *= d
		shape[k] = int(d)
	}
	if *storage = ir.SatAdd(*storage, ir.SatMul(4, n)); *storage > l.MaxStorageBytes {
		return nil, ir.LimitErrorf("MaxStorageBytes", -1, where, "the model's tensors reach %d bytes at tensor %s, over the storage limit of %d", *storage, ir.Quote(name), l.MaxStorageBytes)
	}
	t := &Tensor{Name: name, Type: dt, Shape: shape}
	if err := t.fill(tp, int(n), where); err != nil {
		return nil, err
	}
	return t, nil
}

// fill converts tp's data (raw_data, or the typed field its type travels
// in) into n elements.
func (t *Tensor) fill(tp *tensorProto, n int, where string) *ir.Error {
	bad := func(format string, args ...any) *ir.Error {
		return ir.Errorf(ir.CodeInvalidGraph, -1, where, "tensor %s: "+format, append([]any{ir.Quote(t.Name)}, args...)...)
	}
	// The elements are allocated for what the data holds, at most n: a
	// tensor whose dimensions claim more than its bytes (a model of 60
	// bytes declaring 2^20 int64 elements) is refused below for the bytes
	// it has, never for memory it made the importer allocate first.
	held := 0
	if tp.hasRaw {
		held = len(tp.raw) / max(t.Type.size(), 1)
	}
	for _, p := range tp.packed {
		held += len(p) // each element takes a byte of its field at least
	}
	switch c := min(n, held); {
	case t.Type == Float32:
		t.Float32 = make([]float32, 0, c)
	case t.Type == Float64:
		t.Float64 = make([]float64, 0, c)
	default:
		t.Int64 = make([]int64, 0, c)
	}
	if tp.hasRaw {
		if tp.field != 0 {
			return bad("has both raw_data and typed data")
		}
		sz := t.Type.size()
		if len(tp.raw) != n*sz {
			return bad("raw_data holds %d bytes, its %d elements of %v need %d", len(tp.raw), n, t.Type, n*sz)
		}
		if t.Type == Float32 { // the weights: most of a model's bytes
			raw := tp.raw[:4*n]
			t.Float32 = t.Float32[:n]
			for i := range t.Float32 {
				t.Float32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			return t.checkRange(bad)
		}
		for i := 0; i < n; i++ {
			e := tp.raw[i*sz : (i+1)*sz]
			switch t.Type {
			case Float32:
				t.Float32 = append(t.Float32, math.Float32frombits(binary.LittleEndian.Uint32(e)))
			case Float64:
				t.Float64 = append(t.Float64, math.Float64frombits(binary.LittleEndian.Uint64(e)))
			case Uint8, Bool:
				t.Int64 = append(t.Int64, int64(e[0]))
			case Int8:
				t.Int64 = append(t.Int64, int64(int8(e[0])))
			case Uint16:
				t.Int64 = append(t.Int64, int64(binary.LittleEndian.Uint16(e)))
			case Int16:
				t.Int64 = append(t.Int64, int64(int16(binary.LittleEndian.Uint16(e))))
			case Int32:
				t.Int64 = append(t.Int64, int64(int32(binary.LittleEndian.Uint32(e))))
			case Uint32:
				t.Int64 = append(t.Int64, int64(binary.LittleEndian.Uint32(e)))
			case Int64:
				t.Int64 = append(t.Int64, int64(binary.LittleEndian.Uint64(e)))
			case Uint64:
				u := binary.LittleEndian.Uint64(e)
				if u > math.MaxInt64 {
					return bad("a uint64 value above 2^63-1")
				}
				t.Int64 = append(t.Int64, int64(u))
			}
		}
		return t.checkRange(bad)
	}
	// The typed field each element type travels in (onnx.proto's comments).
	want := map[DataType]protowire.Number{Float32: 4, Float64: 10, Int64: 7, Uint32: 11, Uint64: 11}[t.Type]
	if want == 0 {
		want = 5 // int32_data: the small integer types, bool and float16
	}
	if tp.field != 0 && tp.field != want {
		return bad("element type %v travels in field %d, not %d", t.Type, want, tp.field)
	}
	for _, p := range tp.packed {
		for len(p) > 0 {
			if t.count() >= n {
				return bad("holds more than its %d elements", n)
			}
			var k int
			switch want {
			case 4:
				var u uint32
				u, k = protowire.ConsumeFixed32(p)
				t.Float32 = append(t.Float32, math.Float32frombits(u))
			case 10:
				var u uint64
				u, k = protowire.ConsumeFixed64(p)
				t.Float64 = append(t.Float64, math.Float64frombits(u))
			default:
				var u uint64
				u, k = protowire.ConsumeVarint(p)
				v := int64(u)
				if want == 5 {
					v = int64(int32(u))
				}
				if want == 11 && t.Type == Uint64 && u > math.MaxInt64 {
					return bad("a uint64 value above 2^63-1")
				}
				t.Int64 = append(t.Int64, v)
			}
			if k < 0 {
				return bad("malformed data: %v", protowire.ParseError(k))
			}
			p = p[k:]
		}
	}
	if t.count() != n {
		return bad("holds %d elements, its dimensions %v need %d", t.count(), t.Shape, n)
	}
	return t.checkRange(bad)
}

func (t *Tensor) count() int { return len(t.Float32) + len(t.Float64) + len(t.Int64) }

// checkRange refuses integer values outside their type's range (an int8
// of 300 in int32_data), which no writer produces.
func (t *Tensor) checkRange(bad func(string, ...any) *ir.Error) *ir.Error {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch t.Type {
	case Bool:
		lo, hi = 0, 1
	case Uint8:
		lo, hi = 0, math.MaxUint8
	case Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case Uint16:
		lo, hi = 0, math.MaxUint16
	case Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case Uint32:
		lo, hi = 0, math.MaxUint32
	case Uint64:
		lo = 0
	}
	for _, v := range t.Int64 {
		if v < lo || v > hi {
			return bad("value %d is out of the range of %v", v, t.Type)
		}
	}
	return nil
}

// carried returns an integer, bool or float64 tensor's values in ir's
// []int64 carrier: the integers themselves, float64's bits (ir.F64Bits).
func (t *Tensor) carried() []int64 {
	if t.Type != Float64 {
		return t.Int64
	}
	out := make([]int64, len(t.Float64))
	for i, x := range t.Float64 {
		out[i] = ir.F64Bits(x)
	}
	return out
}
