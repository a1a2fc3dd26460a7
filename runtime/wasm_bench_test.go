package runtime_test

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime"
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

// BenchmarkBackends times whole runs (validation, passes, codegen, cached
// compile, upload, kernels, readback) per backend, and reports the stages
// as metrics; dispatch-ms is the kernels alone, the figure to hold against
// numpy.
func BenchmarkBackends(b *testing.B) {
	for _, backend := range []string{"wasm", "native", "cpu"} {
		for _, bg := range benchGraphs {
			b.Run(backend+"/"+bg.name, func(b *testing.B) {
				if !slices.Contains(runtime.Backends(), backend) {
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
				rt, err := runtime.New(runtime.Options{Backend: backend, Limits: benchLimits})
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close()
				if _, err := rt.Run(g); err != nil { // warm the module caches
					b.Fatal(err)
				}
				var sum runtime.Timings
				b.ResetTimer()
				for range b.N {
					res, err := rt.Run(g)
					if err != nil {
						b.Fatal(err)
					}
					t := res.Timings
					sum.PassesMs += t.PassesMs
					sum.CodegenMs += t.CodegenMs
					sum.UploadMs += t.UploadMs
					sum.DispatchMs += t.DispatchMs
					sum.ReadbackMs += t.ReadbackMs
				}
				n := float64(b.N)
				b.ReportMetric(sum.PassesMs/n, "passes-ms")
				b.ReportMetric(sum.CodegenMs/n, "codegen-ms")
				b.ReportMetric(sum.UploadMs/n, "upload-ms")
				b.ReportMetric(sum.DispatchMs/n, "dispatch-ms")
				b.ReportMetric(sum.ReadbackMs/n, "readback-ms")
			})
		}
	}
}
