//go:build js

package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall/js"
	"time"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
)

func init() { Register("webgpu", openWebGPUJS) }

// webgpuJS runs WGSL kernels on the page's navigator.gpu through
// cogentcore/webgpu's js build. The adapter is requested directly (that
// build does not expose GPUAdapterInfo, which software detection needs);
// the device is then wrapped with wgpu.NewDevice. Pipelines are cached by
// WGSL source and entry point.
type webgpuJS struct {
	dev       wgpu.Device
	jsDev     js.Value
	queue     *wgpu.Queue
	adapter   *Adapter
	maxBind   int
	pipelines map[[32]byte]*jsPipeline
}

// jsPipeline is a compiled kernel with its explicit bind group layout.
type jsPipeline struct {
	pipe   *wgpu.ComputePipeline
	layout *wgpu.BindGroupLayout
}

func openWebGPUJS(opts Options) (Backend, error) {
	gpu := js.Global().Get("navigator").Get("gpu")
	if !gpu.Truthy() {
		return nil, errors.New("navigator.gpu is missing: this browser has no WebGPU")
	}
	ad, err := await(gpu.Call("requestAdapter"))
	if err != nil || !ad.Truthy() {
		return nil, fmt.Errorf("navigator.gpu.requestAdapter found no adapter (%v)", err)
	}
	a := jsAdapterInfo(ad)
	if a.Software && !opts.AllowSoftware {
		return nil, fmt.Errorf("adapter %q is a software renderer; pass allowSoftware to use it", a.Name)
	}
	dev, err := await(ad.Call("requestDevice"))
	if err != nil || !dev.Truthy() {
		return nil, fmt.Errorf("requestDevice failed: %v", err)
	}
	d := wgpu.NewDevice(dev)
	return &webgpuJS{dev: d, jsDev: dev, queue: d.GetQueue(), adapter: a,
		maxBind:   dev.Get("limits").Get("maxStorageBuffersPerShaderStage").Int(),
		pipelines: map[[32]byte]*jsPipeline{}}, nil
}

// jsAdapterInfo reads GPUAdapterInfo; SwiftShader, lavapipe, llvmpipe, WARP
// and fallback adapters count as software.
func jsAdapterInfo(ad js.Value) *Adapter {
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
	return &Adapter{Name: name, Driver: "navigator.gpu", Backend: "browser", Type: typ, Software: soft}
}

func (b *webgpuJS) Name() string      { return "webgpu" }
func (b *webgpuJS) Adapter() *Adapter { return b.adapter }
func (b *webgpuJS) MaxBindings() int  { return b.maxBind }
func (b *webgpuJS) Close()            { b.jsDev.Call("destroy") }

// scoped runs f inside a validation error scope and returns what it caught.
func (b *webgpuJS) scoped(what string, f func() error) error {
	b.jsDev.Call("pushErrorScope", "validation")
	err := catchJS(f)
	e, perr := await(b.jsDev.Call("popErrorScope"))
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

// pipeline compiles s with an explicit layout (the js build has no "auto").
func (b *webgpuJS) pipeline(s codegen.Shader) (*jsPipeline, bool, error) {
	key := sha256.Sum256([]byte(s.Entry + "\x00" + s.Source))
	if p, ok := b.pipelines[key]; ok {
		return p, true, nil
	}
	p := &jsPipeline{}
	err := b.scoped("kernel "+s.Name, func() error {
		mod, err := b.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: s.Name,
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
		if p.layout, err = b.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Entries: entries}); err != nil {
			return err
		}
		pl, err := b.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{BindGroupLayouts: []*wgpu.BindGroupLayout{p.layout}})
		if err != nil {
			return err
		}
		p.pipe, err = b.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{Layout: pl,
			Compute: wgpu.ProgrammableStageDescriptor{Module: mod, EntryPoint: s.Entry}})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	b.pipelines[key] = p
	return p, false, nil
}

func (b *webgpuJS) fail(err error) error {
	return &Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
}

// buffer creates a storage (or uniform) buffer and fills it with data.
func (b *webgpuJS) buffer(size int, usage wgpu.BufferUsage, data []byte) (*wgpu.Buffer, error) {
	buf, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Size: uint64(max(size, 4)), Usage: usage | wgpu.BufferUsageCopyDst})
	if err == nil && data != nil {
		err = b.queue.WriteBuffer(buf, 0, data)
	}
	return buf, err
}

// Run generates WGSL, uploads inputs, dispatches every kernel in one
// submission and maps the outputs back.
func (b *webgpuJS) Run(job *Job) ([][]float32, error) {
	p, t := job.Program, job.Timings
	start := time.Now()
	shaders, err := generateCached(job.Codegen, wgsl.Target{}.Name(), p, job.Cache, wgsl.Target{}.Emit, wgsl.Params)
	if err != nil {
		return nil, b.fail(err)
	}
	t.CodegenMs = ms(time.Since(start))

	start = time.Now()
	pipes := make([]*jsPipeline, len(shaders))
	allHit := true
	for i, s := range shaders {
		pipe, hit, err := b.pipeline(s)
		if err != nil {
			return nil, b.fail(err)
		}
		pipes[i], allHit = pipe, allHit && hit
	}
	job.Cache["pipeline"] = allHit
	t.CompileMs = ms(time.Since(start))

	var held []*wgpu.Buffer
	defer func() {
		for _, h := range held {
			h.Destroy()
		}
	}()
	var out [][]float32
	err = b.scoped("run", func() error {
		bufs, err := b.upload(p, t, &held)
		if err != nil {
			return err
		}
		if err := b.dispatch(p, shaders, pipes, bufs, t, &held); err != nil {
			return err
		}
		out, err = b.readback(p, bufs, t, &held)
		return err
	})
	if err != nil {
		return nil, b.fail(err)
	}
	return out, nil
}

// upload creates every program buffer and writes the inputs.
func (b *webgpuJS) upload(p *ir.Program, t *Timings, held *[]*wgpu.Buffer) ([]*wgpu.Buffer, error) {
	start := time.Now()
	bufs := make([]*wgpu.Buffer, len(p.Buffers))
	for i, pb := range p.Buffers {
		var data []byte
		if pb.Input {
			data = float32Bytes(pb.Data)
			t.UploadBytes += int64(len(data))
		}
		buf, err := b.buffer(4*pb.Len, wgpu.BufferUsageStorage|wgpu.BufferUsageCopySrc, data)
		if err != nil {
			return nil, err
		}
		bufs[i] = buf
		*held = append(*held, buf)
	}
	t.UploadMs = ms(time.Since(start))
	return bufs, nil
}

// dispatch records every kernel into one compute pass and waits for it.
func (b *webgpuJS) dispatch(p *ir.Program, shaders []codegen.Shader, pipes []*jsPipeline, bufs []*wgpu.Buffer, t *Timings, held *[]*wgpu.Buffer) error {
	start := time.Now()
	enc, err := b.dev.CreateCommandEncoder(&wgpu.CommandEncoderDescriptor{})
	if err != nil {
		return err
	}
	pass := enc.BeginComputePass(&wgpu.ComputePassDescriptor{})
	for i, k := range p.Kernels {
		params, err := b.buffer(len(shaders[i].Params), wgpu.BufferUsageUniform, shaders[i].Params)
		if err != nil {
			return err
		}
		*held = append(*held, params)
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
		bind(params, len(shaders[i].Params))
		bg, err := b.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: pipes[i].layout, Entries: entries})
		if err != nil {
			return err
		}
		g := shaders[i].Groups
		pass.SetPipeline(pipes[i].pipe)
		pass.SetBindGroup(0, bg, nil)
		pass.DispatchWorkgroups(uint32(g[0]), uint32(g[1]), uint32(g[2]))
	}
	pass.End()
	cmd, err := enc.Finish(nil)
	if err != nil {
		return err
	}
	b.queue.Submit(cmd)
	if _, err := await(b.jsDev.Get("queue").Call("onSubmittedWorkDone")); err != nil {
		return err
	}
	t.DispatchMs, t.DispatchClock = ms(time.Since(start)), "wall"
	return nil
}

// readback copies each output into a mappable buffer and reads it.
func (b *webgpuJS) readback(p *ir.Program, bufs []*wgpu.Buffer, t *Timings, held *[]*wgpu.Buffer) ([][]float32, error) {
	start := time.Now()
	out := make([][]float32, len(p.Outputs))
	for i, o := range p.Outputs {
		if o.Buffer < 0 {
			continue
		}
		size := uint64(4 * p.Buffers[o.Buffer].Len)
		staging, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Size: size, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
		if err != nil {
			return nil, err
		}
		*held = append(*held, staging)
		enc, err := b.dev.CreateCommandEncoder(&wgpu.CommandEncoderDescriptor{})
		if err != nil {
			return nil, err
		}
		if err := enc.CopyBufferToBuffer(bufs[o.Buffer], 0, staging, 0, size); err != nil {
			return nil, err
		}
		cmd, err := enc.Finish(nil)
		if err != nil {
			return nil, err
		}
		b.queue.Submit(cmd)
		if err := staging.MapAsync(wgpu.MapModeRead, 0, size, func(wgpu.BufferMapAsyncStatus) {}); err != nil {
			return nil, err
		}
		out[i] = bytesFloat32(staging.GetMappedRange(0, uint(size)))
		staging.Unmap()
		t.ReadbackBytes += int64(size)
	}
	t.ReadbackMs = ms(time.Since(start))
	return out, nil
}

func float32Bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

func bytesFloat32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
