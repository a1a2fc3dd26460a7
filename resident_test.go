package gpucc_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// layer is y = relu(x·w + b) for x [m,k], w [k,n], b [n], with the data
// given (nil: zeros of the shape).
func layer(m, k, n int, x, w, b []float32) *ir.Graph {
	bl := ir.NewBuilder()
	orZero := func(d []float32, n int) []float32 {
		if d == nil {
			return make([]float32, n)
		}
		return d
	}
	xt := bl.NamedInput("x", ir.Shape{m, k}, orZero(x, m*k))
	wt := bl.NamedInput("w", ir.Shape{k, n}, orZero(w, k*n))
	bt := bl.NamedInput("b", ir.Shape{n}, orZero(b, n))
	bl.Output("y", xt.MatMul(wt).Add(bt.Broadcast(ir.Shape{m, n})).Relu())
	bl.Output("s", xt.MatMul(wt).Sum())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g
}

// reference runs the layer through cpuref.Eval.
func reference(m, k, n int, x, w, b []float32) map[string][]float32 {
	g := layer(m, k, n, x, w, b)
	want, _ := expect(g)
	return want
}

// TestResidentChain: weights uploaded once, an output kept on the device
// and fed to the next run, host outputs read into caller slices: every
// value bit-exact against cpuref, on every backend, and no transfer that
// was not asked for.
func TestResidentChain(t *testing.T) {
	const n = 16
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			exe, err := rt.Compile(ctx, layer(n, n, n, nil, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			x := irtest.Values(1, n*n, 2)
			w := irtest.Values(2, n*n, 0.5)
			b := irtest.Values(3, n, 1)
			wt, err := rt.Upload(ctx, ir.Shape{n, n}, w)
			if err != nil {
				t.Fatal(err)
			}
			bt, err := rt.Upload(ctx, ir.Shape{n}, b)
			if err != nil {
				t.Fatal(err)
			}
			cur := gpucc.Value(gpucc.NewTensor(ir.Shape{n, n}, x))
			curData := x
			into := make([]float32, 1)
			for step := range 3 {
				res, err := exe.RunWith(ctx, gpucc.Inputs{"x": cur, "w": wt, "b": bt},
					gpucc.RunOptions{Keep: []string{"y"}, Into: map[string][]float32{"s": into}})
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				want := reference(n, n, n, curData, w, b)
				wantUp := int64(0)
				if step == 0 {
					wantUp = 4 * n * n // the host x; w and b are resident
				}
				if res.Timings.UploadBytes != wantUp || res.Timings.ReadbackBytes != 4 {
					t.Errorf("step %d: upload %d B, readback %d B; want %d and 4", step, res.Timings.UploadBytes, res.Timings.ReadbackBytes, wantUp)
				}
				if &res.Outputs["s"].Data[0] != &into[0] {
					t.Errorf("step %d: output s was not read into the caller's slice", step)
				}
				if _, ok := res.Outputs["y"]; ok {
					t.Errorf("step %d: kept output y is also in Outputs", step)
				}
				y := res.Kept["y"]
				got, err := y.Read(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, rt, layer(n, n, n, curData, w, b), want, map[string][]float32{"y": got, "s": into})
				if prev, ok := cur.(*gpucc.DeviceTensor); ok {
					if err := prev.Release(); err != nil {
						t.Fatal(err)
					}
				}
				cur, curData = y, got
			}
			if n, _ := rt.LiveTensors(); n != 3 {
				t.Errorf("%d live tensors, want 3 (w, b, last y)", n)
			}
			rt.Close()
			if err := wt.Release(); gpucc.CodeOf(err) != ir.CodeInvalidTensor {
				t.Errorf("release after Close: %v, want %s", err, ir.CodeInvalidTensor)
			}
		})
	}
}

// TestKeepAliases: keeping an output that is an input, a constant, or the
// same buffer as another kept output gives independent tensors.
func TestKeepAliases(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			bl := ir.NewBuilder()
			x := bl.NamedInput("x", ir.Shape{2, 2}, []float32{1, 2, 3, 4})
			bl.Output("same", x)
			bl.Output("flat", x.Reshape(ir.Shape{4}))
			bl.Output("k", bl.Full(ir.Shape{3}, 7))
			y := x.MulScalar(2)
			bl.Output("y", y)
			bl.Output("y2", y.Reshape(ir.Shape{4}))
			g, err := bl.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			res, err := exe.RunWith(ctx, nil, gpucc.RunOptions{Keep: []string{"same", "flat", "k", "y", "y2"}})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]float32{"same": {1, 2, 3, 4}, "flat": {1, 2, 3, 4}, "k": {7, 7, 7}, "y": {2, 4, 6, 8}, "y2": {2, 4, 6, 8}}
			got := map[string][]float32{}
			for name, tensor := range res.Kept {
				if got[name], err = tensor.Read(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if err := tensor.Release(); err != nil {
					t.Fatal(err)
				}
			}
			compare(t, rt, g, want, got)
			if n, bytes := rt.LiveTensors(); n != 0 || bytes != 0 {
				t.Errorf("%d tensors (%d B) live after releasing all", n, bytes)
			}
		})
	}
}

// TestMisuse: every misuse is refused with its stable code, never a panic.
func TestMisuse(t *testing.T) {
	ctx := context.Background()
	rt := open(t, "cpu", func(o *gpucc.Options) { o.MaxDeviceBytes = 1 << 10 })
	other := open(t, "cpu")
	g := layer(2, 2, 2, nil, nil, nil)
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	released, err := rt.Upload(ctx, ir.Shape{2, 2}, make([]float32, 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := released.Release(); err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Upload(ctx, ir.Shape{2, 2}, make([]float32, 4))
	if err != nil {
		t.Fatal(err)
	}
	var nilTensor *gpucc.DeviceTensor
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		err  error
		want ir.Code
	}{
		{"release twice", released.Release(), ir.CodeInvalidTensor},
		{"read released", second(released.Read(ctx, nil)), ir.CodeInvalidTensor},
		{"run on released", second(exe.Run(ctx, gpucc.Inputs{"x": released})), ir.CodeInvalidTensor},
		{"run on foreign", second(exe.Run(ctx, gpucc.Inputs{"x": foreign})), ir.CodeInvalidTensor},
		{"nil tensor", second(exe.Run(ctx, gpucc.Inputs{"x": nilTensor})), ir.CodeInvalidTensor},
		{"unknown input", second(exe.Run(ctx, gpucc.Inputs{"nope": gpucc.NewTensor(ir.Shape{1}, []float32{1})})), ir.CodeInvalidInput},
		{"wrong shape", second(exe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{4}, make([]float32, 4))})), ir.CodeInvalidInput},
		{"short data", second(exe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{2, 2}, make([]float32, 3))})), ir.CodeInvalidInput},
		{"non-finite", second(exe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{2, 2}, []float32{0, inf, 0, 0})})), ir.CodeInvalidInput},
		{"keep unknown", second(exe.RunWith(ctx, nil, gpucc.RunOptions{Keep: []string{"nope"}})), ir.CodeInvalidInput},
		{"into wrong length", second(exe.RunWith(ctx, nil, gpucc.RunOptions{Into: map[string][]float32{"y": make([]float32, 3)}})), ir.CodeInvalidInput},
		{"keep and into one output", second(exe.RunWith(ctx, nil, gpucc.RunOptions{Keep: []string{"y"}, Into: map[string][]float32{"y": make([]float32, 4)}})), ir.CodeInvalidInput},
		{"upload over cap", second(rt.Upload(ctx, ir.Shape{512}, make([]float32, 512))), ir.CodeLimitExceeded},
		{"compile nil", second(rt.Compile(ctx, nil)), ir.CodeInvalidGraph},
		{"run nil graph", second(rt.Run(ctx, nil)), ir.CodeInvalidGraph},
		{"load nil plan", second(rt.Load(ctx, nil)), ir.CodeInvalidGraph},
	}
	for _, c := range cases {
		if got := gpucc.CodeOf(c.err); got != c.want {
			t.Errorf("%s: %v (code %s), want %s", c.name, c.err, got, c.want)
		}
	}
	// A backend not linked in: the error says how a program links them.
	if _, err := gpucc.Open(ctx, gpucc.Options{Backend: "nope"}); gpucc.CodeOf(err) != ir.CodeBackendUnavailable || !strings.Contains(err.Error(), "github.com/gpucc/gpucc/runtime/all") {
		t.Errorf("open an unlinked backend: %v, want backend_unavailable naming runtime/all", err)
	}
	// The cap counts a run's buffers too: a run that does not fit is
	// refused before it allocates.
	big, err := rt.Compile(ctx, layer(8, 8, 8, nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := big.Run(ctx, nil); gpucc.CodeOf(err) != ir.CodeLimitExceeded {
		t.Errorf("run over the cap: %v, want %s", err, ir.CodeLimitExceeded)
	}
	exe.Release()
	if _, err := exe.Run(ctx, nil); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("run after Release: %v, want %s", err, ir.CodeInvalidInput)
	}
	rt.Close()
	if _, err := big.Run(ctx, nil); gpucc.CodeOf(err) != ir.CodeBackendUnavailable {
		t.Errorf("run after Close: %v, want %s", err, ir.CodeBackendUnavailable)
	}
	if _, err := rt.Upload(ctx, ir.Shape{1}, []float32{1}); gpucc.CodeOf(err) != ir.CodeBackendUnavailable {
		t.Errorf("upload after Close: %v, want %s", err, ir.CodeBackendUnavailable)
	}
}

func second[T any](_ T, err error) error { return err }

// countdown is a context whose Err turns to Canceled after n calls: it
// cancels a run at each point where the run looks, one after the other.
type countdown struct {
	context.Context
	n atomic.Int64
}

func (c *countdown) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestCancelLeaksNothing cancels runs at every point they check their
// context: each either completes or fails with the context's error, and
// no tensor is left live but the ones a completed run returned.
func TestCancelLeaksNothing(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			exe, err := rt.Compile(context.Background(), layer(8, 8, 8, nil, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			canceled := 0
			for k := range 40 {
				ctx := &countdown{Context: context.Background()}
				ctx.n.Store(int64(k))
				res, err := exe.RunWith(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{8, 8}, irtest.Values(uint64(k), 64, 1))},
					gpucc.RunOptions{Keep: []string{"y"}})
				if err != nil {
					if err != context.Canceled {
						t.Fatalf("cancel after %d checks: %v, want context.Canceled", k, err)
					}
					canceled++
				} else if err := res.Kept["y"].Release(); err != nil {
					t.Fatal(err)
				}
				if n, bytes := rt.LiveTensors(); n != 0 || bytes != 0 {
					t.Fatalf("cancel after %d checks: %d tensors (%d B) live", k, n, bytes)
				}
			}
			if canceled == 0 {
				t.Error("no run was cancelled")
			}
		})
	}
}

// TestConcurrentRuns runs one executable from many goroutines, with
// tensors uploaded, kept and released concurrently (run with -race).
func TestConcurrentRuns(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			const n = 4
			exe, err := rt.Compile(ctx, layer(n, n, n, nil, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			w := irtest.Values(9, n*n, 1)
			wt, err := rt.Upload(ctx, ir.Shape{n, n}, w)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					x := irtest.Values(uint64(i), n*n, 1)
					xt, err := rt.Upload(ctx, ir.Shape{n, n}, x)
					if err != nil {
						t.Error(err)
						return
					}
					defer xt.Release()
					res, err := exe.RunWith(ctx, gpucc.Inputs{"x": xt, "w": wt}, gpucc.RunOptions{Keep: []string{"y"}})
					if err != nil {
						t.Error(err)
						return
					}
					y, err := res.Kept["y"].Read(ctx, nil)
					res.Kept["y"].Release()
					if err != nil {
						t.Error(err)
						return
					}
					want, _ := expect(layer(n, n, n, x, w, nil))
					if !equalBits(y, want["y"]) {
						t.Errorf("goroutine %d: y = %v, want %v", i, y, want)
					}
				})
			}
			wg.Wait()
			wt.Release()
			if n, _ := rt.LiveTensors(); n != 0 {
				t.Errorf("%d tensors live", n)
			}
		})
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestNonFiniteInput: a host input holding ±Inf or NaN is refused with
// invalid_input naming it, on every backend (webgpu finds it while copying
// to staging), and the run leaves nothing behind.
func TestNonFiniteInput(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			const n = 1 << 15 // above the size where webgpu stages uploads
			exe, err := rt.Compile(ctx, layer(n/8, 8, 8, nil, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []float32{float32(math.Inf(-1)), float32(math.NaN())} {
				x := irtest.Values(5, n, 1)
				x[n-3] = bad
				_, err := exe.RunWith(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{n / 8, 8}, x)}, gpucc.RunOptions{Keep: []string{"y"}})
				var ie *ir.Error
				if !errors.As(err, &ie) || ie.Code != ir.CodeInvalidInput || ie.Field != "x" {
					t.Errorf("input x with %v: %v, want invalid_input on field x", bad, err)
				}
				if n, _ := rt.LiveTensors(); n != 0 {
					t.Errorf("%d tensors live after a refused run", n)
				}
			}
		})
	}
}

// TestNonFiniteUpload: Runtime.Upload refuses data holding ±Inf or NaN
// with invalid_input naming the first one's index, on every backend
// (webgpu finds it while copying to staging, small uploads before), and
// leaves no tensor, no buffer and no reserved bytes behind; finite data of
// the same sizes reads back bit for bit.
func TestNonFiniteUpload(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			for _, n := range []int{5, 1 << 15, 3<<18 + 1} { // below, above the staged size; several workers
				for _, at := range []int{0, n / 2, n - 1} {
					x := irtest.Values(9, n, 3e38)
					x[at] = float32(math.NaN())
					if at+1 < n {
						x[at+1] = float32(math.Inf(1)) // a later one is not the one named
					}
					_, err := rt.Upload(ctx, ir.Shape{n}, x)
					var ie *ir.Error
					if !errors.As(err, &ie) || ie.Code != ir.CodeInvalidInput || !strings.Contains(ie.Error(), fmt.Sprintf("value %d is NaN", at)) {
						t.Errorf("n=%d: NaN at %d: %v, want invalid_input naming value %d", n, at, err, at)
					}
					if k, b := rt.LiveTensors(); k != 0 || b != 0 {
						t.Errorf("n=%d: %d tensors (%d B) live after a refused upload", n, k, b)
					}
				}
				x := irtest.Values(9, n, 3e38)
				dt, err := rt.Upload(ctx, ir.Shape{n}, x)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dt.Read(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i := range x {
					if math.Float32bits(got[i]) != math.Float32bits(x[i]) {
						t.Fatalf("n=%d: element %d reads %v, uploaded %v", n, i, got[i], x[i])
					}
				}
				dt.Release()
			}
		})
	}
}

// TestEmbeddedStaysResident: a graph's embedded data (an ONNX model's
// weights) goes to the device at the first run that takes it and stays
// there: later runs upload only what they are given, give the same bits,
// and the bytes count against MaxDeviceBytes until Release.
func TestEmbeddedStaysResident(t *testing.T) {
	const n = 16
	x := irtest.Values(1, n*n, 2)
	w := irtest.Values(2, n*n, 0.5)
	b := irtest.Values(3, n, 1)
	want := reference(n, n, n, x, w, b)
	weights := int64(4 * (n*n + n)) // w and b; x is given every run
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			exe, err := rt.Compile(ctx, layer(n, n, n, nil, w, b))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				res, err := exe.Run(ctx, gpucc.Inputs{"x": gpucc.Tensor{Shape: ir.Shape{n, n}, Data: x}})
				if err != nil {
					t.Fatal(err)
				}
				up := int64(4 * n * n)
				if i == 0 {
					up += weights
				}
				if res.Timings.UploadBytes != up {
					t.Errorf("run %d uploaded %d bytes, want %d (x%s)", i, res.Timings.UploadBytes, up, map[bool]string{true: " and the weights", false: " only"}[i == 0])
				}
				for name, v := range want {
					if !equalBits(res.Outputs[name].Data, v) {
						t.Fatalf("run %d: %s differs from cpuref", i, name)
					}
				}
			}
			if n, bytes := rt.LiveTensors(); n != 0 || bytes != 0 {
				t.Errorf("LiveTensors = %d, %d bytes: embedded data is not a tensor", n, bytes)
			}
		})
	}
}

// TestEmbeddedCountsAgainstCap: an executable's embedded data on the
// device counts against MaxDeviceBytes until the executable is released.
func TestEmbeddedCountsAgainstCap(t *testing.T) {
	const n, capBytes = 16, 64 << 10
	w := irtest.Values(2, n*n, 0.5)
	b := irtest.Values(3, n, 1)
	weights := 4 * (n*n + n)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be, func(o *gpucc.Options) { o.MaxDeviceBytes = capBytes })
			exe, err := rt.Compile(ctx, layer(n, n, n, nil, w, b))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exe.Run(ctx, gpucc.Inputs{"x": gpucc.Tensor{Shape: ir.Shape{n, n}, Data: irtest.Values(1, n*n, 2)}}); err != nil {
				t.Fatal(err)
			}
			// Fits in the cap, but not beside the weights.
			big := make([]float32, (capBytes-weights)/4+1)
			if _, err := rt.Upload(ctx, ir.Shape{len(big)}, big); gpucc.CodeOf(err) != ir.CodeLimitExceeded {
				t.Fatalf("upload of %d bytes beside %d bytes of weights under a %d-byte cap: %v, want %s", 4*len(big), weights, capBytes, err, ir.CodeLimitExceeded)
			}
			exe.Release()
			tt, err := rt.Upload(ctx, ir.Shape{len(big)}, big)
			if err != nil {
				t.Fatalf("after Release: %v", err)
			}
			tt.Release()
		})
	}
}
