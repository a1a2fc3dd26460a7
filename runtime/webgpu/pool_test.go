//go:build cgo && !js

package webgpu

import (
	"context"
	"math"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// openPooled opens a device whose pool keeps limit bytes.
func openPooled(t *testing.T, limit int64) *device {
	t.Helper()
	c, err := cache.Open(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := open(backend.Options{AllowSoftware: true, Cache: c, PoolBytes: limit})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(d.Close)
	return d.(*device)
}

// reluMulAdd is relu(a*b+c) over n values: four buffers of 4n bytes.
func reluMulAdd(t *testing.T, d *device, n int) backend.Executable {
	t.Helper()
	bl := ir.NewBuilder()
	a := bl.Input(ir.Shape{n}, irtest.Values(1, n, 3))
	b := bl.Input(ir.Shape{n}, irtest.Values(2, n, 3))
	c := bl.Input(ir.Shape{n}, irtest.Values(3, n, 3))
	bl.Output("y", a.Mul(b).Add(c).Relu())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := d.Compile(context.Background(), program(t, g), &backend.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exe.Release)
	return exe
}

// hostRun runs exe from its embedded inputs to host slices and reports
// whether every buffer came from the pool.
func hostRun(t *testing.T, exe backend.Executable) bool {
	t.Helper()
	p := exe.(*executable).p
	st := &backend.Stats{}
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: st}
	for i, b := range p.Buffers {
		if b.Input {
			call.Args[i].Host = b.Data
		}
	}
	for i, o := range p.Outputs {
		call.Dests[i].Host = make([]float32, o.Shape.Len())
	}
	if err := exe.Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	return st.Caches()[backend.CacheBufferPool.String()]
}

// TestPoolKeepsRecentRuns: a large run that fills the pool must not
// leave every later run of another size allocating its buffers afresh for
// the Runtime's life (fresh buffers made softmax 6× slower on the H200).
// The pool holds exactly the large run's four buffers; the small run's
// second and later runs reuse theirs.
func TestPoolKeepsRecentRuns(t *testing.T) {
	const big, small = 1 << 14, 1 << 10
	d := openPooled(t, 4*4*big)
	large, other := reluMulAdd(t, d, big), reluMulAdd(t, d, small)
	for range 3 {
		hostRun(t, large)
	}
	if !hostRun(t, large) {
		t.Fatal("a repeated large run missed the pool")
	}
	hostRun(t, other) // its first run allocates
	for i := range 3 {
		if !hostRun(t, other) {
			t.Fatalf("small run %d after the large runs allocated afresh (pool holds %d of %d B)", i+2, d.pool.held, d.pool.limit)
		}
	}
	if d.pool.held > d.pool.limit {
		t.Fatalf("pool holds %d B over its bound %d B", d.pool.held, d.pool.limit)
	}
	hostRun(t, large) // and back: the large run evicts the small one's
	if !hostRun(t, large) {
		t.Fatal("the large run missed the pool after the small ones")
	}
}

// TestPoolBuffers: what the pool hands out is a storage buffer of the
// size asked, never mappable, whether new or reused; a buffer larger than
// the pool is released, and drain releases every pooled one.
func TestPoolBuffers(t *testing.T) {
	d := openPooled(t, 1<<12)
	p := d.pool
	const storage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst
	live := gpu.LiveBuffers()
	var got []*gpu.Buffer
	for _, size := range []uint64{1, 4, 1000, 1 << 12, 1 << 13} {
		for range 2 {
			buf, _, err := p.get(size, "t")
			if err != nil {
				t.Fatal(err)
			}
			if buf.Usage() != storage || buf.Uniform() || buf.Size() != roundedSize(size, false) {
				t.Fatalf("get(%d): usage %#x, uniform %v, size %d", size, uint64(buf.Usage()), buf.Uniform(), buf.Size())
			}
			got = append(got, buf)
		}
		p.put(got...)
		got = got[:0]
		if p.held > p.limit {
			t.Fatalf("after size %d: pool holds %d B over %d", size, p.held, p.limit)
		}
	}
	if p.out != 0 {
		t.Fatalf("%d buffers out", p.out)
	}
	buf, hit, err := p.get(1<<12, "t") // the last size that fit
	if err != nil || !hit {
		t.Fatalf("get after put: hit %v, err %v", hit, err)
	}
	p.put(buf)
	p.drain()
	if p.held != 0 || p.lru.Len() != 0 || len(p.free) != 0 {
		t.Fatalf("drained pool holds %d B in %d buffers (%d keys)", p.held, p.lru.Len(), len(p.free))
	}
	if n := gpu.LiveBuffers(); n != live {
		t.Fatalf("%d live buffers after drain, %d before", n, live)
	}
}

// TestRunOneRoundTrip: a warm run with host inputs and a host output
// waits for the GPU once: the uploads are queued before the kernels and
// the output is copied out in the kernels' own submission (it used to
// wait three times: for the uploads, the kernels, and the read). Its
// bits are cpuref's.
func TestRunOneRoundTrip(t *testing.T) {
	d := openPooled(t, 0)
	exe := reluMulAdd(t, d, 1000)
	hostRun(t, exe) // compiles, allocates
	_, w0 := d.dev.RoundTrips()
	p := exe.(*executable).p
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: []backend.Dest{{Host: make([]float32, 1000)}}, Stats: &backend.Stats{}}
	for i, b := range p.Buffers {
		if b.Input {
			call.Args[i].Host = b.Data
		}
	}
	if err := exe.Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if _, w := d.dev.RoundTrips(); w-w0 != 1 {
		t.Fatalf("a warm host run waited for the GPU %d times, want 1", w-w0)
	}
	want := cpuref.RunProgram(p)[p.Outputs[0].Name]
	for i, v := range call.Dests[0].Host {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] = %v, cpuref %v", i, v, want[i])
		}
	}
}
