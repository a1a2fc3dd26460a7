package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestRunNoWait: a chain of 150 resident runs with NoWait, each feeding
// its kept output to the next and releasing the tensor before it (whose
// buffer the pool gives the next run while the GPU may still read it),
// more than gpu's bound on queued submissions (64), with a run that reads
// a host output every 50 steps, gives cpuref's bits on every backend: the
// chain's y after each host read and at the end, and each host output s.
// The same chain is computed on the host, step by step, through cpuref.
func TestRunNoWait(t *testing.T) {
	const n, steps = 8, 150
	w := irtest.Values(2, n*n, 0.25)
	b := irtest.Values(3, n, 1)
	x := irtest.Values(1, n*n, 2)
	// The host's chain: each step's y, by cpuref.
	wantY := make([][]float32, steps)
	wantS := make([][]float32, steps)
	cur := x
	for i := range steps {
		ref := reference(n, n, n, cur, w, b)
		wantY[i], wantS[i] = ref["y"], ref["s"]
		cur = wantY[i]
	}
	if nonzero := len(wantY[steps-1]) - countZeros(wantY[steps-1]); nonzero == 0 {
		t.Fatal("the chain dies out: its last y is all zeros")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			exe, err := rt.Compile(ctx, layer(n, n, n, nil, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			up := func(shape ir.Shape, d []float32) *gpucc.DeviceTensor {
				v, err := rt.Upload(ctx, shape, d)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			wt, bt, xt := up(ir.Shape{n, n}, w), up(ir.Shape{n}, b), up(ir.Shape{n, n}, x)
			cur := xt
			check := func(step int, name string, got, want []float32) {
				t.Helper()
				for k := range want {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Fatalf("step %d: %s[%d] = %v, cpuref %v", step, name, k, got[k], want[k])
					}
				}
			}
			for i := range steps {
				opts := gpucc.RunOptions{Keep: []string{"y", "s"}, NoWait: true}
				read := (i+1)%50 == 0
				into := make([]float32, 1)
				if read { // a host output: this run waits
					opts = gpucc.RunOptions{Keep: []string{"y"}, Into: map[string][]float32{"s": into}, NoWait: true}
				}
				res, err := exe.RunWith(ctx, gpucc.Inputs{"x": cur, "w": wt, "b": bt}, opts)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if err := cur.Release(); err != nil {
					t.Fatal(err)
				}
				cur = res.Kept["y"]
				// On webgpu a queued run has no GPU time: had it waited,
				// its clock would be the timestamps' (lavapipe has them).
				if be == "webgpu" && !read && res.Timings.DispatchClock != "wall" {
					t.Fatalf("step %d: a NoWait run's dispatch clock is %q: it waited", i, res.Timings.DispatchClock)
				}
				if !read {
					if err := res.Kept["s"].Release(); err != nil {
						t.Fatal(err)
					}
					continue
				}
				check(i, "s", into, wantS[i])
				got, err := cur.Read(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				check(i, "y", got, wantY[i])
			}
			got, err := cur.Read(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(steps-1, "y", got, wantY[steps-1])
			for _, v := range []*gpucc.DeviceTensor{cur, wt, bt} {
				if err := v.Release(); err != nil {
					t.Fatal(err)
				}
			}
			if n, _ := rt.LiveTensors(); n != 0 {
				t.Errorf("%d live tensors left", n)
			}
		})
	}
}

func countZeros(s []float32) int {
	n := 0
	for _, v := range s {
		if v == 0 {
			n++
		}
	}
	return n
}

// TestRunNoWaitClose closes a Runtime right after queueing 20 NoWait runs,
// their tensors still held: Close waits for the queued kernels before the
// device goes, and a later Read of a kept tensor is an error, not a crash.
func TestRunNoWaitClose(t *testing.T) {
	const n = 8
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			exe, err := rt.Compile(ctx, layer(n, n, n, nil, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			var held []*gpucc.DeviceTensor
			for _, d := range []struct {
				shape ir.Shape
				data  []float32
			}{{ir.Shape{n, n}, irtest.Values(1, n*n, 1)}, {ir.Shape{n, n}, irtest.Values(2, n*n, 0.25)}, {ir.Shape{n}, irtest.Values(3, n, 1)}} {
				v, err := rt.Upload(ctx, d.shape, d.data)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, v)
			}
			cur := held[0]
			for i := range 20 {
				res, err := exe.RunWith(ctx, gpucc.Inputs{"x": cur, "w": held[1], "b": held[2]}, gpucc.RunOptions{Keep: []string{"y", "s"}, NoWait: true})
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				cur = res.Kept["y"]
				held = append(held, cur, res.Kept["s"])
			}
			rt.Close()
			if _, err := cur.Read(ctx, nil); err == nil {
				t.Fatal("a kept tensor read after Close")
			}
		})
	}
}
