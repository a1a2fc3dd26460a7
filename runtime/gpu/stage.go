//go:build !js

package gpu

import "github.com/cogentcore/webgpu/wgpu"

// A mid-sized upload (above smallUpload, at most one staging chunk) is
// written into a staging buffer of its own that the device keeps mapped
// between uses, and its copy into the destination is recorded in the next
// submission, before that submission's dispatches: a run with host inputs
// then submits once and waits once, where each such input took a
// submission of its own and a wait for its staging buffer (3 inputs of
// 128 KiB: 4 submissions and 4 waits a run, TestRunCounts). After the
// submission that copies out of it, the staging buffer is mapped again at
// once; the map completes with that submission, so the next upload finds
// it mapped without a wait of its own.
//
// Every submission goes through recordRun, which records the pending
// copies first, so no later use of a destination (a dispatch, a read, a
// copy) sees it before its upload; a WriteBuffer into a destination with
// a pending copy submits the copy first (writeLocked), since WriteBuffer's
// writes run before the next submission's commands; releasing a
// destination drops its pending copy.

// stage is an upload staging buffer kept for reuse.
type stage struct {
	buf  *wgpu.Buffer
	size uint64
	m    *asyncMap // the map in flight, nil once mapped
}

// pendingCopy is a staged upload whose copy is not yet submitted.
type pendingCopy struct {
	st  *stage
	dst *Buffer
	n   uint64
}

// Bounds on the staging buffers kept: beyond them an upload takes the
// staging ring (a submission and a wait of its own).
const (
	maxStages     = 32
	maxStageBytes = 64 << 20
)

// stages is the device's state for staged uploads (in Device).
type stages struct {
	idle    []*stage // mapped, or with their map in flight
	pending []pendingCopy
	bytes   uint64 // the bytes of every stage kept, idle or pending
	count   int
}

// stageUpload writes data into a kept staging buffer and leaves its copy
// into b pending, with check reporting the first non-finite value as
// UploadChecked does (the copy is then dropped). It reports false when the
// bounds leave no staging buffer for it; d.mu is held.
func (d *Device) stageUpload(op string, b *Buffer, data []byte, check bool) (bad int, ok bool, err error) {
	n := roundUp(uint64(len(data)), 4)
	st, err := d.takeStage(n)
	if err != nil || st == nil {
		return -1, false, err
	}
	if st.m != nil { // the map after its last copy, still in flight
		m := st.m
		if ok, _ := m.done(); !ok {
			d.pollUntil(func(bool) bool { ok, _ := m.done(); return ok })
		}
		_, status := m.done()
		d.doneMap(m)
		st.m = nil
		if status != wgpu.BufferMapAsyncStatusSuccess {
			d.dropStage(st)
			return -1, false, errorf(op, "map staging buffer: status %v", status)
		}
	}
	m := st.buf.GetMappedRange(0, uint(n))
	k := len(data)
	if check {
		if j := copyChecked(m[:k&^3], data[:k&^3], false); j >= 0 {
			d.stages.idle = append(d.stages.idle, st) // still mapped: its contents do not matter
			return j, true, nil
		}
		copy(m[k&^3:], data[k&^3:])
	} else {
		copyOut(m[:k], data)
	}
	clear(m[k:n])
	if err := d.unmap(st.buf); err != nil {
		d.dropStage(st)
		return -1, true, errorf(op, "%w", err)
	}
	d.stages.pending = append(d.stages.pending, pendingCopy{st: st, dst: b, n: n})
	return -1, true, nil
}

// takeStage returns the smallest idle staging buffer of at least n bytes,
// or a new one mapped at creation, or nil past the bounds; d.mu is held.
func (d *Device) takeStage(n uint64) (*stage, error) {
	best := -1
	for i, s := range d.stages.idle {
		if s.size >= n && (best < 0 || s.size < d.stages.idle[best].size) {
			best = i
		}
	}
	if best >= 0 {
		s := d.stages.idle[best]
		d.stages.idle = append(d.stages.idle[:best], d.stages.idle[best+1:]...)
		return s, nil
	}
	size := uint64(256)
	for size < n {
		size *= 2
	}
	if d.stages.count >= maxStages || d.stages.bytes+size > maxStageBytes {
		return nil, nil
	}
	buf, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "gpucc kept staging", Size: size,
		Usage: wgpu.BufferUsageMapWrite | wgpu.BufferUsageCopySrc, MappedAtCreation: true})
	if err != nil {
		return nil, err
	}
	d.stages.count++
	d.stages.bytes += size
	return &stage{buf: buf, size: size}, nil
}

// dropStage releases a staging buffer for good; d.mu is held.
func (d *Device) dropStage(st *stage) {
	if st.m != nil {
		if ok, _ := st.m.done(); ok {
			d.doneMap(st.m)
		} // else its C memory is left to the callback (a few hundred bytes)
		st.m = nil
	}
	st.buf.Release()
	d.stages.count--
	d.stages.bytes -= st.size
}

// pendingCopies are the staged uploads' copies, for the next recording
// (in memory the next call reuses); d.mu is held.
func (d *Device) pendingCopies() []copyOp {
	cs := d.preCopies[:0]
	for _, p := range d.stages.pending {
		cs = append(cs, copyOp{src: p.st.buf, dst: p.dst.buf, n: p.n})
	}
	d.preCopies = cs
	return cs
}

// submitted maps the staging buffers of the pending copies a submission
// has just taken again, and makes them idle; d.mu is held.
func (d *Device) submitted() {
	for _, p := range d.stages.pending {
		d.remap(p.st)
	}
	d.stages.pending = d.stages.pending[:0]
}

// remap asks for st's map and makes it idle (dropping it when wgpu
// refuses the map); d.mu is held.
func (d *Device) remap(st *stage) {
	m, err := d.startMap(st.buf, wgpu.MapModeWrite, 0, st.size)
	if err != nil {
		d.dropStage(st)
		return
	}
	st.m = m
	d.stages.idle = append(d.stages.idle, st)
}

// pendingTo reports whether a staged upload into b waits for its copy.
func (d *Device) pendingTo(b *Buffer) bool {
	for _, p := range d.stages.pending {
		if p.dst == b {
			return true
		}
	}
	return false
}

// dropPending drops the pending copies into b (being released); their
// staging buffers are mapped again; d.mu is held.
func (d *Device) dropPending(b *Buffer) {
	kept := d.stages.pending[:0]
	for _, p := range d.stages.pending {
		if p.dst == b {
			d.remap(p.st)
		} else {
			kept = append(kept, p)
		}
	}
	d.stages.pending = kept
}

// releaseStages releases every staging buffer (the device is closing,
// its queue idle); d.mu is held.
func (d *Device) releaseStages() {
	for _, p := range d.stages.pending {
		d.dropStage(p.st)
	}
	d.stages.pending = nil
	for _, st := range d.stages.idle {
		d.dropStage(st)
	}
	d.stages.idle = nil
}
