package onnx_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestDynamicSequence: testdata/dynseq (make.py: causal attention over
// x [1, "seq", 8], its mask sliced from a [16,16] buffer by Shape(x)) is
// parsed once and run at sequence lengths 3, 7 and 12 on every backend;
// each output has the bits of the model imported at that fixed length,
// and the shape cache compiles once per new shape: with two shapes kept,
// the third evicts the least recently run, which costs one compile when
// it comes back, and shapes seen before cost none.
func TestDynamicSequence(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "dynseq", "dynseq.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	lim := ir.Limits{NonFinite: true}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	in := m.Signature().Inputs
	if len(in) != 1 || !cmp.Equal(in[0].Shape, []int{1, -1, 8}) || in[0].DimParams[1] != "seq" || !m.Dynamic() {
		t.Fatalf("signature %+v: want x [1, seq, 8]", in)
	}
	ctx := context.Background()
	x := func(n int) gpucc.Tensor {
		return gpucc.NewTensor(ir.Shape{1, n, 8}, irtestValues(uint64(n), n*8))
	}
	var cpu map[int][]uint32
	for _, be := range gpucctest.Backends {
		t.Run(be, func(t *testing.T) {
			rt := gpucctest.Open(t, be, func(o *gpucc.Options) { o.Limits = lim })
			d := rt.NewDynamic(m, gpucc.DynamicOptions{MaxShapes: 2})
			defer d.Release()
			got := map[int][]uint32{}
			for _, n := range []int{3, 7, 12, 12, 7, 3} {
				res, err := d.Run(ctx, gpucc.Inputs{"x": x(n)})
				if err != nil {
					t.Fatalf("seq %d: %v", n, err)
				}
				bits := gpucctest.BitsOf(res.Outputs["y"].Data)
				if prev, ok := got[n]; ok && !cmp.Equal(prev, bits) {
					t.Errorf("seq %d: the second run differs from the first", n)
				}
				got[n] = bits
			}
			want := gpucc.DynamicStats{Compiles: 4, Hits: 2, Evictions: 2}
			if s := d.Stats(); s != want {
				t.Errorf("stats %+v, want %+v (3, 7, 12 compile; 12 and 7 hit; 3, evicted by 12, compiles again and evicts 12)", s, want)
			}
			for _, n := range []int{3, 7, 12} {
				g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: lim, InputShapes: map[string][]int{"x": {1, n, 8}}})
				if err != nil {
					t.Fatal(err)
				}
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				res, err := exe.Run(ctx, gpucc.Inputs{"x": x(n)})
				exe.Release()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(gpucctest.BitsOf(res.Outputs["y"].Data), got[n]); diff != "" {
					t.Errorf("seq %d: the dynamic run differs from the model imported at that length (-fixed +dynamic):\n%s", n, diff)
				}
			}
			if cpu == nil {
				cpu = got
			} else if !cmp.Equal(cpu, got) {
				t.Errorf("%s differs from cpu", be)
			}
			if _, err := d.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{2, 3, 8}, make([]float32, 48))}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("x [2,3,8] against the model's batch of 1: %v, want invalid_input", err)
			}
		})
	}
}

// irtestValues are n deterministic values in [-1, 1].
func irtestValues(seed uint64, n int) []float32 {
	out := make([]float32, n)
	s := seed*2654435761 + 1
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = float32(int64(s>>40)%2001-1000) / 1000
	}
	return out
}

// TestSpecializeValues: a graph input whose values decide a shape
// (Reshape's shape, directly or through a Cast) is read when the model is
// specialized to its data and fixed as a constant; the data input stays a
// run-time input. Specialize alone refuses it by name, saying how to give
// it, and a value that only enters arithmetic is never read.
func TestSpecializeValues(t *testing.T) {
	raw := model(13, graph([]msg{
		node("Cast", "c", []string{"s32"}, []string{"s64"}, attrInt("to", int64(onnx.Int64))),
		node("Reshape", "r", []string{"x", "s64"}, []string{"y"}),
	}, nil, []msg{valueInfo("x", 2, 3), typedValueInfo("s32", int64(onnx.Int32), 2)}, []msg{valueInfo("y", 3, 2)}))
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Specialize(context.Background(), nil); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), `graph input "s32"`) || !strings.Contains(err.Error(), "SpecializeValues") {
		t.Errorf("Specialize without the shape's values: %v, want unsupported naming s32 and SpecializeValues", err)
	}
	x := &onnx.Tensor{Name: "x", Type: onnx.Float32, Shape: []int{2, 3}, Float32: []float32{1, 2, 3, 4, 5, 6}}
	s := &onnx.Tensor{Name: "s32", Type: onnx.Int32, Shape: []int{2}, Int64: []int64{3, -1}}
	g, fixed, err := m.SpecializeValues(context.Background(), map[string]*onnx.Tensor{"x": x, "s32": s})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fixed, []string{"s32"}) || g.Input("s32") >= 0 || g.Input("x") < 0 {
		t.Fatalf("fixed %v, inputs s32 %d x %d: want s32 fixed and x a run-time input", fixed, g.Input("s32"), g.Input("x"))
	}
	if s := g.Nodes[g.Outputs[0].ID].Shape; !s.Equal(ir.Shape{3, 2}) {
		t.Errorf("y has shape %v, want [3 2]", s)
	}
	if _, _, err := m.SpecializeValues(context.Background(), map[string]*onnx.Tensor{"x": x}); gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("without s32's data: %v, want unsupported", err)
	}
	if _, _, err := m.SpecializeValues(context.Background(), map[string]*onnx.Tensor{"x": x, "s32": s, "z": s}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("an input the model lacks: %v, want invalid_input", err)
	}
	// An Add's operand is arithmetic: its values are never read.
	raw = model(13, graph([]msg{node("Add", "a", []string{"i", "j"}, []string{"y"})}, nil,
		[]msg{typedValueInfo("i", int64(onnx.Int64), 2), typedValueInfo("j", int64(onnx.Int64), 2)}, []msg{typedValueInfo("y", int64(onnx.Int64), 2)}))
	if m, err = onnx.Parse(bytes.NewReader(raw), onnx.Options{}); err != nil {
		t.Fatal(err)
	}
	i := &onnx.Tensor{Name: "i", Type: onnx.Int64, Shape: []int{2}, Int64: []int64{1, 2}}
	if _, fixed, err := m.SpecializeValues(context.Background(), map[string]*onnx.Tensor{"i": i, "j": i}); err != nil || len(fixed) != 0 {
		t.Errorf("Add: fixed %v, %v; want nothing fixed", fixed, err)
	}
}
