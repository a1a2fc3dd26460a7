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

// TestPowRuntimeExponent: Pow with a run-time exponent. An int64 exponent
// beyond 2^24 (where its float32 is even) keeps the sign of an odd power
// of a negative base and of -0; integer exponents up to ±64 give the bits
// of the same exponents folded at import (repeated squaring either way).
func TestPowRuntimeExponent(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	xs := []float32{-1, -1, -1, negZero, negZero, 2, -2, 1.5, -0.75, 3}
	ys := []int64{1<<24 + 1, 1<<24 + 2, -(1<<24 + 3), 1<<24 + 1, -(1<<24 + 1), -3, 5, 64, -63, 0}
	want := []float32{-1, 1, -1, negZero, float32(math.Inf(-1)), 0.125, -32}
	n := len(xs)
	raw := model(15, graph([]msg{node("Pow", "p", []string{"x", "y"}, []string{"z"})}, nil,
		[]msg{valueInfo("x", int64(n)), typedValueInfo("y", int64(onnx.Int64), int64(n))}, []msg{valueInfo("z", int64(n))}))
	var outs [2][]float32
	for k, consts := range []map[string]*onnx.Tensor{nil, {"y": {Name: "y", Type: onnx.Int64, Shape: []int{n}, Int64: ys}}} {
		if k == 1 { // folded: only exponents up to ±64
			consts["y"].Int64 = append([]int64{1, 2, -3, 1, -1}, ys[5:]...)
		}
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Constants: consts})
		if err != nil {
			t.Fatal(err)
		}
		g.Nodes[g.Input("x")].Data = xs
		if id := g.Input("y"); id >= 0 {
			g.Nodes[id].Ints = ys
		}
		res, err := gpucc.Run(context.Background(), g, gpucc.Options{Limits: ir.Limits{NonFinite: true}})
		if err != nil {
			t.Fatal(err)
		}
		outs[k] = res.Outputs["z"].Data
	}
	for i, w := range want {
		if math.Float32bits(outs[0][i]) != math.Float32bits(w) {
			t.Errorf("pow(%g, %d) = %g, want %g", xs[i], ys[i], outs[0][i], w)
		}
	}
	for i := 5; i < n; i++ {
		if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
			t.Errorf("pow(%g, %d): run-time %g (%#08x), folded %g (%#08x)", xs[i], ys[i], outs[0][i], math.Float32bits(outs[0][i]), outs[1][i], math.Float32bits(outs[1][i]))
		}
	}
}

// TestPowConstantExponent: a constant exponent that is not an integer
// within ±64 imports as ir's pow (x^0.5 its bits, the parity of an int64
// exponent past 2^24 kept), where it was refused.
func TestPowConstantExponent(t *testing.T) {
	xs := []float32{-1, 4, 2, float32(math.Copysign(0, -1))}
	for _, c := range []struct {
		exp  msg
		want []float32
	}{
		{floats("e", []int64{4}, 3, 0.5, 0.5, 65), []float32{-1, 2, float32(math.Sqrt(2)), float32(math.Copysign(0, -1))}},
		{int64s("e", []int64{4}, 1<<24+1, 2, 1<<25, 1<<24+1), []float32{-1, 16, float32(math.Inf(1)), float32(math.Copysign(0, -1))}},
	} {
		raw := model(15, graph([]msg{node("Pow", "p", []string{"x", "e"}, []string{"z"})}, []msg{c.exp},
			[]msg{valueInfo("x", 4)}, []msg{valueInfo("z", 4)}))
		res, err := runModel(t, raw, map[string][]float32{"x": xs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range c.want {
			if got := res.Outputs["z"].Data[i]; math.Float32bits(got) != math.Float32bits(w) && !(i == 2 && math.Abs(float64(got-w)) <= 1e-6) {
				t.Errorf("pow(%g, exponent %d) = %g, want %g", xs[i], i, got, w)
			}
		}
	}
}
