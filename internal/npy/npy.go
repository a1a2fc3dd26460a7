// Package npy reads and writes numpy's .npy files (format versions 1, 2
// and 3) of little-endian float32, float64, float16, int32, int64, uint8,
// int8, uint32, int16, uint16, uint64 (below 2^63) and bool arrays in
// C order: what `numpy.save` writes for the values a user fixes at import
// (gpucc --const NAME=file.npy) or gives a run (gpucc run --input
// NAME=file.npy), and what gpucc run --output-dir writes. Anything else (big-endian data, Fortran
// order, object or structured dtypes, a truncated file, trailing bytes) is
// an error that says what was found; nothing is guessed.
package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// Array is one decoded array: its dtype as numpy names it ("float32",
// "float64", "float16", "int32", "int64", "uint8", "int8", "uint32",
// "bool"), its shape, and its values in C order: floats in Float32 (a
// float16's exactly) or Float64, integers and bools (0 or 1) in Int64.
type Array struct {
	DType   string
	Shape   []int
	Float32 []float32
	Float64 []float64
	Int64   []int64
}

// dtypes maps a header's descr to the dtype's name and element size.
var dtypes = map[string]struct {
	name string
	size int
}{
	"<f4": {"float32", 4}, "<f8": {"float64", 8}, "<i4": {"int32", 4}, "<i8": {"int64", 8},
	"|b1": {"bool", 1}, "<b1": {"bool", 1},
	"|u1": {"uint8", 1}, "<u1": {"uint8", 1}, "|i1": {"int8", 1}, "<i1": {"int8", 1}, "<u4": {"uint32", 4},
	"<f2": {"float16", 2}, "<i2": {"int16", 2}, "<u2": {"uint16", 2}, "<u8": {"uint64", 8},
}

var (
	descrRE   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	fortranRE = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	shapeRE   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// maxHeader bounds the header (numpy writes at most a few hundred bytes).
const maxHeader = 1 << 16

// Read decodes one .npy array from r, of at most maxElements elements
// (checked before the data is allocated).
func Read(r io.Reader, maxElements int64) (*Array, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("npy: reading the magic: %w", unexpected(err))
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return nil, errors.New("npy: not a .npy file (no \\x93NUMPY magic)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading the header length: %w", unexpected(err))
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading the header length: %w", unexpected(err))
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeader {
			return nil, fmt.Errorf("npy: a header of %d bytes (over %d)", n, maxHeader)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy: format version %d.%d (gpucc reads 1, 2 and 3)", pre[6], pre[7])
	}
	h := make([]byte, hlen)
	if _, err := io.ReadFull(r, h); err != nil {
		return nil, fmt.Errorf("npy: reading the header: %w", unexpected(err))
	}
	a, size, err := parseHeader(string(h), maxElements)
	if err != nil {
		return nil, err
	}
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	data, err := readFull(r, n*size)
	if err != nil {
		return nil, fmt.Errorf("npy: reading %d values of %s: %w", n, a.DType, unexpected(err))
	}
	var extra [1]byte
	if k, _ := r.Read(extra[:]); k > 0 {
		return nil, fmt.Errorf("npy: bytes after the %d values of the array", n)
	}
	switch a.DType {
	case "float32":
		a.Float32 = make([]float32, n)
		for i := range a.Float32 {
			a.Float32[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case "float64":
		a.Float64 = make([]float64, n)
		for i := range a.Float64 {
			a.Float64[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
		}
	case "float16": // its values in Float32, each exactly the half's
		a.Float32 = make([]float32, n)
		for i := range a.Float32 {
			a.Float32[i] = ir.F16Float(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case "int32":
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			a.Int64[i] = int64(int32(binary.LittleEndian.Uint32(data[4*i:])))
		}
	case "int16":
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			a.Int64[i] = int64(int16(binary.LittleEndian.Uint16(data[2*i:])))
		}
	case "uint16":
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			a.Int64[i] = int64(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case "uint64": // gpucc's uint64 holds [0, 2^63-1]
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			u := binary.LittleEndian.Uint64(data[8*i:])
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("npy: uint64 value %d at element %d is 2^63 or more, which gpucc's uint64 (carried in int64) does not hold", u, i)
			}
			a.Int64[i] = int64(u)
		}
	case "uint32":
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			a.Int64[i] = int64(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case "uint8":
		a.Int64 = make([]int64, n)
		for i, b := range data {
			a.Int64[i] = int64(b)
		}
	case "int8":
		a.Int64 = make([]int64, n)
		for i, b := range data {
			a.Int64[i] = int64(int8(b))
		}
	case "int64":
		a.Int64 = make([]int64, n)
		for i := range a.Int64 {
			a.Int64[i] = int64(binary.LittleEndian.Uint64(data[8*i:]))
		}
	case "bool":
		a.Int64 = make([]int64, n)
		for i, b := range data {
			if b > 1 {
				return nil, fmt.Errorf("npy: bool value %d at element %d (numpy writes 0 or 1)", b, i)
			}
			a.Int64[i] = int64(b)
		}
	}
	return a, nil
}

// readFull reads exactly n bytes from r into a buffer that grows as they
// arrive (doubling from 64 KiB), so a header that claims more values than
// the file holds costs about what the file holds, not the claim.
func readFull(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, 64<<10))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), cap(buf)))
		}
		k, err := io.ReadFull(r, buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, err // io.EOF: unexpected, as the caller says
		}
	}
	return buf, nil
}

// parseHeader reads the header's dict: descr, fortran_order and shape.
func parseHeader(h string, maxElements int64) (*Array, int, error) {
	h = strings.TrimRight(h, " \n\x00")
	if !strings.HasPrefix(h, "{") || !strings.HasSuffix(h, "}") {
		return nil, 0, fmt.Errorf("npy: the header is not a dict: %.80q", h)
	}
	m := descrRE.FindStringSubmatch(h)
	if m == nil {
		return nil, 0, fmt.Errorf("npy: the header has no descr: %.80q", h)
	}
	dt, ok := dtypes[m[1]]
	if !ok {
		return nil, 0, fmt.Errorf("npy: dtype %q; gpucc reads little-endian float32, float64, float16, int32, int64, uint8, int8, uint32, int16, uint16, uint64 and bool (<f4, <f8, <f2, <i4, <i8, |u1, |i1, <u4, <i2, <u2, <u8, |b1)", m[1])
	}
	f := fortranRE.FindStringSubmatch(h)
	if f == nil {
		return nil, 0, fmt.Errorf("npy: the header has no fortran_order: %.80q", h)
	}
	if f[1] == "True" {
		return nil, 0, errors.New("npy: the array is in Fortran order; save it in C order (numpy.ascontiguousarray)")
	}
	s := shapeRE.FindStringSubmatch(h)
	if s == nil {
		return nil, 0, fmt.Errorf("npy: the header has no shape: %.80q", h)
	}
	a := &Array{DType: dt.name, Shape: []int{}}
	n := int64(1)
	for _, d := range strings.Split(s[1], ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue // (3,) and ()
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(d, "L"), 10, 64)
		if err != nil || v < 0 {
			return nil, 0, fmt.Errorf("npy: shape dimension %q is not a count", d)
		}
		if v > maxElements || (v > 0 && n > maxElements/v) {
			return nil, 0, fmt.Errorf("npy: shape (%s) has more than %d elements (the limit)", s[1], maxElements)
		}
		n *= v
		a.Shape = append(a.Shape, int(v))
	}
	if len(a.Shape) > 32 {
		return nil, 0, fmt.Errorf("npy: rank %d (numpy's limit is 32)", len(a.Shape))
	}
	return a, dt.size, nil
}

// unexpected turns io.EOF into io.ErrUnexpectedEOF: the file ended early.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Carried returns a's values in gpucc's []int64 carrier (ir.Node.Ints):
// an integer or bool array's Int64, a float64 array's bits (ir.F64Bits).
func (a *Array) Carried() []int64 {
	if a.DType != "float64" {
		return a.Int64
	}
	out := make([]int64, len(a.Float64))
	for i, x := range a.Float64 {
		out[i] = ir.F64Bits(x)
	}
	return out
}

// FromCarried returns the array of gpucc dtype dt (not a float32-carried
// one) and shape holding carried values: float64's bits as Float64, the
// integers and bools as Int64.
func FromCarried(dt ir.DType, shape []int, carried []int64) *Array {
	a := &Array{DType: dt.String(), Shape: shape}
	if !dt.IsFloat64() {
		a.Int64 = carried
		return a
	}
	a.Float64 = make([]float64, len(carried))
	for i, b := range carried {
		a.Float64[i] = ir.F64Value(b)
	}
	return a
}
