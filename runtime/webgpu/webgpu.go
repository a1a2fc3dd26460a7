//go:build cgo && !js

// Package webgpu is the webgpu backend on wgpu-native (package
// runtime/gpu): WGSL kernels, device buffers that stay on the GPU between
// runs. Importing it registers "webgpu".
//
// Three caches make a repeated compile and run cheap: generated WGSL comes
// from the runtime's codegen cache (memory, then disk); compiled pipelines
// are shared per device by WGSL hash and entry point, so a second compile
// of the same graph compiles nothing; and a run's buffers go back to a pool
// afterwards, so a later run of a same-sized program allocates nothing (and
// reuses its bind groups, which the device caches by buffer).
//
// Matmul tiles come from the tuned table (runtime/gpu/tune: the cache
// directory's tune/matmul.json over the tables built in) for the adapter,
// where it has an entry for the shape class; the tiling pass's rule
// otherwise. With Program.Fast, matmul and conv kernels are generated
// with wgsl.Target{Fast: true}.
package webgpu

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/gpu"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

func init() { backend.Register("webgpu", open) }

// maxIdlePipelines bounds the pipelines kept that no live executable
// uses. A variable so that tests can make it small.
var maxIdlePipelines = 256

type device struct {
	dev       *gpu.Device
	info      backend.Info
	cache     backend.Options
	pipelines map[[32]byte]*pipeline
	pool      *bufferPool
	tiles     *tune.Table
	adapter   gpu.AdapterInfo
	fma       fmaProbe // the FMA probe's findings (fmaprobe.go)
	fmaErr    error    // why the probe did not run (then no fused kernels, no refusal)
	storage   int      // the device's workgroup storage in bytes (wgsl.Target.Storage)
}

// pipeline is a compiled kernel shared by the executables that use it.
type pipeline struct {
	p    *gpu.Pipeline
	refs int
}

// buffer is a device tensor's storage buffer.
type buffer struct {
	d   *device
	buf *gpu.Buffer
	n   int
}

func (b *buffer) Len() int { return b.n }

// Release returns the buffer to the pool, for a later run or tensor.
func (b *buffer) Release() {
	if b.buf != nil {
		b.d.pool.put(b.buf)
		b.buf = nil
	}
}

func open(opts backend.Options) (backend.Device, error) {
	path, err := gpu.ParseUploadPath(opts.Upload)
	if opts.Upload == "" {
		// Measured on the H200 (bench/RESULTS.md): 18.8 GB/s through the
		// staging ring in 16 MiB chunks, 1.4 GB/s through WriteBuffer.
		path, err = gpu.UploadStaging, nil
	}
	if err != nil {
		return nil, err
	}
	// GPUCC_WEBGPU_BACKEND pins wgpu's backend (gpu.Options.Backend): an
	// adapter of that one, or none.
	be := os.Getenv("GPUCC_WEBGPU_BACKEND")
	dev, err := gpu.Open(gpu.Options{AllowSoftware: opts.AllowSoftware, Upload: path, UploadChunk: opts.UploadChunk, Backend: be})
	if err != nil {
		if be != "" {
			return nil, fmt.Errorf("GPUCC_WEBGPU_BACKEND=%s: %w", be, err)
		}
		return nil, err
	}
	info := dev.Info()
	limit := opts.PoolBytes
	if limit == 0 {
		limit = backend.DefaultPoolBytes
	}
	l := info.Limits
	probe, probeErr := probeFMA(dev, opts.Cache)
	if gpu.Verbose || os.Getenv("GPUCC_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "gpucc: webgpu: FMA probe on %s: %v, fused division %v (error %v)\n", info, probe, takesFused(probe, probeErr, info.Backend), probeErr)
		fmt.Fprintf(os.Stderr, "gpucc: webgpu: workgroup storage %d bytes (adapter's limit granted; WebGPU's default 16384)\n", l.MaxComputeWorkgroupStorageSize)
	}
	tiles, err := tune.LoadCache(opts.Cache)
	if err != nil { // an unreadable table costs speed, never a run
		if gpu.Verbose {
			fmt.Fprintf(os.Stderr, "gpucc: webgpu: tuned tiles not used: %v\n", err)
		}
		tiles, _ = tune.Load("")
	}
	// The passes plan matmul and conv tiles for WebGPU's default storage
	// (tune.PlanStorage); the WGSL target's Storage is the device's (a
	// wide online attention tile fills it).
	passStorage := tune.PlanStorage(l)
	return &device{
		dev:       dev,
		storage:   int(l.MaxComputeWorkgroupStorageSize),
		tiles:     tiles,
		adapter:   info,
		fma:       probe,
		fmaErr:    probeErr,
		cache:     opts,
		pipelines: map[[32]byte]*pipeline{},
		pool:      newPool(dev, limit, opts.PoolBytes == 0),
		info: backend.Info{Name: "webgpu",
			Adapter: backend.Adapter{Name: info.Name, Driver: info.Driver, Backend: info.Backend, Type: info.Type, Software: info.Software},
			Profile: passes.Profile{Name: "webgpu", MaxStorageBuffers: int(l.MaxStorageBuffersPerShaderStage),
				MaxInvocations:            int(l.MaxComputeInvocationsPerWorkgroup),
				MaxWorkgroupSize:          [3]int{int(l.MaxComputeWorkgroupSizeX), int(l.MaxComputeWorkgroupSizeY), int(l.MaxComputeWorkgroupSizeZ)},
				MaxWorkgroupStorage:       passStorage,
				MaxWorkgroupsPerDimension: int(l.MaxComputeWorkgroupsPerDimension),
				MaxBindingSize:            int64(l.MaxStorageBufferBindingSize),
				MaxBufferSize:             int64(l.MaxBufferSize)},
			ChecksHost: true, ChecksOutputs: true, TypedIslands: true, TypedBuffers: true},
	}, nil
}

func (d *device) Info() backend.Info { return d.info }

// TileFor is the tuned table's chooser for this adapter (backend.Tuner).
func (d *device) TileFor(fast bool) passes.TileChooser { return d.tiles.TileFor(d.adapter, fast) }

func (d *device) Close() {
	d.pool.drain()
	for k, p := range d.pipelines {
		p.p.Release()
		delete(d.pipelines, k)
	}
	d.dev.Close()
}

func (d *device) Alloc(ctx context.Context, n int) (backend.Buffer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf, _, err := d.pool.get(4*uint64(max(n, 1)), "tensor")
	if err != nil {
		return nil, err
	}
	return &buffer{d: d, buf: buf, n: n}, nil
}

func (d *device) Upload(ctx context.Context, b backend.Buffer, data []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	buf, err := d.buffer(b, len(data))
	if err != nil {
		return err
	}
	if err := d.dev.Upload(buf.buf, data); err != nil {
		return err
	}
	return d.settle(len(data))
}

// waitAbove is the size past which an upload waits for its copies: a
// large one's wait is a sliver of it and keeps its time its own; a small
// one is left queued, since the device orders every later use of the
// buffer after it, and its wait (a round trip, ~30 µs on the H200) would
// be most of what it costs.
const waitAbove = 16 << 20

// settle waits for an upload of n values when it is a large one.
func (d *device) settle(n int) error {
	if 4*int64(n) <= waitAbove {
		return nil
	}
	return d.dev.Flush()
}

// UploadChecked is Upload with the finiteness check on the copy into
// staging (backend.CheckedUploader): a DeviceTensor's data is read once,
// not scanned first and copied after.
func (d *device) UploadChecked(ctx context.Context, b backend.Buffer, data []float32) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	buf, err := d.buffer(b, len(data))
	if err != nil {
		return -1, err
	}
	k, err := d.dev.UploadChecked(buf.buf, data)
	if err != nil || k >= 0 {
		return k, err
	}
	return -1, d.settle(len(data))
}

func (d *device) Read(ctx context.Context, b backend.Buffer, out []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	buf, err := d.buffer(b, len(out))
	if err != nil {
		return err
	}
	return d.dev.Read(buf.buf, out)
}

// ReadChecked is Read with the finiteness check on the copy out of
// staging (backend.CheckedReader).
func (d *device) ReadChecked(ctx context.Context, b backend.Buffer, out []float32) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	buf, err := d.buffer(b, len(out))
	if err != nil {
		return -1, err
	}
	return d.dev.ReadChecked(buf.buf, out)
}

func (d *device) buffer(b backend.Buffer, n int) (*buffer, error) {
	buf, ok := b.(*buffer)
	if !ok || buf.d != d || buf.buf == nil {
		return nil, fmt.Errorf("buffer %T is not a live buffer of this device", b)
	}
	if buf.n != n {
		return nil, fmt.Errorf("buffer of %d values, transfer of %d", buf.n, n)
	}
	return buf, nil
}

// acquire returns the compiled pipeline of each shader, taking a
// reference to each, and whether every one was cached. The shaders not
// cached are compiled together (gpu.Device.CompileAll creates them
// concurrently), each distinct source once.
func (d *device) acquire(shaders []codegen.Shader) ([]*pipeline, bool, error) {
	keys := make([][32]byte, len(shaders))
	var miss []gpu.Shader
	var missKeys [][32]byte
	seen := map[[32]byte]bool{}
	for i, s := range shaders {
		keys[i] = pipelineKey(s)
		if _, ok := d.pipelines[keys[i]]; ok || seen[keys[i]] {
			continue
		}
		seen[keys[i]] = true
		kinds := make([]gpu.BindingKind, len(s.Bindings))
		for j, k := range s.Bindings {
			kinds[j] = gpu.BindingKind(k)
		}
		miss = append(miss, gpu.Shader{WGSL: s.Source, Entry: s.Entry, Bindings: kinds, Label: s.Name})
		missKeys = append(missKeys, keys[i])
	}
	if len(miss) > 0 {
		if gpu.Verbose || os.Getenv("GPUCC_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "gpucc: webgpu: %d kernels, %d distinct, %d to compile\n", len(shaders), len(seen)+cached(d.pipelines, keys), len(miss))
		}
		gps, err := d.dev.CompileAll(miss)
		if err != nil {
			return nil, false, err
		}
		for i, gp := range gps {
			d.pipelines[missKeys[i]] = &pipeline{p: gp}
		}
	}
	ps := make([]*pipeline, len(shaders))
	for i, k := range keys {
		ps[i] = d.pipelines[k]
		ps[i].refs++
	}
	return ps, len(miss) == 0, nil
}

// pipelineKey is what identifies s's pipeline: its entry point, its
// bindings and its source without the leading comment (and blank) lines, which name the kernel and
// its nodes. Kernels that differ only there compile to the same pipeline
// (their constants are in their parameter blocks, not their source): a
// network's repeated blocks of one shape share one, and are compiled
// once (the first compile of a model is bound by pipeline creation: 2.9 s
// for EfficientNet-B0 on the H200).
func pipelineKey(s codegen.Shader) [32]byte {
	src := s.Source
	for strings.HasPrefix(src, "//") || strings.HasPrefix(src, "\n") {
		i := strings.IndexByte(src, '\n')
		if i < 0 {
			src = ""
			break
		}
		src = src[i+1:]
	}
	h := sha256.New()
	h.Write([]byte(s.Entry))
	for _, k := range s.Bindings { // the layout, which the source implies; named all the same
		h.Write([]byte{0, byte(k) + 1})
	}
	h.Write([]byte{0})
	h.Write([]byte(src))
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// cached counts the distinct keys that the device has compiled already.
func cached(ps map[[32]byte]*pipeline, keys [][32]byte) int {
	seen := map[[32]byte]bool{}
	for _, k := range keys {
		if _, ok := ps[k]; ok {
			seen[k] = true
		}
	}
	return len(seen)
}

// unref drops a reference to each of ps and releases idle pipelines past
// the bound.
func (d *device) unref(ps []*pipeline) {
	for _, p := range ps {
		p.refs--
	}
	backend.EvictIdle(d.pipelines, maxIdlePipelines, func(p *pipeline) int { return p.refs },
		func(p *pipeline) { p.p.Release() })
}

func (d *device) Compile(ctx context.Context, bp *backend.Program, st *backend.Stats) (backend.Executable, error) {
	sp := bp.IR
	p := sp.Program()
	fail := func(err error) error {
		return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
	}
	if d.fmaErr == nil && !d.fma.KeepSafe {
		return nil, &backend.Error{Code: ir.CodeUnsupported, Backend: "webgpu", Err: fmt.Errorf(
			"adapter %s contracts a product into the following add even through Keep (FMA probe: %v): its kernels would not give the reference's bits", d.adapter, d.fma)}
	}
	stop := st.Start(backend.StageCodegen)
	var shaders []codegen.Shader
	var err error
	if bp.Prebuilt != nil {
		if shaders, err = prebuiltShaders(bp.Prebuilt, p); err != nil {
			stop()
			return nil, err
		}
	} else {
		fused := d.fused()
		t := wgsl.Target{Fast: bp.Fast && contracts(p), Fused: fused, FastPaths: d.fastPaths(p, fused), // fast mode changes matmuls and convs only
			Storage: d.storage} // the device's granted limit (runtime/gpu asks for the adapter's)
		st.Fast = t.Fast
		shaders, err = backend.Shaders(d.cache.Cache, t.Name(), sp, st, t.Emit, wgsl.Params)
	}
	stop()
	if err != nil {
		// An error that says what it is keeps its code: a malformed
		// GPUCC_ATTN_TILE or GPUCC_FAST_PATHS is the caller's usage,
		// a kernel the target cannot write is unsupported.
		if ie := (*ir.Error)(nil); errors.As(err, &ie) {
			return nil, &backend.Error{Code: ie.Code, Backend: "webgpu", Err: err}
		}
		return nil, fail(err)
	}
	defer st.Start(backend.StageCompile)()
	e := &executable{d: d, p: p, shaders: shaders}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pipes, allHit, err := d.acquire(shaders)
	if err != nil {
		return nil, fail(err)
	}
	e.pipes = pipes
	st.Hit(backend.CachePipeline, allHit)
	e.fresh = !allHit
	for i, k := range p.Kernels {
		params, err := d.dev.NewUniform(shaders[i].Params, k.Name+" params")
		if err != nil {
			e.Release()
			return nil, fail(err)
		}
		e.params = append(e.params, params)
	}
	return e, nil
}

// contracts reports whether p has a kernel that fast mode changes (its
// kind's ir.KernelInfo.Contracts: a matmul or a convolution).
func contracts(p *ir.Program) bool {
	return slices.ContainsFunc(p.Kernels, func(k ir.Kernel) bool { return k.Kind.Info().Contracts != nil })
}

// executable is a compiled program: its pipelines and its parameter
// blocks, which hold the program's constants and never change.
type executable struct {
	d       *device
	p       *ir.Program
	shaders []codegen.Shader
	pipes   []*pipeline
	params  []*gpu.Buffer
	fresh   bool // no run has dispatched a pipeline compiled for it yet
	// lastBufs and lastDs are the last run's buffers and dispatches.
	lastBufs []*gpu.Buffer
	lastDs   []gpu.Dispatch
	// runBufs, runHeld, runReads and runOuts are Run's buffers, those
	// it holds, its host reads and their outputs, reused by the next Run
	// (runs of an executable are serialised by the runtime's lock, and
	// Run keeps none of them once it returns; Launch's pending run
	// does, and makes its own): a warm resident run allocates only the
	// handle of each kept output (TestRunAllocs).
	runBufs, runHeld []*gpu.Buffer
	runReads         []gpu.ReadBack
	runOuts          []int
}

// addSince adds the time since t to stage s of st (nil: nothing), as
// Stats.Start's function does, without the function: Go allocates each
// one, twice a run.
func addSince(st *backend.Stats, s backend.Stage, t time.Time) {
	if st != nil {
		st.Durations[s] += time.Since(t)
	}
}

func (e *executable) Release() {
	for _, b := range e.params {
		b.Release()
	}
	e.d.unref(e.pipes)
	e.params, e.pipes = nil, nil
	e.lastBufs, e.lastDs = nil, nil
}

func (e *executable) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
}

// releaseDests releases the kept buffers a failed run handed out.
func releaseDests(call *backend.Call) {
	for i := range call.Dests {
		if b := call.Dests[i].Buf; b != nil {
			b.Release()
			call.Dests[i].Buf = nil
		}
	}
}

// setup gives each program buffer its device buffer, a resident input's
// own or one from the pool (held lists those), and uploads the host
// inputs; bufs and held are appended to scratch and held (nil: new
// slices). On error the caller puts held back.
func (e *executable) setup(ctx context.Context, call *backend.Call, scratch, held []*gpu.Buffer) (bufs, _ []*gpu.Buffer, pooled bool, err error) {
	d, p, st := e.d, e.p, call.Stats
	pooled = true
	defer addSince(st, backend.StageUpload, time.Now())
	bufs = append(scratch[:0], make([]*gpu.Buffer, len(p.Buffers))...)
	held = slices.Grow(held[:0], len(p.Buffers)) // one allocation at most, however many buffers
	for i, pb := range p.Buffers {
		if err := ctx.Err(); err != nil {
			return nil, held, false, err
		}
		if a := call.Args[i]; pb.Input && a.Buf != nil {
			buf, err := d.buffer(a.Buf, pb.Len)
			if err != nil {
				return nil, held, false, e.fail(ctx, fmt.Errorf("buf%d: %w", i, err))
			}
			bufs[i] = buf.buf
			continue
		}
		buf, hit, err := d.pool.take(uint64(pb.Len)*4, func() string { return fmt.Sprintf("buf%d", i) })
		if err != nil {
			return nil, held, false, e.fail(ctx, err)
		}
		held = append(held, buf)
		pooled = pooled && hit
		bufs[i] = buf
		if pb.Input {
			host := call.Args[i].Host
			k, err := -1, error(nil)
			if call.NonFinite {
				err = d.dev.Upload(buf, host)
			} else {
				k, err = d.dev.UploadChecked(buf, host) // the finiteness check rides on the copy to staging
			}
			if err != nil {
				return nil, held, false, e.fail(ctx, err)
			}
			if k >= 0 {
				return nil, held, false, &backend.NonFiniteError{Buffer: i, Index: k, Value: host[k]}
			}
			st.UploadBytes += int64(pb.Len) * 4
		}
	}
	return bufs, held, pooled, nil
}

// dispatches are the run's kernels over bufs, in order: the last run's,
// when it had the same buffers (the pool gives a steady loop the same
// ones), else made afresh.
func (e *executable) dispatches(bufs []*gpu.Buffer) []gpu.Dispatch {
	if e.lastDs != nil && slices.Equal(bufs, e.lastBufs) {
		return e.lastDs
	}
	ds := make([]gpu.Dispatch, len(e.p.Kernels))
	for i, k := range e.p.Kernels {
		g := e.shaders[i].Groups
		dsp := gpu.Dispatch{Pipeline: e.pipes[i].p, Groups: [3]uint32{uint32(g[0]), uint32(g[1]), uint32(g[2])},
			Buffers: make([]*gpu.Buffer, 0, len(k.Inputs)+len(k.Outputs)+1)}
		for _, in := range k.Inputs {
			dsp.Buffers = append(dsp.Buffers, bufs[in.Buffer])
		}
		for _, o := range k.Outputs {
			dsp.Buffers = append(dsp.Buffers, bufs[o])
		}
		ds[i] = dsp
		ds[i].Buffers = append(ds[i].Buffers, e.params[i])
	}
	e.lastBufs, e.lastDs = slices.Clone(bufs), ds
	return ds
}

// keep hands each kept output's buffer to the caller and returns held
// without them.
func (e *executable) keep(call *backend.Call, bufs, held []*gpu.Buffer) []*gpu.Buffer {
	for i, o := range e.p.Outputs {
		if o.Buffer < 0 || !call.Dests[i].Keep {
			continue
		}
		buf := bufs[o.Buffer]
		if k := slices.Index(held, buf); k >= 0 {
			held = slices.Delete(held, k, k+1)
		}
		call.Dests[i].Buf = &buffer{d: e.d, buf: buf, n: e.p.Buffers[o.Buffer].Len}
	}
	return held
}

// readHost reads every host output but those read already (read[i]);
// the readback stage.
func (e *executable) readHost(ctx context.Context, call *backend.Call, bufs []*gpu.Buffer, read []bool) error {
	defer addSince(call.Stats, backend.StageReadback, time.Now())
	for i, o := range e.p.Outputs {
		dst := &call.Dests[i]
		if o.Buffer < 0 || dst.Keep || read != nil && read[i] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := -1, error(nil)
		if call.NonFinite {
			err = e.d.dev.Read(bufs[o.Buffer], dst.Host)
		} else {
			k, err = e.d.dev.ReadChecked(bufs[o.Buffer], dst.Host) // the finiteness check rides on the copy out of staging
		}
		if err != nil {
			return e.fail(ctx, err)
		}
		if k >= 0 {
			return &backend.NonFiniteOutputError{Output: i, Index: k, Value: dst.Host[k]}
		}
		call.Stats.ReadbackBytes += int64(len(dst.Host)) * 4
	}
	return nil
}

func (e *executable) Run(ctx context.Context, call *backend.Call) error {
	return e.run(ctx, call, nil)
}

// RunEachTimed is Run with each kernel in a submission of its own, timed
// by the device's timestamps where it has them (backend.KernelTimer). The
// host outputs are read after the last kernel, as Read does.
func (e *executable) RunEachTimed(ctx context.Context, call *backend.Call) ([]backend.KernelTime, error) {
	times := make([]backend.KernelTime, 0, len(e.p.Kernels))
	err := e.run(ctx, call, &times)
	return times, err
}

// run is Run, each kernel timed alone into times when times is not nil.
func (e *executable) run(ctx context.Context, call *backend.Call, times *[]backend.KernelTime) (err error) {
	d, p, st := e.d, e.p, call.Stats
	// The run's own buffers go back to the pool when it is over, except
	// those handed to the caller as kept outputs.
	var held []*gpu.Buffer
	defer func() {
		if err != nil {
			releaseDests(call)
		}
		d.pool.put(held...)
		e.runHeld = held[:0]
	}()
	bufs, held, pooled, err := e.setup(ctx, call, e.runBufs, e.runHeld)
	e.runBufs = bufs
	if err != nil {
		return err
	}
	// The uploads are queued before the kernels, and the host outputs are
	// copied out in the kernels' own submission: a run waits for the GPU
	// once. (Until 2026-12-04 a run with host inputs waited for the
	// uploads alone first, and each host output took a submission and a
	// wait of its own: three round trips of ~34 µs each on the H200 for
	// one input and one output.) The dispatch stage's wall time therefore
	// includes the uploads' copies on the GPU; its GPU time does not.
	st.Hit(backend.CacheBufferPool, pooled)
	if len(p.Kernels) == 0 {
		if st.UploadBytes > 0 {
			if err := d.dev.Flush(); err != nil {
				return e.fail(ctx, err)
			}
		}
		held = e.keep(call, bufs, held)
		return e.readHost(ctx, call, bufs, nil)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ds := e.dispatches(bufs)
	// Drivers finish compiling at the first dispatch, and the first
	// touch of fresh buffers maps their pages (0.6 against 0.26 ms for
	// relu(a*b+c) over 64M on the H200): such a run is flagged.
	st.FirstDispatch = e.fresh || !pooled
	if times != nil {
		if err := e.timeEach(ctx, ds, st, times); err != nil {
			return err
		}
		e.fresh = false
		held = e.keep(call, bufs, held)
		return e.readHost(ctx, call, bufs, nil)
	}
	reads, outs := e.hostReads(call, bufs, e.runReads[:0], e.runOuts[:0])
	e.runReads, e.runOuts = reads, outs
	t0 := time.Now()
	t, err := d.dev.RunReads(ds, reads)
	addSince(st, backend.StageDispatch, t0)
	st.Durations[backend.StageDispatch] -= t.Copy
	st.Durations[backend.StageReadback] += t.Copy
	if err != nil {
		return e.fail(ctx, err)
	}
	e.fresh = false
	if t.GPUTimed {
		st.GPUDispatch, st.GPUTimed = t.GPU, true
	}
	held = e.keep(call, bufs, held)
	for j, r := range reads {
		if r.Bad >= 0 {
			i := outs[j]
			return &backend.NonFiniteOutputError{Output: i, Index: r.Bad, Value: call.Dests[i].Host[r.Bad]}
		}
		st.ReadbackBytes += int64(len(r.Out)) * 4
	}
	return nil
}

// timeEach runs ds one dispatch at a time, each submitted and waited for
// alone, appending each one's time to times; the dispatch stage is their
// sum.
func (e *executable) timeEach(ctx context.Context, ds []gpu.Dispatch, st *backend.Stats, times *[]backend.KernelTime) error {
	st.GPUTimed = true
	for i := range ds {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		ns, timed, err := e.d.dev.RunTimed(ds[i : i+1])
		wall := time.Since(t0)
		st.Durations[backend.StageDispatch] += wall
		if err != nil {
			return e.fail(ctx, err)
		}
		kt := backend.KernelTime{Name: e.p.Kernels[i].Name, Kind: e.p.Kernels[i].Kind.String(), Time: wall}
		if timed {
			kt.Time, kt.GPU = time.Duration(ns), true
			st.GPUDispatch += kt.Time
		}
		st.GPUTimed = st.GPUTimed && timed
		*times = append(*times, kt)
	}
	return nil
}

// hostReads appends to reads the host outputs of a run, and to outs the
// index of the output each read is for.
func (e *executable) hostReads(call *backend.Call, bufs []*gpu.Buffer, reads []gpu.ReadBack, outs []int) ([]gpu.ReadBack, []int) {
	for i, o := range e.p.Outputs {
		dst := &call.Dests[i]
		if o.Buffer < 0 || dst.Keep {
			continue
		}
		reads = append(reads, gpu.ReadBack{Buf: bufs[o.Buffer], Out: dst.Host, Check: !call.NonFinite})
		outs = append(outs, i)
	}
	return reads, outs
}

// Launch is Run without the waits: the uploads and the kernels are queued
// and it returns. The buffers of host outputs stay held until Wait reads
// them; every other buffer the run took goes back to the pool at once,
// since the device orders a later run's use of it after this one's.
func (e *executable) Launch(ctx context.Context, call *backend.Call) (_ backend.Pending, err error) {
	d, p, st := e.d, e.p, call.Stats
	var held []*gpu.Buffer
	defer func() {
		if err != nil {
			releaseDests(call)
		}
		d.pool.put(held...)
	}()
	bufs, held, pooled, err := e.setup(ctx, call, nil, nil) // pending keeps bufs
	if err != nil {
		return nil, err
	}
	st.Hit(backend.CacheBufferPool, pooled)
	var staged *gpu.Staged
	var outs []int
	if len(p.Kernels) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ds := e.dispatches(bufs)
		st.FirstDispatch = e.fresh || !pooled
		var reads []gpu.ReadBack
		reads, outs = e.hostReads(call, bufs, nil, nil)
		stop := st.Start(backend.StageDispatch)
		// The host outputs are copied into staging in the run's own
		// submission (when they fit one chunk), so that Wait waits for
		// this run alone: a copy submitted at Wait queued behind every
		// later launch, and the wait for the oldest of a trainer's 16
		// steps in flight waited for all 16.
		staged, err = d.dev.SubmitReads(ds, reads)
		stop()
		if err != nil {
			return nil, e.fail(ctx, err)
		}
		e.fresh = false
	}
	held = e.keep(call, bufs, held)
	pd := &pending{e: e, call: call, bufs: bufs, read: make([]bool, len(p.Outputs)), staged: staged, outs: outs}
	if staged != nil {
		return pd, nil // the copies are queued: the run's buffers go back to the pool at once
	}
	var early bool
	for i, o := range p.Outputs {
		if o.Buffer < 0 || call.Dests[i].Keep {
			continue
		}
		buf := bufs[o.Buffer]
		if k := slices.Index(held, buf); k >= 0 {
			pd.reads = append(pd.reads, buf)
			held = slices.Delete(held, k, k+1)
		} else if !slices.Contains(pd.reads, buf) {
			early = true // the caller's own input tensor, which it may release before Wait
		}
	}
	if early {
		// Read now what the run does not hold; Wait reads the rest.
		for i, o := range p.Outputs {
			pd.read[i] = o.Buffer < 0 || call.Dests[i].Keep || slices.Contains(pd.reads, bufs[o.Buffer])
		}
		if err := e.readHost(ctx, call, bufs, pd.read); err != nil {
			d.pool.put(pd.reads...)
			return nil, err
		}
		for i := range pd.read {
			pd.read[i] = !pd.read[i]
		}
	}
	return pd, nil
}

// RunQueued is Run without the wait, for a call none of whose outputs
// goes to the host (every Dest kept): its kernels are queued and it
// returns, its kept outputs usable at once (the device orders every
// later use of a buffer after them: a Read, a run, an upload), its
// Stats without GPU time. A run that waits pays a round trip to the GPU
// (about 18 µs on the H200) and the timestamps' map; this one pays the
// recording and the submission alone. A call with a host output runs as
// Run does. Submissions left queued are bounded (gpu's maxQueued).
//
// It is Launch with nothing held for a Wait (no staging, no buffer) and
// no pending run made, on Run's reused lists: a warm queued run
// allocates only its kept outputs' handles, where through Launch (its
// pending run, its lists, its buffers') it made 5 more (TestRunAllocs).
func (e *executable) RunQueued(ctx context.Context, call *backend.Call) (err error) {
	for i, o := range e.p.Outputs {
		if o.Buffer >= 0 && !call.Dests[i].Keep {
			return e.Run(ctx, call)
		}
	}
	d, st := e.d, call.Stats
	var held []*gpu.Buffer
	defer func() {
		if err != nil {
			releaseDests(call)
		}
		d.pool.put(held...)
		e.runHeld = held[:0]
	}()
	bufs, held, pooled, err := e.setup(ctx, call, e.runBufs, e.runHeld)
	e.runBufs = bufs
	if err != nil {
		return err
	}
	st.Hit(backend.CacheBufferPool, pooled)
	if len(e.p.Kernels) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		ds := e.dispatches(bufs)
		st.FirstDispatch = e.fresh || !pooled
		t0 := time.Now()
		err := d.dev.Submit(ds)
		addSince(st, backend.StageDispatch, t0)
		if err != nil {
			return e.fail(ctx, err)
		}
		e.fresh = false
	}
	held = e.keep(call, bufs, held)
	return nil
}

// pending is a launched run: the buffers its host outputs are read from
// at Wait, and which outputs Launch read already.
type pending struct {
	e     *executable
	call  *backend.Call
	bufs  []*gpu.Buffer
	reads []*gpu.Buffer
	read  []bool
	// staged holds the host outputs copied in the run's submission (outs:
	// the output of each of its reads); nil when they are read at Wait.
	staged *gpu.Staged
	outs   []int
}

func (pd *pending) Wait(ctx context.Context) (err error) {
	e, call := pd.e, pd.call
	defer func() {
		e.d.pool.put(pd.reads...)
		pd.reads = nil
		if pd.staged != nil {
			pd.staged.Release()
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	if pd.staged != nil {
		stop := call.Stats.Start(backend.StageDispatch)
		copied, err := pd.staged.Wait()
		stop()
		call.Stats.Durations[backend.StageDispatch] -= copied
		call.Stats.Durations[backend.StageReadback] += copied
		if err != nil {
			return e.fail(ctx, err)
		}
		for j, r := range pd.staged.Reads() {
			if r.Bad >= 0 {
				i := pd.outs[j]
				return &backend.NonFiniteOutputError{Output: i, Index: r.Bad, Value: call.Dests[i].Host[r.Bad]}
			}
			call.Stats.ReadbackBytes += int64(len(r.Out)) * 4
		}
		return nil
	}
	if len(pd.reads) == 0 { // nothing to read: wait for the kernels alone
		defer call.Stats.Start(backend.StageDispatch)()
		if err := e.d.dev.Sync(); err != nil {
			return e.fail(ctx, err)
		}
		return nil
	}
	return e.readHost(ctx, call, pd.bufs, pd.read)
}

func gpuDuration(ns uint64) time.Duration { return time.Duration(ns) }
