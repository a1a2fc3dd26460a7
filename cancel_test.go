package gpucc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestCancelInsideKernel: a run whose one kernel takes seconds on the cpu
// backend (a 640³ matmul, then its sum) returns soon after its deadline
// with the context's error; it once ran the kernel to its end, 1.1 s past
// a 20 ms deadline. The bound is loose for a loaded machine; the kernel
// takes far longer than the bound, which the uncancelled run checks.
func TestCancelInsideKernel(t *testing.T) {
	const n = 640
	bl := ir.NewBuilder()
	a := bl.Input(ir.Shape{n, n}, irtest.Values(1, n*n, 1))
	b := bl.Input(ir.Shape{n, n}, irtest.Values(2, n*n, 1))
	bl.Output("s", a.MatMul(b).Sum())
	limits := ir.Limits{MaxOps: 1 << 40}
	g, err := bl.Build(limits)
	if err != nil {
		t.Fatal(err)
	}
	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = limits })
	exe, err := rt.Compile(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	const deadline, bound = 20 * time.Millisecond, 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err = exe.Run(ctx, nil)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if took > deadline+bound {
		t.Errorf("returned %v after its start, %v after a %v deadline; want within %v", took, took-deadline, deadline, bound)
	}
	start = time.Now()
	if _, err := exe.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if full := time.Since(start); full < 2*bound {
		t.Logf("the whole run took %v: too short to tell a cancelled kernel from a finished one", full)
	}
}
