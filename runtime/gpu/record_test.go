//go:build !js

package gpu

import (
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
		err = d.recordSubmit([]Dispatch{{Pipeline: q, Groups: [3]uint32{1, 1, 1}}}, []*wgpu.BindGroup{bg}, nil, timed)
		d.mu.Unlock()
		if err == nil || !strings.Contains(err.Error(), "wgpu") {
			t.Fatalf("a bind group of another layout: got %v, want wgpu's error", err)
		}
		if round == 0 {
			t.Logf("bind group of another layout: %v", err)
		}
		d.mu.Lock()
		err = d.recordSubmit(nil, nil, []copyOp{{src: big.buf, dst: out.buf, dstOff: 128, n: 256}}, round == 1 && timed)
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
