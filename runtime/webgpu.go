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

// webgpuBackend runs WGSL kernels through wgpu-native. Compiled pipelines
// are cached per device by WGSL hash and entry point, so a second run of
// the same graph compiles nothing.
type webgpuBackend struct {
	dev       *gpu.Device
	adapter   *Adapter
	pipelines map[[32]byte]*gpu.Pipeline
}

func openWebGPU(opts Options) (Backend, error) {
	dev, err := gpu.Open(gpu.Options{AllowSoftware: opts.AllowSoftware})
	if err != nil {
		return nil, err
	}
	info := dev.Info()
	return &webgpuBackend{
		dev:       dev,
		pipelines: map[[32]byte]*gpu.Pipeline{},
		adapter: &Adapter{Name: info.Name, Driver: info.Driver, Backend: info.Backend,
			Type: info.Type, Software: info.Software},
	}, nil
}

func (b *webgpuBackend) Name() string      { return "webgpu" }
func (b *webgpuBackend) Adapter() *Adapter { return b.adapter }
func (b *webgpuBackend) MaxBindings() int {
	return int(b.dev.Info().Limits.MaxStorageBuffersPerShaderStage)
}

func (b *webgpuBackend) Close() {
	for _, p := range b.pipelines {
		p.Release()
	}
	b.dev.Close()
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
	shaders := make([]codegen.Shader, len(p.Kernels))
	for i := range p.Kernels {
		s, err := wgsl.Generate(p, &p.Kernels[i])
		if err != nil {
			return fail(err)
		}
		shaders[i] = s
	}
	t.CodegenMs = ms(time.Since(start))

	start = time.Now()
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

	bufs := make([]*gpu.Buffer, len(p.Buffers))
	defer func() {
		for _, buf := range bufs {
			if buf != nil {
				buf.Release()
			}
		}
	}()
	start = time.Now()
	for i, pb := range p.Buffers {
		buf, err := b.dev.NewBuffer(uint64(pb.Len)*4, fmt.Sprintf("buf%d", i))
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
	t.UploadMs = ms(time.Since(start))

	ds := make([]gpu.Dispatch, len(p.Kernels))
	for i, k := range p.Kernels {
		d := gpu.Dispatch{Pipeline: pipes[i], Groups: [3]uint32{uint32(shaders[i].Groups[0]), uint32(shaders[i].Groups[1]), uint32(shaders[i].Groups[2])}}
		for _, in := range k.Inputs {
			d.Buffers = append(d.Buffers, bufs[in.Buffer])
		}
		for _, o := range k.Outputs {
			d.Buffers = append(d.Buffers, bufs[o])
		}
		params, err := b.dev.NewUniform(shaders[i].Params, k.Name+" params")
		if err != nil {
			return fail(err)
		}
		defer params.Release()
		d.Buffers = append(d.Buffers, params)
		ds[i] = d
	}
	if len(ds) > 0 {
		if !allHit {
			// Drivers finish compiling at the first dispatch: time it apart.
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
