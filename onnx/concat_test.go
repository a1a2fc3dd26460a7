package onnx_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestConcatRuntimeIsPads: a Concat of run-time tensors places each input
// with a pad of -0 (the value a mask gives where no index matches), so its
// cost is a copy per input, not a sum over the axis per output element
// (a [1,24,80,80] ×4 Concat in the PP-OCRv4 detector took 144 of its
// 201 ms as masked sums on native), with the same bits as the masked sums:
// NaN, ±Inf and ±0 move unchanged into their places, each element of the
// others is exactly the other input's.
func TestConcatRuntimeIsPads(t *testing.T) {
	negz := float32(math.Copysign(0, -1))
	pinf, ninf, nan := float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00000)
	// q = x/z, z = [0, 0, 0, -0, 1, 1] per row: [+Inf, -Inf, NaN, -Inf, x4, x5].
	m := model(13, graph(
		[]msg{node("Div", "q", []string{"x", "z"}, []string{"q"}),
			node("Neg", "n", []string{"q"}, []string{"nq"}),
			node("Concat", "cat", []string{"q", "nq", "q"}, []string{"y"}, attrInt("axis", 1))},
		nil,
		[]msg{valueInfo("x", 2, 6), valueInfo("z", 2, 6)},
		[]msg{valueInfo("y", 2, 18)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pads := 0
	for i, n := range g.Nodes {
		switch n.Op {
		case ir.OpPad:
			pads++
		case ir.OpSum, ir.OpMask:
			t.Errorf("node %d is %v: a run-time Concat should be pads and adds, not masked sums", i, n.Op)
		}
	}
	if pads != 3 {
		t.Errorf("%d pads, want one per input (3)", pads)
	}
	x := []float32{1, -1, 0, 1, 0, negz, 1, -1, 0, 1, 2.5, -3}
	z := []float32{0, 0, 0, negz, 1, 1, 0, 0, 0, negz, 1, 1}
	if err := g.SetInput("x", x); err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("z", z); err != nil {
		t.Fatal(err)
	}
	q := [][]float32{{pinf, ninf, nan, ninf, 0, negz}, {pinf, ninf, nan, ninf, 2.5, -3}}
	var want []uint32
	for _, row := range q {
		for _, part := range []float32{1, -1, 1} {
			for _, v := range row {
				if part < 0 {
					v = -v
				}
				want = append(want, math.Float32bits(v))
			}
		}
	}
	got := outputs(g)["y"]
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("y[%d] = %#08x, want %#08x", i, got[i], want[i])
		}
	}
}
