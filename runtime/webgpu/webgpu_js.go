//go:build js

package webgpu

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/jsutil"
)

func init() { backend.Register("webgpu", open) }

// device runs WGSL kernels on the page's navigator.gpu through
// cogentcore/webgpu's js build. The adapter is requested directly (that
// build does not expose GPUAdapterInfo, which software detection needs);
// the device is then wrapped with wgpu.NewDevice. Pipelines are cached by
// WGSL source and entry point.
type device struct {
	dev       wgpu.Device
	jsDev     js.Value
	jsQueue   js.Value // jsDev.queue, for write
	queue     *wgpu.Queue
	info      backend.Info
	opts      backend.Options
	pipelines map[[32]byte]*pipeline
}

// pipeline is a compiled kernel with its explicit bind group layout.
type pipeline struct {
	pipe   *wgpu.ComputePipeline
	layout *wgpu.BindGroupLayout
}

// buffer is a device tensor's storage buffer.
type buffer struct {
	buf *wgpu.Buffer
	n   int
}

func (b *buffer) Len() int { return b.n }

func (b *buffer) Release() {
	if b.buf != nil {
		b.buf.Destroy()
		b.buf = nil
	}
}

func open(opts backend.Options) (backend.Device, error) {
	gpu := js.Global().Get("navigator").Get("gpu")
	if !gpu.Truthy() {
		return nil, errors.New("navigator.gpu is missing: this browser has no WebGPU")
	}
	ad, err := jsutil.Await(gpu.Call("requestAdapter"))
	if err != nil || !ad.Truthy() {
		return nil, fmt.Errorf("navigator.gpu.requestAdapter found no adapter (%v)", err)
	}
	a := adapterInfo(ad)
	if a.Software && !opts.AllowSoftware {
		return nil, fmt.Errorf("adapter %q is a software renderer; pass allowSoftware to use it", a.Name)
	}
	dev, err := jsutil.Await(ad.Call("requestDevice"))
	if err != nil || !dev.Truthy() {
		return nil, fmt.Errorf("requestDevice failed: %v", err)
	}
	d := wgpu.NewDevice(dev)
	l := dev.Get("limits")
	lim := func(k string) int { return l.Get(k).Int() }
	prof := passes.Profile{Name: "webgpu", MaxStorageBuffers: lim("maxStorageBuffersPerShaderStage"),
		MaxInvocations:      lim("maxComputeInvocationsPerWorkgroup"),
		MaxWorkgroupSize:    [3]int{lim("maxComputeWorkgroupSizeX"), lim("maxComputeWorkgroupSizeY"), lim("maxComputeWorkgroupSizeZ")},
		MaxWorkgroupStorage: lim("maxComputeWorkgroupStorageSize"), MaxWorkgroupsPerDimension: lim("maxComputeWorkgroupsPerDimension"),
		MaxBindingSize: int64(l.Get("maxStorageBufferBindingSize").Float()), MaxBufferSize: int64(l.Get("maxBufferSize").Float())}
	return &device{dev: d, jsDev: dev, jsQueue: dev.Get("queue"), queue: d.GetQueue(), opts: opts, pipelines: map[[32]byte]*pipeline{},
		info: backend.Info{Name: "webgpu", Adapter: a, Profile: prof}}, nil
}

// adapterInfo reads GPUAdapterInfo; SwiftShader, lavapipe, llvmpipe, WARP
// and fallback adapters count as software.
func adapterInfo(ad js.Value) backend.Adapter {
	info := ad.Get("info")
	field := func(k string) string {
		if !info.Truthy() || info.Get(k).Type() != js.TypeString {
			return ""
		}
		return info.Get(k).String()
	}
	name := strings.TrimSpace(strings.Join([]string{field("vendor"), field("architecture"), field("device")}, " "))
	if d := field("description"); d != "" {
		name += " (" + d + ")"
	}
	all := strings.ToLower(name)
	soft := ad.Get("isFallbackAdapter").Truthy()
	for _, s := range []string{"swiftshader", "lavapipe", "llvmpipe", "warp", "software"} {
		soft = soft || strings.Contains(all, s)
	}
	typ := "gpu"
	if soft {
		typ = "cpu"
	}
	return backend.Adapter{Name: name, Driver: "navigator.gpu", Backend: "browser", Type: typ, Software: soft}
}

func (d *device) Info() backend.Info { return d.info }
func (d *device) Close()             { d.jsDev.Call("destroy") }

func fail(err error) error {
	return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
}

// scoped runs f inside a validation error scope and returns what it caught.
func (d *device) scoped(what string, f func() error) error {
	d.jsDev.Call("pushErrorScope", "validation")
	err := jsutil.CatchJS(f)
	e, perr := jsutil.Await(d.jsDev.Call("popErrorScope"))
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case perr != nil:
		return fmt.Errorf("%s: %w", what, perr)
	case e.Truthy():
		return fmt.Errorf("%s: %s", what, e.Get("message").String())
	}
	return nil
}

// newBuffer creates a storage (or uniform) buffer and fills it with data.
func (d *device) newBuffer(size int, usage wgpu.BufferUsage, data []byte) (*wgpu.Buffer, error) {
	buf, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Size: uint64(max(size, 4)), Usage: usage | wgpu.BufferUsageCopyDst})
	if err == nil && data != nil {
		err = d.write(buf, data)
	}
	return buf, err
}

// write copies data to the start of buf through a Uint8Array the browser
// owns. wgpu's Queue.WriteBuffer hands writeBuffer a view of the wasm
// memory, which the Go runtime's next memory growth detaches: a growth
// while the call's arguments are converted left a view of length 0, and
// Chromium refused the write ("Number of bytes to write is too large";
// TestPythonCard, 1 of 5 training steps on a loaded machine).
func (d *device) write(buf *wgpu.Buffer, data []byte) error {
	arr := js.Global().Get("Uint8Array").New(len(data))
	js.CopyBytesToJS(arr, data)
	// *wgpu.Buffer is, on js, a struct of one js.Value (webgpu v0.23.0,
	// the only version this module builds with).
	jsBuf := *(*js.Value)(unsafe.Pointer(buf))
	return jsutil.CatchJS(func() error {
		d.jsQueue.Call("writeBuffer", jsBuf, 0, arr)
		return nil
	})
}

const storage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc

func (d *device) Alloc(ctx context.Context, n int) (backend.Buffer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf, err := d.newBuffer(4*n, storage, nil)
	if err != nil {
		return nil, fail(err)
	}
	return &buffer{buf: buf, n: n}, nil
}

func (d *device) tensor(b backend.Buffer, n int) (*buffer, error) {
	buf, ok := b.(*buffer)
	if !ok || buf.buf == nil || buf.n != n {
		return nil, fmt.Errorf("buffer %T is not a live buffer of %d values on this device", b, n)
	}
	return buf, nil
}

func (d *device) Upload(ctx context.Context, b backend.Buffer, data []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	buf, err := d.tensor(b, len(data))
	if err != nil {
		return err
	}
	return d.write(buf.buf, f32Bytes(data))
}

func (d *device) Read(ctx context.Context, b backend.Buffer, out []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	buf, err := d.tensor(b, len(out))
	if err != nil {
		return err
	}
	return d.read(buf.buf, out)
}

// read copies src into a mappable buffer and reads it into out.
func (d *device) read(src *wgpu.Buffer, out []float32) error {
	size := uint64(4 * max(len(out), 1))
	staging, err := d.dev.CreateBuffer(&wgpu.BufferDescriptor{Size: size, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	if err != nil {
		return err
	}
	defer staging.Destroy()
	enc, err := d.dev.CreateCommandEncoder(&wgpu.CommandEncoderDescriptor{})
	if err != nil {
		return err
	}
	if err := enc.CopyBufferToBuffer(src, 0, staging, 0, size); err != nil {
		return err
	}
	cmd, err := enc.Finish(nil)
	if err != nil {
		return err
	}
	d.queue.Submit(cmd)
	if err := staging.MapAsync(wgpu.MapModeRead, 0, size, func(wgpu.BufferMapAsyncStatus) {}); err != nil {
		return err
	}
	copy(f32Bytes(out), staging.GetMappedRange(0, uint(4*len(out))))
	staging.Unmap()
	return nil
}

// pipeline compiles s with an explicit layout (the js build has no "auto").
func (d *device) pipeline(s codegen.Shader) (*pipeline, bool, error) {
	key := sha256.Sum256([]byte(s.Entry + "\x00" + s.Source))
	if p, ok := d.pipelines[key]; ok {
		return p, true, nil
	}
	p := &pipeline{}
	err := d.scoped("kernel "+s.Name, func() error {
		mod, err := d.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: s.Name,
			WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: s.Source}})
		if err != nil {
			return err
		}
		entries := make([]wgpu.BindGroupLayoutEntry, len(s.Bindings))
		for i, k := range s.Bindings {
			t := map[codegen.BindingKind]wgpu.BufferBindingType{codegen.ReadOnly: wgpu.BufferBindingTypeReadOnlyStorage,
				codegen.ReadWrite: wgpu.BufferBindingTypeStorage, codegen.Uniform: wgpu.BufferBindingTypeUniform}[k]
			entries[i] = wgpu.BindGroupLayoutEntry{Binding: uint32(i), Visibility: wgpu.ShaderStageCompute,
				Buffer: wgpu.BufferBindingLayout{Type: t}}
		}
		if p.layout, err = d.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Entries: entries}); err != nil {
			return err
		}
		pl, err := d.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{BindGroupLayouts: []*wgpu.BindGroupLayout{p.layout}})
		if err != nil {
			return err
		}
		p.pipe, err = d.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{Layout: pl,
			Compute: wgpu.ProgrammableStageDescriptor{Module: mod, EntryPoint: s.Entry}})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	d.pipelines[key] = p
	return p, false, nil
}

// Compile generates WGSL (unless the plan carries it), compiles the
// pipelines and uploads the parameter blocks, which hold the program's
// constants and never change.
func (d *device) Compile(ctx context.Context, bp *backend.Program, st *backend.Stats) (backend.Executable, error) {
	sp := bp.IR
	p := sp.Program()
	stop := st.Start(backend.StageCodegen)
	var shaders []codegen.Shader
	var err error
	if bp.Prebuilt != nil {
		if shaders, err = prebuiltShaders(bp.Prebuilt, p); err != nil {
			stop()
			return nil, err
		}
	} else {
		shaders, err = backend.Shaders(d.opts.Cache, wgsl.Target{}.Name(), sp, st, wgsl.Target{}.Emit, wgsl.Params)
	}
	stop()
	if err != nil {
		return nil, fail(err)
	}
	defer st.Start(backend.StageCompile)()
	e := &executable{d: d, p: p, shaders: shaders}
	allHit := true
	for _, s := range shaders {
		pipe, hit, err := d.pipeline(s)
		if err != nil {
			e.Release()
			return nil, fail(err)
		}
		e.pipes, allHit = append(e.pipes, pipe), allHit && hit
	}
	st.Hit(backend.CachePipeline, allHit)
	for i := range p.Kernels {
		params, err := d.newBuffer(len(shaders[i].Params), wgpu.BufferUsageUniform, shaders[i].Params)
		if err != nil {
			e.Release()
			return nil, fail(err)
		}
		e.params = append(e.params, params)
	}
	return e, nil
}

type executable struct {
	d       *device
	p       *ir.Program
	shaders []codegen.Shader
	pipes   []*pipeline
	params  []*wgpu.Buffer
}

func (e *executable) Release() {
	for _, b := range e.params {
		b.Destroy()
	}
	e.params = nil
}

// Run uploads the host inputs, dispatches every kernel in one submission
// and maps the outputs back; kept outputs stay in their buffers.
func (e *executable) Run(ctx context.Context, call *backend.Call) (err error) {
	d, p, st := e.d, e.p, call.Stats
	var held []*wgpu.Buffer
	defer func() {
		for _, h := range held {
			h.Destroy()
		}
		if err != nil {
			for i := range call.Dests {
				if b := call.Dests[i].Buf; b != nil {
					b.Release()
					call.Dests[i].Buf = nil
				}
			}
		}
	}()
	err = d.scoped("run", func() error {
		stop := st.Start(backend.StageUpload)
		bufs := make([]*wgpu.Buffer, len(p.Buffers))
		for i, pb := range p.Buffers {
			if a := call.Args[i]; pb.Input && a.Buf != nil {
				t, err := d.tensor(a.Buf, pb.Len)
				if err != nil {
					stop()
					return err
				}
				bufs[i] = t.buf
				continue
			}
			var data []byte
			if pb.Input {
				data = f32Bytes(call.Args[i].Host)
				st.UploadBytes += int64(len(data))
			}
			buf, err := d.newBuffer(4*pb.Len, storage, data)
			if err != nil {
				stop()
				return err
			}
			bufs[i] = buf
			held = append(held, buf)
		}
		stop()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.dispatch(bufs, st); err != nil {
			return err
		}
		defer st.Start(backend.StageReadback)()
		for i, o := range p.Outputs {
			dst := &call.Dests[i]
			switch {
			case o.Buffer < 0:
			case dst.Keep:
				for k, h := range held {
					if h == bufs[o.Buffer] {
						held = append(held[:k], held[k+1:]...)
						break
					}
				}
				dst.Buf = &buffer{buf: bufs[o.Buffer], n: p.Buffers[o.Buffer].Len}
			default:
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := d.read(bufs[o.Buffer], dst.Host); err != nil {
					return err
				}
				st.ReadbackBytes += int64(4 * len(dst.Host))
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(err)
	}
	return nil
}

// dispatch records every kernel into one compute pass and waits for it.
func (e *executable) dispatch(bufs []*wgpu.Buffer, st *backend.Stats) error {
	d, p := e.d, e.p
	defer st.Start(backend.StageDispatch)()
	enc, err := d.dev.CreateCommandEncoder(&wgpu.CommandEncoderDescriptor{})
	if err != nil {
		return err
	}
	pass := enc.BeginComputePass(&wgpu.ComputePassDescriptor{})
	for i, k := range p.Kernels {
		var entries []wgpu.BindGroupEntry
		bind := func(buf *wgpu.Buffer, size int) {
			entries = append(entries, wgpu.BindGroupEntry{Binding: uint32(len(entries)), Buffer: buf, Size: uint64(size)})
		}
		for _, in := range k.Inputs {
			bind(bufs[in.Buffer], 4*p.Buffers[in.Buffer].Len)
		}
		for _, o := range k.Outputs {
			bind(bufs[o], 4*p.Buffers[o].Len)
		}
		bind(e.params[i], len(e.shaders[i].Params))
		bg, err := d.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: e.pipes[i].layout, Entries: entries})
		if err != nil {
			return err
		}
		g := e.shaders[i].Groups
		pass.SetPipeline(e.pipes[i].pipe)
		pass.SetBindGroup(0, bg, nil)
		pass.DispatchWorkgroups(uint32(g[0]), uint32(g[1]), uint32(g[2]))
	}
	pass.End()
	cmd, err := enc.Finish(nil)
	if err != nil {
		return err
	}
	d.queue.Submit(cmd)
	_, err = jsutil.Await(d.jsDev.Get("queue").Call("onSubmittedWorkDone"))
	return err
}

// f32Bytes views a float32 slice as its little-endian bytes (GOOS=js is
// wasm, little-endian).
func f32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}
