//go:build !js

package runtime

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu"
)

func init() { Register("webgpu", openWebGPU) }

// webgpuMaxPipelines bounds the pipeline cache: a run that would take it
// past the bound releases every cached pipeline first. A variable so that
// tests can make it small.
var webgpuMaxPipelines = 256

// webgpuBackend runs WGSL kernels through wgpu-native.
//
// Three caches make a repeated run cheap: generated WGSL comes from the
// Runtime's codegen cache (memory, then disk); compiled pipelines are kept
// per device by WGSL hash and entry point, so a second run of the same
// graph compiles nothing; and device buffers are returned to a pool after
// each run, so a later run of a same-sized program allocates nothing (and
// reuses its bind groups, which the device caches by buffer).
type webgpuBackend struct {
	dev       *gpu.Device
	adapter   *Adapter
	pipelines map[[32]byte]*gpu.Pipeline
	pool      *bufferPool
}

func openWebGPU(opts Options) (Backend, error) {
	path, err := gpu.ParseUploadPath(opts.Upload)
	if opts.Upload == "" {
		// Measured on the H200 (bench/RESULTS.md): 18.8 GB/s through the
		// staging ring in 16 MiB chunks, 1.4 GB/s through WriteBuffer.
		path, err = gpu.UploadStaging, nil
	}
	if err != nil {
		return nil, err
	}
	dev, err := gpu.Open(gpu.Options{AllowSoftware: opts.AllowSoftware, Upload: path, UploadChunk: opts.UploadChunk})
	if err != nil {
		return nil, err
	}
	info := dev.Info()
	limit := opts.PoolBytes
	if limit == 0 {
		limit = DefaultPoolBytes
	}
	return &webgpuBackend{
		dev:       dev,
		pipelines: map[[32]byte]*gpu.Pipeline{},
		pool:      &bufferPool{dev: dev, limit: limit, free: map[poolKey][]*gpu.Buffer{}},
		adapter: &Adapter{Name: info.Name, Driver: info.Driver, Backend: info.Backend,
			Type: info.Type, Software: info.Software},
	}, nil
}

func (b *webgpuBackend) Name() string      { return "webgpu" }
func (b *webgpuBackend) Adapter() *Adapter { return b.adapter }
func (b *webgpuBackend) MaxBindings() int {
	return int(b.dev.Info().Limits.MaxStorageBuffersPerShaderStage)
}

// WorkgroupLimits returns the device's workgroup limits, for tiling.
func (b *webgpuBackend) WorkgroupLimits() (invocations, storage int) {
	l := b.dev.Info().Limits
	return int(l.MaxComputeInvocationsPerWorkgroup), int(l.MaxComputeWorkgroupStorageSize)
}

func (b *webgpuBackend) Close() {
	b.pool.drain()
	b.releasePipelines()
	b.dev.Close()
}

// releasePipelines empties the pipeline cache (and with it the device's
// bind groups that use those pipelines).
func (b *webgpuBackend) releasePipelines() {
	for k, p := range b.pipelines {
		p.Release()
		delete(b.pipelines, k)
	}
}

// pipeline returns the compiled pipeline of s, compiling it on a miss.
func (b *webgpuBackend) pipeline(s codegen.Shader) (*gpu.Pipeline, bool, error) {
	key := sha256.Sum256([]byte(s.Entry + "\x00" + s.Source))
	if p, ok := b.pipelines[key]; ok {
		return p, true, nil
	}
	kinds := make([]gpu.BindingKind, len(s.Bindings))
	for i, k := range s.Bindings {
		kinds[i] = gpu.BindingKind(k)
	}
	p, err := b.dev.Compile(s.Source, s.Entry, kinds)
	if err != nil {
		return nil, false, fmt.Errorf("kernel %s: %w", s.Name, err)
	}
	b.pipelines[key] = p
	return p, false, nil
}

func (b *webgpuBackend) Run(job *Job) ([][]float32, error) {
	p, t := job.Program, job.Timings
	fail := func(err error) ([][]float32, error) {
		return nil, &Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
	}

	start := time.Now()
	shaders, err := generateCached(job.Codegen, wgsl.Target{}.Name(), p, job.Cache, wgsl.Target{}.Emit, wgsl.Params)
	if err != nil {
		return fail(err)
	}
	t.CodegenMs = ms(time.Since(start))

	start = time.Now()
	if len(b.pipelines)+len(shaders) > webgpuMaxPipelines {
		b.releasePipelines() // before this run takes any
	}
	pipes := make([]*gpu.Pipeline, len(shaders))
	allHit := true
	for i, s := range shaders {
		pipe, hit, err := b.pipeline(s)
		if err != nil {
			return fail(err)
		}
		pipes[i], allHit = pipe, allHit && hit
	}
	t.CompileMs = ms(time.Since(start))
	job.Cache["pipeline"] = allHit

	// Buffers go back to the pool when the run is over, whatever happens.
	var held []*gpu.Buffer
	defer func() { b.pool.put(held) }()
	pooled := true
	get := func(size uint64, uniform bool, label string) (*gpu.Buffer, error) {
		buf, hit, err := b.pool.get(size, uniform, label)
		if err == nil {
			held = append(held, buf)
			pooled = pooled && hit
		}
		return buf, err
	}

	start = time.Now()
	bufs := make([]*gpu.Buffer, len(p.Buffers))
	for i, pb := range p.Buffers {
		buf, err := get(uint64(pb.Len)*4, false, fmt.Sprintf("buf%d", i))
		if err != nil {
			return fail(err)
		}
		bufs[i] = buf
		if pb.Input {
			if err := b.dev.Upload(buf, pb.Data); err != nil {
				return fail(err)
			}
			t.UploadBytes += int64(pb.Len) * 4
		}
	}
	ds := make([]gpu.Dispatch, len(p.Kernels))
	for i, k := range p.Kernels {
		d := gpu.Dispatch{Pipeline: pipes[i], Groups: [3]uint32{uint32(shaders[i].Groups[0]), uint32(shaders[i].Groups[1]), uint32(shaders[i].Groups[2])}}
		for _, in := range k.Inputs {
			d.Buffers = append(d.Buffers, bufs[in.Buffer])
		}
		for _, o := range k.Outputs {
			d.Buffers = append(d.Buffers, bufs[o])
		}
		params, err := get(uint64(len(shaders[i].Params)), true, k.Name+" params")
		if err != nil {
			return fail(err)
		}
		if err := b.dev.UploadBytes(params, shaders[i].Params); err != nil {
			return fail(err)
		}
		d.Buffers = append(d.Buffers, params)
		ds[i] = d
	}
	// Wait for the copies, so that upload time is not charged to dispatch.
	if err := b.dev.Flush(); err != nil {
		return fail(err)
	}
	t.UploadMs = ms(time.Since(start))
	job.Cache["buffer_pool"] = pooled

	if len(ds) > 0 {
		if !allHit || !pooled {
			// Drivers finish compiling at the first dispatch, and the first
			// touch of fresh buffers maps their pages (0.6 against 0.26 ms
			// for relu(a*b+c) over 64M on the H200): time it apart.
			start = time.Now()
			if err := b.dev.Run(ds); err != nil {
				return fail(err)
			}
			t.FirstDispatchMs = ms(time.Since(start))
		}
		start = time.Now()
		gpuNs, timed, err := b.dev.RunTimed(ds)
		if err != nil {
			return fail(err)
		}
		t.DispatchMs, t.DispatchClock = ms(time.Since(start)), "wall"
		if timed {
			t.DispatchMs, t.DispatchClock = float64(gpuNs)/1e6, "gpu-timestamp"
		}
	}

	start = time.Now()
	out := make([][]float32, len(p.Outputs))
	for i, o := range p.Outputs {
		if o.Buffer < 0 {
			continue
		}
		out[i] = make([]float32, p.Buffers[o.Buffer].Len)
		if err := b.dev.Read(bufs[o.Buffer], out[i]); err != nil {
			return fail(err)
		}
		t.ReadbackBytes += int64(len(out[i])) * 4
	}
	t.ReadbackMs = ms(time.Since(start))
	return out, nil
}
