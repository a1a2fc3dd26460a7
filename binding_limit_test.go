package gpucc_test

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestBindingLimit (issue 20 item 5): an elementwise run whose buffers
// are exactly the device's largest binding runs and gives cpuref's values
// (lavapipe: 128 MiB, 32M elements, which once crashed inside lavapipe),
// and one element more is refused at Compile with limit_exceeded. Only on
// devices whose limit makes the run small enough for a test.
func TestBindingLimit(t *testing.T) {
	lim := ir.Limits{MaxElements: 1 << 27, MaxStorageBytes: 8 << 30, MaxOps: 1 << 40}
	rt := open(t, "webgpu", func(o *gpucc.Options) { o.Limits = lim })
	limit := rt.Profile().MaxBindingSize
	if limit <= 0 || limit > 1<<27 {
		t.Skipf("binding limit %d B: too large a run for a test", limit)
	}
	ctx := context.Background()
	n := int(limit / 4)
	relu := func(n int) *ir.Graph {
		bl := ir.NewBuilder()
		a := bl.NamedInput("a", ir.Shape{n}, make([]float32, n))
		b := bl.NamedInput("b", ir.Shape{n}, make([]float32, n))
		bl.Output("y", a.Mul(b).AddScalar(-2).Relu())
		g, err := bl.Build(lim)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if _, err := rt.Compile(ctx, relu(n+1)); gpucc.CodeOf(err) != ir.CodeLimitExceeded {
		t.Errorf("%d elements, one past the binding limit: %v, want %s", n+1, err, ir.CodeLimitExceeded)
	}
	exe, err := rt.Compile(ctx, relu(n))
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i%13)-6, float32(i%7)*0.5
	}
	res, err := exe.Run(ctx, gpucc.Inputs{"a": gpucc.NewTensor(ir.Shape{n}, a), "b": gpucc.NewTensor(ir.Shape{n}, b)})
	if err != nil {
		t.Fatal(err)
	}
	y := res.Outputs["y"].Data
	for i := range y {
		want := max(a[i]*b[i]-2, 0) // exact in float32: small integers and halves
		if y[i] != want {
			t.Fatalf("y[%d] = %v, want %v", i, y[i], want)
		}
	}
}
