package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// save writes what numpy.save writes (format 1.0): the magic, the header
// dict padded with spaces to a multiple of 64 bytes and ended by a
// newline, then the data.
func save(descr string, shape []int, fortran bool, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	s := strings.Join(dims, ", ")
	if len(shape) == 1 {
		s += ","
	}
	f := "False"
	if fortran {
		f = "True"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr, f, s)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := []byte("\x93NUMPY\x01\x00")
	out = binary.LittleEndian.AppendUint16(out, uint16(len(h)))
	return append(append(out, h...), data...)
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// TestRead: each dtype numpy writes for these arrays reads back to its
// values and shape, a scalar of shape ().
func TestRead(t *testing.T) {
	neg := int64(-3) // variables: Go refuses a negative constant as uint
	cases := []struct {
		file []byte
		want Array
	}{
		{save("<f4", []int{3}, false, le32(math.Float32bits(1.5), math.Float32bits(-2), 0x80000000)),
			Array{DType: "float32", Shape: []int{3}, Float32: []float32{1.5, -2, float32(math.Copysign(0, -1))}}},
		{save("<i8", nil, false, le64(16000)), Array{DType: "int64", Shape: []int{}, Int64: []int64{16000}}},
		{save("<i8", []int{1, 2}, false, le64(uint64(neg), 1<<40)), Array{DType: "int64", Shape: []int{1, 2}, Int64: []int64{-3, 1 << 40}}},
		{save("<i4", []int{2}, false, le32(uint32(int32(neg)-4), 9)), Array{DType: "int32", Shape: []int{2}, Int64: []int64{-7, 9}}},
		{save("|b1", []int{1, 2}, false, []byte{1, 0}), Array{DType: "bool", Shape: []int{1, 2}, Int64: []int64{1, 0}}},
		{save("<f8", []int{1}, false, le64(math.Float64bits(0.1))), Array{DType: "float64", Shape: []int{1}, Float64: []float64{0.1}}},
		{save("<f4", []int{2, 0}, false, nil), Array{DType: "float32", Shape: []int{2, 0}, Float32: []float32{}}},
	}
	for _, c := range cases {
		a, err := Read(bytes.NewReader(c.file), 1<<20)
		if err != nil {
			t.Errorf("%s %v: %v", c.want.DType, c.want.Shape, err)
			continue
		}
		if a.DType != c.want.DType || !slices.Equal(a.Shape, c.want.Shape) || !slices.Equal(a.Int64, c.want.Int64) ||
			!slices.EqualFunc(a.Float32, c.want.Float32, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) ||
			!slices.Equal(a.Float64, c.want.Float64) {
			t.Errorf("read %+v, want %+v", *a, c.want)
		}
	}
}

// TestReadRefuses: what gpucc does not read is an error naming it.
func TestReadRefuses(t *testing.T) {
	good := save("<f4", []int{2}, false, le32(1, 2))
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"not npy", []byte("PK\x03\x04 a zip file"), "not a .npy"},
		{"big-endian", save(">f4", []int{2}, false, le32(1, 2)), `dtype ">f4"`},
		{"object", save("|O", []int{2}, false, nil), `dtype "|O"`},
		{"complex64", save("<c8", []int{1}, false, make([]byte, 8)), `dtype "<c8"`},
		{"fortran", save("<f4", []int{2}, true, le32(1, 2)), "Fortran"},
		{"truncated", good[:len(good)-1], "unexpected EOF"},
		{"trailing", append(slices.Clone(good), 0), "bytes after"},
		{"bool 2", save("|b1", []int{1}, false, []byte{2}), "bool value 2"},
		{"too large", save("<f4", []int{1 << 11, 1 << 10}, false, nil), "more than 1048576 elements"},
		{"overflow", save("<f4", []int{1 << 40, 1 << 40}, false, nil), "more than"},
		{"negative", []byte(strings.Replace(string(save("<f4", []int{2}, false, le32(1, 2))), "(2,)", "(-2)", 1)), "not a count"},
		{"version 9", append([]byte("\x93NUMPY\x09\x00"), good[8:]...), "version 9"},
	}
	for _, c := range cases {
		_, err := Read(bytes.NewReader(c.file), 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// FuzzRead: any bytes give an array or an error, never a panic, and never
// more elements than the bound or values that disagree with the shape.
func FuzzRead(f *testing.F) {
	f.Add(save("<f4", []int{3}, false, le32(1, 2, 3)))
	f.Add(save("<i8", nil, false, le64(16000)))
	f.Add(save("|b1", []int{2, 1}, false, []byte{1, 0}))
	f.Add([]byte("\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '<i4'}"))
	// float64: a signalling NaN's payload, -0, the least subnormal, the
	// largest finite and -Inf, whose bits the round trip keeps; float16's
	// signalling NaN, -0 and -Inf.
	f.Add(save("<f8", []int{5}, false, le64(0x7ff0000000000001, 1<<63, 1, 0x7fefffffffffffff, 0xfff0000000000000)))
	f.Add(save("<f8", []int{}, false, le64(0x7ff8000000000000)))
	f.Add(save("<f2", []int{3}, false, []byte{0x01, 0x7c, 0x00, 0x80, 0x00, 0xfc}))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b), 4096)
		if err != nil {
			return
		}
		n := 1
		for _, d := range a.Shape {
			n *= d
		}
		if n > 4096 || len(a.Float32)+len(a.Float64)+len(a.Int64) != n {
			t.Fatalf("%d values for shape %v", len(a.Float32)+len(a.Float64)+len(a.Int64), a.Shape)
		}
		// What reads writes back, and reads again to the same bits, but
		// for a float16 NaN's payload, which Write does not keep (0x7c01
		// reads as float32's 0x7f802000, which writes and reads back as
		// another NaN): a NaN's payload is the hardware's (float64.go).
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("Write of a read array: %v", err)
		}
		b2, err := Read(bytes.NewReader(buf.Bytes()), 4096)
		if err != nil {
			t.Fatalf("Read of Write's file: %v", err)
		}
		if a.DType == "float16" {
			for i, v := range a.Float32 {
				if v != v && b2.Float32[i] != b2.Float32[i] {
					a.Float32[i], b2.Float32[i] = 0, 0
				}
			}
		}
		if !sameBits(a, b2) {
			t.Fatalf("round trip: %+v, then %+v", a, b2)
		}
	})
}

// sameBits reports whether a and b have one dtype, shape and values, bit
// for bit (NaN payloads and -0 included).
func sameBits(a, b *Array) bool {
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) || !slices.Equal(a.Int64, b.Int64) ||
		len(a.Float32) != len(b.Float32) || len(a.Float64) != len(b.Float64) {
		return false
	}
	for i := range a.Float32 {
		if math.Float32bits(a.Float32[i]) != math.Float32bits(b.Float32[i]) {
			return false
		}
	}
	for i := range a.Float64 {
		if math.Float64bits(a.Float64[i]) != math.Float64bits(b.Float64[i]) {
			return false
		}
	}
	return true
}

// TestWrite: Write gives numpy.save's bytes for each dtype and rank
// (format 1.0, the header padded to 64 bytes), and refuses values its
// dtype cannot hold or a count that is not the shape's.
func TestWrite(t *testing.T) {
	nan := math.Float32frombits(0x7fc00001)
	cases := []struct {
		a    *Array
		want []byte
	}{
		{&Array{DType: "float32", Shape: []int{2, 2}, Float32: []float32{1, float32(math.Copysign(0, -1)), nan, 3.5}}, save("<f4", []int{2, 2}, false, le32(0x3f800000, 0x80000000, 0x7fc00001, 0x40600000))},
		{&Array{DType: "float32", Shape: []int{}, Float32: []float32{2}}, save("<f4", nil, false, le32(0x40000000))},
		{&Array{DType: "float64", Shape: []int{1}, Float64: []float64{1}}, save("<f8", []int{1}, false, le64(0x3ff0000000000000))},
		{&Array{DType: "int32", Shape: []int{2}, Int64: []int64{-1, 7}}, save("<i4", []int{2}, false, le32(0xffffffff, 7))},
		{&Array{DType: "int64", Shape: []int{1, 1, 1}, Int64: []int64{16000}}, save("<i8", []int{1, 1, 1}, false, le64(16000))},
		{&Array{DType: "bool", Shape: []int{3}, Int64: []int64{1, 0, 1}}, save("|b1", []int{3}, false, []byte{1, 0, 1})},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := Write(&buf, c.a); err != nil {
			t.Errorf("%s %v: %v", c.a.DType, c.a.Shape, err)
			continue
		}
		if !bytes.Equal(buf.Bytes(), c.want) {
			t.Errorf("%s %v:\n%q\nwant\n%q", c.a.DType, c.a.Shape, buf.Bytes(), c.want)
		}
		back, err := Read(&buf, 1<<20)
		if err != nil || !sameBits(back, c.a) {
			t.Errorf("%s %v read back: %+v, %v", c.a.DType, c.a.Shape, back, err)
		}
	}
	for _, a := range []*Array{
		{DType: "complex64", Shape: []int{1}, Float32: []float32{1}},
		{DType: "float16", Shape: []int{1}, Float32: []float32{0.1}},
		{DType: "uint8", Shape: []int{1}, Int64: []int64{256}},
		{DType: "int8", Shape: []int{1}, Int64: []int64{-129}},
		{DType: "uint32", Shape: []int{1}, Int64: []int64{-1}},
		{DType: "float32", Shape: []int{3}, Float32: []float32{1, 2}},
		{DType: "int32", Shape: []int{1}, Int64: []int64{1 << 31}},
		{DType: "bool", Shape: []int{1}, Int64: []int64{2}},
		{DType: "float32", Shape: []int{-1}},
	} {
		if err := Write(io.Discard, a); err == nil {
			t.Errorf("Write(%+v) = nil, want an error", a)
		}
	}
}

// TestNumpyAgrees: numpy.load reads what Write writes, and Read what
// numpy.save writes, with the same bits (skipped without python3-numpy).
func TestNumpyAgrees(t *testing.T) {
	py := ""
	for _, c := range []string{"/usr/bin/python3", "python3"} { // Debian's python3-numpy first
		if p, err := exec.LookPath(c); err == nil && exec.Command(p, "-c", "import numpy").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with numpy")
	}
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.npy")
	var buf bytes.Buffer
	if err := Write(&buf, &Array{DType: "float32", Shape: []int{2, 3}, Float32: []float32{1, -2, 0.5, 3e38, float32(math.Copysign(0, -1)), 1e-45}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ours, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.npy")
	script := `import numpy as np, sys
a = np.load(sys.argv[1])
assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)
assert a.tobytes() == np.array([1, -2, 0.5, 3e38, -0.0, 1e-45], np.float32).reshape(2, 3).tobytes()
np.save(sys.argv[2], np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
`
	if out, err := exec.Command(py, "-c", script, ours, theirs).CombinedOutput(); err != nil {
		t.Fatalf("numpy on Write's file: %v\n%s", err, out)
	}
	f, err := os.Open(theirs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := Read(f, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != "float32" || !slices.Equal(a.Shape, []int{3, 4}) || a.Float32[5] != float32(5)/7 {
		t.Errorf("numpy.save's file read as %+v", a)
	}
}

// TestNarrowDTypes: float16, uint8, int8 and uint32 arrays (the node
// tests' and the models' other dtypes) round-trip through Write and Read
// at their limits, each value its own bits: a float16's ±0, subnormal,
// largest finite value, ±Inf and NaN.
func TestNarrowDTypes(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, a := range []*Array{
		{DType: "float16", Shape: []int{8}, Float32: []float32{0, float32(math.Copysign(0, -1)), 5.960464477539063e-08, 65504, -65504, inf, -inf, float32(math.NaN())}},
		{DType: "uint8", Shape: []int{2, 2}, Int64: []int64{0, 1, 254, 255}},
		{DType: "int8", Shape: []int{3}, Int64: []int64{-128, 0, 127}},
		{DType: "uint32", Shape: []int{2}, Int64: []int64{0, math.MaxUint32}},
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
}

// TestReadClaimsMore: a header that claims more values than the file
// holds is refused as truncated, allocating about what the file holds:
// a 128-byte file claiming 2^20 float64 values allocated their 8 MiB
// before it read the first.
func TestReadClaimsMore(t *testing.T) {
	for _, n := range []int{0, 8, 1 << 16, 3<<16 + 5} {
		file := save("<f8", []int{1 << 20}, false, make([]byte, n))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Read(bytes.NewReader(file), 1<<20)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Errorf("%d bytes of 2^23: %v, want unexpected EOF", n, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 4*uint64(len(file))+128<<10 {
			t.Errorf("%d bytes of 2^23 allocated %d", n, d)
		}
	}
	// Whole files read as before, at and around the growth's steps.
	for _, n := range []int{1, 8191, 8192, 8193, 1 << 17} {
		vs := make([]uint64, n)
		for i := range vs {
			vs[i] = uint64(i) * 0x9e3779b97f4a7c15
		}
		a, err := Read(bytes.NewReader(save("<i8", []int{n}, false, le64(vs...))), 1<<20)
		if err != nil || len(a.Int64) != n || uint64(a.Int64[n-1]) != vs[n-1] {
			t.Errorf("%d int64 values: %v", n, err)
		}
	}
}
