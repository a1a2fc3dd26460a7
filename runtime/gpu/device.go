//go:build !js

package gpu

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// Device is an opened WebGPU device with its queue. Create it with Open and
// release it with Close.
type Device struct {
	mu      sync.Mutex
	inst    *wgpu.Instance
	adapter *wgpu.Adapter
	dev     *wgpu.Device
	queue   *wgpu.Queue
	info    AdapterInfo
	lim     Limits
	closed  bool

	readStaging *wgpu.Buffer // MapRead|CopyDst, grown on demand
	readSize    uint64
	tail        [4]byte // scratch for unaligned upload tails

	upPath  UploadPath
	upChunk uint64          // bytes per WriteBuffer call or staging buffer (0: whole)
	upStage [2]*wgpu.Buffer // MapWrite|CopySrc ring for UploadStaging
	upSize  uint64          // size of each upStage buffer

	bindGroups map[string]*bindGroupEntry

	// timestamp resources, created lazily by RunTimed
	tsOK      bool
	tsQuery   *wgpu.QuerySet
	tsResolve *wgpu.Buffer
	tsRead    *wgpu.Buffer
}

type bindGroupEntry struct {
	bg  *wgpu.BindGroup
	ids []uint64 // pipeline id followed by buffer ids
}

// maxBindGroupCache bounds the bind group cache; it is cleared when full.
const maxBindGroupCache = 4096

var nextID atomic.Uint64

// Open picks the best adapter (hardware before software, discrete before
// integrated), rejects software adapters unless opts.AllowSoftware, and
// requests a device with WebGPU's default limits except that
// MaxStorageBufferBindingSize and MaxBufferSize are raised to the adapter's.
// The TimestampQuery feature is requested when the adapter has it.
func Open(opts Options) (*Device, error) {
	const op = "open"
	inst, err := newInstance()
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	adapters := inst.EnumerateAdapters(nil)
	infos := make([]AdapterInfo, len(adapters))
	for i, a := range adapters {
		infos[i] = adapterInfo(a)
	}
	best, err := chooseAdapter(infos, opts)
	for i, a := range adapters {
		if i != best {
			a.Release()
		}
	}
	if err != nil {
		inst.Release()
		return nil, &Error{Op: op, Err: err}
	}
	d := &Device{inst: inst, adapter: adapters[best], info: infos[best], bindGroups: map[string]*bindGroupEntry{}}
	d.upPath, d.upChunk = opts.Upload, roundUp(opts.UploadChunk, 4)

	al := d.adapter.GetLimits().Limits
	req := wgpu.DefaultLimits()
	req.MaxStorageBufferBindingSize = al.MaxStorageBufferBindingSize
	req.MaxBufferSize = al.MaxBufferSize
	var features []wgpu.FeatureName
	if d.info.TimestampQuery {
		features = append(features, wgpu.FeatureNameTimestampQuery)
	}
	dev, err := d.requestDevice(req, features)
	if err != nil && len(features) > 0 {
		// Retry without optional features before giving up.
		features = nil
		dev, err = d.requestDevice(req, nil)
	}
	if err != nil {
		msg := err.Error()
		d.adapter.Release()
		inst.Release()
		return nil, errorf(op, "request device on adapter %s (max storage binding %d B, max buffer %d B): %s",
			d.info, req.MaxStorageBufferBindingSize, req.MaxBufferSize, msg)
	}
	d.dev = dev
	d.queue = dev.GetQueue()
	d.tsOK = len(features) > 0 && dev.HasFeature(wgpu.FeatureNameTimestampQuery)
	d.lim = limitsFrom(dev.GetLimits().Limits)
	d.info.Limits = d.lim
	d.info.TimestampQuery = d.tsOK
	return d, nil
}

func (d *Device) requestDevice(req wgpu.Limits, features []wgpu.FeatureName) (dev *wgpu.Device, err error) {
	defer func() {
		if r := recover(); r != nil {
			dev, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return d.adapter.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            "gpucc",
		RequiredFeatures: features,
		RequiredLimits:   &wgpu.RequiredLimits{Limits: req},
	})
}

// Info describes the device's adapter; its Limits are the limits of the
// device (what was granted), not of the adapter.
func (d *Device) Info() AdapterInfo { return d.info }

// Close releases the device and everything it cached. Buffers and pipelines
// created from it must not be used afterwards (Release on them is still
// allowed). Close is idempotent.
func (d *Device) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	for k, e := range d.bindGroups {
		e.bg.Release()
		delete(d.bindGroups, k)
	}
	for _, b := range []*wgpu.Buffer{d.readStaging, d.tsResolve, d.tsRead, d.upStage[0], d.upStage[1]} {
		if b != nil {
			b.Release()
		}
	}
	if d.tsQuery != nil {
		d.tsQuery.Release()
	}
	d.queue.Release()
	d.dev.Release()
	d.adapter.Release()
	d.inst.Release()
}

// check reports ErrClosed; d.mu must be held.
func (d *Device) check(op string) error {
	if d.closed {
		return &Error{Op: op, Err: fmt.Errorf("device: %w", ErrClosed)}
	}
	return nil
}

// Buffer is a device buffer. Buffers from NewBuffer are storage buffers
// (usage Storage|CopySrc|CopyDst); buffers from NewUniform are uniform
// buffers (usage Uniform|CopyDst).
type Buffer struct {
	d        *Device
	buf      *wgpu.Buffer
	size     uint64
	label    string
	uniform  bool
	id       uint64
	released bool
}

// Size returns the buffer size in bytes (the requested size rounded up to a
// multiple of 4, or of 16 for uniform buffers).
func (b *Buffer) Size() uint64 { return b.size }

// Release frees the buffer. Releasing twice is a no-op.
func (b *Buffer) Release() {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.released {
		return
	}
	b.released = true
	d.evict(b.id)
	b.buf.Release()
}

func (b *Buffer) String() string {
	if b.label != "" {
		return fmt.Sprintf("buffer %q (%d B)", b.label, b.size)
	}
	return fmt.Sprintf("buffer #%d (%d B)", b.id, b.size)
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// NewBuffer creates a zero-initialised storage buffer of size bytes
// (rounded up to a multiple of 4; a zero size becomes 4). The size is
// checked against MaxBufferSize and MaxStorageBufferBindingSize because
// every buffer is bound whole.
func (d *Device) NewBuffer(size uint64, label string) (*Buffer, error) {
	const op = "new buffer"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return nil, err
	}
	if size > ^uint64(0)-16 {
		return nil, errorf(op, "%q: size %d B: %w", label, size, ErrLimit)
	}
	sz := max(roundUp(size, 4), 4)
	if sz > d.lim.MaxBufferSize {
		return nil, errorf(op, "%q: size %d B > MaxBufferSize %d B of %s: %w", label, sz, d.lim.MaxBufferSize, d.info.Name, ErrLimit)
	}
	if sz > d.lim.MaxStorageBufferBindingSize {
		return nil, errorf(op, "%q: size %d B > MaxStorageBufferBindingSize %d B of %s: %w", label, sz, d.lim.MaxStorageBufferBindingSize, d.info.Name, ErrLimit)
	}
	buf, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{
		Label: label,
		Size:  sz,
		Usage: wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst,
	})
	if err != nil {
		return nil, errorf(op, "%q (%d B): %w", label, sz, err)
	}
	return &Buffer{d: d, buf: buf, size: sz, label: label, id: nextID.Add(1)}, nil
}

// NewUniform creates a uniform buffer holding data, zero-padded to a
// multiple of 16 bytes (WGSL uniform layout). Bind it where the pipeline
// declared Uniform; update it with UploadBytes.
func (d *Device) NewUniform(data []byte, label string) (*Buffer, error) {
	const op = "new uniform"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return nil, err
	}
	sz := max(roundUp(uint64(len(data)), 16), 16)
	if sz > d.lim.MaxUniformBufferBindingSize || sz > d.lim.MaxBufferSize {
		return nil, errorf(op, "%q: size %d B > MaxUniformBufferBindingSize %d B of %s: %w", label, sz, d.lim.MaxUniformBufferBindingSize, d.info.Name, ErrLimit)
	}
	buf, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{
		Label: label,
		Size:  sz,
		Usage: wgpu.BufferUsageUniform | wgpu.BufferUsageCopyDst,
	})
	if err != nil {
		return nil, errorf(op, "%q (%d B): %w", label, sz, err)
	}
	b := &Buffer{d: d, buf: buf, size: sz, label: label, uniform: true, id: nextID.Add(1)}
	if err := d.writeLocked(op, b, data); err != nil {
		b.released = true
		buf.Release()
		return nil, err
	}
	return b, nil
}

func f32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

// Upload copies data to the start of b. It uses queue.WriteBuffer, which
// copies data into wgpu's staging memory immediately (data may be reused as
// soon as Upload returns) and is flushed by the next Run or Read.
func (d *Device) Upload(b *Buffer, data []float32) error {
	return d.UploadBytes(b, f32Bytes(data))
}

// UploadBytes copies data to the start of b; see Upload. A length that is
// not a multiple of 4 is zero-padded to the next multiple of 4.
func (d *Device) UploadBytes(b *Buffer, data []byte) error {
	const op = "upload"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return err
	}
	return d.writeLocked(op, b, data)
}

func (d *Device) checkBuffer(op string, b *Buffer) error {
	if b == nil {
		return errorf(op, "nil buffer")
	}
	if b.d != d {
		return errorf(op, "%v belongs to another device", b)
	}
	if b.released {
		return errorf(op, "%v: %w", b, ErrClosed)
	}
	return nil
}

func (d *Device) writeLocked(op string, b *Buffer, data []byte) error {
	if err := d.checkBuffer(op, b); err != nil {
		return err
	}
	if uint64(len(data)) > b.size {
		return errorf(op, "%d B does not fit in %v", len(data), b)
	}
	if len(data) == 0 {
		return nil
	}
	if d.upPath == UploadStaging && !b.uniform && len(data) > smallUpload {
		return d.stagedWriteLocked(op, b, data)
	}
	n := len(data) &^ 3
	chunk := len(data)
	if d.upChunk > 0 {
		chunk = int(d.upChunk)
	}
	for off := 0; off < n; off += chunk {
		end := min(off+chunk, n)
		if err := d.queue.WriteBuffer(b.buf, uint64(off), data[off:end]); err != nil {
			return errorf(op, "%v at offset %d: %w", b, off, err)
		}
	}
	if r := len(data) - n; r > 0 {
		d.tail = [4]byte{}
		copy(d.tail[:], data[n:])
		if err := d.queue.WriteBuffer(b.buf, uint64(n), d.tail[:]); err != nil {
			return errorf(op, "%v: %w", b, err)
		}
	}
	return nil
}

// Read copies the first 4*len(out) bytes of b into out. It copies through a
// reusable MapRead staging buffer and waits for the GPU.
func (d *Device) Read(b *Buffer, out []float32) error {
	return d.ReadBytes(b, f32Bytes(out))
}

// ReadBytes copies the first len(out) bytes of b into out; see Read.
func (d *Device) ReadBytes(b *Buffer, out []byte) error {
	const op = "read"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return err
	}
	if err := d.checkBuffer(op, b); err != nil {
		return err
	}
	if b.uniform {
		return errorf(op, "%v is a uniform buffer and cannot be read back", b)
	}
	if uint64(len(out)) > b.size {
		return errorf(op, "want %d B from %v", len(out), b)
	}
	if len(out) == 0 {
		return nil
	}
	n := roundUp(uint64(len(out)), 4)
	if n > d.readSize {
		if d.readStaging != nil {
			d.readStaging.Release()
			d.readStaging, d.readSize = nil, 0
		}
		buf, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{
			Label: "gpucc read staging",
			Size:  n,
			Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst,
		})
		if err != nil {
			return errorf(op, "staging buffer of %d B: %w", n, err)
		}
		d.readStaging, d.readSize = buf, n
	}
	enc, err := d.dev.CreateCommandEncoder(nil)
	if err != nil {
		return errorf(op, "%w", err)
	}
	defer enc.Release()
	if err := enc.CopyBufferToBuffer(b.buf, 0, d.readStaging, 0, n); err != nil {
		return errorf(op, "%v: %w", b, err)
	}
	if err := d.submit(op, enc); err != nil {
		return err
	}
	return d.mapRead(op, d.readStaging, n, func(m []byte) { copy(out, m) })
}

// submit finishes enc, submits it and waits until the queue is idle.
func (d *Device) submit(op string, enc *wgpu.CommandEncoder) error {
	cmd, err := enc.Finish(nil)
	if err != nil {
		return errorf(op, "%w", err)
	}
	d.queue.Submit(cmd)
	cmd.Release()
	d.wait()
	return nil
}

// spinPolls is how many non-blocking polls wait tries before it blocks.
const spinPolls = 2000

// wait returns when the queue is idle. On a hardware adapter it polls
// without blocking first: a short kernel finishes within microseconds, and
// a blocking wait costs a trip through the driver's fence sleep that is
// much longer. A software adapter computes on the CPU cores a spin would
// take from it, so there it blocks at once.
func (d *Device) wait() {
	if !d.info.Software {
		for range spinPolls {
			if d.dev.Poll(false, nil) {
				return
			}
		}
	}
	d.dev.Poll(true, nil)
}

// mapRead maps the first n bytes of buf for reading, calls f with them and
// unmaps.
func (d *Device) mapRead(op string, buf *wgpu.Buffer, n uint64, f func([]byte)) error {
	status := wgpu.BufferMapAsyncStatus(0xffffffff)
	done := false
	if err := buf.MapAsync(wgpu.MapModeRead, 0, n, func(s wgpu.BufferMapAsyncStatus) { status, done = s, true }); err != nil {
		return errorf(op, "%w", err)
	}
	for !done { // the callback runs inside a poll once the copy is done
		d.wait()
	}
	if status != wgpu.BufferMapAsyncStatusSuccess {
		// Leave the buffer unmapped in any case.
		_ = buf.Unmap()
		return errorf(op, "map staging buffer: status %v", status)
	}
	f(buf.GetMappedRange(0, uint(n)))
	if err := buf.Unmap(); err != nil {
		return errorf(op, "%w", err)
	}
	return nil
}

// BindingKind is the kind of a buffer binding of a compute pipeline.
type BindingKind int

const (
	// ReadOnlyStorage is `var<storage, read>`.
	ReadOnlyStorage BindingKind = iota
	// Storage is `var<storage, read_write>`.
	Storage
	// Uniform is `var<uniform>`; bind a buffer from NewUniform.
	Uniform
)

func (k BindingKind) String() string {
	switch k {
	case ReadOnlyStorage:
		return "read-only-storage"
	case Storage:
		return "storage"
	case Uniform:
		return "uniform"
	}
	return fmt.Sprintf("BindingKind(%d)", int(k))
}

func (k BindingKind) wgpu() wgpu.BufferBindingType {
	switch k {
	case Storage:
		return wgpu.BufferBindingTypeStorage
	case Uniform:
		return wgpu.BufferBindingTypeUniform
	}
	return wgpu.BufferBindingTypeReadOnlyStorage
}

// Pipeline is a compiled compute pipeline with an explicit bind group
// layout for group 0.
type Pipeline struct {
	d        *Device
	module   *wgpu.ShaderModule
	bgl      *wgpu.BindGroupLayout
	layout   *wgpu.PipelineLayout
	pipe     *wgpu.ComputePipeline
	kinds    []BindingKind
	entry    string
	id       uint64
	released bool
}

// Bindings returns the binding kinds the pipeline was compiled with.
func (p *Pipeline) Bindings() []BindingKind { return append([]BindingKind(nil), p.kinds...) }

// Release frees the pipeline. Releasing twice is a no-op.
func (p *Pipeline) Release() {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.released {
		return
	}
	p.released = true
	d.evict(p.id)
	p.pipe.Release()
	p.layout.Release()
	p.bgl.Release()
	p.module.Release()
}

// Compile compiles WGSL source and creates a compute pipeline for entry
// whose group 0 layout is explicit: binding i has kind bindings[i]. WGSL
// parse/validation errors and layout mismatches come back as an *Error
// containing wgpu's message.
func (d *Device) Compile(wgsl, entry string, bindings []BindingKind) (*Pipeline, error) {
	const op = "compile"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return nil, err
	}
	if strings.TrimSpace(wgsl) == "" {
		return nil, errorf(op, "empty WGSL source")
	}
	if strings.IndexByte(wgsl, 0) >= 0 {
		return nil, errorf(op, "WGSL source contains a NUL byte")
	}
	if entry == "" {
		return nil, errorf(op, "empty entry point name")
	}
	var nStorage, nUniform uint32
	for i, k := range bindings {
		switch k {
		case ReadOnlyStorage, Storage:
			nStorage++
		case Uniform:
			nUniform++
		default:
			return nil, errorf(op, "binding %d: invalid kind %v", i, k)
		}
	}
	if uint32(len(bindings)) > d.lim.MaxBindingsPerBindGroup {
		return nil, errorf(op, "%d bindings > MaxBindingsPerBindGroup %d: %w", len(bindings), d.lim.MaxBindingsPerBindGroup, ErrLimit)
	}
	if nStorage > d.lim.MaxStorageBuffersPerShaderStage {
		return nil, errorf(op, "%d storage bindings > MaxStorageBuffersPerShaderStage %d of %s: %w", nStorage, d.lim.MaxStorageBuffersPerShaderStage, d.info.Name, ErrLimit)
	}
	if nUniform > d.lim.MaxUniformBuffersPerShaderStage {
		return nil, errorf(op, "%d uniform bindings > MaxUniformBuffersPerShaderStage %d: %w", nUniform, d.lim.MaxUniformBuffersPerShaderStage, ErrLimit)
	}

	p := &Pipeline{d: d, kinds: append([]BindingKind(nil), bindings...), entry: entry, id: nextID.Add(1)}
	var err error
	defer func() {
		if err == nil {
			return
		}
		if p.pipe != nil {
			p.pipe.Release()
		}
		if p.layout != nil {
			p.layout.Release()
		}
		if p.bgl != nil {
			p.bgl.Release()
		}
		if p.module != nil {
			p.module.Release()
		}
	}()
	p.module, err = d.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:          entry,
		WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: wgsl},
	})
	if err != nil {
		p.module = nil
		return nil, errorf(op, "WGSL for %q: %w", entry, err)
	}
	entries := make([]wgpu.BindGroupLayoutEntry, len(bindings))
	for i, k := range bindings {
		entries[i] = wgpu.BindGroupLayoutEntry{
			Binding:    uint32(i),
			Visibility: wgpu.ShaderStageCompute,
			Buffer:     wgpu.BufferBindingLayout{Type: k.wgpu()},
		}
	}
	p.bgl, err = d.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: entry, Entries: entries})
	if err != nil {
		p.bgl = nil
		return nil, errorf(op, "bind group layout for %q: %w", entry, err)
	}
	p.layout, err = d.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: entry, BindGroupLayouts: []*wgpu.BindGroupLayout{p.bgl}})
	if err != nil {
		p.layout = nil
		return nil, errorf(op, "pipeline layout for %q: %w", entry, err)
	}
	p.pipe, err = d.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{
		Label:   entry,
		Layout:  p.layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: p.module, EntryPoint: entry},
	})
	if err != nil {
		p.pipe = nil
		return nil, errorf(op, "compute pipeline %q (bindings %v): %w", entry, bindings, err)
	}
	return p, nil
}

// Dispatch is one compute dispatch: Buffers[i] is bound to binding i of
// group 0 (uniform bindings take buffers from NewUniform) and Groups is the
// workgroup count in x, y, z.
type Dispatch struct {
	Pipeline *Pipeline
	Buffers  []*Buffer
	Groups   [3]uint32
}

// evict drops cached bind groups that reference id; d.mu must be held.
func (d *Device) evict(id uint64) {
	for k, e := range d.bindGroups {
		for _, x := range e.ids {
			if x == id {
				e.bg.Release()
				delete(d.bindGroups, k)
				break
			}
		}
	}
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
	key := make([]byte, 0, 8*(1+len(ds.Buffers)))
	key = binary.LittleEndian.AppendUint64(key, ds.Pipeline.id)
	for _, b := range ds.Buffers {
		key = binary.LittleEndian.AppendUint64(key, b.id)
	}
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
	bg, err := d.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: ds.Pipeline.bgl, Entries: entries})
	if err != nil {
		return nil, err
	}
	if len(d.bindGroups) >= maxBindGroupCache {
		for k, e := range d.bindGroups {
			e.bg.Release()
			delete(d.bindGroups, k)
		}
	}
	d.bindGroups[string(key)] = &bindGroupEntry{bg: bg, ids: ids}
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

// RunTimed is Run with GPU timestamps written by the command encoder before
// and after the compute pass. It returns the elapsed GPU time with ok=true
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

func (d *Device) runLocked(op string, ds []Dispatch, timed bool) (uint64, bool, error) {
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
	timed = timed && d.tsOK
	bgs := make([]*wgpu.BindGroup, len(ds))
	for i := range ds {
		bg, err := d.bindGroup(&ds[i])
		if err != nil {
			return 0, false, errorf(op, "dispatch %d (%s): %w", i, ds[i].Pipeline.entry, err)
		}
		bgs[i] = bg
	}
	enc, err := d.dev.CreateCommandEncoder(nil)
	if err != nil {
		return 0, false, errorf(op, "%w", err)
	}
	defer enc.Release()
	if timed {
		if err := enc.WriteTimestamp(d.tsQuery, 0); err != nil {
			return 0, false, errorf(op, "%w", err)
		}
	}
	if len(ds) > 0 {
		pass := enc.BeginComputePass(nil)
		for i := range ds {
			pass.SetPipeline(ds[i].Pipeline.pipe)
			pass.SetBindGroup(0, bgs[i], nil)
			g := ds[i].Groups
			pass.DispatchWorkgroups(g[0], g[1], g[2])
		}
		err := pass.End()
		// The pass must be released before the encoder is finished.
		pass.Release()
		if err != nil {
			return 0, false, errorf(op, "%w", err)
		}
	}
	if timed {
		if err := enc.WriteTimestamp(d.tsQuery, 1); err != nil {
			return 0, false, errorf(op, "%w", err)
		}
		if err := enc.ResolveQuerySet(d.tsQuery, 0, 2, d.tsResolve, 0); err != nil {
			return 0, false, errorf(op, "%w", err)
		}
		if err := enc.CopyBufferToBuffer(d.tsResolve, 0, d.tsRead, 0, 16); err != nil {
			return 0, false, errorf(op, "%w", err)
		}
	}
	if err := d.submit(op, enc); err != nil {
		return 0, false, err
	}
	if !timed {
		return 0, false, nil
	}
	var t0, t1 uint64
	if err := d.mapRead(op, d.tsRead, 16, func(m []byte) {
		t0 = binary.LittleEndian.Uint64(m[0:])
		t1 = binary.LittleEndian.Uint64(m[8:])
	}); err != nil {
		return 0, false, err
	}
	if t1 < t0 {
		return 0, false, nil
	}
	return t1 - t0, true, nil
}

func (d *Device) initTimestamps() error {
	qs, err := d.dev.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: "gpucc timestamps", Type: wgpu.QueryTypeTimestamp, Count: 2})
	if err != nil {
		return err
	}
	res, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "gpucc timestamp resolve", Size: 16,
		Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc})
	if err != nil {
		qs.Release()
		return err
	}
	rd, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "gpucc timestamp read", Size: 16,
		Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	if err != nil {
		qs.Release()
		res.Release()
		return err
	}
	d.tsQuery, d.tsResolve, d.tsRead = qs, res, rd
	return nil
}

// Uniform reports whether b is a uniform buffer (from NewUniform).
func (b *Buffer) Uniform() bool { return b.uniform }
