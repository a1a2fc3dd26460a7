package gpucc_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// openCached opens a webgpu runtime over a fresh cache object on dir: a
// new process, as far as caching goes.
func openCached(t *testing.T, dir string) *gpucc.Runtime {
	t.Helper()
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	skipUnlessWebGPU(t)
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "webgpu", AllowSoftware: true, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func skipUnlessWebGPU(t *testing.T) { open(t, "webgpu").Close() }

// chain is relu((x*y + k) * k) - z over n elements: one fused kernel.
func chain(n int, k float32) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n}, irtest.Values(1, n, 3))
	y := b.Input(ir.Shape{n}, irtest.Values(2, n, 3))
	z := b.Input(ir.Shape{n}, irtest.Values(3, n, 3))
	b.Output("out", x.Mul(y).AddScalar(k).MulScalar(k).Relu().Sub(z))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g
}

// levels runs g on rt, checks it against cpuref and returns the cache map.
func levels(t *testing.T, rt *gpucc.Runtime, g *ir.Graph) (map[string]bool, gpucc.Timings) {
	t.Helper()
	checkRun(t, rt, g)
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	return res.Cache, res.Timings
}

func TestCacheLevels(t *testing.T) {
	dir := t.TempDir()
	rt := openCached(t, dir)
	g := chain(1000, 2)
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	cold := res.Timings
	want := map[string]bool{"codegenMemory": false, "codegenDisk": false, "pipeline": false, "bufferPool": false}
	if !equal(res.Cache, want) {
		t.Errorf("first run: cache %v, want %v", res.Cache, want)
	}
	steps := []struct {
		name string
		rt   *gpucc.Runtime
		g    *ir.Graph
		want map[string]bool
	}{
		{"same graph again", rt, g, map[string]bool{"codegenMemory": true, "pipeline": true, "bufferPool": true}},
		{"other constants", rt, chain(1000, -3), map[string]bool{"codegenMemory": true, "pipeline": true, "bufferPool": true}},
		{"new process", openCached(t, dir), g, map[string]bool{"codegenMemory": false, "codegenDisk": true, "pipeline": false, "bufferPool": false}},
	}
	for _, s := range steps {
		checkRun(t, s.rt, s.g) // bit-exact, whatever was cached
		got, warm := levels(t, s.rt, s.g)
		if s.name != "new process" && !equal(got, s.want) {
			t.Errorf("%s: cache %v, want %v", s.name, got, s.want)
		}
		// The hit flags are the assertion; times are only reported, since a
		// loaded CI machine makes any threshold flaky (speed is measured in
		// bench/, not asserted in tests).
		t.Logf("%s: warm compile %.3f ms, cold %.3f ms", s.name, warm.CompileMs, cold.CompileMs)
	}
	// The very first run of a new process: codegen from disk, a new device.
	rt2 := openCached(t, dir)
	res, err = rt2.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if want := steps[2].want; !equal(res.Cache, want) {
		t.Errorf("new process: cache %v, want %v", res.Cache, want)
	}
}

// TestTimingsFilled: every stage of a webgpu run is measured.
func TestTimingsFilled(t *testing.T) {
	rt := openCached(t, t.TempDir())
	res, err := rt.Run(context.Background(), chain(4096, 2))
	if err != nil {
		t.Fatal(err)
	}
	tm := res.Timings
	if tm.CodegenMs <= 0 || tm.CompileMs <= 0 || tm.UploadMs <= 0 || tm.DispatchMs <= 0 || tm.FirstDispatchMs <= 0 || tm.ReadbackMs <= 0 {
		t.Errorf("a stage is unmeasured: %+v", tm)
	}
	if tm.UploadBytes != 3*4096*4 || tm.ReadbackBytes != 4096*4 {
		t.Errorf("bytes: upload %d, readback %d", tm.UploadBytes, tm.ReadbackBytes)
	}
	if tm.DispatchClock != "gpu-timestamp" && tm.DispatchClock != "wall" {
		t.Errorf("dispatchClock %q", tm.DispatchClock)
	}
}

// TestCorruptCacheRecovered damages every cached file; the next process
// regenerates the code, runs correctly and replaces the files.
func TestCorruptCacheRecovered(t *testing.T) {
	dir := t.TempDir()
	g := chain(777, 5)
	checkRun(t, openCached(t, dir), g)
	files, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
	if len(files) == 0 {
		t.Fatal("nothing cached on disk")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(f, b[:len(b)/2], 0o644)
	}
	rt := openCached(t, dir)
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cache["codegenDisk"] {
		t.Error("a truncated file was served")
	}
	checkRun(t, rt, g)
	if res, err := openCached(t, dir).Run(context.Background(), g); err != nil || !res.Cache["codegenDisk"] {
		t.Error("the regenerated code did not replace the corrupt file")
	}
}

// TestConcurrentRuntimes shares one cache between runtimes used from many
// goroutines; run with -race.
func TestConcurrentRuntimes(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	skipUnlessWebGPU(t)
	var rts []*gpucc.Runtime
	for range 2 {
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "webgpu", AllowSoftware: true, Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		rts = append(rts, rt)
	}
	cases := irtest.Suite()[:6]
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cases {
				c := cases[(i+w)%len(cases)]
				t.Run(c.Name, func(t *testing.T) { checkRun(t, rts[w%2], c.Graph) })
			}
		}()
	}
	wg.Wait()
}

func equal(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || w != v {
			return false
		}
	}
	return true
}
