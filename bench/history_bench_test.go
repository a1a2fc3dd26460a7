package bench

// BenchmarkHistory is issue 20's probe: does a kernel's time depend on
// what the Runtime ran before? One Runtime times softmax [R,C] on a
// resident tensor (its output kept on the device) and the MLP train step,
// three times: fresh, after K host-to-host runs of relu(a*b+c) over N
// values, and after a further idle second. It reports each state's median
// kernel time (GPU timestamps where the device has them), the median wall
// time of a whole run, the first run's kernel time after the host runs,
// how many of the softmax runs found all their buffers in the pool, and
// the ratios after/fresh, which issue 20 wants within 1.1.
//
//	GPUCC_BENCH_HISTORY  R,C,N,K (default 1024,1024,1048576,7; H200: 8192,1024,67108864,7)
//	GPUCC_BENCH_MLP      the MLP's B,D,H,O (see mlpSize)
//	GPUCC_POOL_BYTES     Options.PoolBytes (default 0: the runtime's; -1: no pool)
//	GPUCC_UPLOAD         the upload path
//	GPUCC_HISTORY_WARM   seconds of back-to-back softmax runs before the fresh state
//	                     (default 1 on a hardware adapter, 0 on a software one; 0: none)
//
// Each state's line on stderr carries its wall-clock span (Unix ms), to
// set beside a trace of the GPU's clocks (nvidia-smi -lms). Run it once
// per process (-test.benchtime 1x): the states are in order.
//
// What it found on the H200 (bench/RESULTS.md, issue 20): the GPU idles
// at 345 MHz and its governor raises the SM clock to 1980 MHz only after
// some hundreds of milliseconds of sustained load, and lowers it again
// when the load is light. Every kernel's time follows that clock: softmax
// took 0.87 ms at 345 MHz and 0.16 ms at 1980 MHz, the MLP step 21 and 3.9
// ms, whatever the Runtime had done before. The warm-up puts the fresh
// state at the clock the later ones find, so that the ratios measure the
// Runtime, not the governor; GPUCC_HISTORY_WARM=0 shows the governor.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

func historySize() (r, c, n, k int) {
	v := []int{1024, 1024, 1 << 20, 7}
	if e := os.Getenv("GPUCC_BENCH_HISTORY"); e != "" {
		for i, f := range strings.Split(e, ",") {
			if x, err := strconv.Atoi(f); err == nil && i < 4 && x > 0 {
				v[i] = x
			}
		}
	}
	return v[0], v[1], v[2], v[3]
}

// historyState is one state's figures.
type historyState struct {
	softmax, softmaxWall, first, step, stepWall float64 // ms
	hits, runs                                  int
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func BenchmarkHistory(b *testing.B) {
	r, c, n, k := historySize()
	bsz, d, h, o := mlpSize()
	ctx := context.Background()
	pool, _ := strconv.ParseInt(os.Getenv("GPUCC_POOL_BYTES"), 10, 64)
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: benchBackend(), AllowSoftware: true, Limits: Limits(),
		Upload: os.Getenv("GPUCC_UPLOAD"), PoolBytes: pool})
	if err != nil {
		b.Skipf("%s: %v", benchBackend(), err)
	}
	defer rt.Close()

	bl := ir.NewBuilder()
	bl.Output("y", bl.NamedInput("x", ir.Shape{r, c}, make([]float32, r*c)).Softmax(1))
	sg, err := bl.Build(Limits())
	if err != nil {
		b.Fatal(err)
	}
	softmax, err := rt.Compile(ctx, sg)
	if err != nil {
		b.Fatal(err)
	}
	x, err := rt.Upload(ctx, ir.Shape{r, c}, irtest.Values(11, r*c, 3))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Release()
	tr, err := rt.NewTrainer(ctx, MLP(bsz, d, h, o), "loss", 0.01)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	big, err := rt.Compile(ctx, ReluMulAdd(n))
	if err != nil {
		b.Fatal(err)
	}
	shape := ir.Shape{n}
	host := gpucc.Inputs{"input0": gpucc.NewTensor(shape, irtest.Values(1, n, 3)),
		"input1": gpucc.NewTensor(shape, irtest.Values(2, n, 3)), "input2": gpucc.NewTensor(shape, irtest.Values(3, n, 3))}
	into := gpucc.RunOptions{Into: map[string][]float32{"out": make([]float32, n)}}
	keep := gpucc.RunOptions{Keep: []string{"y"}}

	measure := func(name string) historyState {
		t0 := time.Now()
		defer func() {
			fmt.Fprintf(os.Stderr, "history state %s: %d–%d Unix ms\n", name, t0.UnixMilli(), time.Now().UnixMilli())
		}()
		var st historyState
		var ks, ws, ss, sw []float64
		for i := range 21 {
			t0 := time.Now()
			res, err := softmax.RunWith(ctx, gpucc.Inputs{"x": x}, keep)
			if err != nil {
				b.Fatal(err)
			}
			res.Kept["y"].Release()
			ws = append(ws, float64(time.Since(t0).Nanoseconds())/1e6)
			ks = append(ks, res.Timings.DispatchMs)
			if i == 0 {
				st.first = res.Timings.DispatchMs
			}
			if res.Cache["bufferPool"] {
				st.hits++
			}
			st.runs++
		}
		for range 11 {
			t0 := time.Now()
			res, err := tr.Step(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			sw = append(sw, float64(time.Since(t0).Nanoseconds())/1e6)
			ss = append(ss, res.Timings.DispatchMs)
		}
		st.softmax, st.softmaxWall, st.step, st.stepWall = medianOf(ks), medianOf(ws), medianOf(ss), medianOf(sw)
		return st
	}
	for b.Loop() {
		// The first runs compile in the driver and touch fresh buffers.
		res, err := softmax.RunWith(ctx, gpucc.Inputs{"x": x}, keep)
		if err != nil {
			b.Fatal(err)
		}
		res.Kept["y"].Release()
		if _, err := tr.Step(ctx, nil); err != nil {
			b.Fatal(err)
		}
		warm := 1.0
		if rt.Adapter().Software {
			warm = 0
		}
		if v, err := strconv.ParseFloat(os.Getenv("GPUCC_HISTORY_WARM"), 64); err == nil {
			warm = v
		}
		if warm > 0 {
			// Keep the GPU busy: softmax launched back to back, waited
			// for every 16.
			t0 := time.Now()
			var ps []*gpucc.Pending
			for time.Since(t0).Seconds() < warm {
				p, err := softmax.Launch(ctx, gpucc.Inputs{"x": x}, keep)
				if err != nil {
					b.Fatal(err)
				}
				p.Kept("y").Release()
				if ps = append(ps, p); len(ps) == 16 {
					for _, p := range ps {
						if _, err := p.Wait(ctx); err != nil {
							b.Fatal(err)
						}
					}
					ps = ps[:0]
				}
			}
			for _, p := range ps {
				if _, err := p.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		fresh := measure("fresh")
		for range k {
			if _, err := big.RunWith(ctx, host, into); err != nil {
				b.Fatal(err)
			}
		}
		after := measure("after")
		time.Sleep(time.Second)
		idle := measure("idle")
		for _, s := range []struct {
			name string
			st   historyState
		}{{"fresh", fresh}, {"after", after}, {"idle", idle}} {
			b.ReportMetric(s.st.softmax, s.name+"-softmax-ms")
			b.ReportMetric(s.st.softmaxWall, s.name+"-softmax-wall-ms")
			b.ReportMetric(s.st.step, s.name+"-step-ms")
			b.ReportMetric(s.st.stepWall, s.name+"-step-wall-ms")
			b.ReportMetric(float64(s.st.hits)/float64(s.st.runs), s.name+"-pool-hits")
		}
		b.ReportMetric(after.first, "after-first-softmax-ms")
		b.ReportMetric(after.softmax/fresh.softmax, "softmax-after/fresh")
		b.ReportMetric(idle.softmax/fresh.softmax, "softmax-idle/fresh")
		b.ReportMetric(after.step/fresh.step, "step-after/fresh")
		b.ReportMetric(idle.step/fresh.step, "step-idle/fresh")
		fmt.Fprintf(os.Stderr, "history %dx%d softmax, %d host runs of %d: fresh %.3f ms, after %.3f ms (first %.3f), idle %.3f ms; step %.3f / %.3f / %.3f ms; pool hits %d/%d %d/%d %d/%d\n",
			r, c, k, n, fresh.softmax, after.softmax, after.first, idle.softmax, fresh.step, after.step, idle.step,
			fresh.hits, fresh.runs, after.hits, after.runs, idle.hits, idle.runs)
	}
}
