package gpucc_test

import (
	"context"
	"fmt"
	goruntime "runtime"
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

// TestDynamicClaims: a host tensor whose values do not fill its shape is
// refused (invalid_input) before the model is specialized or compiled at
// that shape: a claim of 2^26 elements with 10 values was imported and
// compiled there first, and evicted the shape kept.
func TestDynamicClaims(t *testing.T) {
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "cpu", Limits: ir.Limits{MaxElements: 1 << 30, MaxStorageBytes: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := &doubler{}
	d := rt.NewDynamic(s, gpucc.DynamicOptions{MaxShapes: 1})
	defer d.Release()
	if _, err := d.Run(context.Background(), gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{3}, []float32{1, 2, 3})}); err != nil {
		t.Fatal(err)
	}
	for _, x := range []gpucc.Tensor{
		gpucc.NewTensor(ir.Shape{1 << 26}, make([]float32, 10)),
		gpucc.NewTensor(ir.Shape{1 << 20, 1 << 20, 1 << 20}, make([]float32, 10)),
		gpucc.NewTensor(ir.Shape{-1, 3}, make([]float32, 3)),
		gpucc.NewTensor(ir.Shape{4}, []float32{1, 2, 3}),
		{Shape: []int{3}, DType: ir.I64, Data: []float32{1, 2, 3}},
		{Shape: []int{3}, DType: ir.F16, Ints: []int64{1, 2, 3}},
	} {
		before := allocs(func() {
			_, err = d.Run(context.Background(), gpucc.Inputs{"x": x})
		})
		if gpucc.CodeOf(err) != ir.CodeInvalidInput || s.n.Load() != 1 || before > 1<<20 {
			t.Errorf("shape %v, %v, %d float and %d integer values: %v, %d specializations, %d bytes allocated; want invalid_input, 1 specialization, within 1 MiB", x.Shape, x.DType, len(x.Data), len(x.Ints), err, s.n.Load(), before)
		}
	}
	if got := d.Shapes(); len(got) != 1 || got[0] != `"x"=[3];` {
		t.Errorf("shapes kept %q, want the one run", got)
	}
}

// allocs is what f allocates, garbage included.
func allocs(f func()) uint64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	f()
	goruntime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestUploadTensorCapFirst: a typed upload over MaxDeviceBytes is refused
// (limit_exceeded) before its values are converted to their device
// layout: an int64 tensor of 2^22 values over a 1 MiB cap allocated 67 MB
// (two copies) before its refusal.
func TestUploadTensorCapFirst(t *testing.T) {
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "cpu", MaxDeviceBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	x := gpucc.Tensor{Shape: []int{1 << 22}, DType: ir.I64, Ints: make([]int64, 1<<22)}
	var got error
	n := allocs(func() { _, got = rt.UploadTensor(context.Background(), x) })
	t.Logf("%d bytes allocated: %v", n, got)
	if gpucc.CodeOf(got) != ir.CodeLimitExceeded || n > 1<<20 {
		t.Errorf("UploadTensor of 32 MiB over a 1 MiB cap: %v, %d bytes allocated; want limit_exceeded within 1 MiB", got, n)
	}
	if _, err := rt.UploadTensor(context.Background(), gpucc.Tensor{Shape: []int{4}, DType: ir.I64, Ints: []int64{1, -2, 3, 1 << 62}}); err != nil {
		t.Errorf("a small upload: %v", err)
	}
}
