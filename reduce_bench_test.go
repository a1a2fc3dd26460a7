package gpucc_test

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// BenchmarkReductions times warm runs of axis reductions of a million
// values per backend: rows (a workgroup per row on webgpu), columns
// (strided leaves), short rows (a thread per row) and the whole sum, each
// with a fused prologue. dispatch-ms is the kernels alone.
func BenchmarkReductions(b *testing.B) {
	graphs := []struct {
		name  string
		build func(b *ir.Builder, x ir.Tensor)
	}{
		{"rows/1024x1024", func(b *ir.Builder, x ir.Tensor) { b.Output("y", x.Mul(x).SumAxes(false, 1)) }},
		{"columns/1024x1024", func(b *ir.Builder, x ir.Tensor) { b.Output("y", x.Mul(x).SumAxes(false, 0)) }},
		{"max-rows/1024x1024", func(b *ir.Builder, x ir.Tensor) { b.Output("y", x.MaxAxes(false, 1)) }},
		{"short-rows/65536x16", func(b *ir.Builder, x ir.Tensor) {
			b.Output("y", x.Reshape(ir.Shape{65536, 16}).Mul(x.Reshape(ir.Shape{65536, 16})).SumAxes(false, 1))
		}},
		{"whole/1M", func(b *ir.Builder, x ir.Tensor) { b.Output("y", x.Mul(x).Sum()) }},
	}
	for _, backend := range []string{"webgpu", "wasm", "native", "cpu"} {
		for _, gr := range graphs {
			b.Run(backend+"/"+gr.name, func(b *testing.B) {
				builder := ir.NewBuilder()
				gr.build(builder, builder.Input(ir.Shape{1024, 1024}, irtest.Values(1, 1<<20, 1)))
				g, err := builder.Build(benchLimits)
				if err != nil {
					b.Fatal(err)
				}
				rt := open(b, backend)
				ctx := context.Background()
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := exe.Run(ctx, nil); err != nil {
					b.Fatal(err)
				}
				var dispatch float64
				b.ResetTimer()
				for range b.N {
					res, err := exe.Run(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					dispatch += res.Timings.DispatchMs
				}
				b.ReportMetric(dispatch/float64(b.N), "dispatch-ms")
			})
		}
	}
}
