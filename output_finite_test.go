package gpucc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestNonFiniteOutputs: an output that overflows to ±Inf (or becomes
// NaN) at its first, last or a staging-chunk boundary element fails the
// run with non_finite_output naming that element, from Run, from Wait
// and from reading a kept tensor, on every backend (webgpu checks while
// it copies out of staging; the others scan after).
func TestNonFiniteOutputs(t *testing.T) {
	const n = 1<<22 + 3 // 16 MiB and a bit: two chunks of the read ring
	lim := ir.Limits{MaxElements: 1 << 23, MaxStorageBytes: 1 << 30, MaxOps: 1 << 30}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be, func(o *gpucc.Options) { o.Limits = lim })
			bl := ir.NewBuilder()
			x := bl.NamedInput("x", ir.Shape{n}, make([]float32, n))
			bl.Output("y", x.MulScalar(1e30).Sub(x.MulScalar(1e30)))
			g, err := bl.Build(lim)
			if err != nil {
				t.Fatal(err)
			}
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			for _, c := range []struct {
				at int
				v  float32 // x there: 1e30·v overflows; ∞−∞ is NaN
			}{{0, 1e10}, {n - 1, -1e10}, {1 << 22, 3e9}, {1<<22 - 1, 1e20}} {
				data := make([]float32, n)
				data[c.at] = c.v
				if c.at+1 < n {
					data[c.at+1] = c.v // a later one is not reported
				}
				want := fmt.Sprintf("element %d is NaN", c.at)
				in := gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{n}, data)}
				_, err := exe.Run(ctx, in)
				if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput || !strings.Contains(err.Error(), want) {
					t.Errorf("run, at %d: %v, want %s with %q", c.at, err, ir.CodeNonFiniteOutput, want)
				}
				p, err := exe.Launch(ctx, in, gpucc.RunOptions{})
				if err == nil {
					_, err = p.Wait(ctx)
				}
				if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput || !strings.Contains(err.Error(), want) {
					t.Errorf("launch, at %d: %v, want %s with %q", c.at, err, ir.CodeNonFiniteOutput, want)
				}
				res, err := exe.RunWith(ctx, in, gpucc.RunOptions{Keep: []string{"y"}})
				if err != nil {
					t.Fatal(err)
				}
				_, err = res.Kept["y"].Read(ctx, nil)
				if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput || !strings.Contains(err.Error(), want) {
					t.Errorf("read kept, at %d: %v, want %s with %q", c.at, err, ir.CodeNonFiniteOutput, want)
				}
				res.Kept["y"].Release()
			}
		})
	}
}
