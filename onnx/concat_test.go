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

// TestSliceRuntimeIsBlocks: a run-time Slice or Split of a contiguous run
// [a, a+m) of an axis of n takes blocks of d = gcd(a, m, n) elements, so
// each output's masked sum has n/d terms, not n (Silero VAD's halves of
// 258 channels: 2 terms, not 258), with the elements' bits: NaN, ±Inf, ±0.
func TestSliceRuntimeIsBlocks(t *testing.T) {
	negz := float32(math.Copysign(0, -1))
	m := model(13, graph(
		[]msg{node("Div", "q", []string{"x", "z"}, []string{"q"}),
			node("Split", "sp", []string{"q", "split"}, []string{"s0", "s1"}, attrInt("axis", 1)),
			node("Slice", "sl", []string{"q", "st", "en", "ax"}, []string{"sl"})},
		[]msg{int64s("split", []int64{2}, 6, 6), int64s("st", []int64{1}, 4), int64s("en", []int64{1}, 8), int64s("ax", []int64{1}, 1)},
		[]msg{valueInfo("x", 2, 12), valueInfo("z", 2, 12)},
		[]msg{valueInfo("s0", 2, 6), valueInfo("s1", 2, 6), valueInfo("sl", 2, 4)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range g.Nodes {
		if n.Op == ir.OpSum {
			if in := g.Nodes[n.Args[0]].Shape.Len(); in > 3*n.Shape.Len() {
				t.Errorf("node %d sums %d terms per output: %v to %v", i, in/n.Shape.Len(), g.Nodes[n.Args[0]].Shape, n.Shape)
			}
		}
	}
	x := make([]float32, 24)
	z := make([]float32, 24)
	for i := range x {
		x[i], z[i] = float32(i%5)-2, 1
	}
	z[1], z[6], z[9], z[13], z[20] = 0, 0, negz, 0, negz // ±Inf, NaN (0/0), -0
	x[6], x[9] = 0, 0
	if err := g.SetInput("x", x); err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("z", z); err != nil {
		t.Fatal(err)
	}
	q := make([]uint32, 24)
	for i := range q {
		q[i] = math.Float32bits(x[i] / z[i])
	}
	want := map[string][]uint32{}
	for r := range 2 {
		want["s0"] = append(want["s0"], q[r*12:r*12+6]...)
		want["s1"] = append(want["s1"], q[r*12+6:r*12+12]...)
		want["sl"] = append(want["sl"], q[r*12+4:r*12+8]...)
	}
	got := outputs(g)
	for name, w := range want {
		for i := range w {
			if got[name][i] != w[i] && !(isNaN32(got[name][i]) && isNaN32(w[i])) { // the division's NaN is cpuref's
				t.Errorf("%s[%d] = %#08x, want %#08x", name, i, got[name][i], w[i])
			}
		}
	}
}

func isNaN32(b uint32) bool { return b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 }
