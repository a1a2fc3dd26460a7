//go:build !js

package gpu

import "testing"

// TestQueuedBound: submissions left queued (Submit) wait for the queue
// once every maxQueued of them, and not before; the work they queued runs
// in order (each dispatch adds one to its own output, read at the end).
func TestQueuedBound(t *testing.T) {
	d := openDevice(t)
	defer func(m int) { maxQueued = m }(maxQueued)
	maxQueued = 4
	p, err := d.Compile(fixedWGSL, "main", []BindingKind{ReadOnlyStorage, Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	bufs := []*Buffer{mustBuffer(t, d, 256, "a"), mustBuffer(t, d, 256, "b")}
	for _, b := range bufs {
		defer b.Release()
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	_, w0 := d.RoundTrips()
	const n = 10
	for i := range n { // a <- b+1, b <- a+1, ...: the i-th output holds i+1
		ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{bufs[(i+1)%2], bufs[i%2]}, Groups: [3]uint32{1, 1, 1}}}
		if err := d.Submit(ds); err != nil {
			t.Fatal(err)
		}
		_, w := d.RoundTrips()
		if want := (i + 1) / maxQueued; w-w0 != want {
			t.Fatalf("after %d queued submissions %d waits, want %d", i+1, w-w0, want)
		}
	}
	got := make([]float32, 64)
	if err := d.Read(bufs[(n-1)%2], got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != n {
			t.Fatalf("out[%d] = %v after %d chained dispatches, want %d", i, v, n, n)
		}
	}
}
