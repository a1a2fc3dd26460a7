//go:build !js

package gpu

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scaleWGSL returns a kernel named k<i> that writes a[j]*b[j] + i.
func scaleWGSL(i int) string {
	return strings.NewReplacer("fn main", fmt.Sprintf("fn k%d", i), "a[i] * b[i]", fmt.Sprintf("a[i] * b[i] + %d.0", i)).Replace(mulWGSL)
}

// TestCompileAll creates pipelines several at once and checks that each
// runs its own source, and that a batch with one bad shader fails naming
// that shader and leaves the device usable.
func TestCompileAll(t *testing.T) {
	d := openDevice(t)
	defer func(w int) { compileWorkers = w }(compileWorkers)
	compileWorkers = 4
	kinds := []BindingKind{ReadOnlyStorage, ReadOnlyStorage, Storage, Uniform}
	const shaders = 12
	var batch []Shader
	for i := range shaders {
		batch = append(batch, Shader{WGSL: scaleWGSL(i), Entry: fmt.Sprintf("k%d", i), Bindings: kinds})
	}
	ps, err := d.CompileAll(batch)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, p := range ps {
			p.Release()
		}
	}()
	const n = 100
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i), 0.5
	}
	ba, bb, bo := mustBuffer(t, d, 4*n, "a"), mustBuffer(t, d, 4*n, "b"), mustBuffer(t, d, 4*n, "out")
	defer ba.Release()
	defer bb.Release()
	defer bo.Release()
	u, err := d.NewUniform(u32Uniform(n), "params")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	if err := d.Upload(ba, a); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload(bb, b); err != nil {
		t.Fatal(err)
	}
	for k, p := range ps {
		if err := d.Run([]Dispatch{{Pipeline: p, Buffers: []*Buffer{ba, bb, bo, u}, Groups: [3]uint32{(n + 63) / 64, 1, 1}}}); err != nil {
			t.Fatal(err)
		}
		got, want := make([]float32, n), make([]float32, n)
		for i := range want {
			want[i] = a[i]*b[i] + float32(k)
		}
		if err := d.Read(bo, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pipeline %d does not run its own shader (-want +got):\n%s", k, diff)
		}
	}

	bad := append([]Shader(nil), batch[:8]...)
	bad[5] = Shader{WGSL: strings.Replace(scaleWGSL(5), "a[i] * b[i]", "a[i] * nosuch", 1), Entry: "k5", Bindings: kinds}
	if _, err := d.CompileAll(bad); err == nil || !strings.Contains(err.Error(), `"k5"`) {
		t.Fatalf("a batch with a bad k5: error %v, want one naming k5", err)
	}
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatalf("the device after a failed batch: %v", err)
	}
	p.Release()
}

func TestCompileWorkersEnv(t *testing.T) {
	for env, want := range map[string]int{"": runtime.GOMAXPROCS(0), "1": 1, "16": 16, "0": runtime.GOMAXPROCS(0), "-3": runtime.GOMAXPROCS(0), "x": runtime.GOMAXPROCS(0)} {
		if got := workers(env); got != want {
			t.Errorf("GPUCC_COMPILE_WORKERS=%q: %d workers, want %d", env, got, want)
		}
	}
}

// TestLongestFirst: the workers take the longest sources first, ties in
// the given order, and every shader once.
func TestLongestFirst(t *testing.T) {
	src := func(n int) Shader { return Shader{WGSL: strings.Repeat("x", n)} }
	got := longestFirst([]Shader{src(3), src(10), src(1), src(10), src(7)})
	if want := []int{1, 3, 4, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestCreateTimes: every pipeline of a batch carries its creation's
// steps, and GPUCC_VERBOSE's account names each shader by its label, in
// the order they started, and the longest in its summary.
func TestCreateTimes(t *testing.T) {
	d := openDevice(t)
	kinds := []BindingKind{ReadOnlyStorage, ReadOnlyStorage, Storage, Uniform}
	var batch []Shader
	for i := range 3 {
		batch = append(batch, Shader{WGSL: scaleWGSL(i), Entry: fmt.Sprintf("k%d", i), Bindings: kinds, Label: fmt.Sprintf("kernel_%d", i)})
	}
	ps, err := d.CompileAll(batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		defer p.Release()
		if ct := p.CreateTimes(); ct.Start < 0 || ct.Module <= 0 || ct.Pipeline <= 0 {
			t.Errorf("pipeline %d: creation times %+v, want a start ≥ 0 and both steps > 0", i, ct)
		}
	}

	// The account, on times set by hand: k1 started first, k2 took longest.
	ms := time.Millisecond
	ps[0].times = CreateTimes{Start: 2 * ms, Module: 1 * ms, Pipeline: 10 * ms}
	ps[1].times = CreateTimes{Start: 0, Module: 2 * ms, Pipeline: 20 * ms}
	ps[2].times = CreateTimes{Start: 1 * ms, Module: 3 * ms, Pipeline: 30 * ms}
	batch[0].Label = "" // named by its entry point
	var b strings.Builder
	logCreation(&b, batch, ps, 2, 40*ms)
	want := `gpucc: webgpu: pipeline kernel_1 (` + fmt.Sprint(len(batch[1].WGSL)) + ` bytes): at 0.0 ms, module 2.0 ms, pipeline 20.0 ms
gpucc: webgpu: pipeline kernel_2 (` + fmt.Sprint(len(batch[2].WGSL)) + ` bytes): at 1.0 ms, module 3.0 ms, pipeline 30.0 ms
gpucc: webgpu: pipeline k0 (` + fmt.Sprint(len(batch[0].WGSL)) + ` bytes): at 2.0 ms, module 1.0 ms, pipeline 10.0 ms
gpucc: webgpu: 3 pipelines created in 40.0 ms by 2 workers: 66.0 ms of creation in all (6.0 ms of it modules), 33.0 ms a worker; longest kernel_2 (` + fmt.Sprint(len(batch[2].WGSL)) + ` bytes) 33.0 ms
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("the account (-want +got):\n%s", diff)
	}
}

// TestCompileAllGL: on a GL adapter CompileAll creates pipelines one at a
// time, each starting after the one before it ended, however many workers
// it may use elsewhere, and a bad shader in the batch fails it without
// deadlocking (the retry releases pipelines under d.mu's own lock). wgpu's
// GL backend panics, and so aborts the process, when a thread waits more
// than a second for its context (on the H100's GL adapter, 2026-12-05).
// Skipped where no GL adapter opens (lavapipe's llvmpipe has one).
func TestCompileAllGL(t *testing.T) {
	d, err := Open(Options{AllowSoftware: true, Backend: BackendGL})
	if err != nil {
		t.Skipf("no GL adapter: %v", err)
	}
	defer d.Close()
	if d.Info().Backend != BackendGL {
		t.Skipf("adapter %s is not GL", d.Info())
	}
	defer func(w int) { compileWorkers = w }(compileWorkers)
	compileWorkers = 8
	kinds := []BindingKind{ReadOnlyStorage, ReadOnlyStorage, Storage, Uniform}
	var batch []Shader
	for i := range 12 {
		batch = append(batch, Shader{WGSL: scaleWGSL(i), Entry: fmt.Sprintf("k%d", i), Bindings: kinds})
	}
	ps, err := d.CompileAll(batch)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ps, func(a, b *Pipeline) int { return int(a.times.Start - b.times.Start) })
	for i := 1; i < len(ps); i++ {
		prev, cur := ps[i-1].times, ps[i].times
		if end := prev.Start + prev.Module + prev.Pipeline; cur.Start < end {
			t.Errorf("pipeline %d started at %v, before the one before it ended (%v)", i, cur.Start, end)
		}
	}
	for _, p := range ps {
		p.Release()
	}
	bad := append(batch[:3:3], Shader{WGSL: "fn k99( {", Entry: "k99", Bindings: kinds})
	done := make(chan error, 1)
	go func() { _, err := d.CompileAll(bad); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "k99") {
			t.Errorf("a batch with a bad shader: %v, want an error naming k99", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("CompileAll of a bad batch did not return in 30 s")
	}
}
