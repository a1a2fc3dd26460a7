package gpucc

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestRunAllocs pins what a warm RunWith of relu(a*b+c) over 1024
// allocates on webgpu, and logs it on the other backends. A run on
// resident inputs that keeps its output allocates what it returns: the
// Result, its Outputs, Kept and Cache maps (a Go map is a header and a
// group, so two each but Outputs', which stays empty), the kept
// DeviceTensor and the backend's buffer handle under it, 8 in all
// (until 2026-12-05: 27, among them the call, its slices and stats made
// afresh, a string "input "+name built per resident input, the pool's
// list elements and the gpu package's map and copy bookkeeping). A
// queued run (NoWait) allocates the same 8 (13 at 0c30a00, through the
// backend's Launch). A run into a caller's slice (RunOptions.Into)
// returns the output's Tensor in Outputs instead. The inputs hold -0, the least subnormal and ±3e38, and
// each run's output is cpuref's, bit for bit (on webgpu, or
// cpuref.EvalFlushed's: see flushRef).
func TestRunAllocs(t *testing.T) {
	const n = 1024
	vals := func(seed float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = seed * float32(i%37-18) / 7
		}
		v[0], v[1], v[2], v[3] = float32(math.Copysign(0, -1)), math.Float32frombits(1), 3e38, -3e38
		return v
	}
	a, b, c := vals(1), vals(0.5), vals(-0.25)
	b[2], b[3] = 0.5, -1 // products of at most 3e38, and sums too
	c[2], c[3] = 1, -1e30
	bl := ir.NewBuilder()
	x, y, z := bl.Input(ir.Shape{n}, a), bl.Input(ir.Shape{n}, b), bl.Input(ir.Shape{n}, c)
	bl.Output("out", x.Mul(y).Add(z).Relu())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	host := Inputs{"input0": NewTensor(ir.Shape{n}, a), "input1": NewTensor(ir.Shape{n}, b), "input2": NewTensor(ir.Shape{n}, c)}
	want := refOf(g)
	ctx := context.Background()
	for _, be := range []string{"webgpu", "cpu", "native", "wasm"} {
		t.Run(be, func(t *testing.T) {
			rt, exe := openCompiled(t, be, ir.Limits{}, g)
			resident := Inputs{}
			for name, v := range host {
				d, err := rt.Upload(ctx, ir.Shape{n}, v.(Tensor).Data)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Release()
				resident[name] = d
			}
			out := make([]float32, n)
			for _, tc := range []struct {
				name   string
				in     Inputs
				keep   bool
				noWait bool
				want   float64 // webgpu's
			}{
				{"resident-kept", resident, true, false, 8},
				{"resident-kept-nowait", resident, true, true, 8},
				{"resident-into", resident, false, false, 6},
				{"host-into", host, false, false, 6},
			} {
				opts := RunOptions{Into: map[string][]float32{"out": out}}
				if tc.keep {
					opts = RunOptions{Keep: []string{"out"}, NoWait: tc.noWait}
				}
				run := func() *Result {
					res, err := exe.RunWith(ctx, tc.in, opts)
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				release := func(res *Result) {
					if tc.keep {
						res.Kept["out"].Release()
					}
				}
				for range 3 { // the pool, the bind groups, the recording ahead
					release(run())
				}
				allocs := testing.AllocsPerRun(50, func() { release(run()) })
				res := run()
				got := out
				if tc.keep {
					if got, err = res.Kept["out"].Read(ctx, nil); err != nil {
						t.Fatal(err)
					}
					release(res)
				}
				if i := want.mismatch(be, got); i >= 0 {
					t.Fatalf("%s: out[%d] = %v, cpuref %v", tc.name, i, got[i], want.want[i])
				}
				t.Logf("%s: %v allocations a run", tc.name, allocs)
				if be == "webgpu" && allocs != tc.want {
					t.Errorf("%s: a warm run allocates %v times, want %v", tc.name, allocs, tc.want)
				}
			}
		})
	}
}
