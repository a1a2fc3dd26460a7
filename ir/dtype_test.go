package ir_test

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// TestDTypeTable: each dtype's size, name and class are TEAM's decision,
// and the names parse back.
func TestDTypeTable(t *testing.T) {
	want := []struct {
		t     ir.DType
		name  string
		size  int
		float bool
		int   bool
	}{
		{ir.F32, "float32", 4, true, false}, {ir.F16, "float16", 2, true, false}, {ir.BF16, "bfloat16", 2, true, false},
		{ir.I32, "int32", 4, false, true}, {ir.I64, "int64", 8, false, true}, {ir.U8, "uint8", 1, false, true},
		{ir.I8, "int8", 1, false, true}, {ir.U32, "uint32", 4, false, true}, {ir.Bool, "bool", 1, false, false},
		{ir.I16, "int16", 2, false, true}, {ir.U16, "uint16", 2, false, true}, {ir.U64, "uint64", 8, false, true},
		{ir.F64, "float64", 8, false, false},
	}
	if len(ir.AllDTypes()) != len(want) {
		t.Fatalf("%d dtypes, want %d", len(ir.AllDTypes()), len(want))
	}
	if got := ir.DTypes(); !slices.Equal(got, ir.AllDTypes()[:9]) {
		t.Errorf("DTypes() = %v, want the nine every target holds", got)
	}
	for _, d := range ir.AllDTypes() {
		if d.IsFloat64() != (d == ir.F64) {
			t.Errorf("%v: IsFloat64 %v", d, d.IsFloat64())
		}
	}
	for k, w := range want {
		if ir.DType(k) != w.t || w.t.String() != w.name || w.t.Size() != w.size || w.t.IsFloat() != w.float || w.t.IsInt() != w.int {
			t.Errorf("%d: got %v size %d float %v int %v, want %+v", k, w.t, w.t.Size(), w.t.IsFloat(), w.t.IsInt(), w)
		}
		if p, ok := ir.ParseDType(w.name); !ok || p != w.t {
			t.Errorf("ParseDType(%q) = %v, %v", w.name, p, ok)
		}
	}
	if _, ok := ir.ParseDType("f16"); ok {
		t.Error(`ParseDType("f16") accepted a name that is not numpy's`)
	}
	var zero ir.Node
	if zero.DType != ir.F32 {
		t.Error("the zero Node is not float32")
	}
}

// TestWrap: integer dtypes wrap in two's complement at their edges.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		t     ir.DType
		in, w int64
	}{
		{ir.I32, 1 << 31, -1 << 31}, {ir.I32, -1<<31 - 1, 1<<31 - 1}, {ir.I32, 1 << 32, 0},
		{ir.I64, math.MaxInt64, math.MaxInt64}, {ir.I64, math.MinInt64, math.MinInt64},
		{ir.U8, -1, 255}, {ir.U8, 256, 0}, {ir.I8, 128, -128}, {ir.I8, -129, 127},
		{ir.U32, -1, 1<<32 - 1}, {ir.U32, 1 << 32, 0}, {ir.Bool, 5, 1}, {ir.Bool, 0, 0},
	} {
		if got := c.t.Wrap(c.in); got != c.w {
			t.Errorf("%v.Wrap(%d) = %d, want %d", c.t, c.in, got, c.w)
		}
	}
}

// nearest returns the element of the sorted finite grid nearest to v, ties
// to the one whose bits (index) are even, and ±Inf at or beyond the
// overflow threshold inf (IEEE's: the largest finite plus half its ulp).
func nearest(grid []float64, v float64, inf float64) float64 {
	if math.Abs(v) >= inf {
		return math.Copysign(math.Inf(1), v)
	}
	i := sort.SearchFloat64s(grid, v)
	switch {
	case i < len(grid) && grid[i] == v:
		return v
	case i == 0: // beyond the largest finite, below the threshold
		return grid[0]
	case i == len(grid):
		return grid[i-1]
	}
	lo, hi := grid[i-1], grid[i]
	switch d1, d2 := v-lo, hi-v; {
	case d1 < d2:
		return lo
	case d2 < d1:
		return hi
	}
	// A tie: the even significand. Grid indices of one sign alternate
	// parity with the significand's last bit, and index 0 is -max (odd).
	if (i-1)%2 == 1 {
		return lo
	}
	return hi
}

// floatGrid returns every finite non-negative value of a binary16-like
// format from its bits decoder, and the negatives, sorted; a -0 is left out
// (v = 0 compares equal).
func floatGrid(dec func(uint16) float32, maxBits uint16) []float64 {
	var g []float64
	for h := uint16(1); h <= maxBits; h++ {
		g = append(g, float64(dec(h)), -float64(dec(h)))
	}
	g = append(g, 0)
	sort.Float64s(g)
	return g
}

// TestNarrowRounding: F16Round and BF16Round are the nearest value (ties
// to even, overflow to ±Inf) against an independent search of every finite
// value of the format, on 2^20 float32 bit patterns spread over the whole
// range and every midpoint of the format and its float32 neighbours;
// binary16's decoder round-trips every one of its 65,536 bit patterns.
func TestNarrowRounding(t *testing.T) {
	for h := range 1 << 16 {
		v := ir.F16Float(uint16(h))
		if got := ir.F16Bits(v); got != uint16(h) && !(v != v && got&0x7c00 == 0x7c00 && got&0x3ff != 0) {
			t.Fatalf("F16Bits(F16Float(%#04x)) = %#04x", h, got)
		}
	}
	formats := []struct {
		name  string
		round func(float32) float32
		dec   func(uint16) float32
		max   uint16  // bits of the largest finite value
		inf   float64 // overflow threshold
	}{
		{"float16", ir.F16Round, ir.F16Float, 0x7bff, 65520},
		{"bfloat16", ir.BF16Round, ir.BF16Float, 0x7f7f, float64(ir.BF16Float(0x7f7f)) + math.Ldexp(1, 127-8)},
	}
	for _, f := range formats {
		grid := floatGrid(f.dec, f.max)
		check := func(v float32) {
			got := f.round(v)
			if v != v {
				if got == got {
					t.Fatalf("%s: round(NaN) = %v", f.name, got)
				}
				return
			}
			want := nearest(grid, float64(v), f.inf)
			if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(float64(v)) {
				t.Fatalf("%s: round(%v [%#08x]) = %v, want %v", f.name, v, math.Float32bits(v), got, want)
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 1 << 20 {
			check(math.Float32frombits(r.Uint32()))
		}
		for k := 0; k+1 < len(grid); k++ {
			if math.IsInf(grid[k], 0) || math.IsInf(grid[k+1], 0) {
				continue
			}
			mid := float32((grid[k] + grid[k+1]) / 2) // exact: the formats are narrower than float32
			check(mid)
			check(math.Nextafter32(mid, float32(math.Inf(1))))
			check(math.Nextafter32(mid, float32(math.Inf(-1))))
		}
		for _, v := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 65504, 65519.99, 65520, 1e-8, 2.98e-8, 5.97e-8, -6.1e-5} {
			check(v)
		}
	}
}

// TestIntToFloat: an integer converts with one rounding from its exact
// value (big.Float's), where float32 first would tie wrongly.
func TestIntToFloat(t *testing.T) {
	vals := []int64{0, 1, -1, 2049, 65504, 65519, 65520, 1 << 24, 1<<24 + 1, 1<<31 + 1<<23 + 1, 1<<31 + 1<<23,
		math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32, -(1<<53 + 1)}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		vals = append(vals, int64(r.Uint64())>>r.IntN(64))
	}
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		p := map[ir.DType]uint{ir.F32: 24, ir.F16: 11, ir.BF16: 8}[dt]
		for _, v := range vals {
			want, _ := new(big.Float).SetPrec(p).SetMode(big.ToNearestEven).SetInt64(v).Float64()
			if dt == ir.F16 && math.Abs(want) > 65504 {
				want = math.Copysign(math.Inf(1), want)
			}
			if got := ir.IntToFloat(dt, v); float64(got) != want {
				t.Fatalf("IntToFloat(%v, %d) = %v, want %v", dt, v, got, want)
			}
		}
	}
	if got := ir.IntToFloat(ir.BF16, 1<<31+1<<23+1); got != 1<<31+1<<24 {
		t.Errorf("bfloat16 of 2^31+2^23+1 = %v, want 2^31+2^24 (a float32 step first ties it down)", got)
	}
}

// TestFloatToInt: truncation toward zero inside the range, refusal (not a
// value) outside it and for NaN and ±Inf, at every edge.
func TestFloatToInt(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		t  ir.DType
		v  float32
		w  int64
		ok bool
	}{
		{ir.I32, 2147483520, 2147483520, true}, {ir.I32, 2147483648, 0, false}, {ir.I32, -2147483648, -2147483648, true},
		{ir.I32, -2147483904, 0, false}, {ir.I32, -2.9, -2, true}, {ir.I32, 2.9, 2, true},
		{ir.I64, 0x1p63, 0, false}, {ir.I64, -0x1p63, math.MinInt64, true}, {ir.I64, 0x1p62, 1 << 62, true},
		{ir.U8, 255.9, 255, true}, {ir.U8, 256, 0, false}, {ir.U8, -0.9, 0, true}, {ir.U8, -1, 0, false},
		{ir.I8, -128.5, -128, true}, {ir.I8, 127.99, 127, true}, {ir.I8, 128, 0, false},
		{ir.U32, 4294967040, 4294967040, true}, {ir.U32, 4294967296, 0, false},
		{ir.I32, nan, 0, false}, {ir.I64, inf, 0, false}, {ir.U8, -inf, 0, false},
		{ir.Bool, nan, 1, true}, {ir.Bool, float32(math.Copysign(0, -1)), 0, true}, {ir.Bool, 1e-45, 1, true},
	} {
		got, ok := ir.FloatToInt(c.t, c.v)
		if ok != c.ok || ok && got != c.w {
			t.Errorf("FloatToInt(%v, %v) = %d, %v; want %d, %v", c.t, c.v, got, ok, c.w, c.ok)
		}
	}
}

// TestTypeRules: Validate checks every node against its row's type rule,
// and the Builder derives dtypes from it.
func TestTypeRules(t *testing.T) {
	b := ir.NewBuilder()
	i := b.TypedInput("i", ir.I32, ir.Shape{3}, nil, []int64{1, -2, 3})
	j := b.TypedInput("j", ir.I32, ir.Shape{3}, nil, []int64{4, 5, math.MinInt32})
	x := b.Input(ir.Shape{3}, []float32{1, 2, 3})
	b.Output("sum", i.Add(j))
	b.Output("gt", i.Apply(ir.OpGreater, j))
	b.Output("gt-f32", x.Apply(ir.OpGreater, x))
	b.Output("gt-bool", x.ApplyTo(ir.Bool, ir.OpGreater, x))
	b.Output("row", i.Broadcast(ir.Shape{2, 3}).SumAxes(false, 0))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]ir.DType{"sum": ir.I32, "gt": ir.Bool, "gt-f32": ir.F32, "gt-bool": ir.Bool, "row": ir.I32} {
		for _, o := range g.Outputs {
			if o.Name == name && g.Nodes[o.ID].DType != want {
				t.Errorf("%s: dtype %v, want %v", name, g.Nodes[o.ID].DType, want)
			}
		}
	}
	if err := passes.FloatOnly(g); !errors.Is(err, ir.ErrUnsupported) {
		t.Errorf("the compiler took a graph with int32 nodes: %v", err)
	}

	bad := []struct {
		name  string
		build func(b *ir.Builder)
		field string
	}{
		{"int plus float", func(b *ir.Builder) {
			b.Output("y", b.TypedInput("", ir.I32, ir.Shape{2}, nil, []int64{1, 2}).Add(b.Input(ir.Shape{2}, []float32{1, 2})))
		}, "b"},
		{"exp of int", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.I64, ir.Shape{2}, nil, []int64{1, 2}).Exp()) }, "a"},
		{"matmul of float16", func(b *ir.Builder) {
			h := b.TypedInput("", ir.F16, ir.Shape{2, 2}, []float32{1, 2, 3, 4}, nil)
			b.Output("y", h.MatMul(h))
		}, "a"},
		{"scalar form of int", func(b *ir.Builder) {
			b.Output("y", b.TypedInput("", ir.I32, ir.Shape{2}, nil, []int64{1, 2}).AddScalar(1))
		}, "a"},
		{"int input with float data", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.I32, ir.Shape{2}, []float32{1, 2}, nil)) }, "data"},
		{"uint8 out of range", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.U8, ir.Shape{2}, nil, []int64{1, 256})) }, "data"},
		{"bool of 2", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.Bool, ir.Shape{1}, nil, []int64{2})) }, "data"},
		{"float16 not rounded", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.F16, ir.Shape{1}, []float32{0.1}, nil)) }, "data"},
		{"float16 overflow", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.F16, ir.Shape{1}, []float32{70000}, nil)) }, "data"},
		{"bad dtype", func(b *ir.Builder) { b.Output("y", b.TypedInput("", ir.DType(99), ir.Shape{1}, []float32{1}, nil)) }, "dtype"},
	}
	for _, c := range bad {
		b := ir.NewBuilder()
		c.build(b)
		_, err := b.Build(ir.Limits{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeInvalidGraph || c.field != "" && e.Field != c.field {
			t.Errorf("%s: got %v, want invalid_graph on field %q", c.name, err, c.field)
		}
	}

	// A node that says the wrong dtype, as a decoded graph could.
	g2 := &ir.Graph{Nodes: []ir.Node{
		{Op: ir.OpInput, DType: ir.I64, Shape: ir.Shape{2}, Ints: []int64{1, 2}},
		{Op: ir.OpNeg, Args: []ir.NodeID{0}, Shape: ir.Shape{2}},
	}, Outputs: []ir.Output{{Name: "y", ID: 1}}}
	var e *ir.Error
	if err := ir.Validate(g2, ir.Limits{}); !errors.As(err, &e) || e.Field != "dtype" {
		t.Errorf("neg of int64 saying float32: %v", err)
	}
	g3 := &ir.Graph{Nodes: []ir.Node{{Op: ir.OpFull, DType: ir.I64, Shape: ir.Shape{2}, Ints: []int64{1, 2}}},
		Outputs: []ir.Output{{Name: "y", ID: 0}}}
	if err := ir.Validate(g3, ir.Limits{}); !errors.As(err, &e) || e.Field != "data" {
		t.Errorf("an int64 full of two values: %v", err)
	}
}

// TestStorageCountsDTypeBytes: the storage and output limits count each
// element at its dtype's size: 1000 int64 elements are 8000 bytes, 1000
// bools 1000.
func TestStorageCountsDTypeBytes(t *testing.T) {
	build := func(dt ir.DType, l ir.Limits) error {
		b := ir.NewBuilder()
		x := b.TypedInput("x", dt, ir.Shape{1000}, nil, make([]int64, 1000))
		b.Output("y", x)
		_, err := b.Build(l)
		return err
	}
	l := ir.Limits{MaxStorageBytes: 7999}
	if err := build(ir.I64, l); !errors.Is(err, ir.ErrLimitExceeded) {
		t.Errorf("int64 storage of 8000 bytes under a 7999 limit: %v", err)
	}
	if err := build(ir.I64, ir.Limits{MaxStorageBytes: 8000}); err != nil {
		t.Errorf("int64 storage of 8000 bytes under an 8000 limit: %v", err)
	}
	if err := build(ir.Bool, ir.Limits{MaxStorageBytes: 1000, MaxOutputBytes: 1000}); err != nil {
		t.Errorf("1000 bools under 1000 bytes: %v", err)
	}
	if err := build(ir.U8, ir.Limits{MaxStorageBytes: 1000, MaxOutputBytes: 999}); !errors.Is(err, ir.ErrLimitExceeded) {
		t.Errorf("1000 uint8 outputs under 999 bytes: %v", err)
	}
}
