//go:build !js

package gpu

import (
	"math"
	"testing"
)

// TestRunAllocs pins what a warm run allocates in Go: nothing, whether it
// waits, is timed, reads a result back in its own submission or is only
// queued, and whether the run before recorded it ahead (the third run of
// a loop submits what the second recorded). A run's cost beyond its
// kernels is its host path, and each allocation is a slice of it that
// the collector pays again later; the output is checked each time, so
// that an allocation is not traded for a wrong number.
func TestRunAllocs(t *testing.T) {
	d := openDevice(t)
	ds := []Dispatch{tinyDispatch(t, d)}
	x, y := ds[0].Buffers[0], ds[0].Buffers[1]
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(i) - 31.5
	}
	in[0], in[1], in[2] = float32(math.Copysign(0, -1)), math.Float32frombits(1), 3e38
	if err := d.Upload(x, in); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 64)
	check := func() {
		t.Helper()
		for i, v := range in {
			if got, want := math.Float32bits(out[i]), math.Float32bits(v+1); got != want {
				t.Fatalf("y[%d] = %#08x, want %#08x (%v + 1)", i, got, want, v)
			}
		}
	}
	rs := []ReadBack{{Buf: y, Out: out, Check: true}}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"run", func() error { return d.Run(ds) }},
		{"runtimed", func() error { _, _, err := d.RunTimed(ds); return err }},
		{"runread", func() error { return d.RunRead(ds, y, out) }},
		{"runreads", func() error { _, err := d.RunReads(ds, rs); return err }},
		{"submit", func() error { return d.Submit(ds) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 { // the bind group, the rings, the recording ahead
				if err := tc.run(); err != nil {
					t.Fatal(err)
				}
			}
			n := testing.AllocsPerRun(50, func() {
				if err := tc.run(); err != nil {
					t.Fatal(err)
				}
			})
			clear(out)
			if err := d.Read(y, out); err != nil {
				t.Fatal(err)
			}
			check()
			if n != 0 {
				t.Errorf("a warm %s allocates %v times, want 0", tc.name, n)
			}
		})
	}
}
