//go:build cgo && !js

package webgpu

import (
	"context"
	"math"
	goruntime "runtime"
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
func reluMulAdd(t testing.TB, d *device, n int) backend.Executable {
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
	return compiled(t, d, g)
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
	if p.held != 0 || p.count != 0 || len(p.free) != 0 {
		t.Fatalf("drained pool holds %d B in %d buffers (%d keys)", p.held, p.count, len(p.free))
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

// TestPoolKeepsPeak: with the default bound, a program that had 8
// buffers out at once (launched runs keeping their outputs) finds all 8
// in the pool after releasing them, though the bound holds 4: its next
// round allocates nothing. With an explicit bound the pool keeps 4. A
// failed allocation releases every pooled buffer before it is reported.
func TestPoolKeepsPeak(t *testing.T) {
	d := openPooled(t, 0)
	const size, n = 1 << 12, 8
	for _, auto := range []bool{true, false} {
		p := newPool(d.dev, 4*size, auto)
		live := gpu.LiveBuffers()
		var bufs []*gpu.Buffer
		for range 2 {
			for range n {
				b, _, err := p.get(size, "kept")
				if err != nil {
					t.Fatal(err)
				}
				bufs = append(bufs, b)
			}
			p.put(bufs...)
			bufs = bufs[:0]
		}
		want := int64(4 * size)
		if auto {
			want = n * size
		}
		if p.held != want {
			t.Errorf("auto %v: the pool holds %d B after 8 buffers of %d B came back, want %d", auto, p.held, size, want)
		}
		hits := 0
		for range n {
			b, hit, err := p.get(size, "kept")
			if err != nil {
				t.Fatal(err)
			}
			if hit {
				hits++
			}
			bufs = append(bufs, b)
		}
		if wantHits := int(want / size); hits != wantHits {
			t.Errorf("auto %v: %d of %d gets hit, want %d", auto, hits, n, wantHits)
		}
		p.put(bufs...)
		bufs = bufs[:0]
		if _, _, err := p.get(1<<62, "too large"); err == nil {
			t.Fatal("a 4 EiB buffer was allocated")
		}
		if p.held != 0 || p.count != 0 {
			t.Errorf("auto %v: after a failed allocation the pool still holds %d B", auto, p.held)
		}
		if l := gpu.LiveBuffers(); l != live {
			t.Errorf("auto %v: %d buffers live, %d before", auto, l, live)
		}
	}
}

// TestRecycledBuffersNeverLeak: a buffer the pool hands out again still
// holds what its last user wrote, so one caller would see another's data
// if a kernel left any byte of its output unwritten. Before each case
// every size the program uses is in the pool twice, filled with a NaN
// pattern no kernel produces (0x7fa5a5a5); every output is kept on the
// device (so its buffer is one of those), read back, and must be cpuref's
// bits, every byte of it. The cases are the suite, the views, the
// reductions, pads, pools, convolutions, transposed convolutions,
// attention and composites.
func TestRecycledBuffersNeverLeak(t *testing.T) {
	d := openPooled(t, 1<<28)
	var cases []irtest.Case
	for _, f := range []func() []irtest.Case{irtest.Suite, irtest.Views, irtest.Reductions, irtest.Pads, irtest.Pools,
		irtest.Convs, irtest.ConvTransposes, irtest.Attentions, irtest.Composites} {
		cases = append(cases, f()...)
	}
	ctx := context.Background()
	const poison = 0x7fa5a5a5
	for i, c := range cases {
		if testing.Short() && i%4 != 0 {
			continue
		}
		prog := program(t, c.Graph)
		exe, err := d.Compile(ctx, prog, &backend.Stats{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		p := prog.IR.Program()
		var fill []*gpu.Buffer
		for _, b := range p.Buffers {
			for range 2 {
				buf, _, err := d.pool.get(4*uint64(max(b.Len, 1)), "poison")
				if err != nil {
					t.Fatal(err)
				}
				words := make([]float32, max(b.Len, 1))
				for k := range words {
					words[k] = math.Float32frombits(poison)
				}
				if err := d.dev.Upload(buf, words); err != nil {
					t.Fatal(err)
				}
				fill = append(fill, buf)
			}
		}
		d.pool.put(fill...)
		call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: &backend.Stats{}, NonFinite: true}
		for k, b := range p.Buffers {
			if b.Input {
				call.Args[k].Host = b.Data
			}
		}
		kept := map[int]bool{}
		for k, o := range p.Outputs {
			if o.Buffer >= 0 && !p.Buffers[o.Buffer].Input && !kept[o.Buffer] {
				kept[o.Buffer] = true
				call.Dests[k].Keep = true
			} else {
				call.Dests[k].Host = make([]float32, o.Shape.Len())
			}
		}
		if err := exe.Run(ctx, call); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if !call.Stats.Caches()[backend.CacheBufferPool.String()] {
			t.Fatalf("%s: a buffer did not come from the poisoned pool", c.Name)
		}
		want := cpuref.RunProgram(p)
		for k, o := range p.Outputs {
			if call.Dests[k].Buf == nil {
				continue // a constant output, or one that is an input
			}
			got := make([]float32, o.Shape.Len())
			if err := d.Read(ctx, call.Dests[k].Buf, got); err != nil {
				t.Fatal(err)
			}
			call.Dests[k].Buf.Release()
			for j, v := range got {
				if w := want[o.Name][j]; math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w && math.Float32bits(v) != poison) {
					t.Fatalf("%s: output %q[%d] = %#x, cpuref %#x", c.Name, o.Name, j, math.Float32bits(v), math.Float32bits(w))
				}
			}
		}
		exe.Release()
	}
}

// TestSetupAllocs: a warm run's setup and dispatch list, every buffer
// from the pool, make no label and allocate a fixed few slices, however
// many buffers and kernels its program has (a run formatted a label for
// each buffer and built each kernel's binding list afresh).
func TestSetupAllocs(t *testing.T) {
	d := openPooled(t, 0)
	counts := map[int]float64{}
	for _, n := range []int{1, 8} {
		bl := ir.NewBuilder()
		x := bl.Input(ir.Shape{8, 8}, irtest.Values(1, 64, 3))
		for i := range n {
			x = x.MatMul(bl.Input(ir.Shape{8, 8}, irtest.Values(uint64(i+2), 64, 1))) // a kernel and a buffer each
		}
		bl.Output("y", x)
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		exe, err := d.Compile(context.Background(), program(t, g), &backend.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		e := exe.(*executable)
		call := &backend.Call{Args: make([]backend.Arg, len(e.p.Buffers)), Dests: make([]backend.Dest, len(e.p.Outputs)), Stats: &backend.Stats{}}
		for i, b := range e.p.Buffers {
			if b.Input {
				dt, err := d.Alloc(context.Background(), b.Len)
				if err != nil {
					t.Fatal(err)
				}
				defer dt.Release()
				call.Args[i].Buf = dt
			}
		}
		var mallocs uint64
		for k := range 21 { // setup alone, the pool's put outside the count; the first warms the pool
			var m0, m1 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			bufs, held, _, err := e.setup(context.Background(), call, nil, nil)
			if err == nil {
				e.dispatches(bufs)
			}
			goruntime.ReadMemStats(&m1)
			if err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				mallocs += m1.Mallocs - m0.Mallocs
			}
			d.pool.put(held...)
		}
		counts[len(e.p.Buffers)] = float64(mallocs) / 20
		exe.Release()
	}
	t.Logf("allocations of setup by program buffers: %v", counts)
	var lo, hi int
	for k := range counts {
		if lo == 0 || k < lo {
			lo = k
		}
		hi = max(hi, k)
	}
	if hi <= lo {
		t.Fatalf("the programs have %d and %d buffers", lo, hi)
	}
	if counts[hi] > counts[lo]+3 {
		t.Errorf("setup's allocations grow with the program's buffers: %v", counts)
	}
}

// TestSmallUploadQueued: an upload of at most 16 MiB returns without
// waiting for the GPU (its copy is ordered before every later use of the
// buffer, and its staging buffer was mapped at creation or since its
// last copy), a larger one waits for its ring's maps and its copies; either reads back bit for bit, and a
// run on a tensor just uploaded gives cpuref's bits.
func TestSmallUploadQueued(t *testing.T) {
	d := openPooled(t, 0)
	ctx := context.Background()
	for _, n := range []int{3, 1 << 15, 4 << 20, 4<<20 + 1} {
		data := irtest.Values(uint64(n), n, 3e38)
		b, err := d.Alloc(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		_, w0 := d.dev.RoundTrips()
		if k, err := d.UploadChecked(ctx, b, data); err != nil || k >= 0 {
			t.Fatalf("n=%d: %d, %v", n, k, err)
		}
		_, w := d.dev.RoundTrips()
		// Up to one 16 MiB chunk an upload is written into a staging
		// buffer the device keeps mapped (its copy goes with the next
		// submission): no wait. A larger one maps each chunk's ring
		// buffer once and waits for its copies once more.
		waits := 0
		if n > 4<<20 {
			waits = (4*n+16<<20-1)/(16<<20) + 1
		}
		if w-w0 != waits {
			t.Errorf("n=%d: the upload waited %d times, want %d", n, w-w0, waits)
		}
		got := make([]float32, n)
		if err := d.Read(ctx, b, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(data[i]) {
				t.Fatalf("n=%d: element %d reads %v, uploaded %v", n, i, got[i], data[i])
			}
		}
		b.Release()
	}
	exe := reluMulAdd(t, d, 1000)
	p := exe.(*executable).p
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: []backend.Dest{{Host: make([]float32, 1000)}}, Stats: &backend.Stats{}}
	for i, pb := range p.Buffers {
		if pb.Input {
			b, err := d.Alloc(ctx, pb.Len)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			if err := d.Upload(ctx, b, pb.Data); err != nil {
				t.Fatal(err)
			}
			call.Args[i].Buf = b
		}
	}
	if err := exe.Run(ctx, call); err != nil {
		t.Fatal(err)
	}
	want := cpuref.RunProgram(p)[p.Outputs[0].Name]
	for i, v := range call.Dests[0].Host {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] = %v, cpuref %v", i, v, want[i])
		}
	}
}
