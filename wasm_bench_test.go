package gpucc_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// benchLimits admit a 512³ matmul (2.7e8 estimated operations).
var benchLimits = ir.Limits{MaxOps: 1 << 30}

// benchGraphs are the graphs bench/numpy_bench.py times in numpy.
var benchGraphs = []struct {
	name  string
	build func(b *ir.Builder)
}{
	{"relu(a*b+c)/1M", func(b *ir.Builder) {
		n := 1 << 20
		x := b.Input(ir.Shape{n}, irtest.Values(1, n, 3))
		y := b.Input(ir.Shape{n}, irtest.Values(2, n, 3))
		z := b.Input(ir.Shape{n}, irtest.Values(3, n, 3))
		b.Output("y", x.Mul(y).Add(z).Relu())
	}},
	{"matmul/512", func(b *ir.Builder) {
		n := 512
		x := b.Input(ir.Shape{n, n}, irtest.Values(4, n*n, 1))
		y := b.Input(ir.Shape{n, n}, irtest.Values(5, n*n, 1))
		b.Output("y", x.MatMul(y))
	}},
}

// BenchmarkBackends times whole warm runs of a compiled executable per
// backend: the graph's host data in, the kernels, the outputs into caller
// slices (what a user waits for once the graph is compiled; numpy's
// figure is the same work). dispatch-ms is the kernels alone.
func BenchmarkBackends(b *testing.B) {
	for _, backend := range []string{"wasm", "native", "cpu"} {
		for _, bg := range benchGraphs {
			b.Run(backend+"/"+bg.name, func(b *testing.B) {
				if !slices.Contains(gpucc.Backends(), backend) {
					b.Skipf("%s is not built in", backend)
				}
				if backend == "wasm" {
					if _, err := exec.LookPath("clang"); err != nil && os.Getenv("GPUCC_REQUIRE_WASM") == "" {
						b.Skip("clang is not installed")
					}
				}
				builder := ir.NewBuilder()
				bg.build(builder)
				g, err := builder.Build(benchLimits)
				if err != nil {
					b.Fatal(err)
				}
				rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: backend, Limits: benchLimits})
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close()
				ctx := context.Background()
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					b.Fatal(err)
				}
				into := map[string][]float32{}
				for _, o := range exe.Plan().Program.Outputs {
					into[o.Name] = make([]float32, o.Shape.Len())
				}
				opts := gpucc.RunOptions{Into: into}
				if _, err := exe.RunWith(ctx, nil, opts); err != nil { // first touch of memory
					b.Fatal(err)
				}
				var sum gpucc.Timings
				b.ResetTimer()
				for range b.N {
					res, err := exe.RunWith(ctx, nil, opts)
					if err != nil {
						b.Fatal(err)
					}
					sum.Add(res.Timings)
				}
				n := float64(b.N)
				b.ReportMetric(sum.UploadMs/n, "upload-ms")
				b.ReportMetric(sum.DispatchMs/n, "dispatch-ms")
				b.ReportMetric(sum.ReadbackMs/n, "readback-ms")
			})
		}
	}
}

// BenchmarkNativeBuild times a cold start per backend: a new Runtime with
// an empty cache directory (codegen, compiler, load, first run), then a
// new Runtime on the filled directory (disk hit: load only). It sits
// beside BenchmarkBackends, which times warm runs of the same graphs.
func BenchmarkNativeBuild(b *testing.B) {
	for _, backend := range []string{"native", "wasm"} {
		for _, bg := range benchGraphs {
			b.Run(backend+"/"+bg.name, func(b *testing.B) {
				if _, err := exec.LookPath("clang"); err != nil {
					b.Skip("clang is not installed")
				}
				builder := ir.NewBuilder()
				bg.build(builder)
				g, err := builder.Build(benchLimits)
				if err != nil {
					b.Fatal(err)
				}
				var cold, disk float64
				for range b.N {
					b.Setenv("GPUCC_CACHE_DIR", b.TempDir())
					cold += compileMs(b, backend, g)
					disk += compileMs(b, backend, g)
				}
				b.ReportMetric(cold/float64(b.N), "cold-compile-ms")
				b.ReportMetric(disk/float64(b.N), "disk-compile-ms")
			})
		}
	}
}

// compileMs opens a new Runtime on backend, runs g once and returns the
// run's CompileMs.
func compileMs(b *testing.B, backend string, g *ir.Graph) float64 {
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: backend, Limits: benchLimits})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		b.Fatal(err)
	}
	return res.Timings.CompileMs
}

// BenchmarkDiskLoad times what a new process pays for a kernel library
// that is on disk: a new Runtime over a new cache object on a filled
// directory runs the graph once, and load-ms is that run's CompileMs
// (read the entry, check its MAC, then instantiate the wasm module, or
// copy the shared object privately and dlopen it). It fails unless every
// load is a disk hit.
func BenchmarkDiskLoad(b *testing.B) {
	for _, backend := range []string{"native", "wasm"} {
		for _, bg := range benchGraphs {
			b.Run(backend+"/"+bg.name, func(b *testing.B) {
				if _, err := exec.LookPath("clang"); err != nil {
					b.Skip("clang is not installed")
				}
				builder := ir.NewBuilder()
				bg.build(builder)
				g, err := builder.Build(benchLimits)
				if err != nil {
					b.Fatal(err)
				}
				dir := b.TempDir()
				b.Setenv("GPUCC_CACHE_DIR", dir)
				run := func() *gpucc.Result {
					rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: backend, Limits: benchLimits, Cache: openCache(b, dir)})
					if err != nil {
						b.Fatal(err)
					}
					defer rt.Close()
					res, err := rt.Run(context.Background(), g)
					if err != nil {
						b.Fatal(err)
					}
					return res
				}
				run() // fills the directory
				level := map[string]string{"native": "nativeSoDisk", "wasm": "wasmModuleDisk"}[backend]
				loads := make([]float64, 0, b.N)
				b.ResetTimer()
				for range b.N {
					res := run()
					if !res.Cache[level] {
						b.Fatalf("not a disk hit: %v", res.Cache)
					}
					loads = append(loads, res.Timings.CompileMs)
				}
				// The median: on a shared machine a few loads stall on the
				// disk for milliseconds, which would dominate a mean.
				slices.Sort(loads)
				b.ReportMetric(loads[len(loads)/2], "load-ms")
			})
		}
	}
}
