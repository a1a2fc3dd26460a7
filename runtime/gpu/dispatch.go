//go:build !js

package gpu

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
)

// Dispatch is one compute dispatch: Buffers[i] is bound to binding i of
// group 0 (uniform bindings take buffers from NewUniform) and Groups is the
// workgroup count in x, y, z.
type Dispatch struct {
	Pipeline *Pipeline
	Buffers  []*Buffer
	Groups   [3]uint32
}

// runScratch is the memory a run's host path reuses from one run to the
// next, so that a warm run allocates nothing in Go (TestRunAllocs); d.mu
// is held while a run uses it.
type runScratch struct {
	maps      [2]*mapping // recordAt's maps, the run's own timestamps' last
	tsMap     mapping     // the map of the run's own timestamps (tsRead)
	tsAt      tsPlace     // where the run's timestamps resolve
	readMap   mapping     // runReads' map of the read staging buffer
	copies    []copyOp    // runReads' copies into staging
	preCopies []copyOp    // the staged uploads' copies (pendingCopies)
	issued    []*asyncMap // awaitMaps' maps asked for
	spareMaps []*asyncMap // done maps, their C memory kept for the next (mapasync.go)
	bgKey     []byte      // bindGroup's cache key: the pipeline's id, then the buffers'
	readAhead bool        // runReads' run may be recorded ahead (recordAt)
}

// readsBound reports whether every buffer of rs is bound by one of ds.
func readsBound(ds []Dispatch, rs []ReadBack) bool {
	for _, r := range rs {
		bound := false
		for i := range ds {
			if slices.Contains(ds[i].Buffers, r.Buf) {
				bound = true
				break
			}
		}
		if !bound {
			return false
		}
	}
	return true
}

// evict drops cached bind groups that reference id; d.mu must be held.
// The index byID finds them without a walk over the whole cache (which
// cost ~40 µs a release with 4000 bind groups cached).
func (d *Device) evict(id uint64) {
	if d.next.uses(id) {
		d.forget()
	}
	for k := range d.byID[id] {
		d.dropBindGroup(k, d.bindGroups[k])
	}
}

// dropBindGroup releases the cached bind group e under key k and removes
// it from the index; d.mu must be held.
func (d *Device) dropBindGroup(k string, e *bindGroupEntry) {
	e.bg.Release()
	delete(d.bindGroups, k)
	for _, id := range e.ids {
		delete(d.byID[id], k)
		if len(d.byID[id]) == 0 {
			delete(d.byID, id)
		}
	}
}

// clearBindGroups releases every cached bind group; d.mu must be held.
func (d *Device) clearBindGroups() {
	d.forget()
	for k, e := range d.bindGroups {
		e.bg.Release()
		delete(d.bindGroups, k)
	}
	clear(d.byID)
}

// validate checks dispatch i before anything is recorded.
func (d *Device) validate(op string, i int, ds *Dispatch) error {
	p := ds.Pipeline
	if p == nil {
		return errorf(op, "dispatch %d: nil pipeline", i)
	}
	if p.d != d {
		return errorf(op, "dispatch %d: pipeline %q belongs to another device", i, p.entry)
	}
	if p.released {
		return errorf(op, "dispatch %d: pipeline %q: %w", i, p.entry, ErrClosed)
	}
	if len(ds.Buffers) != len(p.kinds) {
		return errorf(op, "dispatch %d (%s): %d buffers for %d bindings", i, p.entry, len(ds.Buffers), len(p.kinds))
	}
	for j, b := range ds.Buffers {
		if err := d.checkBuffer(op, b); err != nil {
			return errorf(op, "dispatch %d (%s) binding %d: %w", i, p.entry, j, err)
		}
		if (p.kinds[j] == Uniform) != b.uniform {
			return errorf(op, "dispatch %d (%s) binding %d: %v bound as %v", i, p.entry, j, b, p.kinds[j])
		}
		for k := 0; k < j; k++ {
			if ds.Buffers[k] == b && (p.kinds[j] == Storage || p.kinds[k] == Storage) {
				return errorf(op, "dispatch %d (%s): %v bound at %d and %d, and one is writable", i, p.entry, b, k, j)
			}
		}
	}
	for axis, g := range ds.Groups {
		if g > d.lim.MaxComputeWorkgroupsPerDimension {
			return errorf(op, "dispatch %d (%s): %d workgroups in %c > MaxComputeWorkgroupsPerDimension %d: %w",
				i, p.entry, g, "xyz"[axis], d.lim.MaxComputeWorkgroupsPerDimension, ErrLimit)
		}
	}
	return nil
}

// bindGroup returns the (cached) bind group for ds; d.mu must be held.
func (d *Device) bindGroup(ds *Dispatch) (*wgpu.BindGroup, error) {
	key := binary.LittleEndian.AppendUint64(d.bgKey[:0], ds.Pipeline.id)
	for _, b := range ds.Buffers {
		key = binary.LittleEndian.AppendUint64(key, b.id)
	}
	d.bgKey = key
	if e, ok := d.bindGroups[string(key)]; ok {
		return e.bg, nil
	}
	entries := make([]wgpu.BindGroupEntry, len(ds.Buffers))
	ids := make([]uint64, 1, 1+len(ds.Buffers))
	ids[0] = ds.Pipeline.id
	for i, b := range ds.Buffers {
		entries[i] = wgpu.BindGroupEntry{Binding: uint32(i), Buffer: b.buf, Size: wgpu.WholeSize}
		ids = append(ids, b.id)
	}
	bg, err := d.createBindGroup(&wgpu.BindGroupDescriptor{Layout: ds.Pipeline.bgl, Entries: entries})
	if err != nil {
		return nil, err
	}
	k := string(key)
	d.bindGroups[k] = &bindGroupEntry{bg: bg, ids: ids}
	for _, id := range ids {
		if d.byID[id] == nil {
			d.byID[id] = map[string]struct{}{}
		}
		d.byID[id][k] = struct{}{}
	}
	return bg, nil
}

// Run records all dispatches, in order, into one compute pass of one
// command encoder, submits it and waits for completion. WebGPU makes the
// storage writes of a dispatch visible to later dispatches of the same pass.
// Bind groups are created on first use and cached per (pipeline, buffers).
func (d *Device) Run(ds []Dispatch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _, err := d.runLocked("run", ds, false)
	return err
}

// RunTimed is Run with GPU timestamps written at the compute pass's begin
// and end (by the encoder around it under GPUCC_TIMESTAMPS=encoder, with
// the copies after the pass inside). It returns the elapsed GPU time with ok=true
// when the device supports timestamp queries, and ok=false (and runs the
// dispatches untimed) otherwise.
//
// The wgpu 0.19 binding does not expose the queue's timestamp period, so the
// raw tick difference is returned as nanoseconds; that is exact where the
// period is 1 ns (NVIDIA, lavapipe) and must be scaled elsewhere.
func (d *Device) RunTimed(ds []Dispatch) (gpuNanos uint64, ok bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runLocked("run timed", ds, true)
}

// RunRead is Run followed by Read(b, out), in one submission and one wait:
// a lone small run pays one round trip to the GPU instead of two. A result
// larger than one staging chunk is read as Read does, after the run.
func (d *Device) RunRead(ds []Dispatch, b *Buffer, out []float32) error {
	_, err := d.runReads("run", ds, []ReadBack{{Buf: b, Out: out}}, false)
	return err
}

// ReadBack is one buffer that RunReads reads into Out (its first
// 4*len(Out) bytes). With Check, RunReads sets Bad to the index of the
// first element read that is ±Inf or NaN (the elements after it are not
// read), or -1.
type ReadBack struct {
	Buf   *Buffer
	Out   []float32
	Check bool
	Bad   int
}

// RunReads is RunTimed followed by a Read of each of rs, in one
// submission and one wait: the copies into the read staging buffer are
// recorded after the dispatches in the same command encoder, with the
// timestamps resolved after them, the staging buffer is mapped as soon as
// it is submitted, and the one poll loop that waits for the run waits for
// that map. A lone run with host outputs pays one round trip to the GPU
// instead of one for the run, one for the timestamps and one per output,
// and one map (the timestamps take a map of their own only where they do
// not fit the staging chunk after the outputs). When the outputs
// together exceed ChainedReadBytes they are read as Read does, after the
// run.
func (d *Device) RunReads(ds []Dispatch, rs []ReadBack) (RunTimes, error) {
	return d.runReads("run", ds, rs, true)
}

// RunTimes is what RunReads measured: the dispatches by GPU timestamps
// (when GPUTimed: see RunTimed), and the host's copies out of staging.
type RunTimes struct {
	GPU      time.Duration
	GPUTimed bool
	Copy     time.Duration
}

// ChainedReadBytes is the most bytes RunReads copies back within the
// run's own submission (the read staging chunk, 16 MiB by default).
func (d *Device) ChainedReadBytes() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readChunk()
}

func (d *Device) runReads(op string, ds []Dispatch, rs []ReadBack, timed bool) (RunTimes, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rt RunTimes
	if err := d.check(op); err != nil {
		return rt, err
	}
	rt, err := d.runReadsLocked(op, ds, rs, timed)
	return rt, err
}

// runReadsLocked is runReads with d.mu held.
func (d *Device) runReadsLocked(op string, ds []Dispatch, rs []ReadBack, timed bool) (RunTimes, error) {
	var rt RunTimes
	var total uint64
	for i := range rs {
		r := &rs[i]
		r.Bad = -1
		if err := d.checkBuffer(op, r.Buf); err != nil {
			return rt, err
		}
		n := 4 * uint64(len(r.Out))
		if r.Buf.uniform || n > r.Buf.size {
			return rt, errorf(op, "cannot read %d B from %v", n, r.Buf)
		}
		total += n
	}
	if total == 0 || total > d.readChunk() {
		ns, ok, err := d.record(op, ds, timed, nil, true)
		rt.GPU, rt.GPUTimed = time.Duration(ns), ok
		if err != nil {
			return rt, err
		}
		t := time.Now()
		for i := range rs {
			if len(rs[i].Out) == 0 {
				continue
			}
			if rs[i].Bad, err = d.readCheckedLocked(op, rs[i].Buf, f32Bytes(rs[i].Out), rs[i].Check); err != nil || rs[i].Bad >= 0 {
				break
			}
		}
		rt.Copy = time.Since(t)
		return rt, err
	}
	// The timestamps are resolved into the staging buffer after the
	// outputs, where they fit its chunk: one map reads both (until
	// 2026-12-05 the timestamps took a map and an unmap of their own).
	need, at := total, (*tsPlace)(nil)
	if off := roundUp(total, 256); timed && d.tsOK && off+16 <= d.readChunk() {
		need, at = off+16, &d.tsAt
		d.tsAt = tsPlace{off: off}
	}
	if err := d.ensureReadRing(need); err != nil {
		return rt, errorf(op, "%w", err)
	}
	s := d.readStage[0]
	if at != nil {
		at.buf = s
	}
	d.copies = stagingCopies(d.copies[:0], rs, s)
	d.readMap = mapping{buf: s, mode: wgpu.MapModeRead, n: need}
	// The run may be recorded ahead where every buffer it reads is one
	// its dispatches bind, whose release drops a recording (ahead.uses).
	d.readAhead = readsBound(ds, rs)
	ns, ok, err := d.recordAt(op, ds, timed, d.copies, true, at, &d.readMap)
	d.readAhead = false
	rt.GPU, rt.GPUTimed = time.Duration(ns), ok
	if err != nil {
		return rt, err
	}
	t := time.Now()
	m := s.GetMappedRange(0, uint(total))
	off := 0
	for i := range rs {
		r := &rs[i]
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
	err = d.unmap(s)
	rt.Copy = time.Since(t)
	if err != nil {
		return rt, errorf(op, "%w", err)
	}
	return rt, nil
}

func (d *Device) runLocked(op string, ds []Dispatch, timed bool) (uint64, bool, error) {
	return d.record(op, ds, timed, nil, true)
}

// Submit records ds as Run does and submits them without waiting: it
// returns once the work is queued. The queue runs submissions in order,
// and wgpu orders every later use of a buffer (a dispatch, an Upload, a
// Read) after the work queued before it, so the outputs of submitted
// dispatches may be bound by the next Submit at once, and a buffer may be
// released or reused as soon as Submit returns. Sync waits for the work;
// Read waits for it implicitly.
func (d *Device) Submit(ds []Dispatch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _, err := d.record("submit", ds, false, nil, false)
	return err
}

// Sync waits until the device has executed everything submitted to it.
func (d *Device) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("sync"); err != nil {
		return err
	}
	if len(d.stages.pending) > 0 { // staged uploads are submitted work too
		if err := d.recordSubmit(nil, nil, nil, nil); err != nil {
			return errorf("sync", "%w", err)
		}
	}
	d.wait()
	return nil
}

// record records ds into one pass (with timestamps when timed), then
// copies, submits (recordSubmit: one error scope for all of it), and with wait waits and returns
// the GPU time when timed (timed needs wait). With wait, maps are mapped
// as soon as the work is submitted and the wait is for them (they are done
// when the submission is), so a run that reads something back polls once
// for all of it; they are left mapped for the caller. Timestamps are one
// more such map.
func (d *Device) record(op string, ds []Dispatch, timed bool, copies []copyOp, wait bool, maps ...*mapping) (uint64, bool, error) {
	return d.recordAt(op, ds, timed, copies, wait, nil, maps...)
}

// recordAt is record with the timestamps resolved at at, a range of a
// buffer that one of maps covers, when at is not nil: no map of their
// own, and the caller unmaps the buffer. at.buf must take query results
// when d.tsDirect (the read staging ring does).
func (d *Device) recordAt(op string, ds []Dispatch, timed bool, copies []copyOp, wait bool, at *tsPlace, maps ...*mapping) (uint64, bool, error) {
	if err := d.check(op); err != nil {
		return 0, false, err
	}
	for i := range ds {
		if err := d.validate(op, i, &ds[i]); err != nil {
			return 0, false, err
		}
	}
	if timed && d.tsOK && d.tsQuery == nil {
		if err := d.initTimestamps(); err != nil {
			d.tsOK = false
		}
	}
	timed = timed && d.tsOK && wait
	// A run that waits, with nothing to copy or map but its timestamps,
	// or with host outputs copied into the read staging ring (runReads:
	// readAhead), and is like the last such run, records the next one
	// during its wait (ahead.go), and submits the one the run before it
	// recorded when that is its own.
	hostRead := d.readAhead && len(maps) == 1 && maps[0] == &d.readMap
	recurring := wait && !d.noAhead && len(ds) > 0 && (len(copies) == 0 && at == nil && len(maps) == 0 || hostRead)
	again := recurring && d.next.matches(ds, timed, d.tsPass, d.tsDirect) && d.next.sameReads(copies, at)
	given := at               // the timestamps' place as the caller gave it, before their own
	own := timed && at == nil // the timestamps take tsRead and a map of their own
	if own {
		d.tsAt = tsPlace{buf: d.tsRead}
		at = &d.tsAt
		d.tsMap = mapping{buf: d.tsRead, mode: wgpu.MapModeRead, n: 16}
		maps = append(append(d.maps[:0], maps...), &d.tsMap)
	}
	if !timed {
		at = nil
	}
	var bgs []*wgpu.BindGroup
	staged := len(d.stages.pending) > 0
	if again && d.next.kept && !staged {
		bgs = d.next.bgs
		d.submitKept()
	} else {
		// Make room before taking any bind group: clearing the cache between
		// two dispatches of this run would release one it is about to record,
		// which wgpu turns into an abort at pass.End.
		if len(d.bindGroups)+len(ds) > maxBindGroupCache {
			d.clearBindGroups()
		}
		bgs = make([]*wgpu.BindGroup, len(ds))
		for i := range ds {
			bg, err := d.bindGroup(&ds[i])
			if err != nil {
				return 0, false, errorf(op, "dispatch %d (%s): %w", i, ds[i].Pipeline.entry, err)
			}
			bgs[i] = bg
		}
		if err := d.recordSubmit(ds, bgs, copies, at); err != nil {
			return 0, false, errorf(op, "%w", err)
		}
	}
	if !wait {
		d.queuedOne()
		return 0, false, nil
	}
	var during func()
	switch {
	case again && hostRead && staged:
		// Its host inputs went through staging, whose copies a recording
		// made ahead cannot carry: the next run's will too.
	case again:
		during = func() { d.recordAhead(ds, bgs, copies, at) }
	case recurring: // the first of its kind: remembered, not recorded ahead
		d.dropKept()
		d.next.set(ds, bgs, timed, d.tsPass, d.tsDirect)
		d.next.setReads(copies, given)
	}
	if !timed && len(maps) == 0 {
		if during != nil {
			during()
		}
		d.wait()
		return 0, false, nil
	}
	if err := d.awaitMaps(op, maps, during); err != nil {
		d.dropKept()
		return 0, false, err
	}
	if !timed {
		return 0, false, nil
	}
	ns, ok := elapsed(at.buf.GetMappedRange(uint(at.off), 16))
	if own {
		if err := d.unmap(d.tsRead); err != nil {
			return 0, false, errorf(op, "%w", err)
		}
	}
	return ns, ok, nil
}

// elapsed is the time between two resolved timestamps, m's two
// little-endian 64-bit words, and false when the second is the earlier.
func elapsed(m []byte) (uint64, bool) {
	t0 := binary.LittleEndian.Uint64(m[0:])
	t1 := binary.LittleEndian.Uint64(m[8:])
	if t1 < t0 {
		return 0, false
	}
	return t1 - t0, true
}

// stagingCopies appends to cs the copies of each of rs, one after the
// other, into the start of the staging buffer s.
func stagingCopies(cs []copyOp, rs []ReadBack, s *wgpu.Buffer) []copyOp {
	off := uint64(0)
	for _, r := range rs {
		if n := 4 * uint64(len(r.Out)); n > 0 {
			cs = append(cs, copyOp{src: r.Buf.buf, dst: s, dstOff: off, n: n})
			off += n
		}
	}
	return cs
}

// mapping is a buffer range that a run maps once its work is submitted.
type mapping struct {
	buf  *wgpu.Buffer
	mode wgpu.MapMode
	n    uint64
}

// awaitMaps maps each of ms and polls until every map is done, as wait
// polls: a map asked for right after a submission completes with it, so
// this is the submission's wait too. On error no buffer of ms is left
// mapped. The maps go through startMap, not the binding's MapAsync (see
// asyncMap).
func (d *Device) awaitMaps(op string, ms []*mapping, during ...func()) error {
	var err error
	issued := d.issued[:0]
	defer func() {
		for i, a := range issued {
			d.doneMap(a) // every map issued is done: polled until it was
			issued[i] = nil
		}
		d.issued = issued[:0]
	}()
	for _, m := range ms {
		a, e := d.startMap(m.buf, m.mode, 0, m.n)
		if e != nil {
			err = errorf(op, "%w", e)
			break
		}
		issued = append(issued, a)
	}
	if err == nil {
		for _, f := range during {
			if f != nil {
				f() // while the GPU works
			}
		}
	}
	d.pollUntil(func(bool) bool {
		for _, a := range issued {
			if ok, _ := a.done(); !ok {
				return false
			}
		}
		return true
	})
	for _, a := range issued {
		if _, status := a.done(); err == nil && status != wgpu.BufferMapAsyncStatusSuccess {
			err = errorf(op, "map staging buffer: status %v", status)
		}
	}
	if err != nil {
		for _, m := range ms[:len(issued)] {
			_ = d.unmap(m.buf) // leave nothing mapped, whatever each map's status
		}
	}
	return err
}

func (d *Device) initTimestamps() error {
	d.n.Scopes++ // the binding creates it in an error scope
	qs, err := d.dev.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: "gpucc timestamps", Type: wgpu.QueryTypeTimestamp, Count: 2})
	if err != nil {
		return err
	}
	res, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "gpucc timestamp resolve", Size: 16,
		Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc})
	if err != nil {
		qs.Release()
		return err
	}
	rd, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "gpucc timestamp read", Size: 16,
		Usage: d.readUsage()})
	if err != nil {
		qs.Release()
		res.Release()
		return err
	}
	d.tsQuery, d.tsResolve, d.tsRead = qs, res, rd
	return nil
}
