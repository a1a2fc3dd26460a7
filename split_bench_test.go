package gpucc_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// benchLimitsModel are the transformer fixtures' limits.
var benchLimitsModel = ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}

// benchModel parses fixture NAME.onnx of onnx/testdata/transformers.
func benchModel(b *testing.B, name string) *onnx.Model {
	raw, err := os.ReadFile(filepath.Join("onnx", "testdata", "transformers", name+".onnx"))
	if err != nil {
		b.Fatal(err)
	}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: benchLimitsModel})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// benchBackends are GPUCC_BENCH_BACKENDS (comma-separated), else def.
func benchBackends(def ...string) []string {
	if e := os.Getenv("GPUCC_BENCH_BACKENDS"); e != "" {
		return strings.Split(e, ",")
	}
	return def
}

func benchInts(b *testing.B, path string) gpucc.Tensor {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	a, err := npy.Read(f, 1<<24)
	if err != nil || a.DType != "int64" {
		b.Fatalf("%s: %v %v", path, a, err)
	}
	return gpucc.Tensor{Shape: a.Shape, DType: ir.I64, Ints: a.Int64}
}

// BenchmarkSplitGPT2 times warm runs of the GPT-2 fixture (gpt2.onnx, int64
// ids and mask) at sequence length GPUCC_BENCH_SEQ (default 512; the
// fixture holds 1, 7, 64 and 512) on native and wasm, where the typed graph
// runs as float and typed segments (split.go), or on GPUCC_BENCH_BACKENDS.
// upload-MB and readback-MB are the bytes a run moves between the host and
// the backend, the values passed between segments included.
func BenchmarkSplitGPT2(b *testing.B) {
	ctx := context.Background()
	seq := "512"
	if s := os.Getenv("GPUCC_BENCH_SEQ"); s != "" {
		seq = s
	}
	m := benchModel(b, "gpt2")
	dir := filepath.Join("onnx", "testdata", "transformers")
	in := gpucc.Inputs{
		"input_ids":      benchInts(b, filepath.Join(dir, "gpt2."+seq+".ids.npy")),
		"attention_mask": benchInts(b, filepath.Join(dir, "gpt2."+seq+".mask.npy")),
	}
	for _, name := range benchBackends("native", "wasm") {
		b.Run(name+"/"+seq, func(b *testing.B) {
			rt, err := gpucc.Open(ctx, gpucc.Options{Backend: name, Limits: benchLimitsModel, AllowSoftware: true})
			if err != nil {
				b.Skipf("%s: %v", name, err)
			}
			defer rt.Close()
			d := rt.NewDynamic(m, gpucc.DynamicOptions{})
			defer d.Release()
			if _, err := d.Run(ctx, in); err != nil { // compile and first run
				b.Fatal(err)
			}
			var up, down int64
			b.ResetTimer()
			for range b.N {
				r, err := d.Run(ctx, in)
				if err != nil {
					b.Fatal(err)
				}
				up += r.Timings.UploadBytes
				down += r.Timings.ReadbackBytes
			}
			b.ReportMetric(float64(up)/float64(b.N)/1e6, "upload-MB")
			b.ReportMetric(float64(down)/float64(b.N)/1e6, "readback-MB")
		})
	}
}

// BenchmarkGPT2KVStep times one decoding step of the gpt2kv fixture (a
// [1,4,128,16] cache per layer's keys and values) per backend, the cache
// through the host (each step's presents read and given back as host
// tensors) and on the device (kept, given back as DeviceTensors).
// dispatch-ms is the run's dispatch stage (on the GPU's clock where the
// backend has timestamps, its islands' and typed kernels' summed); ns/op
// the whole step as the caller waits for it.
func BenchmarkGPT2KVStep(b *testing.B) {
	ctx := context.Background()
	m := benchModel(b, "gpt2kv")
	cache := ir.Shape{1, 4, 128, 16}
	var names []string
	for l := range 2 {
		for _, kv := range []string{"key", "value"} {
			names = append(names, fmt.Sprintf("%d.%s", l, kv))
		}
	}
	step := gpucc.Inputs{
		"input_ids": gpucc.Tensor{Shape: []int{1, 1}, DType: ir.I64, Ints: []int64{34}},
		"position":  gpucc.Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{5}},
	}
	for _, name := range benchBackends("cpu", "native", "wasm", "webgpu") {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: name, Limits: benchLimitsModel, AllowSoftware: true})
		if err != nil {
			b.Logf("%s: %v", name, err)
			continue
		}
		d := rt.NewDynamic(m, gpucc.DynamicOptions{})
		for _, where := range []string{"host", "device"} {
			b.Run(name+"/"+where, func(b *testing.B) {
				in := gpucc.Inputs{}
				for k, v := range step {
					in[k] = v
				}
				var keep []string
				for _, n := range names {
					keep = append(keep, "present."+n)
					if where == "host" {
						in["past_key_values."+n] = gpucc.NewTensor(cache, make([]float32, cache.Len()))
						continue
					}
					t, err := rt.Upload(ctx, cache, make([]float32, cache.Len()))
					if err != nil {
						b.Fatal(err)
					}
					in["past_key_values."+n] = t
				}
				var dispatch float64
				run := func() {
					if where == "host" {
						r, err := d.Run(ctx, in)
						if err != nil {
							b.Fatal(err)
						}
						dispatch += r.Timings.DispatchMs
						for _, n := range names {
							in["past_key_values."+n] = r.Outputs["present."+n]
						}
						return
					}
					r, err := d.RunWith(ctx, in, gpucc.RunOptions{Keep: keep})
					if err != nil {
						b.Fatal(err)
					}
					dispatch += r.Timings.DispatchMs
					for _, n := range names {
						in["past_key_values."+n].(*gpucc.DeviceTensor).Release()
						in["past_key_values."+n] = r.Kept["present."+n]
					}
				}
				run() // compile and first run
				dispatch = 0
				b.ResetTimer()
				for range b.N {
					run()
				}
				b.StopTimer()
				b.ReportMetric(dispatch/float64(b.N), "dispatch-ms")
				if where == "device" {
					for _, n := range names {
						in["past_key_values."+n].(*gpucc.DeviceTensor).Release()
					}
				}
			})
		}
		d.Release()
		rt.Close()
	}
}
