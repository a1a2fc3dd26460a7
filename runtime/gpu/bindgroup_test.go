//go:build !js

package gpu

import (
	"slices"
	"testing"
)

// BenchmarkReleaseFullCache is the release of a buffer bound in one
// cached bind group while 3000 bind groups of the same pipeline and
// other buffers are cached: the eviction of its bind group.
func BenchmarkReleaseFullCache(b *testing.B) {
	d := openDevice(b)
	ds := tinyDispatch(b, d)
	x, u := ds.Buffers[0], ds.Buffers[2]
	var keep []*Buffer
	b.Cleanup(func() {
		for _, y := range keep {
			y.Release()
		}
	})
	bind := func(y *Buffer) {
		if err := d.Submit([]Dispatch{{Pipeline: ds.Pipeline, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{1, 1, 1}}}); err != nil {
			b.Fatal(err)
		}
	}
	for range 3000 {
		y := mustBuffer(b, d, 256, "y")
		keep = append(keep, y)
		bind(y)
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	ys := make([]*Buffer, b.N)
	for i := range ys {
		ys[i] = mustBuffer(b, d, 256, "y")
		bind(ys[i])
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		ys[i].Release()
	}
}

// checkIndex fails unless byID lists exactly the ids of every cached bind
// group.
func checkIndex(t *testing.T, d *Device) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for id, keys := range d.byID {
		for k := range keys {
			e, ok := d.bindGroups[k]
			if !ok || !slices.Contains(e.ids, id) {
				t.Fatalf("id %d indexes a bind group that is gone or does not name it", id)
			}
			n++
		}
	}
	want := 0
	for k, e := range d.bindGroups {
		seen := map[uint64]bool{}
		for _, id := range e.ids {
			if _, ok := d.byID[id][k]; !ok {
				t.Fatalf("a cached bind group is not indexed under id %d", id)
			}
			if !seen[id] {
				want++
			}
			seen[id] = true
		}
	}
	if n != want {
		t.Fatalf("the index holds %d entries, the cache names %d", n, want)
	}
}

// TestBindGroupIndex: releasing a buffer drops the cached bind groups
// that bind it, and only those (the others still run, and give their
// bits); releasing a pipeline drops its own; the index and the cache
// agree throughout, and a full cache's clearing empties both.
func TestBindGroupIndex(t *testing.T) {
	d := openDevice(t)
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	q, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	u, err := d.NewUniform(u32Uniform(64), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	var xs, ys []*Buffer
	for range 4 {
		x, y := mustBuffer(t, d, 256, "x"), mustBuffer(t, d, 256, "y")
		if err := d.Upload(x, make([]float32, 64)); err != nil {
			t.Fatal(err)
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	run := func(pl *Pipeline, x, y *Buffer) error {
		return d.Run([]Dispatch{{Pipeline: pl, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{1, 1, 1}}})
	}
	for _, x := range xs {
		for _, y := range ys {
			for _, pl := range []*Pipeline{p, q} {
				if err := run(pl, x, y); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	count := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.bindGroups)
	}
	if n := count(); n != 32 {
		t.Fatalf("%d bind groups cached, want 32", n)
	}
	checkIndex(t, d)
	xs[1].Release()
	if n := count(); n != 24 {
		t.Fatalf("after releasing a buffer bound in 8: %d cached, want 24", n)
	}
	checkIndex(t, d)
	q.Release()
	if n := count(); n != 12 {
		t.Fatalf("after releasing a pipeline: %d cached, want 12", n)
	}
	checkIndex(t, d)
	out := make([]float32, 64)
	if err := run(p, xs[0], ys[3]); err != nil {
		t.Fatal(err)
	}
	if err := d.Read(ys[3], out); err != nil || out[0] != 1 || out[63] != 1 {
		t.Fatalf("a cached bind group after evictions: %v, %v", out[:2], err)
	}
	if n := count(); n != 12 {
		t.Fatalf("the run after evictions created a bind group: %d cached", n)
	}
	d.mu.Lock()
	d.clearBindGroups()
	d.mu.Unlock()
	checkIndex(t, d)
	if n := count(); n != 0 || len(d.byID) != 0 {
		t.Fatalf("a cleared cache holds %d bind groups, the index %d ids", n, len(d.byID))
	}
	for _, b := range append(xs, ys...) {
		b.Release()
	}
	p.Release()
}
