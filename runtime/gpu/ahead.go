//go:build !js

package gpu

import (
	"slices"

	"github.com/cogentcore/webgpu/wgpu"
)

// A run that waits for the GPU, the second of two alike, records the next
// run while it waits: the same dispatches, timed alike, into a command
// buffer the device keeps (recordRun's modeKeep). When the next run has
// the same dispatches (the same pipelines, buffers and workgroup counts: a
// loop of resident runs of one executable, whose pooled buffers come back
// the same), it submits that command buffer instead of recording its own,
// and records the one after it; so that its recording
// (the encoder, the pass, the resolve and the finish in wgpu, about 8 µs
// of the 21 µs a run took to record and submit on the H200 on
// 2026-12-05) is done inside the previous run's wait for the GPU, which
// only polls. A command buffer reads its buffers when the GPU runs it, so
// writes and uploads between the two runs are seen; it is what the run
// would have recorded itself.
//
// It is dropped, unsubmitted, when a buffer or pipeline it uses is
// released, when the bind group cache is cleared, and when a run unlike it
// comes; a run with staged uploads pending (which go first in the run's
// own recording), copies or maps of its own records as before. Runs that
// alternate (a typed graph's islands) record nothing ahead: only a run
// like the last one does.

// ahead is the last run that could be recorded ahead (seen): its
// dispatches and how it was timed, and whether a command buffer recording
// them is kept (recorder.rec.kept).
type ahead struct {
	seen, kept   bool
	ds           []Dispatch // copies, their Buffers in bufs
	bufs         []*Buffer
	bgs          []*wgpu.BindGroup
	timed        bool
	pass, direct bool // the device's tsPass and tsDirect when recorded
	// copies are a host-output run's copies into the read staging ring,
	// and at where its caller placed the timestamps (hasAt), beside them.
	copies []copyOp
	at     tsPlace
	hasAt  bool
}

// setReads remembers the copies and the timestamps' place of the run
// set remembered (none for a resident run).
func (a *ahead) setReads(copies []copyOp, at *tsPlace) {
	a.copies = append(a.copies[:0], copies...)
	a.hasAt = at != nil
	if at != nil {
		a.at = *at
	}
}

// readsRing reports whether the last run copied into the read staging
// ring or resolved its timestamps there (runReads), as its recording
// made ahead does.
func (a *ahead) readsRing() bool { return a.seen && (len(a.copies) > 0 || a.hasAt) }

// sameReads reports whether the last run had these copies and this
// place of the timestamps.
func (a *ahead) sameReads(copies []copyOp, at *tsPlace) bool {
	return slices.Equal(copies, a.copies) && (at != nil) == a.hasAt && (at == nil || *at == a.at)
}

// set remembers what the kept command buffer records.
func (a *ahead) set(ds []Dispatch, bgs []*wgpu.BindGroup, timed, pass, direct bool) {
	a.bufs = a.bufs[:0]
	for _, x := range ds {
		a.bufs = append(a.bufs, x.Buffers...)
	}
	a.ds = a.ds[:0]
	at := 0
	for _, x := range ds {
		n := len(x.Buffers)
		a.ds = append(a.ds, Dispatch{Pipeline: x.Pipeline, Buffers: a.bufs[at : at+n : at+n], Groups: x.Groups})
		at += n
	}
	a.bgs = append(a.bgs[:0], bgs...)
	a.timed, a.pass, a.direct = timed, pass, direct
	a.seen = true
}

// matches reports whether the last run had the dispatches ds, timed as
// asked, the device's timestamps taken as now.
func (a *ahead) matches(ds []Dispatch, timed, pass, direct bool) bool {
	if !a.seen || len(ds) != len(a.ds) || timed != a.timed || (timed && (pass != a.pass || direct != a.direct)) {
		return false
	}
	for i := range ds {
		x, y := &ds[i], &a.ds[i]
		if x.Pipeline != y.Pipeline || x.Groups != y.Groups || len(x.Buffers) != len(y.Buffers) {
			return false
		}
		for j, b := range x.Buffers {
			if b != y.Buffers[j] {
				return false
			}
		}
	}
	return true
}

// uses reports whether the last run used the pipeline or buffer of this
// id.
func (a *ahead) uses(id uint64) bool {
	if !a.seen {
		return false
	}
	for _, x := range a.ds {
		if x.Pipeline.id == id {
			return true
		}
	}
	for _, b := range a.bufs {
		if b.id == id {
			return true
		}
	}
	return false
}

// recordAhead records ds (their bind groups bgs) and then copies for
// the next run, timed into ts unless nil, and keeps it; d.mu is held. A
// recording wgpu refuses is dropped: the next run records its own and
// reports the error.
func (d *Device) recordAhead(ds []Dispatch, bgs []*wgpu.BindGroup, copies []copyOp, ts *tsPlace) {
	if err := d.recordRun(ds, bgs, copies, ts, modeKeep); err != nil {
		return
	}
	d.next.kept = true
}

// forget drops the kept command buffer and the last run (a buffer or
// pipeline of it is being released, or its bind groups); d.mu is held.
func (d *Device) forget() {
	d.dropKept()
	d.next.seen = false
}
