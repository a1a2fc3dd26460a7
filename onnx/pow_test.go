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
