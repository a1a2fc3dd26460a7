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
