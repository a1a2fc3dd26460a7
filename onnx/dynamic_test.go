package onnx_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
