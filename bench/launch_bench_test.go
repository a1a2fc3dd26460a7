package bench

// BenchmarkLaunchChain: a chain of resident runs of relu(a*b+c), each on
// the last one's kept output, run one at a time (RunWith waits for each)
// against launched (Launch queues each, and only the last is waited for):
// what queueing saves is the device's idle time between runs. The size
// is GPUCC_BENCH_ELEMS.

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

func BenchmarkLaunchChain(b *testing.B) {
	n := envInt("GPUCC_BENCH_ELEMS", 1<<20)
	ctx := context.Background()
	shape := ir.Shape{n}
	setup := func(b *testing.B) (*gpucc.Executable, gpucc.Inputs) {
		rt := openEngine(b)
		exe, err := rt.Compile(ctx, ReluMulAdd(n))
		if err != nil {
			b.Fatal(err)
		}
		in := gpucc.Inputs{}
		for i, d := range [][]float32{irtest.Values(1, n, 1), irtest.Values(2, n, 1), irtest.Values(3, n, 0.1)} {
			t, err := rt.Upload(ctx, shape, d)
			if err != nil {
				b.Fatal(err)
			}
			in[fmt.Sprintf("input%d", i)] = t
		}
		return exe, in
	}
	keep := gpucc.RunOptions{Keep: []string{"out"}}
	const chain = 16
	b.Run(fmt.Sprintf("run/%d", n), func(b *testing.B) {
		exe, in := setup(b)
		for b.Loop() {
			x := in["input0"]
			for i := range chain {
				res, err := exe.RunWith(ctx, gpucc.Inputs{"input0": x, "input1": in["input1"], "input2": in["input2"]}, keep)
				if err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					x.(*gpucc.DeviceTensor).Release()
				}
				x = res.Kept["out"]
			}
			x.(*gpucc.DeviceTensor).Release()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*chain), "us/run")
	})
	b.Run(fmt.Sprintf("launch/%d", n), func(b *testing.B) {
		exe, in := setup(b)
		for b.Loop() {
			x := in["input0"]
			var p *gpucc.Pending
			for i := range chain {
				var err error
				p, err = exe.Launch(ctx, gpucc.Inputs{"input0": x, "input1": in["input1"], "input2": in["input2"]}, keep)
				if err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					x.(*gpucc.DeviceTensor).Release() // its readers are queued: the device orders reuse after them
				}
				x = p.Kept("out")
			}
			if _, err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			x.(*gpucc.DeviceTensor).Release()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*chain), "us/run")
	})
}

// BenchmarkLaunchKept: rounds of Q runs of relu(a*b+c) on resident
// inputs, each keeping its output on the device, the outputs held until
// the round's end and then released (a server answering a burst of
// requests with device tensors): "launch" queues the Q runs and waits for
// them, "run" runs them one at a time. Each run's output is a buffer of
// its own while the round holds them, so the pool must keep a round's
// worth to spare the next round Q fresh buffers (wgpu zero-fills each,
// and the driver allocates it: 0.53 ms a run on the H200 at 16 MiB with
// Q = 200, against 0.077 ms for one run that reuses its buffer). The
// first round allocates; b.Loop times the later ones. Reported: µs a run,
// and the share of runs whose buffers all came from the pool.
//
//	GPUCC_BENCH_KEPT   elements of each output (default 65536; H200: 4194304, 16 MiB)
//	GPUCC_BENCH_QUEUE  Q (default 200)
func BenchmarkLaunchKept(b *testing.B) {
	n := envInt("GPUCC_BENCH_KEPT", 1<<16)
	q := envInt("GPUCC_BENCH_QUEUE", 200)
	ctx := context.Background()
	shape := ir.Shape{n}
	keep := gpucc.RunOptions{Keep: []string{"out"}}
	for _, mode := range []string{"launch", "run"} {
		b.Run(fmt.Sprintf("%s/%dx%d", mode, q, n), func(b *testing.B) {
			rt := openEngine(b)
			exe, err := rt.Compile(ctx, ReluMulAdd(n))
			if err != nil {
				b.Fatal(err)
			}
			in := gpucc.Inputs{}
			for i, d := range [][]float32{irtest.Values(1, n, 1), irtest.Values(2, n, 1), irtest.Values(3, n, 0.1)} {
				t, err := rt.Upload(ctx, shape, d)
				if err != nil {
					b.Fatal(err)
				}
				in[fmt.Sprintf("input%d", i)] = t
			}
			var pooled, runs int
			count := func(res *gpucc.Result) {
				runs++
				if res.Cache["bufferPool"] {
					pooled++
				}
			}
			round := func() {
				kept := make([]*gpucc.DeviceTensor, 0, q)
				pending := make([]*gpucc.Pending, 0, q)
				for range q {
					if mode == "launch" {
						p, err := exe.Launch(ctx, in, keep)
						if err != nil {
							b.Fatal(err)
						}
						kept = append(kept, p.Kept("out"))
						pending = append(pending, p)
						continue
					}
					res, err := exe.RunWith(ctx, in, keep)
					if err != nil {
						b.Fatal(err)
					}
					kept = append(kept, res.Kept["out"])
					count(res)
				}
				for _, p := range pending {
					res, err := p.Wait(ctx)
					if err != nil {
						b.Fatal(err)
					}
					count(res)
				}
				for _, t := range kept {
					t.Release()
				}
			}
			round() // the first round allocates
			pooled, runs = 0, 0
			for b.Loop() {
				round()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*q), "us/run")
			if runs > 0 {
				b.ReportMetric(float64(pooled)/float64(runs), "pooled")
			}
		})
	}
}
