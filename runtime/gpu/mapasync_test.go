//go:build !js

package gpu

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// TestMapAsyncSurvivesGC maps a staging buffer, collects garbage and
// churns small allocations before polling, and reads the data back: with
// the binding's MapAsync a collection there freed the callback's user
// data, and the callback then panicked inside Poll and left the buffer
// mapped (serve on webgpu aborted on the next submission). It also checks
// rawBuffer against the binding's layout: a wrong mirror maps the wrong
// object and fails here.
func TestMapAsyncSurvivesGC(t *testing.T) {
	d := openDevice(t)
	const n = 64
	src := mustBuffer(t, d, n*4, "src")
	defer src.Release()
	want := make([]float32, n)
	for i := range want {
		want[i] = float32(i) * 1.5
	}
	if err := d.Upload(src, want); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	stage, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "test stage", Size: n * 4,
		Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	if err != nil {
		t.Fatal(err)
	}
	defer stage.Release()
	for round := range 20 {
		if err := d.submitCopy(src.buf, 0, stage, 0, n*4); err != nil {
			t.Fatal(err)
		}
		a, err := startMap(stage, wgpu.MapModeRead, 0, n*4)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var junk [][]byte
		for i := range 10000 {
			junk = append(junk, make([]byte, 8+i%8))
		}
		runtime.GC()
		_ = junk
		d.pollUntil(func(bool) bool { ok, _ := a.done(); return ok })
		if _, s := a.done(); s != wgpu.BufferMapAsyncStatusSuccess {
			t.Fatalf("round %d: map status %v", round, s)
		}
		a.free()
		m := stage.GetMappedRange(0, n*4)
		for i, w := range want {
			if got := binary.LittleEndian.Uint32(m[4*i:]); got != math.Float32bits(w) {
				t.Fatalf("round %d: [%d] = %#x, want %#x", round, i, got, math.Float32bits(w))
			}
		}
		if err := stage.Unmap(); err != nil {
			t.Fatal(err)
		}
	}
	// A map wgpu refuses (the buffer is mapped already) is an error, not
	// an abort in the device's uncaptured-error handler.
	a, err := startMap(stage, wgpu.MapModeRead, 0, n*4)
	if err != nil {
		t.Fatal(err)
	}
	d.pollUntil(func(bool) bool { ok, _ := a.done(); return ok })
	a.free()
	if b, err := startMap(stage, wgpu.MapModeRead, 0, n*4); err == nil {
		d.pollUntil(func(bool) bool { ok, _ := b.done(); return ok })
		if _, s := b.done(); s == wgpu.BufferMapAsyncStatusSuccess {
			t.Error("a second map of a mapped buffer succeeded")
		}
		b.free()
	} else {
		t.Logf("second map refused: %v", err)
	}
	if err := stage.Unmap(); err != nil {
		t.Fatal(err)
	}
}
