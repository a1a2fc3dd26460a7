//go:build !js

package gpu

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestRecordAhead: a waiting run like the one before it records the next
// one during its wait, and the next run submits that recording when it
// has the same dispatches (Counts.Ahead), timed or not; what it computes is what a
// recording of its own would: inputs written between the runs (by
// WriteBuffer, and by a staged upload, whose pending copy must go first,
// so that run records its own) are read, the outputs have the bits of
// src+1 at the limits, a timed run reports its GPU time. Another
// dispatch, another workgroup count, the other timing, a released
// buffer or pipeline of the recording: each records its own, and the
// device goes on working.
func TestRecordAhead(t *testing.T) {
	d, err := Open(Options{AllowSoftware: true}) // its counts and caches its own
	if err != nil {
		openDevice(t) // skips without a device
		t.Fatal(err)
	}
	defer d.Close()
	d.noAhead = false // whatever GPUCC_RECORD_AHEAD says
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	const n = 1 << 15 // 128 KiB: WriteBuffer below 64 KiB, a staged upload above
	x, y := mustBuffer(t, d, 4*n, "x"), mustBuffer(t, d, 4*n, "y")
	u, err := d.NewUniform(u32Uniform(n), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { x.Release(); y.Release(); u.Release() }()
	d.SetUpload(UploadStaging, 0)
	limits := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1.17549435e-38, -3e38, 3.4028235e38, -1, 0.5}
	round := 0
	input := func() []float32 {
		round++
		in := make([]float32, n)
		for i := range in {
			in[i] = limits[(i+round)%len(limits)] + float32(round*(i%7))
		}
		return in
	}
	ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{n / 64, 1, 1}}}
	// run runs ds (timed or not) on in, written into x by upload, and
	// checks y and whether the run took the recording made ahead.
	run := func(name string, ds []Dispatch, in []float32, upload func([]float32) error, timed, ahead bool) {
		t.Helper()
		if upload != nil {
			if err := upload(in); err != nil {
				t.Fatal(err)
			}
		}
		c0 := d.Counts()
		if timed {
			ns, ok, err := d.RunTimed(ds)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !ok && d.Info().TimestampQuery || ok && ns == 0 {
				t.Fatalf("%s: GPU time %d ns, timed %v", name, ns, ok)
			}
		} else if err := d.Run(ds); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := d.Counts().Sub(c0).Ahead == 1; got != ahead {
			t.Errorf("%s: took the recording made ahead: %v, want %v", name, got, ahead)
		}
		out := make([]float32, n)
		if err := d.Read(y, out); err != nil {
			t.Fatal(err)
		}
		groups := int(ds[0].Groups[0]) * 64
		for i, v := range out[:min(groups, n)] {
			if want := in[i] + 1; math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("%s: y[%d] = %v, want %v (x %v)", name, i, v, want, in[i])
			}
		}
	}
	small := func(in []float32) error { return d.Upload(x, in[:1<<14]) } // 64 KiB: WriteBuffer
	staged := func(in []float32) error { return d.Upload(x, in) }        // 128 KiB: a staged copy, pending
	var in []float32
	for _, timed := range []bool{false, true} {
		in = input()
		run("first", ds, in, staged, timed, false)
		run("second", ds, in, nil, timed, false) // like the last: records the next ahead
		run("third", ds, in, nil, timed, true)
		in = append(input()[:1<<14], in[1<<14:]...)
		run("after WriteBuffer", ds, in, small, timed, true)
		in = input()
		run("after a staged upload", ds, in, staged, timed, false)
		run("after that", ds, in, nil, timed, true)
	}
	run("untimed after timed", ds, in, nil, false, false)
	half := []Dispatch{{Pipeline: p, Buffers: ds[0].Buffers, Groups: [3]uint32{n / 128, 1, 1}}}
	in = input()
	run("half the workgroups", half, in, staged, false, false)
	run("half again", half, in, nil, false, false)
	run("all again", ds, in, nil, false, false)
	run("all once more", ds, in, nil, false, false)
	run("all a third time", ds, in, nil, false, true)
	// Released under the recording: a buffer it writes, then the pipeline.
	gone := func(what string) {
		t.Helper()
		if d.next.kept || d.next.seen || d.rec.kept != nil {
			t.Fatalf("a recording kept past the release of %s", what)
		}
	}
	z := mustBuffer(t, d, 4*n, "z")
	other := []Dispatch{{Pipeline: p, Buffers: []*Buffer{x, z, u}, Groups: ds[0].Groups}}
	for range 2 { // the second records the next ahead
		if err := d.Run(other); err != nil {
			t.Fatal(err)
		}
	}
	z.Release()
	gone("a buffer it writes")
	run("after a release", ds, in, nil, false, false)
	q, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	viaQ := []Dispatch{{Pipeline: q, Buffers: ds[0].Buffers, Groups: ds[0].Groups}}
	run("another pipeline", viaQ, in, nil, false, false)
	run("another pipeline again", viaQ, in, nil, false, false)
	q.Release()
	gone("its pipeline")
	run("after the pipeline's release", ds, in, nil, true, false)
	run("and again", ds, in, nil, true, false)
	run("and once more", ds, in, nil, true, true)
}

// TestRecordAheadReads: a waiting run with host outputs (RunReads, RunRead)
// like the one before it also takes the recording made during the last
// one's wait, with its copies into the read staging ring and its
// timestamps there, and computes what its own would: inputs written
// between the runs are read, a Read of another buffer between them
// (through the same ring) changes nothing, a staged upload makes the run
// record its own and nothing ahead, a Read that grows the ring drops the
// recording (it copies into the ring's first buffer), and an output its
// dispatches do not bind is never recorded ahead (its release would not
// drop the recording). The outputs have src+1's bits at the limits.
func TestRecordAheadReads(t *testing.T) {
	d, err := Open(Options{AllowSoftware: true}) // its counts and caches its own
	if err != nil {
		openDevice(t)
		t.Fatal(err)
	}
	defer d.Close()
	d.noAhead = false
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	const n = 1 << 15
	x, y, z := mustBuffer(t, d, 4*n, "x"), mustBuffer(t, d, 4*n, "y"), mustBuffer(t, d, 4*n, "z")
	big := mustBuffer(t, d, 8<<20, "big")
	u, err := d.NewUniform(u32Uniform(n), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { x.Release(); y.Release(); z.Release(); big.Release(); u.Release() }()
	d.SetUpload(UploadStaging, 0)
	limits := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1.17549435e-38, -3e38, 3.4028235e38, -1, 0.5}
	round := 0
	input := func() []float32 {
		round++
		in := make([]float32, n)
		for i := range in {
			in[i] = limits[(i+round)%len(limits)] + float32(round*(i%7))
		}
		return in
	}
	ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{n / 64, 1, 1}}}
	out := make([]float32, 1024)
	run := func(name string, in []float32, upload func([]float32) error, timed bool, rd *Buffer, ahead bool) {
		t.Helper()
		if upload != nil {
			if err := upload(in); err != nil {
				t.Fatal(err)
			}
		}
		clear(out)
		c0 := d.Counts()
		if timed {
			t0 := time.Now()
			rt, err := d.RunReads(ds, []ReadBack{{Buf: rd, Out: out, Check: true}})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// The timestamps resolved beside the output, by the
			// recording made ahead too: a stale or misplaced pair gives
			// a time past the call's or none.
			if wall := time.Since(t0); d.tsOK && (!rt.GPUTimed || rt.GPU <= 0 || rt.GPU > wall) {
				t.Fatalf("%s: GPU time %v (timed %v), the call took %v", name, rt.GPU, rt.GPUTimed, wall)
			}
		} else if err := d.RunRead(ds, rd, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := d.Counts().Sub(c0).Ahead == 1; got != ahead {
			t.Errorf("%s: took the recording made ahead: %v, want %v", name, got, ahead)
		}
		if rd != y {
			return
		}
		for i, v := range out {
			if want := in[i] + 1; math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("%s: y[%d] = %v, want %v (x %v)", name, i, v, want, in[i])
			}
		}
	}
	small := func(in []float32) error { return d.Upload(x, in[:1<<14]) } // 64 KiB: WriteBuffer
	staged := func(in []float32) error { return d.Upload(x, in) }        // 128 KiB: a staged copy, pending
	for _, timed := range []bool{true, false} {
		in := input()
		run("first", in, staged, timed, y, false)
		run("second", in, nil, timed, y, false) // like the last: records the next ahead
		run("third", in, nil, timed, y, true)
		in = append(input()[:1<<14], in[1<<14:]...)
		run("after WriteBuffer", in, small, timed, y, true)
		other := make([]float32, 64)
		if err := d.Read(z, other); err != nil { // the read ring, between two runs
			t.Fatal(err)
		}
		run("after a Read", in, nil, timed, y, true)
		in = input()
		run("after a staged upload", in, staged, timed, y, false) // its own, nothing ahead
		run("after that", in, nil, timed, y, true)                // the recording kept from before
		grow := 1 << 20                                           // 4 MiB, then 8: the ring grows
		if !timed {
			grow = 2 << 20
		}
		if err := d.Read(big, make([]float32, grow)); err != nil {
			t.Fatal(err)
		}
		if d.next.kept || d.next.seen {
			t.Fatal("a recording kept past the read ring's growth")
		}
		run("after the ring grew", in, nil, timed, y, false)
		run("again", in, nil, timed, y, false)
		run("once more", in, nil, timed, y, true)
	}
	// z is not bound by the dispatch: never recorded ahead.
	for i := range 3 {
		run(fmt.Sprintf("an unbound output %d", i), nil, nil, true, z, false)
	}
}
