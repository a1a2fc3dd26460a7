package onnx_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

// TestSliceStartsAsViews: run-time Slices with ONNX's negative and
// clamped starts and ends (a start of -3 counts from the end, -100 clamps
// to 0, an end of INT64_MAX or 100 to the axis's length, a negative end
// from the end) and a Split are read in place: the compiled program runs
// no pad kernel, reads x at the offsets the starts give, and gives the
// elements numpy's slicing gives, bit for bit (cpuref's program run, the
// meaning every backend's kernels share). An empty slice is refused,
// unsupported, not a panic.
func TestSliceStartsAsViews(t *testing.T) {
	const maxInt = math.MaxInt64
	m := model(13, graph(
		[]msg{node("Slice", "a", []string{"x", "s_a", "e_a", "ax1"}, []string{"a"}),
			node("Slice", "b", []string{"x", "s_b", "e_b", "ax0"}, []string{"b"}),
			node("Slice", "c", []string{"x", "s_c", "e_c", "ax1"}, []string{"c"}),
			node("Slice", "d", []string{"x", "s_d", "e_d", "ax01"}, []string{"d"}),
			node("Split", "sp", []string{"x", "split"}, []string{"s0", "s1"}, attrInt("axis", 0))},
		[]msg{int64s("s_a", []int64{1}, -3), int64s("e_a", []int64{1}, maxInt), int64s("ax1", []int64{1}, 1),
			int64s("s_b", []int64{1}, -100), int64s("e_b", []int64{1}, 2), int64s("ax0", []int64{1}, 0),
			int64s("s_c", []int64{1}, 1), int64s("e_c", []int64{1}, -1),
			int64s("s_d", []int64{2}, 2, 7), int64s("e_d", []int64{2}, 100, 100), int64s("ax01", []int64{2}, 0, 1),
			int64s("split", []int64{2}, 1, 2)},
		[]msg{valueInfo("x", 3, 8)},
		[]msg{valueInfo("a", 3, 3), valueInfo("b", 2, 8), valueInfo("c", 3, 6), valueInfo("d", 1, 1), valueInfo("s0", 1, 8), valueInfo("s1", 2, 8)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 24)
	for i := range x {
		x[i] = float32(i) - 11.5
	}
	x[5], x[23] = float32(math.Copysign(0, -1)), math.Float32frombits(1) // -0 and a subnormal, the last at the buffer's end
	if err := g.SetInput("x", x); err != nil {
		t.Fatal(err)
	}
	// Each output is a relu-free copy: the program's outputs are the views
	// materialised, each reading x at its first element.
	box := func(r0, r1, c0, c1 int) (v []float32) {
		for r := r0; r < r1; r++ {
			v = append(v, x[r*8+c0:r*8+c1]...)
		}
		return v
	}
	want := map[string][]float32{"a": box(0, 3, 5, 8), "b": box(0, 2, 0, 8), "c": box(0, 3, 1, 7), "d": box(2, 3, 7, 8),
		"s0": box(0, 1, 0, 8), "s1": box(1, 3, 0, 8)}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[int]bool{}
	for _, k := range p.Program().Kernels {
		if k.Kind == ir.KernelPad {
			t.Errorf("kernel %s copies a slice with a pad:\n%s", k.Name, p)
		}
		for _, in := range k.Inputs {
			offsets[in.Offset] = true
		}
	}
	for _, o := range []int{5, 1, 23, 8} { // a, c, d, s1 (b and s0 start at 0)
		if !offsets[o] {
			t.Errorf("no operand reads x at offset %d:\n%s", o, p)
		}
	}
	got := cpuref.RunProgram(p.Program())
	for name, w := range want {
		if len(got[name]) != len(w) {
			t.Errorf("%s: %d values, want %d", name, len(got[name]), len(w))
			continue
		}
		for i := range w {
			if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[name][i], w[i])
			}
		}
	}
	empty := model(13, graph([]msg{node("Slice", "e", []string{"x", "s", "e"}, []string{"y"})},
		[]msg{int64s("s", []int64{1}, -1), int64s("e", []int64{1}, -5)}, []msg{valueInfo("x", 3, 8)}, []msg{valueInfo("y", 0, 8)}))
	var ie *ir.Error
	if _, err := onnx.Load(bytes.NewReader(empty), onnx.Options{}); !errors.As(err, &ie) || ie.Code != ir.CodeUnsupported {
		t.Errorf("an empty slice: %v; want unsupported", err)
	}
}
