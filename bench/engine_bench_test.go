package bench

// Benchmarks of the executable API (issue 9): warm runs from host slices,
// runs on resident tensors, transfers, and the MLP train step resident
// against re-uploading its parameters. Sizes come from the environment,
// small by default; `bench/device.sh engine` runs them at the sizes:
//
//	GPUCC_BENCH_BACKEND  backend (default webgpu)
//	GPUCC_BENCH_ELEMS    relu(a*b+c) elements (default 1M; H200: 67108864)
//	GPUCC_BENCH_BYTES    transfer size (default 16 MiB; H200: 268435456)
//	GPUCC_BENCH_MLP      B,D,H,O of the MLP (default 256,128,128,16; H200: 4096,1024,1024,16)

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

func benchBackend() string {
	if b := os.Getenv("GPUCC_BENCH_BACKEND"); b != "" {
		return b
	}
	return "webgpu"
}

func openEngine(b *testing.B, opts ...func(*gpucc.Options)) *gpucc.Runtime {
	b.Helper()
	o := gpucc.Options{Backend: benchBackend(), AllowSoftware: true, Limits: Limits(), Upload: os.Getenv("GPUCC_UPLOAD"),
		UploadChunk: uint64(envInt("GPUCC_UPLOAD_CHUNK", 0))}
	for _, f := range opts {
		f(&o)
	}
	rt, err := gpucc.Open(context.Background(), o)
	if err != nil {
		b.Skipf("%s: %v", benchBackend(), err)
	}
	b.Cleanup(rt.Close)
	return rt
}

// reportRun reports the mean stages of n runs summed in t, and the wall
// time beyond the kernels.
func reportRun(b *testing.B, t gpucc.Timings) {
	n := float64(b.N)
	wall := float64(b.Elapsed().Nanoseconds()) / 1e6 / n
	b.ReportMetric(t.UploadMs/n, "upload-ms")
	b.ReportMetric(t.DispatchMs/n, "dispatch-ms("+t.DispatchClock+")")
	b.ReportMetric(t.ReadbackMs/n, "readback-ms")
	b.ReportMetric((wall-t.DispatchMs/n)*1000, "us-beyond-kernels")
}

// BenchmarkExecutableRun is a warm Executable.Run of relu(a*b+c): "host"
// from host slices into a caller-supplied output slice, "resident" on
// inputs already on the device with the output kept there (what a run
// costs beyond its kernels), "queued" the resident runs with NoWait.
func BenchmarkExecutableRun(b *testing.B) {
	n := envInt("GPUCC_BENCH_ELEMS", 1<<20)
	ctx := context.Background()
	shape := ir.Shape{n}
	a, x, c := irtest.Values(1, n, 3), irtest.Values(2, n, 3), irtest.Values(3, n, 3)
	b.Run(fmt.Sprintf("host/%d", n), func(b *testing.B) {
		rt := openEngine(b)
		exe, err := rt.Compile(ctx, ReluMulAdd(n))
		if err != nil {
			b.Fatal(err)
		}
		in := gpucc.Inputs{"input0": gpucc.NewTensor(shape, a), "input1": gpucc.NewTensor(shape, x), "input2": gpucc.NewTensor(shape, c)}
		into := gpucc.RunOptions{Into: map[string][]float32{"out": make([]float32, n)}}
		if _, err := exe.RunWith(ctx, in, into); err != nil { // first use of pipelines and buffers
			b.Fatal(err)
		}
		var t gpucc.Timings
		b.SetBytes(16 * int64(n))
		for b.Loop() {
			res, err := exe.RunWith(ctx, in, into)
			if err != nil {
				b.Fatal(err)
			}
			t.Add(res.Timings)
		}
		reportRun(b, t)
	})
	b.Run(fmt.Sprintf("resident/%d", n), func(b *testing.B) {
		rt := openEngine(b)
		exe, err := rt.Compile(ctx, ReluMulAdd(n))
		if err != nil {
			b.Fatal(err)
		}
		in := gpucc.Inputs{}
		for i, d := range [][]float32{a, x, c} {
			t, err := rt.Upload(ctx, shape, d)
			if err != nil {
				b.Fatal(err)
			}
			in[fmt.Sprintf("input%d", i)] = t
		}
		benchResident(b, exe, in, "out")
	})
	// The resident runs queued (RunOptions.NoWait): none waits for the
	// GPU, the device bounds what is queued, and the last one's output is
	// read inside the timing. us-per-run less the resident runs'
	// dispatch-ms (the kernel, by the GPU's clock) is what a run costs
	// beyond its kernel when runs follow each other.
	b.Run(fmt.Sprintf("queued/%d", n), func(b *testing.B) {
		rt := openEngine(b)
		exe, err := rt.Compile(ctx, ReluMulAdd(n))
		if err != nil {
			b.Fatal(err)
		}
		in := gpucc.Inputs{}
		for i, d := range [][]float32{a, x, c} {
			t, err := rt.Upload(ctx, shape, d)
			if err != nil {
				b.Fatal(err)
			}
			in[fmt.Sprintf("input%d", i)] = t
		}
		keep := gpucc.RunOptions{Keep: []string{"out"}, NoWait: true}
		out := make([]float32, n)
		run := func(last bool) {
			res, err := exe.RunWith(ctx, in, keep)
			if err != nil {
				b.Fatal(err)
			}
			if last {
				if _, err := res.Kept["out"].Read(ctx, out); err != nil {
					b.Fatal(err)
				}
			}
			res.Kept["out"].Release()
		}
		run(true) // first use of pipelines and buffers
		b.ResetTimer()
		for i := range b.N {
			run(i == b.N-1)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "us-per-run")
	})
}

// benchResident times warm runs of exe on resident inputs in, keeping
// output out on the device (released after each run), and reports them.
func benchResident(b *testing.B, exe *gpucc.Executable, in gpucc.Inputs, out string) {
	ctx := context.Background()
	keep := gpucc.RunOptions{Keep: []string{out}}
	run := func() gpucc.Timings {
		res, err := exe.RunWith(ctx, in, keep)
		if err != nil {
			b.Fatal(err)
		}
		res.Kept[out].Release()
		return res.Timings
	}
	run() // first use of pipelines and buffers
	// The GPU's clock falls to 345–700 MHz while the host compiles the
	// graph, and ramps back over about a second of work: BenchmarkMLPStepKernels'
	// products ran 3× slower in the ramp after a compile on an H100
	// (2026-12-06 16:21 UTC, the clock at 570–705 MHz). Run for
	// residentWarm before timing.
	for start := time.Now(); time.Since(start) < residentWarm; {
		run()
	}
	var t gpucc.Timings
	for b.Loop() {
		t.Add(run())
	}
	reportRun(b, t)
}

// residentWarm is how long benchResident runs its executable before
// timing it, to bring the GPU's clock up.
const residentWarm = 400 * time.Millisecond

// BenchmarkTensorTransfer uploads a host slice into a device tensor and
// reads one back into a caller slice. Each first transfer runs before the
// timer, as runtime/gpu's BenchmarkTransfer's do: until 2026-12-05 the
// first upload's device buffer and staging ring, and the first readback's
// page faults in a fresh 256 MiB slice, were inside it, one run in ten of
// the engine suite's (the H100 on 2026-12-05: 18.2 / 22.5 GB/s here
// against 23.7 / 30.6 through runtime/gpu).
func BenchmarkTensorTransfer(b *testing.B) {
	n := envInt("GPUCC_BENCH_BYTES", 16<<20) / 4
	ctx := context.Background()
	data := irtest.Values(7, n, 1)
	shape := ir.Shape{n}
	b.Run(fmt.Sprintf("upload/%dMiB", n>>18), func(b *testing.B) {
		rt := openEngine(b)
		upload := func() {
			t, err := rt.Upload(ctx, shape, data)
			if err != nil {
				b.Fatal(err)
			}
			t.Release() // back to the pool: the next upload allocates nothing
		}
		upload()
		b.SetBytes(4 * int64(n))
		for b.Loop() {
			upload()
		}
	})
	b.Run(fmt.Sprintf("readback/%dMiB", n>>18), func(b *testing.B) {
		rt := openEngine(b)
		t, err := rt.Upload(ctx, shape, data)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]float32, n)
		if _, err := t.Read(ctx, out); err != nil { // the read ring, and out's pages
			b.Fatal(err)
		}
		b.SetBytes(4 * int64(n))
		for b.Loop() {
			if _, err := t.Read(ctx, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// mlpSize reads GPUCC_BENCH_MLP.
func mlpSize() (bsz, d, h, o int) {
	v := []int{256, 128, 128, 16}
	if s := os.Getenv("GPUCC_BENCH_MLP"); s != "" {
		for i, f := range strings.Split(s, ",") {
			if k, err := strconv.Atoi(f); err == nil && i < 4 && k > 0 {
				v[i] = k
			}
		}
	}
	return v[0], v[1], v[2], v[3]
}

// BenchmarkMLPTrainStep times one SGD step of the MLP: "resident" through
// a Trainer (parameters and batch stay on the device, only the loss comes
// back), "reupload" running the same step graph with every parameter
// uploaded from the host and read back each step.
func BenchmarkMLPTrainStep(b *testing.B) {
	bsz, d, h, o := mlpSize()
	g := MLP(bsz, d, h, o)
	ctx := context.Background()
	name := fmt.Sprintf("%dx%d-%d-%d", bsz, d, h, o)
	b.Run("resident/"+name, func(b *testing.B) {
		rt := openEngine(b)
		tr, err := rt.NewTrainer(ctx, g, "loss", 0.01)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		if _, err := tr.Step(ctx, nil); err != nil {
			b.Fatal(err)
		}
		var t gpucc.Timings
		for b.Loop() {
			r, err := tr.Step(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			t.Add(r.Timings)
		}
		reportRun(b, t)
	})
	b.Run("launch/"+name, func(b *testing.B) {
		// Trainer.Launch: steps queued back to back, no loss read but the
		// last (the trainer waits for its oldest step past 16 in flight).
		rt := openEngine(b)
		tr, err := rt.NewTrainer(ctx, g, "loss", 0.01)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		if _, err := tr.Step(ctx, nil); err != nil {
			b.Fatal(err)
		}
		// The wait for the last step is timed: b.Loop stops the timer when
		// it ends, which left up to 16 queued steps out of the figure (0.97
		// ms a step on the H200 at 18:50, under the 3.0 ms its kernels take).
		var last *gpucc.StepPending
		b.ResetTimer()
		for range b.N {
			if last, err = tr.Launch(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := last.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/step")
	})
	b.Run("reupload/"+name, func(b *testing.B) {
		rt := openEngine(b)
		res, err := rt.Train(ctx, g, "loss", 0.01, 1) // compiles the same step graph, warms the caches
		if err != nil {
			b.Fatal(err)
		}
		params := res.Params
		var t gpucc.Timings
		for b.Loop() {
			// The old path: a fresh trainer per step uploads every
			// parameter and reads every one back.
			for _, p := range g.Params() {
				g.Nodes[p.ID].Data = params[p.Name].Data
			}
			r, err := rt.Train(ctx, g, "loss", 0.01, 1)
			if err != nil {
				b.Fatal(err)
			}
			params = r.Params
			t.Add(r.Timings)
		}
		reportRun(b, t)
	})
}
