package gpucc_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpucc/gpucc/internal/procstat"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestOpenCloseCycles: a process that opens and closes webgpu runtimes
// over and over (a test binary opens hundreds; a server may too) keeps
// its adapter, and its descriptors, threads and memory stay bounded. On
// the H100 (2026-12-06) a test process found no Vulkan adapter after
// about a hundred runtimes, and one of 2026-12-05 went on on the GL
// adapter; lavapipe shows neither. An H200's lost it at cycle 30, memory
// growing 3.5 MiB a cycle (2026-12-06), before runtime/gpu kept the
// device a Close gives back for the next Open (idle.go), which these
// cycles now take. GPUCC_OPEN_CYCLES sets the cycles (20 here, 300 on
// the device).
func TestOpenCloseCycles(t *testing.T) {
	n := 20
	if s := os.Getenv("GPUCC_OPEN_CYCLES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4, 256}, irtest.Values(1, 1024, 10))
	b.Output("y", x.Softmax(1))
	// and a matmul: its tiled kernel's workgroup memory
	w := b.Input(ir.Shape{256, 64}, irtest.Values(2, 256*64, 10))
	b.Output("z", x.MatMul(w).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var adapter string
	var first procstat.Stats
	for i := range n {
		start := time.Now()
		ok := t.Run("cycle", func(t *testing.T) {
			rt := open(t, "webgpu")
			got := rt.Adapter().Name + " on " + rt.Adapter().Backend
			if adapter == "" {
				adapter = got
			} else if got != adapter {
				t.Fatalf("cycle %d opened %s; the first opened %s", i, got, adapter)
			}
			checkRun(t, rt, g)
		})
		st := procstat.Self()
		if i == 0 {
			first = st
		}
		if i%10 == 0 || i == n-1 || !ok {
			t.Logf("cycle %d: %v, %s", i, time.Since(start).Round(time.Millisecond), st)
		}
		if !ok {
			t.Fatalf("cycle %d failed (%s)", i, st)
		}
		// a few descriptors and threads may come and go (the runtime's
		// workers, the shader cache), but not one or more a cycle
		if st.FDs > first.FDs+16 || st.Threads > first.Threads+16 {
			t.Fatalf("cycle %d: %s, after the first: %s", i, st, first)
		}
	}
}
