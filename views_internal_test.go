package gpucc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestGPT2StepSplitInPlace: GPT-2's decoding step (gpt2kv.onnx) reads the
// three pieces of each layer's fused QKV projection in place, at offsets
// 0, 64 and 128 of its [1,1,192] buffer: no pad kernel copies them (the
// step's float32 plan was 28 kernels with the 6 copies, 22 without, on
// native).
func TestGPT2StepSplitInPlace(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("onnx", "testdata", "transformers", "gpt2kv.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := Open(context.Background(), Options{Backend: "native", Limits: limits}) // cpu keeps no plan
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_NATIVE") == "" && CodeOf(err) == ir.CodeBackendUnavailable {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer rt.Close()
	d, err := rt.NewDecoder(context.Background(), m, DecoderOptions{MaxLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	segs := []*Executable{d.exe}
	if d.exe.split != nil {
		segs = d.exe.split.segs
	}
	offsets := map[int]int{}
	for _, s := range segs {
		if s.plan == nil {
			continue
		}
		for _, k := range s.plan.Program.Kernels {
			if k.Kind == ir.KernelPad {
				t.Errorf("kernel %s copies a piece of a split:\n%s", k.Name, s.plan.Program)
			}
			for _, in := range k.Inputs {
				offsets[in.Offset]++
			}
		}
	}
	if offsets[64] < 2 || offsets[128] < 2 {
		t.Errorf("operands at offsets 64 and 128: %d and %d; want one of each a layer", offsets[64], offsets[128])
	}
}

// TestBERTBiasInPlace: BERT's export (bert.onnx at sequence 64) adds each
// of q, k and v's biases, folded to a constant of the projection's shape,
// after the head split's reshape and transpose; the add is its
// projection's epilogue (passes' lift and sinkViews's rule for an
// epilogue), so no elementwise kernel of the heads' shape copies a
// projection with its bias: 30 kernels on native before the slice views,
// 29 after them, 23 with this.
func TestBERTBiasInPlace(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("onnx", "testdata", "transformers", "bert.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Specialize(context.Background(), map[string][]int{"input_ids": {1, 64}, "attention_mask": {1, 64}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := Open(context.Background(), Options{Backend: "native", Limits: limits}) // cpu keeps no plan
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_NATIVE") == "" && CodeOf(err) == ir.CodeBackendUnavailable {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer rt.Close()
	e, err := rt.Compile(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	segs := []*Executable{e}
	if e.split != nil {
		segs = e.split.segs
	}
	for _, s := range segs {
		if s.plan == nil {
			continue
		}
		for _, k := range s.plan.Program.Kernels {
			if k.Kind == ir.KernelElementwise && k.Shape.Equal(ir.Shape{1, 4, 64, 16}) {
				t.Errorf("kernel %s copies a head split:\n%s", k.Name, s.plan.Program)
			}
		}
	}
}
