package onnx_test

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// specializeRun parses doc, specializes it to values, binds the inputs
// left at run time to theirs and runs it on cpu.
func specializeRun(t *testing.T, doc []byte, values map[string]*onnx.Tensor) (map[string]gpucc.Tensor, []string, error) {
	t.Helper()
	m, err := onnx.Parse(bytes.NewReader(doc), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, fixed, err := m.SpecializeValues(context.Background(), values)
	if err != nil {
		return nil, nil, err
	}
	for name, v := range values { // the inputs left at run time take their data
		if slices.Contains(fixed, name) {
			continue
		}
		n := &g.Nodes[g.Input(name)]
		if n.DType.IsFloat() {
			n.Data = v.Float32
		} else {
			n.Ints = v.Int64
		}
	}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outputs, fixed, nil
}

// TestUnique: Unique's input decides its outputs' shapes, so a graph
// input there is read at specialization (a plain Load refuses it by name,
// saying so). Sorted and in order of first occurrence; -0 and +0 are one
// value whose first occurrence's bits Y keeps (numpy's unique); with an
// axis, slices compare lexicographically; a NaN is refused by name.
func TestUnique(t *testing.T) {
	doc := func(attrs ...msg) []byte {
		return model(11, graph([]msg{node("Unique", "u", []string{"X"}, []string{"Y", "indices", "inverse", "counts"}, attrs...)}, nil,
			[]msg{valueInfo("X", 6)}, []msg{valueInfo("Y"), typedValueInfo("indices", int64(onnx.Int64)),
				typedValueInfo("inverse", int64(onnx.Int64)), typedValueInfo("counts", int64(onnx.Int64))}))
	}
	negz := float32(math.Copysign(0, -1))
	x := &onnx.Tensor{Name: "X", Type: onnx.Float32, Shape: []int{6}, Float32: []float32{3, negz, 1, 0, 3, -2}}
	for _, c := range []struct {
		sorted        int64
		y             []float32
		idx, inv, cnt []int64
	}{
		{1, []float32{-2, negz, 1, 3}, []int64{5, 1, 2, 0}, []int64{3, 1, 2, 1, 3, 0}, []int64{1, 2, 1, 2}},
		{0, []float32{3, negz, 1, -2}, []int64{0, 1, 2, 5}, []int64{0, 1, 2, 1, 0, 3}, []int64{2, 2, 1, 1}},
	} {
		out, fixed, err := specializeRun(t, doc(attrInt("sorted", c.sorted)), map[string]*onnx.Tensor{"X": x})
		if err != nil {
			t.Fatal(err)
		}
		y := out["Y"]
		if !slices.Equal(fixed, []string{"X"}) || !slices.EqualFunc(y.Data, c.y, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) ||
			!slices.Equal(out["indices"].Ints, c.idx) || !slices.Equal(out["inverse"].Ints, c.inv) || !slices.Equal(out["counts"].Ints, c.cnt) {
			t.Errorf("sorted %d: fixed %v, Y %v indices %v inverse %v counts %v", c.sorted, fixed, y.Data, out["indices"].Ints, out["inverse"].Ints, out["counts"].Ints)
		}
	}
	_, err := onnx.Load(bytes.NewReader(doc()), onnx.Options{})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "SpecializeValues") {
		t.Errorf("Unique of a run-time input without its data: %v, want unsupported pointing at specialization", err)
	}
	nan := &onnx.Tensor{Name: "X", Type: onnx.Float32, Shape: []int{6}, Float32: []float32{1, float32(math.NaN()), 1, 0, 3, -2}}
	if _, _, err := specializeRun(t, doc(), map[string]*onnx.Tensor{"X": nan}); gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("Unique of a NaN: %v, want unsupported", err)
	}
	// Rows of [3, 2] along axis 0: [1 2] twice and [0 5].
	axisDoc := model(11, graph([]msg{node("Unique", "u", []string{"X"}, []string{"Y", "indices", "inverse", "counts"}, attrInt("axis", 0))}, nil,
		[]msg{valueInfo("X", 3, 2)}, []msg{valueInfo("Y"), typedValueInfo("indices", int64(onnx.Int64)),
			typedValueInfo("inverse", int64(onnx.Int64)), typedValueInfo("counts", int64(onnx.Int64))}))
	xa := &onnx.Tensor{Name: "X", Type: onnx.Float32, Shape: []int{3, 2}, Float32: []float32{1, 2, 0, 5, 1, 2}}
	out, _, err := specializeRun(t, axisDoc, map[string]*onnx.Tensor{"X": xa})
	if err != nil {
		t.Fatal(err)
	}
	if y := out["Y"]; !slices.Equal(y.Shape, []int{2, 2}) || !slices.Equal(y.Data, []float32{0, 5, 1, 2}) || !slices.Equal(out["inverse"].Ints, []int64{1, 0, 1}) || !slices.Equal(out["counts"].Ints, []int64{1, 2}) {
		t.Errorf("axis 0: Y %v %v inverse %v counts %v", y.Shape, y.Data, out["inverse"].Ints, out["counts"].Ints)
	}
}

// TestNonMaxSuppression: boxes kept by descending score (ties by the lower
// index), an IoU equal to the threshold not suppressed (ORT's strict >),
// score_threshold strict, center format, flipped corners, and no box kept
// refused by name (an empty output); the boxes and scores are read at
// specialization.
func TestNonMaxSuppression(t *testing.T) {
	doc := func(center int64) []byte {
		return model(11, graph([]msg{node("NonMaxSuppression", "n", []string{"boxes", "scores", "max", "iou", "smin"}, []string{"sel"}, attrInt("center_point_box", center))}, nil,
			[]msg{valueInfo("boxes", 1, 4, 4), valueInfo("scores", 1, 1, 4), typedValueInfo("max", int64(onnx.Int64), 1), valueInfo("iou", 1), valueInfo("smin", 1)},
			[]msg{typedValueInfo("sel", int64(onnx.Int64))}))
	}
	f := func(name string, shape []int, v ...float32) *onnx.Tensor {
		return &onnx.Tensor{Name: name, Type: onnx.Float32, Shape: shape, Float32: v}
	}
	// Box 0 is [0,0,2,2]; box 1 [0,1,2,3] meets it in 2 of a union of 6
	// (IoU 1/3: float32(2)/float32(6)); box 2 is box 0 with flipped
	// corners (IoU 1); box 3 is far away.
	boxes := f("boxes", []int{1, 4, 4}, 0, 0, 2, 2, 0, 1, 2, 3, 2, 2, 0, 0, 10, 10, 11, 11)
	for _, c := range []struct {
		name   string
		scores []float32
		max    int64
		iou    float32
		smin   float32
		want   []int64
	}{
		{"ties by index, flipped corners suppressed", []float32{0.9, 0.8, 0.9, 0.1}, 10, 0.5, 0, []int64{0, 0, 0, 0, 0, 1, 0, 0, 3}},
		{"iou above the threshold suppresses", []float32{0.9, 0.8, 0.7, 0.6}, 10, 0.3, 0, []int64{0, 0, 0, 0, 0, 3}},
		{"score threshold strict", []float32{0.9, 0.8, 0.7, 0.6}, 10, 0.5, 0.6, []int64{0, 0, 0, 0, 0, 1}},
		{"limit", []float32{0.9, 0.8, 0.7, 0.6}, 1, 0.5, 0, []int64{0, 0, 0}},
		{"iou equal to the threshold keeps", []float32{0.9, 0.8, 0.7, 0.6}, 10, float32(2) / float32(6), 0, []int64{0, 0, 0, 0, 0, 1, 0, 0, 3}},
	} {
		out, fixed, err := specializeRun(t, doc(0), map[string]*onnx.Tensor{"boxes": boxes, "scores": f("scores", []int{1, 1, 4}, c.scores...),
			"max": {Name: "max", Type: onnx.Int64, Shape: []int{1}, Int64: []int64{c.max}}, "iou": f("iou", []int{1}, c.iou), "smin": f("smin", []int{1}, c.smin)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sel := out["sel"]; !slices.Equal(sel.Ints, c.want) || len(fixed) != 5 {
			t.Errorf("%s: %v (fixed %v), want %v", c.name, sel.Ints, fixed, c.want)
		}
	}
	// Center format: [1, 1, 2, 2] is the corners [0, 0, 2, 2].
	cb := f("boxes", []int{1, 4, 4}, 1, 1, 2, 2, 1, 1, 2, 2, 10, 10, 1, 1, 1, 1, 2, 2)
	out, _, err := specializeRun(t, doc(1), map[string]*onnx.Tensor{"boxes": cb, "scores": f("scores", []int{1, 1, 4}, 0.5, 0.9, 0.3, 0.2),
		"max": {Name: "max", Type: onnx.Int64, Shape: []int{1}, Int64: []int64{3}}, "iou": f("iou", []int{1}, 0.5), "smin": f("smin", []int{1}, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if sel := out["sel"]; !slices.Equal(sel.Ints, []int64{0, 0, 1, 0, 0, 2}) {
		t.Errorf("center format: %v, want boxes 1 and 2", sel.Ints)
	}
	_, _, err = specializeRun(t, doc(0), map[string]*onnx.Tensor{"boxes": boxes, "scores": f("scores", []int{1, 1, 4}, 0.9, 0.8, 0.7, 0.6),
		"max": {Name: "max", Type: onnx.Int64, Shape: []int{1}, Int64: []int64{0}}, "iou": f("iou", []int{1}, 0.5), "smin": f("smin", []int{1}, 0)})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "empty") {
		t.Errorf("no box kept: %v, want unsupported naming the empty output", err)
	}
}

// TestDropoutTraining: Dropout's training_mode and ratio decide whether
// it draws random numbers, so graph inputs there are read at
// specialization: in training with ratio 0 every element is kept (y is x,
// -0 and the mask all true); with any other ratio it is refused by name;
// outside training y is x.
func TestDropoutTraining(t *testing.T) {
	doc := model(13, graph([]msg{node("Dropout", "d", []string{"x", "r", "t"}, []string{"y", "z"})}, nil,
		[]msg{valueInfo("x", 3), valueInfo("r"), typedValueInfo("t", int64(onnx.Bool))},
		[]msg{valueInfo("y"), typedValueInfo("z", int64(onnx.Bool))}))
	negz := float32(math.Copysign(0, -1))
	x := &onnx.Tensor{Name: "x", Type: onnx.Float32, Shape: []int{3}, Float32: []float32{1.5, negz, -3}}
	for _, c := range []struct {
		ratio    float32
		training int64
		refused  bool
	}{{0, 1, false}, {0.5, 0, false}, {0.5, 1, true}} {
		out, fixed, err := specializeRun(t, doc, map[string]*onnx.Tensor{"x": x,
			"r": {Name: "r", Type: onnx.Float32, Shape: []int{}, Float32: []float32{c.ratio}},
			"t": {Name: "t", Type: onnx.Bool, Shape: []int{}, Int64: []int64{c.training}}})
		if c.refused {
			if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "random") {
				t.Errorf("ratio %v in training: %v, want unsupported naming the random numbers", c.ratio, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ratio %v training %d: %v", c.ratio, c.training, err)
		}
		y, z := out["y"], out["z"]
		if !slices.EqualFunc(y.Data, x.Float32, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) ||
			!slices.Equal(z.Ints, []int64{1, 1, 1}) || slices.Contains(fixed, "x") {
			t.Errorf("ratio %v training %d: y %v z %v fixed %v", c.ratio, c.training, y.Data, z.Ints, fixed)
		}
	}
}

// TestLoopTripCountAtSpecialization: a Loop whose trip count M is a graph
// input unrolls as many times as the run's M says: M decides the body's
// unrolling, as a Range's limit decides its length, so it is read at
// specialization (Load without it refuses by name, pointing there); x stays
// a run-time input.
func TestLoopTripCountAtSpecialization(t *testing.T) {
	body := graph([]msg{
		node("Cast", "fi", []string{"i"}, []string{"fi"}, attrInt("to", int64(onnx.Float32))),
		node("Mul", "half", []string{"y_in", "h"}, []string{"a"}),
		node("Add", "add", []string{"a", "fi"}, []string{"y_out"}),
		node("Identity", "c", []string{"c_in"}, []string{"c_out"}),
	}, []msg{floats("h", nil, 0.5)},
		[]msg{typedValueInfo("i", int64(onnx.Int64)), typedValueInfo("c_in", int64(onnx.Bool)), valueInfo("y_in", 2)},
		[]msg{typedValueInfo("c_out", int64(onnx.Bool)), valueInfo("y_out", 2)})
	doc := model(13, graph([]msg{node("Loop", "loop", []string{"M", "cond", "x"}, []string{"y"}, attrGraph("body", body))},
		[]msg{boolConst("cond", true)}, []msg{typedValueInfo("M", int64(onnx.Int64)), valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	if _, err := onnx.Load(bytes.NewReader(doc), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "SpecializeValues") {
		t.Errorf("a run-time trip count without its data: %v, want unsupported pointing at specialization", err)
	}
	for _, m := range []int64{1, 3} {
		out, fixed, err := specializeRun(t, doc, map[string]*onnx.Tensor{
			"M": {Name: "M", Type: onnx.Int64, Shape: []int{}, Int64: []int64{m}},
			"x": {Name: "x", Type: onnx.Float32, Shape: []int{2}, Float32: loopX}})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := loopWant(int(m))
		if y := out["y"]; !slices.Equal(y.Data, want) || !slices.Equal(fixed, []string{"M"}) {
			t.Errorf("M = %d: y %v (fixed %v), want %v", m, y.Data, fixed, want)
		}
	}
}

// TestNonZero: NonZero's input decides its output's shape, so it is read
// at specialization: [rank, count] int64 coordinates in row-major order,
// NaN non-zero and -0 zero; no non-zero element is refused by name (an
// empty output).
func TestNonZero(t *testing.T) {
	doc := model(13, graph([]msg{node("NonZero", "nz", []string{"x"}, []string{"y"})}, nil,
		[]msg{valueInfo("x", 2, 3)}, []msg{typedValueInfo("y", int64(onnx.Int64))}))
	x := &onnx.Tensor{Name: "x", Type: onnx.Float32, Shape: []int{2, 3},
		Float32: []float32{0, float32(math.NaN()), float32(math.Copysign(0, -1)), 2, 0, -1}}
	out, _, err := specializeRun(t, doc, map[string]*onnx.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"]; !slices.Equal(y.Shape, []int{2, 3}) || !slices.Equal(y.Ints, []int64{0, 1, 1, 1, 0, 2}) {
		t.Errorf("got %v %v, want [2 3] [0 1 1 1 0 2]", y.Shape, y.Ints)
	}
	zeros := &onnx.Tensor{Name: "x", Type: onnx.Float32, Shape: []int{2, 3}, Float32: make([]float32, 6)}
	if _, _, err := specializeRun(t, doc, map[string]*onnx.Tensor{"x": zeros}); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "empty") {
		t.Errorf("all zeros: %v, want unsupported naming the empty output", err)
	}
}
