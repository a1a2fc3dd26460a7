package gpucc_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestOneRowMatmul: one-row products (a decoding step's matrix-vector
// products, which take passes.TileRow on webgpu) give cpuref's bits on
// every backend: GPT-2 small's c_attn and mlp c_proj, and K and N that
// fill no whole k-step or tile (100, 260), over irtest's hard values.
func TestOneRowMatmul(t *testing.T) {
	limits := ir.Limits{MaxStorageBytes: 1 << 28, MaxElements: 1 << 24, MaxOps: 1e10}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend, func(o *gpucc.Options) { o.Limits = limits })
			for i, kn := range [][2]int{{768, 2304}, {3072, 768}, {100, 260}, {64, 256}} {
				k, n := kn[0], kn[1]
				if n < passes.RowMinN || k%4 != 0 || n%4 != 0 {
					t.Fatalf("%dx%d is no TileRow shape", k, n)
				}
				b := ir.NewBuilder()
				x := b.NamedInput("x", ir.Shape{1, k}, irtest.Values(uint64(2*i), k, 1))
				w := b.NamedInput("w", ir.Shape{k, n}, irtest.Values(uint64(2*i+1), k*n, 1))
				b.Output("y", x.MatMul(w))
				g, err := b.Build(limits)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprintf("1x%dx%d", k, n), func(t *testing.T) { checkRun(t, rt, g) })
			}
		})
	}
}
