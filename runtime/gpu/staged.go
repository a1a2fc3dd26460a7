//go:build !js

package gpu

import (
	"time"

	"github.com/cogentcore/webgpu/wgpu"
)

// Staged is a submitted run's host outputs, copied into a staging buffer
// of its own in the run's own submission (SubmitReads); Wait maps it and
// copies them out. Waiting for a staged run waits for its submission and
// those before it, not those queued after: a Launch's Wait no longer
// submits a copy behind every later launch and waits for all of them.
type Staged struct {
	d     *Device
	buf   *wgpu.Buffer
	size  uint64 // buf's size
	total uint64 // bytes copied into it
	reads []ReadBack
}

// maxSpareStaging bounds the staging buffers kept for later SubmitReads.
const maxSpareStaging = 32

// SubmitReads records ds as Submit does and, in the same submission, a
// copy of each of rs into a staging buffer of the run's own; it submits
// and returns without waiting. When rs are empty, or together exceed
// ChainedReadBytes, it submits ds alone and returns a nil *Staged: the
// caller reads them after the run, as before. Buffers of rs may be
// released or reused once it returns; the device orders later uses after
// the copies.
func (d *Device) SubmitReads(ds []Dispatch, rs []ReadBack) (*Staged, error) {
	const op = "submit"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return nil, err
	}
	var total uint64
	for _, r := range rs {
		if err := d.checkBuffer(op, r.Buf); err != nil {
			return nil, err
		}
		n := 4 * uint64(len(r.Out))
		if r.Buf.uniform || n > r.Buf.size {
			return nil, errorf(op, "cannot read %d B from %v", n, r.Buf)
		}
		total += n
	}
	if total == 0 || total > d.readChunk() {
		_, _, err := d.record(op, ds, false, nil, false)
		return nil, err
	}
	s, size, err := d.spareStaging(total)
	if err != nil {
		return nil, errorf(op, "staging buffer of %d B: %w", total, err)
	}
	if _, _, err := d.record(op, ds, false, stagingCopies(nil, rs, s), false); err != nil {
		d.putStaging(s, size)
		return nil, err
	}
	st := &Staged{d: d, buf: s, size: size, total: total, reads: append([]ReadBack(nil), rs...)}
	for i := range st.reads {
		st.reads[i].Bad = -1
	}
	return st, nil
}

// spareStaging returns a MapRead staging buffer of at least n bytes, a
// spare one when there is one; d.mu is held.
func (d *Device) spareStaging(n uint64) (*wgpu.Buffer, uint64, error) {
	best := -1
	for i, s := range d.spare {
		if s.size >= n && (best < 0 || s.size < d.spare[best].size) {
			best = i
		}
	}
	if best >= 0 {
		s := d.spare[best]
		d.spare = append(d.spare[:best], d.spare[best+1:]...)
		return s.buf, s.size, nil
	}
	size := uint64(256)
	for size < n {
		size *= 2
	}
	buf, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "gpucc launch staging", Size: size,
		Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	return buf, size, err
}

// putStaging keeps buf for a later SubmitReads, or releases it past the
// bound; d.mu is held.
func (d *Device) putStaging(buf *wgpu.Buffer, size uint64) {
	if d.closed || len(d.spare) >= maxSpareStaging {
		buf.Release()
		return
	}
	d.spare = append(d.spare, spareBuf{buf, size})
}

type spareBuf struct {
	buf  *wgpu.Buffer
	size uint64
}

// Reads returns the reads as Wait left them: Bad is the index of the first
// non-finite value of a checked read (the reads after it are not done).
func (s *Staged) Reads() []ReadBack { return s.reads }

// Wait waits until the run's submission is done and copies each read
// into its Out, with Bad set as RunReads sets it, and returns the time
// the host copies took. Waiting again does nothing.
func (s *Staged) Wait() (time.Duration, error) {
	const op = "wait"
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.buf == nil {
		return 0, nil
	}
	defer s.releaseLocked()
	if err := d.check(op); err != nil {
		return 0, err
	}
	if err := d.awaitMaps(op, []*mapping{{buf: s.buf, mode: wgpu.MapModeRead, n: s.total}}); err != nil {
		return 0, err
	}
	t := time.Now()
	m := s.buf.GetMappedRange(0, uint(s.total))
	off := 0
	for i := range s.reads {
		r := &s.reads[i]
		raw := f32Bytes(r.Out)
		if r.Check {
			r.Bad = copyChecked(raw, m[off:off+len(raw)], true)
		} else {
			copyOut(raw, m[off:off+len(raw)])
		}
		if r.Bad >= 0 {
			break
		}
		off += len(raw)
	}
	err := d.unmap(s.buf)
	copied := time.Since(t)
	if err != nil {
		return copied, errorf(op, "%w", err)
	}
	return copied, nil
}

// Release gives the staging buffer back without reading it (a run whose
// wait was given up). Releasing twice, or after Wait, does nothing.
func (s *Staged) Release() {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.releaseLocked()
}

func (s *Staged) releaseLocked() {
	if s.buf != nil {
		s.d.putStaging(s.buf, s.size)
		s.buf = nil
	}
}
