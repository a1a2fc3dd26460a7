package main

import (
	"context"
	"os"
	"testing"

	"example.com/aot/mlp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
)

// TestGenerated fails when mlp.json was edited without go generate.
func TestGenerated(t *testing.T) {
	doc, err := os.ReadFile("mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := mlp.CheckGraph(doc); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLoad compares loading the generated package (rt.Load of the
// embedded plan and kernels) with compiling the graph at run time
// (rt.Compile), each on a fresh runtime with an empty in-memory cache, so
// that every iteration is a cold start: the JIT runs the passes, generates
// code and (on wasm) Clang; the package does none of these. Opening and
// closing the runtime is not timed.
func BenchmarkLoad(b *testing.B) {
	doc, err := os.ReadFile("mlp.json")
	if err != nil {
		b.Fatal(err)
	}
	g, err := ir.DecodeBytes(doc, ir.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, backend := range []string{"cpu", "wasm", "webgpu"} {
		for _, how := range []string{"package", "jit"} {
			b.Run(backend+"/"+how, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer() // opening the device is not part of either
					c, err := cache.Open(cache.Options{})
					if err != nil {
						b.Fatal(err)
					}
					rt, err := gpucc.Open(ctx, gpucc.Options{Backend: backend, AllowSoftware: true, Cache: c})
					if err != nil {
						b.Skip(err)
					}
					b.StartTimer()
					if how == "package" {
						_, err = mlp.Compile(ctx, rt)
					} else {
						_, err = rt.Compile(ctx, g)
					}
					b.StopTimer()
					rt.Close()
					b.StartTimer()
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
