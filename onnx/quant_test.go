package onnx_test

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// runModel imports raw with every input at run time, sets them (floats
// for float32, ints otherwise) and runs it on cpu.
func runModel(t *testing.T, raw []byte, floats map[string][]float32, ints map[string][]int64) (*gpucc.Result, error) {
	t.Helper()
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{TypedOutputs: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range floats {
		g.Nodes[g.Input(name)].Data = v
	}
	for name, v := range ints {
		g.Nodes[g.Input(name)].Ints = v
	}
	return gpucc.Run(context.Background(), g, gpucc.Options{Limits: ir.Limits{NonFinite: true}})
}

// TestQuantizeLinearLimits: QuantizeLinear rounds x / scale to even,
// adds the zero point and saturates to uint8's and int8's range (±1e30
// and ±Inf to the ends); NaN fails the run with a code instead of a
// made-up integer.
func TestQuantizeLinearLimits(t *testing.T) {
	inf := float32(math.Inf(1))
	xs := []float32{0.5, 1.5, 2.5, -0.5, -1.5, 1e30, -1e30, 254.6, inf, -inf, 127.5, -130}
	for _, c := range []struct {
		et     onnx.DataType
		scale  float32
		zp     int64
		lo, hi int64
	}{{onnx.Uint8, 1, 0, 0, 255}, {onnx.Uint8, 0.5, 3, 0, 255}, {onnx.Int8, 1, -3, -128, 127}, {onnx.Int8, 2, 0, -128, 127}} {
		n := int64(len(xs))
		raw := model(13, graph([]msg{node("QuantizeLinear", "q", []string{"x", "s", "z"}, []string{"y"})}, nil,
			[]msg{valueInfo("x", n), valueInfo("s"), typedValueInfo("z", int64(c.et))}, []msg{typedValueInfo("y", int64(c.et), n)}))
		res, err := runModel(t, raw, map[string][]float32{"x": xs, "s": {c.scale}}, map[string][]int64{"z": {c.zp}})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Outputs["y"].Ints
		for i, x := range xs {
			q := float64(float32(math.RoundToEven(float64(x/c.scale)))) + float64(c.zp)
			want := int64(max(float64(c.lo), min(float64(c.hi), q)))
			if got[i] != want {
				t.Errorf("%v, scale %g, zero point %d: quantize(%g) = %d, want %d", c.et, c.scale, c.zp, x, got[i], want)
			}
		}
		_, err = runModel(t, raw, map[string][]float32{"x": append(make([]float32, n-1), float32(math.NaN())), "s": {c.scale}}, map[string][]int64{"z": {c.zp}})
		if code := gpucc.CodeOf(err); err == nil || code == ir.CodeInternal {
			t.Errorf("%v: quantize(NaN): %v, want a run failing with a stable code", c.et, err)
		}
	}
}

// TestDequantizeLinearLimits: (float32(x) - float32(zp)) · scale over
// int8's ends and per-axis parameters, and int32 beyond 2^24, which
// rounds to float32 as ONNX's formula does.
func TestDequantizeLinearLimits(t *testing.T) {
	raw := model(13, graph([]msg{node("DequantizeLinear", "d", []string{"x", "s", "z"}, []string{"y"}, attrInt("axis", 0))}, nil,
		[]msg{typedValueInfo("x", int64(onnx.Int8), 2, 3), valueInfo("s", 2), typedValueInfo("z", int64(onnx.Int8), 2)}, []msg{valueInfo("y", 2, 3)}))
	x, s, z := []int64{-128, 127, 0, -128, 127, -1}, []float32{0.5, 3e-39}, []int64{127, -128}
	res, err := runModel(t, raw, map[string][]float32{"s": s}, map[string][]int64{"x": x, "z": z})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		want := (float32(v) - float32(z[i/3])) * s[i/3]
		if got := res.Outputs["y"].Data[i]; math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("dequantize(%d) = %g, want %g", v, got, want)
		}
	}
	raw = model(13, graph([]msg{node("DequantizeLinear", "d", []string{"x", "s"}, []string{"y"})}, nil,
		[]msg{typedValueInfo("x", int64(onnx.Int32), 3), valueInfo("s")}, []msg{valueInfo("y", 3)}))
	res, err = runModel(t, raw, map[string][]float32{"s": {1}}, map[string][]int64{"x": {1<<24 + 1, math.MaxInt32, math.MinInt32}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Outputs["y"].Data; got[0] != 1<<24 || got[1] != 1<<31 || got[2] != -(1<<31) {
		t.Errorf("int32 dequantized: %v", got)
	}
}

// TestDynamicQuantizeLinear: the scale, zero point and values of ONNX's
// formula, bit for bit, for a range across zero, all below zero and all
// above it.
func TestDynamicQuantizeLinear(t *testing.T) {
	for _, xs := range [][]float32{{0, 2, -3, -2.5, 1.34, 0.5}, {-1, -2.1, -1.3, -2.5, -3.34, -4}, {1, 2.1, 1.3, 2.5, 3.34, 4}} {
		raw := model(11, graph([]msg{node("DynamicQuantizeLinear", "d", []string{"x"}, []string{"y", "s", "z"})}, nil,
			[]msg{valueInfo("x", 6)}, []msg{typedValueInfo("y", int64(onnx.Uint8), 6), valueInfo("s"), typedValueInfo("z", int64(onnx.Uint8))}))
		res, err := runModel(t, raw, map[string][]float32{"x": xs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := float32(0), float32(0)
		for _, x := range xs {
			lo, hi = min(lo, x), max(hi, x)
		}
		scale := (hi - lo) / 255
		zp := max(0, min(255, math.RoundToEven(float64((0-lo)/scale))))
		if got := res.Outputs["s"].Data[0]; got != scale {
			t.Errorf("%v: scale %g, want %g", xs, got, scale)
		}
		if got := res.Outputs["z"].Ints[0]; got != int64(zp) {
			t.Errorf("%v: zero point %d, want %v", xs, got, zp)
		}
		for i, x := range xs {
			want := int64(max(0, min(255, float64(float32(math.RoundToEven(float64(x/scale))))+zp)))
			if got := res.Outputs["y"].Ints[i]; got != want {
				t.Errorf("%v: y[%d] = %d, want %d", xs, i, got, want)
			}
		}
	}
}

// TestWindowSizes: the window functions of a size read at import, each
// value float64 math rounded once, periodic and symmetric, size 1 too.
func TestWindowSizes(t *testing.T) {
	for _, c := range []struct {
		op         string
		a0, a1, a2 float64
	}{{"HannWindow", 0.5, 0.5, 0}, {"HammingWindow", 25.0 / 46, 21.0 / 46, 0}, {"BlackmanWindow", 0.42, 0.5, 0.08}} {
		for _, periodic := range []int64{0, 1} {
			for _, n := range []int64{1, 2, 7} {
				raw := model(17, graph([]msg{node(c.op, "w", []string{"n"}, []string{"y"}, attrInt("periodic", periodic))},
					[]msg{int64s("n", nil, n)}, nil, []msg{valueInfo("y", n)}))
				res, err := runModel(t, raw, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				den := float64(n - 1 + periodic)
				for i, got := range res.Outputs["y"].Data {
					want := float32(c.a0 - c.a1 + c.a2)
					if den > 0 {
						want = float32(c.a0 - c.a1*math.Cos(2*math.Pi*float64(i)/den) + c.a2*math.Cos(4*math.Pi*float64(i)/den))
					}
					if got != want {
						t.Errorf("%s(%d, periodic %d)[%d] = %g, want %g", c.op, n, periodic, i, got, want)
					}
				}
			}
		}
	}
}
