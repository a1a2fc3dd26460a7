package gpucc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// doubler is a Specializer of y = 2·x at any shape of x, counting its
// specializations.
type doubler struct{ n atomic.Int64 }

func (d *doubler) Specialize(_ context.Context, shapes map[string][]int) (*ir.Graph, error) {
	d.n.Add(1)
	b := ir.NewBuilder()
	s := ir.Shape(shapes["x"])
	b.Output("y", b.NamedInput("x", s, make([]float32, s.Len())).MulScalar(2))
	return b.Build(ir.Limits{})
}

// TestDynamicEviction: a Dynamic keeping one shape, run from 8 goroutines
// on two alternating shapes, evicts the other shape's executable while
// runs of it may be under way: each run still gives 2·x (an evicted
// executable is released only when its last run ends), every miss
// specializes once, and every run is a hit or a compile.
func TestDynamicEviction(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			s := &doubler{}
			d := rt.NewDynamic(s, gpucc.DynamicOptions{MaxShapes: 1})
			defer d.Release()
			var wg sync.WaitGroup
			const runs = 8 * 6
			for g := range 8 {
				wg.Go(func() {
					for i := range 6 {
						n := 3 + (g+i)%2
						x := make([]float32, n)
						for k := range x {
							x[k] = float32(k + g)
						}
						res, err := d.Run(context.Background(), gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{n}, x)})
						if err != nil {
							t.Errorf("goroutine %d run %d: %v", g, i, err)
							return
						}
						for k, v := range res.Outputs["y"].Data {
							if v != 2*x[k] {
								t.Errorf("goroutine %d run %d: y[%d] = %v, want %v", g, i, k, v, 2*x[k])
								return
							}
						}
					}
				})
			}
			wg.Wait()
			st := d.Stats()
			if st.Compiles+st.Hits != runs || int64(st.Compiles) != s.n.Load() || st.Evictions != st.Compiles-1 {
				t.Errorf("stats %+v after %d runs, %d specializations: want compiles + hits = runs, one specialization a compile, every compile but the first evicting", st, runs, s.n.Load())
			}
			if got := fmt.Sprint(d.Shapes()); len(d.Shapes()) != 1 {
				t.Errorf("shapes kept %s, want 1", got)
			}
		})
	}
}
