package onnx_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestMatMulIntegerExact: MatMulInteger at the ends of uint8 and int8 with
// zero points, over K = 258 products, the most whose float32 sums are
// exact (±16,776,450, each term ±65,025), gives the int32 sums; K = 259 is
// refused by name.
func TestMatMulIntegerExact(t *testing.T) {
	for _, c := range []struct {
		et       onnx.DataType
		a, b     int64
		za, zb   int64
		wantEach int64
	}{{onnx.Uint8, 255, 255, 0, 0, 65025}, {onnx.Int8, -128, 127, 127, -128, -65025}, {onnx.Uint8, 0, 255, 255, 0, -65025}} {
		const k = 258
		raw := model(10, graph([]msg{node("MatMulInteger", "m", []string{"a", "b", "za", "zb"}, []string{"y"})}, nil,
			[]msg{typedValueInfo("a", int64(c.et), 2, k), typedValueInfo("b", int64(c.et), k, 1), typedValueInfo("za", int64(c.et)), typedValueInfo("zb", int64(c.et))},
			[]msg{typedValueInfo("y", int64(onnx.Int32), 2, 1)}))
		a, b := slices.Repeat([]int64{c.a}, 2*k), slices.Repeat([]int64{c.b}, k)
		a[k] = c.za // row 1 starts with a zero term
		res, err := runModel(t, raw, nil, map[string][]int64{"a": a, "b": b, "za": {c.za}, "zb": {c.zb}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.Outputs["y"].Ints, []int64{k * c.wantEach, (k - 1) * c.wantEach}; !slices.Equal(got, want) {
			t.Errorf("%v: y = %v, want %v", c.et, got, want)
		}
	}
	raw := model(10, graph([]msg{node("MatMulInteger", "m", []string{"a", "b"}, []string{"y"})}, nil,
		[]msg{typedValueInfo("a", int64(onnx.Uint8), 1, 259), typedValueInfo("b", int64(onnx.Uint8), 259, 1)},
		[]msg{typedValueInfo("y", int64(onnx.Int32), 1, 1)}))
	if _, err := onnx.Load(bytes.NewReader(raw), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("K = 259: %v, want unsupported", err)
	}
}

// TestMaxPoolExactDTypes: MaxPool of uint8, int8 and float16 keeps the
// dtype and selects exactly (their values are float32's): int8's ends,
// float16's largest, padding never selected.
func TestMaxPoolExactDTypes(t *testing.T) {
	for _, c := range []struct {
		et   onnx.DataType
		ints []int64
		fs   []float32
		want []float64
	}{
		{et: onnx.Uint8, ints: []int64{0, 255, 3, 254}, want: []float64{255, 255, 254, 254}},
		{et: onnx.Int8, ints: []int64{-128, -127, -128, -128}, want: []float64{-127, -127, -128, -128}},
		{et: onnx.Float16, fs: []float32{-65504, -2, 65504, -1}, want: []float64{65504, -1, 65504, -1}},
	} {
		raw := model(12, graph([]msg{node("MaxPool", "p", []string{"x"}, []string{"y"}, attrInts("kernel_shape", 2, 2), attrInts("pads", 0, 0, 1, 1))}, nil,
			[]msg{typedValueInfo("x", int64(c.et), 1, 1, 2, 2)}, []msg{typedValueInfo("y", int64(c.et), 1, 1, 2, 2)}))
		var res *gpucc.Result
		var err error
		if c.fs != nil {
			res, err = runModel(t, raw, map[string][]float32{"x": c.fs}, nil)
		} else {
			res, err = runModel(t, raw, nil, map[string][]int64{"x": c.ints})
		}
		if err != nil {
			t.Fatal(err)
		}
		o := res.Outputs["y"]
		for i, w := range c.want {
			got := float64(0)
			if o.DType.IsFloat() {
				got = float64(o.Data[i])
			} else {
				got = float64(o.Ints[i])
			}
			if got != w || onnx.DataTypeOf(o.DType) != c.et {
				t.Errorf("%v: y[%d] = %v (%v), want %v", c.et, i, got, o.DType, w)
			}
		}
	}
}
