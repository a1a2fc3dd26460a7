package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	goruntime "runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestCPUTime prints, for GPUCC_CPUTIME=native, the least CPU time of
// the calling thread over GPUCC_PEERS_RUNS warm runs (default 15) of each
// peer workload matching GPUCC_PEERS_ONLY, in TestPeers' line format with
// the system "gpucc-native-cpu". With one thread (GPUCC_THREADS=1) every
// kernel runs on the calling thread, so its CPU time is the run's work
// without the time the machine's other users held the core: on a loaded
// machine it is the steadier figure. bench/cputime.mjs measures ONNX
// Runtime for Node the same way (process CPU time, one intra-op thread).
func TestCPUTime(t *testing.T) {
	be := os.Getenv("GPUCC_CPUTIME")
	if be == "" {
		t.Skip("GPUCC_CPUTIME is unset")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_PEERS_RUNS"))
	runs = max(runs, 15)
	only, err := regexp.Compile(os.Getenv("GPUCC_PEERS_ONLY"))
	if err != nil {
		t.Fatal(err)
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	cpu := func() float64 { // getrusage's thread times are tick-sampled; this clock is exact
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			t.Fatal(err)
		}
		return float64(ts.Nano()) / 1e6
	}
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: be, Limits: Limits()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, w := range peerWorkloads() {
		if !only.MatchString(w.name) || w.step || isModel(w.name) {
			continue
		}
		g, err := w.graph()
		if err != nil {
			t.Fatal(err)
		}
		exe, err := rt.Compile(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		in := gpucc.Inputs{}
		for _, n := range g.Nodes {
			if n.Op == ir.OpInput {
				in[n.Name] = gpucc.Tensor{Shape: n.Shape, Data: n.Data}
			}
		}
		into := map[string][]float32{}
		for _, o := range exe.Plan().Program.Outputs {
			into[o.Name] = make([]float32, o.Shape.Len())
		}
		best := math.Inf(1)
		for i := range runs + 1 {
			start := cpu()
			if _, err := exe.RunWith(ctx, in, gpucc.RunOptions{Into: into}); err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				best = min(best, cpu()-start)
			}
		}
		sum, asum := peerChecksum(into["y"])
		fmt.Printf("peer\tgpucc-%s-cpu\t%s\t%.4f\t%.9g\t%.9g\n", be, w.name, best, sum, asum)
		exe.Release()
	}
}
