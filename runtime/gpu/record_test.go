//go:build !js

package gpu

import (
	"math"
	"strings"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// fixedWGSL adds one to 64 floats.
const fixedWGSL = `
@group(0) @binding(0) var<storage, read> src: array<f32, 64>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
	dst[gid.x] = src[gid.x] + 1.0;
}
`

// TestRecordErrors: a recording that wgpu finds invalid (a bind group of
// another pipeline's layout, found at the dispatch; a copy past a
// buffer's end, found at the copy; each with timestamps and without) comes back as an *Error with wgpu's message, is
// not submitted (wgpu-native aborts the process on an invalid
// submission), and leaves the device working: the next run gives its
// bits. recordSubmit takes one error scope for the whole recording, where
// the binding took one per call, so every error of the recording must
// land in it.
func TestRecordErrors(t *testing.T) {
	d := openDevice(t)
	p, err := d.Compile(fixedWGSL, "main", []BindingKind{ReadOnlyStorage, Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	q, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	big, out := mustBuffer(t, d, 256, "big"), mustBuffer(t, d, 256, "out")
	defer big.Release()
	defer out.Release()
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(i) * 0.25
	}
	if err := d.Upload(big, in); err != nil {
		t.Fatal(err)
	}
	good := []Dispatch{{Pipeline: p, Buffers: []*Buffer{big, out}, Groups: [3]uint32{1, 1, 1}}}
	check := func(when string) {
		t.Helper()
		if err := d.Run(good); err != nil {
			t.Fatalf("%s: good run: %v", when, err)
		}
		got := make([]float32, 64)
		if err := d.Read(out, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != in[i]+1 {
				t.Fatalf("%s: out[%d] = %v, want %v", when, i, v, in[i]+1)
			}
		}
	}
	check("before")
	if _, _, err := d.RunTimed(good); err != nil { // makes the timestamps' query set, where there are timestamps
		t.Fatal(err)
	}
	timed := d.tsQuery != nil
	for round := range 3 { // errors again and again leave nothing behind
		s0, _ := d.RoundTrips()
		// The bind group of p's layout recorded with q's pipeline, whose
		// layout has three bindings: wgpu finds it at the dispatch.
		d.mu.Lock()
		bg, err := d.bindGroup(&good[0])
		if err != nil {
			d.mu.Unlock()
			t.Fatal(err)
		}
		err = d.recordSubmit([]Dispatch{{Pipeline: q, Groups: [3]uint32{1, 1, 1}}}, []*wgpu.BindGroup{bg}, nil, tsOwn(d, timed))
		d.mu.Unlock()
		if err == nil || !strings.Contains(err.Error(), "wgpu") {
			t.Fatalf("a bind group of another layout: got %v, want wgpu's error", err)
		}
		if round == 0 {
			t.Logf("bind group of another layout: %v", err)
		}
		d.mu.Lock()
		err = d.recordSubmit(nil, nil, []copyOp{{src: big.buf, dst: out.buf, dstOff: 128, n: 256}}, tsOwn(d, round == 1 && timed))
		d.mu.Unlock()
		if err == nil {
			t.Fatal("a copy past the end of a buffer was recorded")
		}
		if round == 0 {
			t.Logf("copy past the end: %v", err)
		}
		if s, _ := d.RoundTrips(); s != s0 {
			t.Fatalf("%d submissions of invalid recordings", s-s0)
		}
		check("after an error")
	}
}

// BenchmarkRecord times the recording of a warm timed run of one
// dispatch, without its submission (whose cost on lavapipe is the
// kernel's, run inside it): through the binding, one call and one error
// scope each for the encoder, the two timestamps, the pass's end, the
// resolve, the copy and the finish (the path until 2026-12-05), against
// recordRun's one cgo call and one scope.
func BenchmarkRecord(b *testing.B) {
	d := openDevice(b)
	p, err := d.Compile(fixedWGSL, "main", []BindingKind{ReadOnlyStorage, Storage})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Release()
	src, dst := mustBuffer(b, d, 256, "src"), mustBuffer(b, d, 256, "dst")
	defer src.Release()
	defer dst.Release()
	ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{src, dst}, Groups: [3]uint32{1, 1, 1}}}
	if _, _, err := d.RunTimed(ds); err != nil {
		b.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	timed := d.tsQuery != nil
	bg, err := d.bindGroup(&ds[0])
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("timestamps: %v", timed)
	b.Run("binding", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := bindingRecord(d, ds, bg, timed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-scope", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := d.recordRun(ds, []*wgpu.BindGroup{bg}, nil, tsOwn(d, timed), modeRelease); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-scope-untimed", func(b *testing.B) {
		for b.Loop() {
			if err := d.recordRun(ds, []*wgpu.BindGroup{bg}, nil, nil, modeRelease); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("empty", func(b *testing.B) { // an encoder finished with nothing in it
		for b.Loop() {
			if err := d.recordRun(nil, nil, nil, nil, modeRelease); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// bindingRecord records ds as record did through the binding until
// 2026-12-05, without submitting.
func bindingRecord(d *Device, ds []Dispatch, bg *wgpu.BindGroup, timed bool) error {
	enc, err := d.dev.CreateCommandEncoder(nil)
	if err != nil {
		return err
	}
	defer enc.Release()
	if timed {
		if err := enc.WriteTimestamp(d.tsQuery, 0); err != nil {
			return err
		}
	}
	pass := enc.BeginComputePass(nil)
	pass.SetPipeline(ds[0].Pipeline.pipe)
	pass.SetBindGroup(0, bg, nil)
	pass.DispatchWorkgroups(1, 1, 1)
	err = pass.End()
	pass.Release()
	if err != nil {
		return err
	}
	if timed {
		if err := enc.WriteTimestamp(d.tsQuery, 1); err != nil {
			return err
		}
		if err := enc.ResolveQuerySet(d.tsQuery, 0, 2, d.tsResolve, 0); err != nil {
			return err
		}
		if err := enc.CopyBufferToBuffer(d.tsResolve, 0, d.tsRead, 0, 16); err != nil {
			return err
		}
	}
	cmd, err := enc.Finish(nil)
	if err != nil {
		return err
	}
	cmd.Release()
	return nil
}

// tsOwn is where a timed recording of the tests resolves its timestamps:
// the device's own read buffer (nil when untimed).
func tsOwn(d *Device, timed bool) *tsPlace {
	if !timed {
		return nil
	}
	return &tsPlace{buf: d.tsRead}
}

// TestUnmapError: an unmap that wgpu refuses (a buffer not mapped) comes
// back as an error with wgpu's message from the scope unmapBuffer takes,
// not as an abort, and an unmap of a mapped buffer succeeds; the device
// goes on working.
func TestUnmapError(t *testing.T) {
	d := openDevice(t)
	d.mu.Lock()
	defer d.mu.Unlock()
	buf, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "unmapped", Size: 256, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Release()
	for range 2 {
		err := d.unmap(buf)
		if err == nil || !strings.Contains(err.Error(), "Unmap") {
			t.Fatalf("unmapping a buffer not mapped: %v, want wgpu's error", err)
		}
		t.Logf("%v", err)
		if err := d.mapWait("test", buf, wgpu.MapModeRead, 256); err != nil {
			t.Fatal(err)
		}
		if err := d.unmap(buf); err != nil {
			t.Fatalf("unmapping a mapped buffer: %v", err)
		}
	}
}

// TestWriteError: a queue write that wgpu refuses (into a buffer without
// CopyDst, at an offset not a multiple of 4) comes back as an error with
// wgpu's message from writeRaw's scope, not as an abort, and a good write
// after it lands: the device goes on working.
func TestWriteError(t *testing.T) {
	d := openDevice(t)
	out := mustBuffer(t, d, 256, "out")
	defer out.Release()
	d.mu.Lock()
	staging, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "no copy-dst", Size: 256, Usage: wgpu.BufferUsageMapWrite | wgpu.BufferUsageCopySrc})
	if err != nil {
		d.mu.Unlock()
		t.Fatal(err)
	}
	defer staging.Release()
	for _, c := range []struct {
		buf *wgpu.Buffer
		off uint64
	}{{staging, 0}, {out.buf, 2}} {
		err := d.writeBuffer(c.buf, c.off, []byte{1, 2, 3, 4})
		if err == nil || !strings.Contains(err.Error(), "WriteBuffer") {
			d.mu.Unlock()
			t.Fatalf("a write wgpu refuses: %v, want wgpu's error", err)
		}
		t.Logf("%v", err)
	}
	d.mu.Unlock()
	want := []float32{1, -0, 3e38, 1e-45}
	if err := d.Upload(out, want); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(want))
	if err := d.Read(out, got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("got[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
