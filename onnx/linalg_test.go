package onnx_test

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestDetCofactors: Det of 1×1, 2×2 and 3×3 matrices is the cofactor
// expansion in float32, bit for bit; 4×4 is refused by name.
func TestDetCofactors(t *testing.T) {
	m := []float32{2, -1, 0.5, 3, 1e-3, 7, -4, 2.5, 1e20}
	f := func(k int) float32 { return m[k] }
	want := map[int64]float32{
		1: m[0],
		2: f(0)*f(3) - f(1)*f(2),
		3: f(0)*(f(4)*f(8)-f(5)*f(7)) - f(1)*(f(3)*f(8)-f(5)*f(6)) + f(2)*(f(3)*f(7)-f(4)*f(6)),
	}
	for n, w := range want {
		raw := model(11, graph([]msg{node("Det", "d", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", n, n)}, []msg{valueInfo("y")}))
		res, err := runModel(t, raw, map[string][]float32{"x": m[:n*n]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["y"].Data[0]; math.Float32bits(got) != math.Float32bits(w) {
			t.Errorf("det of %d×%d = %g, want %g", n, n, got, w)
		}
	}
	raw := model(11, graph([]msg{node("Det", "d", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", 4, 4)}, []msg{valueInfo("y")}))
	if _, err := onnx.Load(bytes.NewReader(raw), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("det of 4×4: %v, want unsupported", err)
	}
}

// TestDFTRoundTrip: the DFT of an impulse is all ones (imaginary parts
// ±0), and the inverse DFT of a signal's DFT gives the signal back within
// float32's rounding, along either axis.
func TestDFTRoundTrip(t *testing.T) {
	const n = 7
	x := make([]float32, 2*n)
	for i := range x {
		x[i] = float32(math.Sin(float64(3*i+1))) * 4
	}
	for _, axis := range []int64{1, 2} {
		shape := []int64{1, n, 1, 2}
		if axis == 2 {
			shape = []int64{1, 1, n, 2}
		}
		fwd := node("DFT", "f", []string{"x"}, []string{"X"}, attrInt("axis", axis))
		inv := node("DFT", "i", []string{"X"}, []string{"y"}, attrInt("axis", axis), attrInt("inverse", 1))
		raw := model(17, graph([]msg{fwd, inv}, nil, []msg{valueInfo("x", shape...)}, []msg{valueInfo("X", shape...), valueInfo("y", shape...)}))
		res, err := runModel(t, raw, map[string][]float32{"x": x}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range res.Outputs["y"].Data {
			if math.Abs(float64(v-x[i])) > 1e-5 {
				t.Errorf("axis %d: inverse(DFT(x))[%d] = %g, x %g", axis, i, v, x[i])
			}
		}
		imp := make([]float32, 2*n)
		imp[0] = 1
		res, err = runModel(t, raw, map[string][]float32{"x": imp}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range n {
			if re, im := res.Outputs["X"].Data[2*k], res.Outputs["X"].Data[2*k+1]; re != 1 || im != 0 {
				t.Errorf("axis %d: DFT(impulse)[%d] = %g%+gi, want 1", axis, k, re, im)
			}
		}
	}
}

// TestPowIntegerBase: Pow of run-time int64 and int32 bases by integer
// exponents wraps as numpy's integer power (2^62, 3^40 and 3^(2^33+1) in
// int32), a negative exponent gives the truncated power (1, ±1, 0), and
// 0 to a negative power fails the run with a code.
func TestPowIntegerBase(t *testing.T) {
	wrapPow := func(x, y int64, bits uint) int64 { // squaring, wrapping at bits
		r, b := int64(1), x
		for ; y > 0; y >>= 1 {
			if y&1 != 0 {
				r *= b
			}
			b *= b
		}
		if bits == 32 {
			return int64(int32(r))
		}
		return r
	}
	for _, c := range []struct {
		et   onnx.DataType
		bits uint
	}{{onnx.Int64, 64}, {onnx.Int32, 32}} {
		xs := []int64{2, 3, -3, -1, -1, 2, 1, 5, 7}
		ys := []int64{30, 40, 7, 3, -3, -1, -5, 0, 1<<33 + 1}
		want := []int64{wrapPow(2, 30, c.bits), wrapPow(3, 40, c.bits), wrapPow(-3, 7, c.bits), -1, -1, 0, 1, 1, wrapPow(7, 1<<33+1, c.bits)}
		if c.bits == 64 {
			xs[0], ys[0], want[0] = 2, 62, 1<<62
		}
		n := int64(len(xs))
		raw := model(15, graph([]msg{node("Pow", "p", []string{"x", "y"}, []string{"z"})}, nil,
			[]msg{typedValueInfo("x", int64(c.et), n), typedValueInfo("y", int64(onnx.Int64), n)}, []msg{typedValueInfo("z", int64(c.et), n)}))
		res, err := runModel(t, raw, nil, map[string][]int64{"x": xs, "y": ys})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["z"].Ints; !slices.Equal(got, want) {
			t.Errorf("%v: %v, want %v", c.et, got, want)
		}
		xs[0], ys[0] = 0, -1
		if _, err := runModel(t, raw, nil, map[string][]int64{"x": xs, "y": ys}); err == nil || gpucc.CodeOf(err) == ir.CodeInternal {
			t.Errorf("%v: 0^-1: %v, want a run failing with a code", c.et, err)
		}
	}
}

// TestPadGather: edge and reflect pads of run-time int64 values at its
// ends move them unchanged; a run-time constant value fills the border.
func TestPadGather(t *testing.T) {
	x := []int64{math.MinInt64, 1, math.MaxInt64, -1}
	for _, c := range []struct {
		mode string
		want []int64
	}{
		{"edge", []int64{math.MinInt64, math.MinInt64, 1, 1, math.MaxInt64, math.MaxInt64, -1, -1}},
		{"reflect", []int64{1, math.MinInt64, 1, math.MinInt64, -1, math.MaxInt64, -1, math.MaxInt64}},
	} {
		raw := model(13, graph([]msg{node("Pad", "p", []string{"x", "pads"}, []string{"y"}, attrStr("mode", c.mode))}, []msg{int64s("pads", []int64{4}, 0, 1, 0, 1)},
			[]msg{typedValueInfo("x", int64(onnx.Int64), 2, 2)}, []msg{typedValueInfo("y", int64(onnx.Int64), 2, 4)}))
		res, err := runModel(t, raw, nil, map[string][]int64{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["y"].Ints; !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.mode, got, c.want)
		}
	}
	raw := model(13, graph([]msg{node("Pad", "p", []string{"x", "pads", "v"}, []string{"y"})}, []msg{int64s("pads", []int64{4}, 0, 1, 0, 0)},
		[]msg{typedValueInfo("x", int64(onnx.Int64), 2, 2), typedValueInfo("v", int64(onnx.Int64))}, []msg{typedValueInfo("y", int64(onnx.Int64), 2, 3)}))
	res, err := runModel(t, raw, nil, map[string][]int64{"x": x, "v": {math.MinInt64}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Outputs["y"].Ints, []int64{math.MinInt64, math.MinInt64, 1, math.MinInt64, math.MaxInt64, -1}; !slices.Equal(got, want) {
		t.Errorf("constant: %v, want %v", got, want)
	}
}
