//go:build !js

package gpu

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
)

// Device is an opened WebGPU device with its queue. Create it with Open and
// release it with Close.
type Device struct {
	mu      sync.Mutex
	life    sync.RWMutex // CompileAll holds it for reading, Close for writing
	inst    *wgpu.Instance
	adapter *wgpu.Adapter
	dev     *wgpu.Device
	queue   *wgpu.Queue
	info    AdapterInfo
	lim     Limits
	key     idleKey // what Open chose the device by (idle.go)
	granted [2]bool // the timestamps, the mappable primary buffers: the device's features, for idle.go
	closed  bool

	readStage [2]*wgpu.Buffer // MapRead|CopyDst ring for Read
	readSize  uint64          // size of each readStage buffer

	upPath  UploadPath
	upChunk uint64          // bytes per WriteBuffer call or staging buffer (0: whole)
	upStage [2]*wgpu.Buffer // MapWrite|CopySrc ring for UploadStaging
	upSize  uint64          // size of each upStage buffer
	// upTime is how long staged uploads spent filling staging (the
	// host's copy and check), waiting for a staging buffer's map, and
	// unmapping and submitting its copy: BenchmarkTransfer's phases.
	upTime [3]time.Duration

	bindGroups map[string]*bindGroupEntry
	byID       map[uint64]map[string]struct{} // the keys of bindGroups naming each pipeline or buffer id
	spare      []spareBuf                     // staging buffers for SubmitReads, idle

	recorder          // recordSubmit's memory (record.go)
	runScratch        // a run's maps, copies and timestamps' place, reused (dispatch.go)
	queued     int    // submissions left queued since the queue was last idle (maxQueued)
	stages     stages // staging buffers kept mapped for mid-sized uploads, and their pending copies (stage.go)

	// n counts the calls made to wgpu (calls.go), for tests that pin
	// what a run asks of it.
	n Counts

	// timestamp resources, created lazily by RunTimed
	tsOK bool
	// tsPass: the compute pass writes a timed run's timestamps
	// (timestampWrites: one query reset, the pass's begin and end), not
	// the encoder around it (two resets, two commands); tsDirect: the
	// queries resolve straight into the mapped read buffer (wgpu's
	// mappable primary buffers), not into tsResolve and a copy from it.
	// Both by default since their first run on NVIDIA's driver (the H100,
	// 2026-12-05: TestTimestampPlaces passed, and a warm resident run took
	// 39.1 µs against 45.8 with the encoder's four commands, in one visit).
	// The pass's timestamps time the pass alone, not the copies after it.
	// GPUCC_TIMESTAMPS=encoder restores the encoder's writes and the copy.
	tsPass, tsDirect bool

	// noAhead: no run records the next one during its wait (ahead.go);
	// GPUCC_RECORD_AHEAD=off, for timing both in one visit.
	noAhead   bool
	tsQuery   *wgpu.QuerySet
	tsResolve *wgpu.Buffer
	tsRead    *wgpu.Buffer
}

type bindGroupEntry struct {
	bg  *wgpu.BindGroup
	ids []uint64 // pipeline id followed by buffer ids
}

// maxBindGroupCache bounds the bind group cache: a run that would take it
// past the bound clears it first (a run of more dispatches holds them all
// until the next run). A variable so that tests can make it small.
var maxBindGroupCache = 4096

var nextID atomic.Uint64

// Open picks the best adapter (hardware before software, discrete before
// integrated), rejects software adapters unless opts.AllowSoftware, and
// requests a device with WebGPU's default limits except that
// MaxStorageBufferBindingSize, MaxBufferSize and the compute workgroup
// storage are raised to the adapter's (the storage only as far as the
// driver grants it).
// The TimestampQuery feature is requested when the adapter has it.
// Where an earlier Device's Close gave back a device that these options
// would choose, Open takes it instead (idle.go).
func Open(opts Options) (*Device, error) {
	const op = "open"
	if err := rawLayout(); err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	key := keyOf(opts)
	for c := takeIdle(key); c != nil; c = takeIdle(key) {
		if d := on(c, opts); d.healthy() {
			return d, nil
		}
		c.release()
	}
	inst, adapter, info, err := openAdapters(opts)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	if err := sameAdapter(key, info); err != nil {
		adapter.Release()
		inst.Release()
		return nil, err
	}
	al := adapter.GetLimits().Limits
	req := wgpu.DefaultLimits()
	req.MaxStorageBufferBindingSize = al.MaxStorageBufferBindingSize
	req.MaxBufferSize = al.MaxBufferSize
	var features []wgpu.FeatureName
	passTS := os.Getenv("GPUCC_TIMESTAMPS") != "encoder" // see tsPass
	if info.TimestampQuery {
		features = append(features, wgpu.FeatureNameTimestampQuery)
		if passTS && adapter.HasFeature(wgpu.NativeFeatureMappablePrimaryBuffers) {
			features = append(features, wgpu.NativeFeatureMappablePrimaryBuffers)
		}
	}
	// The workgroup storage is raised to the adapter's (wider attention
	// sub-tiles; the tuner's larger matmul tiles); if the driver refuses,
	// WebGPU's defaults. DefaultLimits holds wgpu's "undefined" (2^32 − 1)
	// in every field, which asks for the default, so the adapter's value is
	// set, not the maximum of the two: until 2026-12-05 this code took
	// that maximum and asked for nothing (lavapipe granted 16384 bytes of
	// its 32768). The invocation and workgroup-size limits, which it also
	// meant to raise, stay at the defaults: the passes' tiles and split
	// blocks read them, and no device has timed their larger choices.
	wide := req
	wide.MaxComputeWorkgroupStorageSize = max(al.MaxComputeWorkgroupStorageSize, 16384)
	dev, err := requestDevice(adapter, wide, features)
	if err != nil {
		dev, err = requestDevice(adapter, req, features)
	}
	if err != nil && len(features) > 0 {
		// Retry without optional features before giving up.
		features = nil
		dev, err = requestDevice(adapter, req, nil)
	}
	if err != nil {
		msg := err.Error()
		adapter.Release()
		inst.Release()
		return nil, errorf(op, "request device on adapter %s (max storage binding %d B, max buffer %d B): %s",
			info, req.MaxStorageBufferBindingSize, req.MaxBufferSize, msg)
	}
	made.Add(1)
	tsOK := len(features) > 0 && dev.HasFeature(wgpu.FeatureNameTimestampQuery)
	info.Limits = limitsFrom(dev.GetLimits().Limits)
	info.TimestampQuery = tsOK
	return on(&idleDevice{key: key, inst: inst, adapter: adapter, dev: dev, queue: dev.GetQueue(), info: info,
		granted: [2]bool{tsOK, dev.HasFeature(wgpu.NativeFeatureMappablePrimaryBuffers)}}, opts), nil
}

// on makes a Device for opts on c's device, new or idle.
func on(c *idleDevice, opts Options) *Device {
	d := &Device{inst: c.inst, adapter: c.adapter, dev: c.dev, queue: c.queue, info: c.info, lim: c.info.Limits, key: c.key,
		granted: c.granted, bindGroups: map[string]*bindGroupEntry{}, byID: map[uint64]map[string]struct{}{}}
	d.upPath, d.upChunk = opts.Upload, roundUp(opts.UploadChunk, 4)
	d.tsOK, d.tsPass = c.granted[0], os.Getenv("GPUCC_TIMESTAMPS") != "encoder" // see tsPass
	d.noAhead = os.Getenv("GPUCC_RECORD_AHEAD") == "off"
	d.tsDirect = d.tsOK && d.tsPass && c.granted[1]
	return d
}

func requestDevice(adapter *wgpu.Adapter, req wgpu.Limits, features []wgpu.FeatureName) (dev *wgpu.Device, err error) {
	defer func() {
		if r := recover(); r != nil {
			dev, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return adapter.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            "gpucc",
		RequiredFeatures: features,
		RequiredLimits:   &wgpu.RequiredLimits{Limits: req},
	})
}

// readUsage is the usage of the buffers runs read back through: the read
// staging ring and the timestamps' read buffer, which take the timestamps'
// resolve when tsDirect.
func (d *Device) readUsage() wgpu.BufferUsage {
	u := wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst
	if d.tsDirect {
		u |= wgpu.BufferUsageQueryResolve
	}
	return u
}

// Info describes the device's adapter; its Limits are the limits of the
// device (what was granted), not of the adapter.
func (d *Device) Info() AdapterInfo { return d.info }

// Close releases everything the device made for this Device and cached,
// and gives the WebGPU device itself back to the process's idle ones, for
// the next Open that would choose it (see idle; GPUCC_DEVICE_POOL=off
// releases it). Buffers and pipelines created from it must not be used
// afterwards (Release on them is still allowed). Close is idempotent.
func (d *Device) Close() {
	d.life.Lock()
	defer d.life.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	d.wait() // work still queued (Submit) finishes before its resources go
	d.clearBindGroups()
	for _, s := range d.spare {
		s.buf.Release()
	}
	d.spare = nil
	d.releaseStages()
	d.freeMaps()
	d.recorder.free()
	for _, b := range []*wgpu.Buffer{d.readStage[0], d.readStage[1], d.tsResolve, d.tsRead, d.upStage[0], d.upStage[1]} {
		if b != nil {
			b.Release()
		}
	}
	if d.tsQuery != nil {
		d.tsQuery.Release()
	}
	giveIdle(&idleDevice{key: d.key, inst: d.inst, adapter: d.adapter, dev: d.dev, queue: d.queue, info: d.info, granted: d.granted})
}

// check reports ErrClosed; d.mu must be held.
func (d *Device) check(op string) error {
	if d.closed {
		return &Error{Op: op, Err: fmt.Errorf("device: %w", ErrClosed)}
	}
	return nil
}

// submitEmpty submits an empty command buffer and waits until the queue
// is idle: the writes queued before it are done then.
func (d *Device) submitEmpty(op string) error {
	if err := d.recordSubmit(nil, nil, nil, nil); err != nil {
		return errorf(op, "%w", err)
	}
	d.wait()
	return nil
}

// spinPolls is how many non-blocking polls a wait tries before it naps
// between polls.
const spinPolls = 2000

// maxNap is the longest nap between two polls of a wait: on a hardware
// adapter a short one, since the wait is past spinPolls (a few ms) and a
// nap overshoots the GPU's end by up to its length; on a software adapter
// a longer one, since its work is the CPU's and each poll takes from it.
func maxNap(software bool) time.Duration {
	if software {
		return time.Millisecond
	}
	return 200 * time.Microsecond
}

// wait returns when the queue is idle. It never makes wgpu block: wgpu
// 0.19's blocking poll gives up after 5 s, and a software adapter still
// computing then crashes the process (lavapipe, in its queue thread, on a
// long matmul). On a hardware adapter it spins on non-blocking polls first:
// a short kernel finishes within microseconds, and a blocking wait costs a
// trip through the driver's fence sleep that is much longer. A software
// adapter computes on the CPU cores a spin would take from it, so there it
// naps between polls at once.
func (d *Device) wait() {
	d.pollUntil(func(idle bool) bool { return idle })
	d.queued = 0
}

// maxQueued bounds the submissions a device leaves queued without waiting
// for the GPU (Submit, SubmitReads): the one that reaches it waits until
// the queue is idle, so that a loop of runs that never waits (queued
// resident runs, launches whose Wait comes late) cannot queue without end
// while the GPU falls behind. A variable so that tests can make it small.
var maxQueued = 64

// queuedOne counts a submission left queued and waits for the queue once
// maxQueued are; d.mu is held.
func (d *Device) queuedOne() {
	if d.queued++; d.queued >= maxQueued {
		d.wait()
	}
}

// pollUntil polls the device without blocking until done, given each
// poll's answer (whether the queue is idle), reports true: spinning first
// on a hardware adapter, napping between polls after (see wait), each nap
// twice the last from 20 µs up to maxNap.
func (d *Device) pollUntil(done func(idle bool) bool) {
	d.n.Waits++
	if !d.info.Software {
		for range spinPolls {
			if done(d.poll()) {
				return
			}
		}
	}
	longest := maxNap(d.info.Software)
	for t := 20 * time.Microsecond; !done(d.poll()); t = min(2*t, longest) {
		nap(t)
	}
}
