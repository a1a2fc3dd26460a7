package gpucc_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// launchChain is a chain of layer runs, each launched on the kept y of the
// one before without waiting, and what cpuref says each step gives.
type launchChain struct {
	n        int
	w, b     []float32
	xs       [][]float32 // the host x of each step, from cpuref's chain
	want     []map[string][]float32
	exe      *gpucc.Executable
	wt, bt   *gpucc.DeviceTensor
	pendings []*gpucc.Pending
	into     [][]float32
}

func newLaunchChain(t *testing.T, rt *gpucc.Runtime, steps int) *launchChain {
	t.Helper()
	const n = 16
	c := &launchChain{n: n, w: irtest.Values(2, n*n, 0.5), b: irtest.Values(3, n, 1)}
	x := irtest.Values(1, n*n, 2)
	for range steps {
		c.xs = append(c.xs, x)
		want := reference(n, n, n, x, c.w, c.b)
		c.want = append(c.want, want)
		x = want["y"]
	}
	ctx := context.Background()
	var err error
	if c.exe, err = rt.Compile(ctx, layer(n, n, n, nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if c.wt, err = rt.Upload(ctx, ir.Shape{n, n}, c.w); err != nil {
		t.Fatal(err)
	}
	if c.bt, err = rt.Upload(ctx, ir.Shape{n}, c.b); err != nil {
		t.Fatal(err)
	}
	return c
}

// launch queues every step, each on the last one's kept y.
func (c *launchChain) launch(t *testing.T) {
	t.Helper()
	cur := gpucc.Value(gpucc.NewTensor(ir.Shape{c.n, c.n}, c.xs[0]))
	for step := range c.xs {
		into := make([]float32, 1)
		p, err := c.exe.Launch(context.Background(), gpucc.Inputs{"x": cur, "w": c.wt, "b": c.bt},
			gpucc.RunOptions{Keep: []string{"y"}, Into: map[string][]float32{"s": into}})
		if err != nil {
			t.Fatalf("launch %d: %v", step, err)
		}
		c.pendings, c.into = append(c.pendings, p), append(c.into, into)
		cur = p.Kept("y")
	}
}

// check compares step's result with cpuref's, bit for bit.
func (c *launchChain) check(t *testing.T, rt *gpucc.Runtime, step int, res *gpucc.Result) {
	t.Helper()
	y, err := res.Kept["y"].Read(context.Background(), nil)
	if err != nil {
		t.Fatalf("step %d: read y: %v", step, err)
	}
	if &res.Outputs["s"].Data[0] != &c.into[step][0] {
		t.Errorf("step %d: s was not read into the caller's slice", step)
	}
	compare(t, rt, layer(c.n, c.n, c.n, c.xs[step], c.w, c.b), c.want[step], map[string][]float32{"y": y, "s": res.Outputs["s"].Data})
}

// TestLaunchChain: a chain of launches, each on the kept output of the one
// before and none waited for until all are queued, gives cpuref's values
// bit for bit on every backend, and leaves no tensor behind.
func TestLaunchChain(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			c := newLaunchChain(t, rt, 6)
			c.launch(t)
			for step, p := range c.pendings {
				res, err := p.Wait(context.Background())
				if err != nil {
					t.Fatalf("wait %d: %v", step, err)
				}
				if res.Kept["y"] != p.Kept("y") {
					t.Errorf("step %d: Result.Kept is not the tensor Kept gave", step)
				}
				c.check(t, rt, step, res)
				again, err := p.Wait(context.Background())
				if again != res || err != nil {
					t.Errorf("step %d: a second Wait gave %p, %v", step, again, err)
				}
				if err := res.Kept["y"].Release(); err != nil {
					t.Fatal(err)
				}
			}
			if n, _ := rt.LiveTensors(); n != 2 {
				t.Errorf("%d live tensors, want 2 (w, b)", n)
			}
		})
	}
}

// TestLaunchCancel: a Wait whose context is done fails with its error and
// releases its kept tensor; the launches queued after it, which read that
// tensor before it was released, still give cpuref's values; a Launch on a
// done context queues nothing; nothing leaks.
func TestLaunchCancel(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			live := liveBuffers()
			func() {
				c := newLaunchChain(t, rt, 6)
				defer c.wt.Release()
				defer c.bt.Release()
				c.launch(t)
				done, cancel := context.WithCancel(context.Background())
				cancel()
				for step, p := range c.pendings {
					if step == 2 {
						if _, err := p.Wait(done); !errors.Is(err, context.Canceled) {
							t.Fatalf("wait %d on a done context: %v", step, err)
						}
						if _, err := p.Kept("y").Read(context.Background(), nil); gpucc.CodeOf(err) != ir.CodeInvalidTensor {
							t.Errorf("kept y of the cancelled wait: %v, want %s", err, ir.CodeInvalidTensor)
						}
						continue
					}
					res, err := p.Wait(context.Background())
					if err != nil {
						t.Fatalf("wait %d: %v", step, err)
					}
					c.check(t, rt, step, res)
					res.Kept["y"].Release()
				}
				if _, err := c.exe.Launch(done, gpucc.Inputs{"x": c.wt, "w": c.wt, "b": c.bt}, gpucc.RunOptions{Keep: []string{"y"}}); !errors.Is(err, context.Canceled) {
					t.Errorf("launch on a done context: %v", err)
				}
				c.exe.Release()
			}()
			if n, b := rt.LiveTensors(); n != 0 {
				t.Errorf("%d live tensors (%d B) left", n, b)
			}
			rt.Close()
			if n := liveBuffers(); n != live {
				t.Errorf("%d device buffers live after Close, %d before", n, live)
			}
		})
	}
}

// TestLaunchCloseInFlight: Close while launches are queued and being
// waited for from other goroutines: each Wait returns cpuref's values or
// the closed error, never a wrong value, and every buffer is released.
func TestLaunchCloseInFlight(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			live := liveBuffers()
			rt := open(t, be)
			c := newLaunchChain(t, rt, 8)
			c.launch(t)
			var wg sync.WaitGroup
			errs := make([]error, len(c.pendings))
			for step, p := range c.pendings {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := p.Wait(context.Background())
					if err != nil {
						errs[step] = err
						return
					}
					y, err := res.Kept["y"].Read(context.Background(), nil)
					if err != nil { // released by the Close
						if gpucc.CodeOf(err) != ir.CodeInvalidTensor {
							errs[step] = err
						}
						return
					}
					compare(t, rt, layer(c.n, c.n, c.n, c.xs[step], c.w, c.b), c.want[step], map[string][]float32{"y": y, "s": res.Outputs["s"].Data})
				}()
			}
			rt.Close()
			wg.Wait()
			for step, err := range errs {
				if err != nil && gpucc.CodeOf(err) != ir.CodeBackendUnavailable {
					t.Errorf("wait %d: %v", step, err)
				}
			}
			if n := liveBuffers(); n != live {
				t.Errorf("%d device buffers live after Close, %d before", n, live)
			}
		})
	}
}
