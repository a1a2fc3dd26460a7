package onnx_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestTransformersOnWebGPU: the transformer fixtures exported with
// PyTorch (testdata/transformers: BERT, GPT-2, a causal decoder with a
// -inf mask) run on webgpu at run-time int64 ids (and attention masks),
// their typed nodes as typed WGSL kernels and their float32 stretches as
// compiled float32 programs, and give the cpu backend's bits on every
// output.
func TestTransformersOnWebGPU(t *testing.T) {
	ctx := context.Background()
	limits := ir.Limits{NonFinite: true}
	cpu, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu", Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	gpu, err := gpucc.Open(ctx, gpucc.Options{Backend: "webgpu", AllowSoftware: true, Limits: limits})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer gpu.Close()
	dir := filepath.Join("testdata", "transformers")
	for _, m := range []string{"bert", "gpt2", "decoder"} {
		t.Run(m, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, m+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			shapes := map[string][]int{"input_ids": {1, 7}}
			if m != "decoder" {
				shapes["attention_mask"] = []int{1, 7}
			}
			g, err := onnx.Load(f, onnx.Options{InputShapes: shapes, Limits: limits})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			in := gpucc.Inputs{}
			for name, file := range map[string]string{"input_ids": m + ".7.ids.npy", "attention_mask": m + ".7.mask.npy"} {
				r, err := os.Open(filepath.Join(dir, file))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				a, err := npy.Read(r, 1<<20)
				r.Close()
				if err != nil {
					t.Fatal(err)
				}
				id := g.Input(name)
				if id < 0 {
					t.Fatalf("%s has no input %s", m, name)
				}
				in[name] = gpucc.Tensor{Shape: a.Shape, DType: g.Nodes[id].DType, Ints: a.Int64}
			}
			if !gpucc.Typed(g) {
				t.Fatalf("%s is not a typed graph", m)
			}
			var res [2]*gpucc.Result
			for k, rt := range []*gpucc.Runtime{cpu, gpu} {
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					t.Fatalf("%s: %v", rt.Backend(), err)
				}
				if res[k], err = exe.Run(ctx, in); err != nil {
					t.Fatalf("%s: %v", rt.Backend(), err)
				}
				exe.Release()
			}
			if res[1].Backend != "webgpu" {
				t.Fatalf("ran on %s", res[1].Backend)
			}
			if sameOutputs(t, m+" on webgpu", res[0], res[1]) {
				t.Logf("%s: %d outputs, cpu's bits", m, len(res[0].Outputs))
			}
		})
	}
}
