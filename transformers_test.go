package gpucc_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestTransformerFixtures runs the text transformers that PyTorch
// exported on the GPU machine (onnx/testdata/transformers: GPT-2 and BERT
// from transformers' configs, a causal decoder masked with -Inf; int64
// ids, BERT's padding mask) from one import each, at run-time ids of every
// length the fixtures hold, on cpu and every backend that runs typed
// graphs: each output within 1e-5 of the largest magnitude of PyTorch's
// float64 answer, and every backend's bits equal to cpu's. -short runs
// lengths 1 and 7; the full tier 64 and 512 too.
func TestTransformerFixtures(t *testing.T) {
	dir := filepath.Join("onnx", "testdata", "transformers")
	lengths := []int{1, 7, 64, 512}
	if testing.Short() {
		lengths = lengths[:2]
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}
	raise := func(o *gpucc.Options) { o.Limits = limits }
	cpuBits := map[string][]uint32{}
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend, raise)
			for _, model := range []string{"decoder", "gpt2", "bert"} {
				raw, err := os.ReadFile(filepath.Join(dir, model+".onnx"))
				if err != nil {
					t.Fatal(err)
				}
				m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: limits})
				if err != nil {
					t.Fatalf("%s: %v", model, err)
				}
				d := rt.NewDynamic(m, gpucc.DynamicOptions{})
				for _, n := range lengths {
					what := fmt.Sprintf("%s/%d", model, n)
					in := gpucc.Inputs{"input_ids": intTensor(t, filepath.Join(dir, fmt.Sprintf("%s.%d.ids.npy", model, n)))}
					if model != "decoder" {
						in["attention_mask"] = intTensor(t, filepath.Join(dir, fmt.Sprintf("%s.%d.mask.npy", model, n)))
					}
					res, err := d.Run(context.Background(), in)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if len(res.Outputs) != 1 {
						t.Fatalf("%s: %d outputs, want 1", what, len(res.Outputs))
					}
					var y gpucc.Tensor
					for _, o := range res.Outputs {
						y = o
					}
					ref := npyFile(t, filepath.Join(dir, fmt.Sprintf("%s.%d.ref.npy", model, n)))
					if len(y.Data) != len(ref.Float32) {
						t.Fatalf("%s: %d values, want %d", what, len(y.Data), len(ref.Float32))
					}
					var worst, scale float64
					bits := make([]uint32, len(y.Data))
					for i, r := range ref.Float32 {
						worst = max(worst, math.Abs(float64(y.Data[i])-float64(r)))
						scale = max(scale, math.Abs(float64(r)))
						bits[i] = math.Float32bits(y.Data[i])
					}
					if worst > 1e-5*scale {
						t.Errorf("%s: max |%s - PyTorch float64| = %.3g, over 1e-5 × %.3g", what, backend, worst, scale)
					}
					if backend == "cpu" {
						cpuBits[what] = bits
						continue
					}
					for i, b := range cpuBits[what] {
						if bits[i] != b {
							t.Errorf("%s: element %d is %#08x on %s, %#08x on cpu", what, i, bits[i], backend, b)
							break
						}
					}
				}
				d.Release()
			}
		})
	}
}

func intTensor(t *testing.T, path string) gpucc.Tensor {
	a := npyFile(t, path)
	if a.DType != "int64" {
		t.Fatalf("%s holds %s, want int64", path, a.DType)
	}
	return gpucc.Tensor{Shape: a.Shape, DType: ir.I64, Ints: a.Int64}
}

func npyFile(t *testing.T, path string) *npy.Array {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := npy.Read(f, 1<<24)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return a
}
