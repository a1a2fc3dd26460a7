package cpuref_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestSixteenBitRows: int16 and uint16 wrap at their edges as numpy's do
// (32767 + 1 is -32768, 0 - 1 is 65535 in uint16), divide and take Mod by
// ONNX's rules, shift by the width or more to 0, and divide by zero with
// no answer (integer_fault).
func TestSixteenBitRows(t *testing.T) {
	for _, c := range []struct {
		op      ir.Op
		dt      ir.DType
		a, b    []int64
		want    []int64
		wantOut ir.DType
	}{
		{ir.OpAdd, ir.I16, []int64{32767, -32768, -1}, []int64{1, -1, 1}, []int64{-32768, 32767, 0}, ir.I16},
		{ir.OpMul, ir.I16, []int64{256, -32768, 181}, []int64{128, -1, 181}, []int64{-32768, -32768, 32761}, ir.I16},
		{ir.OpDiv, ir.I16, []int64{-32768, -7, 7}, []int64{-1, 2, -2}, []int64{-32768, -3, -3}, ir.I16},
		{ir.OpMod, ir.I16, []int64{-7, 7, -32768}, []int64{2, -2, 32767}, []int64{1, -1, 32766}, ir.I16},
		{ir.OpNeg, ir.I16, []int64{-32768, 5, 0}, nil, []int64{-32768, -5, 0}, ir.I16},
		{ir.OpSub, ir.U16, []int64{0, 65535, 1}, []int64{1, 0, 65535}, []int64{65535, 65535, 2}, ir.U16},
		{ir.OpAdd, ir.U16, []int64{65535, 32768}, []int64{1, 32768}, []int64{0, 0}, ir.U16},
		{ir.OpShiftLeft, ir.U16, []int64{1, 1, 65535}, []int64{15, 16, 1}, []int64{32768, 0, 65534}, ir.U16},
		{ir.OpShiftRight, ir.U16, []int64{65535, 65535, 32768}, []int64{15, 16, 15}, []int64{1, 0, 1}, ir.U16},
		{ir.OpMaximum, ir.U16, []int64{65535, 0}, []int64{0, 1}, []int64{65535, 1}, ir.U16},
		{ir.OpGreater, ir.I16, []int64{-32768, 32767}, []int64{32767, -32768}, []int64{0, 1}, ir.Bool},
		{ir.OpBitNot, ir.U16, []int64{0, 65535}, nil, []int64{65535, 0}, ir.U16},
	} {
		v, err := evalOne(t, c.op, c.dt, c.a, c.b)
		if err != nil || v.DType != c.wantOut || !slices.Equal(v.I, c.want) {
			t.Errorf("%v of %v %v, %v: %v %v (%v), want %v", c.op, c.dt, c.a, c.b, v.DType, v.I, err, c.want)
		}
	}
	for _, dt := range []ir.DType{ir.I16, ir.U16, ir.U64} {
		_, err := evalOne(t, ir.OpDiv, dt, []int64{5}, []int64{0})
		if !errors.Is(err, ir.ErrIntegerFault) {
			t.Errorf("%v division by zero: %v, want integer_fault", dt, err)
		}
	}
}

// TestUint64Carrier: uint64 computes in int64's bits, which are uint64's
// own below 2^63; a result of 2^63 or more (an add's carry into the top
// bit, 0 - 1, a shift into it, ^x, a sum) is refused by name
// (unsupported), never returned as a negative int64.
func TestUint64Carrier(t *testing.T) {
	max := int64(math.MaxInt64)
	for _, c := range []struct {
		op   ir.Op
		a, b []int64
		want []int64
	}{
		{ir.OpAdd, []int64{max - 1, 0}, []int64{1, max}, []int64{max, max}},
		{ir.OpMul, []int64{1 << 31, 3}, []int64{1 << 31, max / 3}, []int64{1 << 62, max - 1}},
		{ir.OpShiftRight, []int64{max, max}, []int64{62, 63}, []int64{1, 0}},
		{ir.OpShiftLeft, []int64{1, 1}, []int64{62, 64}, []int64{1 << 62, 0}},
		{ir.OpMod, []int64{max, 7}, []int64{10, max}, []int64{7, 7}},
		{ir.OpMinimum, []int64{max, 0}, []int64{1, max}, []int64{1, 0}},
	} {
		v, err := evalOne(t, c.op, ir.U64, c.a, c.b)
		if err != nil || !slices.Equal(v.I, c.want) {
			t.Errorf("%v of uint64 %v, %v: %v (%v), want %v", c.op, c.a, c.b, v.I, err, c.want)
		}
	}
	for _, c := range []struct {
		op   ir.Op
		a, b []int64
	}{
		{ir.OpAdd, []int64{max}, []int64{1}},
		{ir.OpSub, []int64{0}, []int64{1}},
		{ir.OpMul, []int64{1 << 32}, []int64{1 << 31}},
		{ir.OpShiftLeft, []int64{1}, []int64{63}},
		{ir.OpBitNot, []int64{0}, nil},
	} {
		_, err := evalOne(t, c.op, ir.U64, c.a, c.b)
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || e.Node != 2 && c.b != nil || e.Node != 1 && c.b == nil {
			t.Errorf("%v of uint64 %v, %v: %v, want unsupported naming the node", c.op, c.a, c.b, err)
		}
	}
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.U64, ir.Shape{2}, nil, []int64{max, 1})
	b.Output("s", x.Apply(ir.OpSum))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpuref.EvalTyped(g); !errors.Is(err, ir.ErrUnsupported) {
		t.Errorf("a uint64 sum past 2^63-1: %v, want unsupported", err)
	}
}

// TestFloat64Rows: float64 values compute by their rows' float64 meaning
// in IEEE binary64, bit for bit: 0.1 + 0.2 is 0.30000000000000004, a sum
// follows the reference's pairwise tree (which gives 0 for [1e16, 1,
// -1e16, 1] where a left-to-right sum gives 1), maximum propagates NaN
// and orders -0 below +0, a comparison gives bool, exp and log are the
// reference's own (Exp64, Log64: e^709.7 is 1.6549840276802644e308, the
// nearest float64, where amd64's math.Exp overflows to +Inf), a float64
// subnormal is kept.
func TestFloat64Rows(t *testing.T) {
	f := ir.F64Bits
	bits := func(xs ...float64) []int64 {
		out := make([]int64, len(xs))
		for i, x := range xs {
			out[i] = f(x)
		}
		return out
	}
	nan, negz := math.NaN(), math.Copysign(0, -1)
	add := func(a, b float64) float64 { return a + b } // at run time: Go folds constant expressions exactly
	// same is bit equality, any NaN matching any NaN (Go's 0/0 and
	// math.NaN() differ in bits; IEEE leaves a result NaN's payload open).
	same := func(x, y []int64) bool {
		return slices.EqualFunc(x, y, func(a, b int64) bool {
			return a == b || math.IsNaN(ir.F64Value(a)) && math.IsNaN(ir.F64Value(b))
		})
	}
	for _, c := range []struct {
		op      ir.Op
		a, b    []int64
		want    []int64
		wantOut ir.DType
	}{
		{ir.OpAdd, bits(0.1, 0x1p-1074, math.MaxFloat64), bits(0.2, 0x1p-1074, math.MaxFloat64), bits(add(0.1, 0.2), 0x1p-1073, math.Inf(1)), ir.F64},
		{ir.OpSub, bits(1, negz), bits(1, 0), bits(0, negz), ir.F64},
		{ir.OpMul, bits(1e200, 0x1p-1022), bits(1e200, 0.5), bits(math.Inf(1), 0x1p-1023), ir.F64},
		{ir.OpDiv, bits(1, 1, 0), bits(3, negz, 0), []int64{f(1.0 / 3), f(math.Inf(-1)), int64(math.Float64bits(nan))}, ir.F64},
		{ir.OpMaximum, bits(negz, 1, nan), bits(0, nan, 1), bits(0, nan, nan), ir.F64},
		{ir.OpMinimum, bits(negz, -1e308), bits(0, -1e307), bits(negz, -1e308), ir.F64},
		{ir.OpNeg, bits(0, math.Inf(1)), nil, bits(negz, math.Inf(-1)), ir.F64},
		{ir.OpExp, bits(1, 709.7, -745.2), nil, bits(math.E, 1.6549840276802644e+308, 0), ir.F64}, // e^709.7 is finite: amd64's math.Exp says +Inf
		{ir.OpLog, bits(2, 0, -1), nil, bits(math.Ln2, math.Inf(-1), nan), ir.F64},
		{ir.OpSqrt, bits(2, negz), nil, bits(math.Sqrt2, negz), ir.F64},
		{ir.OpPow, bits(2, -8, 3), bits(0.5, 1.0/3, 6), bits(math.Sqrt2, nan, 729), ir.F64},
		{ir.OpGreater, bits(1+0x1p-52, nan), bits(1, nan), []int64{1, 0}, ir.Bool},
		{ir.OpEqual, bits(0, nan), bits(negz, nan), []int64{1, 0}, ir.Bool},
	} {
		v, err := evalNonFinite(t, c.op, ir.F64, c.a, c.b)
		if err != nil || v.DType != c.wantOut || !same(v.I, c.want) {
			t.Errorf("%v of float64: %v %v (%v), want %v", c.op, v.DType, v.I, err, c.want)
		}
	}
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F64, ir.Shape{2, 4}, nil, bits(1e16, 1, -1e16, 1, -1, nan, 3, 2))
	b.Output("s", x.SumAxes(false, 1))
	b.Output("m", x.Apply(ir.OpMax))
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	tree := add(add(1e16, 1), add(-1e16, 1))
	if s := vals[g.Outputs[0].ID]; !same(s.I, []int64{f(tree), f(nan)}) || tree != 0 {
		t.Errorf("float64 sums %v (%v, %v), want the tree's %v and NaN", s.I, ir.F64Value(s.I[0]), ir.F64Value(s.I[1]), tree)
	}
	if m := vals[g.Outputs[1].ID]; len(m.I) != 1 || !math.IsNaN(ir.F64Value(m.I[0])) {
		t.Errorf("float64 max %v, want NaN", m.I)
	}
}

// TestFloat64Cast: a cast to and from float64 in a graph is ir.Convert's:
// a float64 rounds once to float16 (a tie-breaker below float32's
// precision kept), int64's largest value becomes 2^63, and NaN to an
// integer fails the run (integer_fault).
func TestFloat64Cast(t *testing.T) {
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F64, ir.Shape{2}, nil, []int64{ir.F64Bits(1 + 0x1p-11 + 0x1p-40), ir.F64Bits(-65519.99)})
	i := b.TypedInput("i", ir.I64, ir.Shape{1}, nil, []int64{math.MaxInt64})
	b.Output("h", x.Cast(ir.F16))
	b.Output("d", i.Cast(ir.F64))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	if h := vals[g.Outputs[0].ID]; !slices.Equal(h.F, []float32{1 + 0x1p-10, -65504}) {
		t.Errorf("float64 to float16: %v", h.F)
	}
	if d := vals[g.Outputs[1].ID]; !slices.Equal(d.I, []int64{ir.F64Bits(0x1p63)}) {
		t.Errorf("int64 max to float64: %v", d.I)
	}
	b = ir.NewBuilder()
	z := b.TypedInput("z", ir.F64, ir.Shape{1}, nil, []int64{ir.F64Bits(0)})
	b.Output("n", z.Div(z).Cast(ir.I32))
	g, err = b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpuref.EvalTyped(g); !errors.Is(err, ir.ErrIntegerFault) {
		t.Errorf("float64 NaN to int32: %v, want integer_fault", err)
	}
}

// evalNonFinite is evalOne under a host that admits ±Inf and NaN inputs.
func evalNonFinite(t *testing.T, op ir.Op, dt ir.DType, a, b []int64) (cpuref.Value, error) {
	t.Helper()
	bl := ir.NewBuilder()
	s := ir.Shape{len(a)}
	x := bl.TypedInput("a", dt, s, nil, a)
	var y ir.Tensor
	if b != nil {
		y = x.ApplyTo(ir.Bool, op, bl.TypedInput("b", dt, s, nil, b))
	} else {
		y = x.Apply(op)
	}
	bl.Output("y", y)
	g, err := bl.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatalf("%v of %v: %v", op, dt, err)
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		return cpuref.Value{}, err
	}
	return vals[g.Outputs[0].ID], nil
}
