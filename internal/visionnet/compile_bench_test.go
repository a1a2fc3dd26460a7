package visionnet_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/internal/visionnet"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
	_ "github.com/gpucc/gpucc/runtime/all"
)

// BenchmarkFirstCompile times a model's first compile by stage: import
// (onnx.Load), seal (Validate and the passes), and the backend's codegen
// and compile ($GPUCC_BENCH_BACKEND, webgpu by default), each on a fresh
// runtime with the code cache in memory only.
func BenchmarkFirstCompile(b *testing.B) {
	backendName := os.Getenv("GPUCC_BENCH_BACKEND")
	if backendName == "" {
		backendName = "webgpu"
	}
	ctx := context.Background()
	for _, m := range []struct {
		name string
		raw  []byte
	}{{"resnet18", visionnet.ResNet18()}, {"efficientnet_b0", visionnet.EfficientNetB0()}, {"vit_tiny", visionnet.ViTTiny()}} {
		b.Run(m.name, func(b *testing.B) {
			lim := limits
			lim.NonFinite = true
			var imp, seal, codegen, compile time.Duration
			for b.Loop() {
				t0 := time.Now()
				g, err := onnx.Load(bytes.NewReader(m.raw), onnx.Options{Limits: lim})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				b.StopTimer()
				mem, err := cache.Open(cache.Options{}) // gpucc run --cache-dir off
				if err != nil {
					b.Fatal(err)
				}
				rt, err := gpucc.Open(ctx, gpucc.Options{Backend: backendName, AllowSoftware: true, Limits: lim, Cache: mem})
				if err != nil {
					b.Skip(err)
				}
				b.StartTimer()
				t2 := time.Now()
				plan, err := gpucc.Seal(g, lim, rt.Profile(), passes.Options{})
				if err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				exe, err := rt.Load(ctx, plan)
				if err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				ct, _ := exe.CompileTimings()
				imp += t1.Sub(t0)
				seal += t3.Sub(t2)
				compile += t4.Sub(t3)
				codegen += time.Duration(ct.CodegenMs * 1e6)
				b.StopTimer()
				exe.Release()
				rt.Close()
				b.StartTimer()
			}
			n := float64(b.N) * 1e6
			b.ReportMetric(float64(imp)/n, "import-ms")
			b.ReportMetric(float64(seal)/n, "seal-ms")
			b.ReportMetric(float64(codegen)/n, "codegen-ms")
			b.ReportMetric(float64(compile-codegen)/n, "pipelines-ms")
			_ = ir.F32
		})
	}
}

// BenchmarkEmit times WGSL generation alone (wgsl.Target.Emit) for each
// model's sealed program, one kernel at a time (codegen.Workers 1) and
// several at once (GOMAXPROCS).
func BenchmarkEmit(b *testing.B) {
	for _, m := range []struct {
		name string
		raw  []byte
	}{{"resnet18", visionnet.ResNet18()}, {"efficientnet_b0", visionnet.EfficientNetB0()}, {"vit_tiny", visionnet.ViTTiny()}} {
		lim := limits
		lim.NonFinite = true
		g, err := onnx.Load(bytes.NewReader(m.raw), onnx.Options{Limits: lim})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := gpucc.Seal(g, lim, passes.WebGPUDefault, passes.Options{})
		if err != nil {
			b.Fatal(err)
		}
		sp, err := plan.Sealed()
		if err != nil {
			b.Fatal(err)
		}
		for _, workers := range []int{1, 0} {
			b.Run(fmt.Sprintf("%s/workers=%d", m.name, workers), func(b *testing.B) {
				defer func(w int) { codegen.Workers = w }(codegen.Workers)
				codegen.Workers = workers
				b.ReportAllocs()
				for b.Loop() {
					if _, err := (wgsl.Target{}).Emit(sp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSeal times Seal (Validate and the passes) alone for each model.
func BenchmarkSeal(b *testing.B) {
	for _, m := range []struct {
		name string
		raw  []byte
	}{{"resnet18", visionnet.ResNet18()}, {"efficientnet_b0", visionnet.EfficientNetB0()}, {"vit_tiny", visionnet.ViTTiny()}} {
		lim := limits
		lim.NonFinite = true
		g, err := onnx.Load(bytes.NewReader(m.raw), onnx.Options{Limits: lim})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gpucc.Seal(g, lim, passes.WebGPUDefault, passes.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
