//go:build !js

// Package tune searches matmul kernel configurations on the device at hand
// and remembers the winners, and it holds the small harness that runs a
// lowered program on a gpu.Device that the search and its tests share.
// Every candidate is checked against cpuref before it may win, so tuning
// never changes a result in exact mode.
package tune

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// PassOptions returns the pass options that fit programs to dev: its workgroup
// limits, and sum splitting, as the webgpu backend compiles them.
func PassOptions(dev *gpu.Device) passes.Options {
	l := dev.Info().Limits
	return passes.Options{MaxInvocations: int(l.MaxComputeInvocationsPerWorkgroup),
		MaxWorkgroupStorage: PlanStorage(l), SplitSums: true}
}

// Prepared is a program compiled and uploaded to a device, ready to run
// again and again.
type Prepared struct {
	dev      *gpu.Device
	p        *ir.Program
	shaders  []codegen.Shader
	bufs     []*gpu.Buffer
	dispatch []gpu.Dispatch
	owned    []*gpu.Buffer
	pipes    []*gpu.Pipeline
}

// Prepare generates, compiles and uploads p on dev. Release the result.
func Prepare(dev *gpu.Device, p *ir.Sealed) (*Prepared, error) {
	return PrepareFor(dev, p, wgsl.Target{})
}

// PrepareFor is Prepare with the generator target t (wgsl.Target{Fast: true}
// for fast mode).
func PrepareFor(dev *gpu.Device, sp *ir.Sealed, t wgsl.Target) (*Prepared, error) {
	p := sp.Program()
	r := &Prepared{dev: dev, p: p}
	ok := false
	defer func() {
		if !ok {
			r.Release()
		}
	}()
	shaders, err := t.Emit(sp)
	if err != nil {
		return nil, err
	}
	for _, s := range shaders {
		kinds := make([]gpu.BindingKind, len(s.Bindings))
		for j, k := range s.Bindings {
			kinds[j] = gpu.BindingKind(k)
		}
		pipe, err := dev.Compile(s.Source, s.Entry, kinds)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", s.Name, err)
		}
		r.shaders = append(r.shaders, s)
		r.pipes = append(r.pipes, pipe)
	}
	r.bufs = make([]*gpu.Buffer, len(p.Buffers))
	for i, pb := range p.Buffers {
		b, err := dev.NewBuffer(uint64(pb.Len)*4, fmt.Sprintf("buf%d", i))
		if err != nil {
			return nil, err
		}
		r.bufs[i] = b
		r.owned = append(r.owned, b)
		if pb.Input {
			if err := dev.Upload(b, pb.Data); err != nil {
				return nil, err
			}
		}
	}
	for i, k := range p.Kernels {
		s := r.shaders[i]
		d := gpu.Dispatch{Pipeline: r.pipes[i], Groups: [3]uint32{uint32(s.Groups[0]), uint32(s.Groups[1]), uint32(s.Groups[2])}}
		for _, in := range k.Inputs {
			d.Buffers = append(d.Buffers, r.bufs[in.Buffer])
		}
		for _, o := range k.Outputs {
			d.Buffers = append(d.Buffers, r.bufs[o])
		}
		u, err := dev.NewUniform(s.Params, k.Name+" params")
		if err != nil {
			return nil, err
		}
		r.owned = append(r.owned, u)
		d.Buffers = append(d.Buffers, u)
		r.dispatch = append(r.dispatch, d)
	}
	ok = true
	return r, nil
}

// Shaders returns the generated shaders, one per kernel.
func (r *Prepared) Shaders() []codegen.Shader { return r.shaders }

// Run dispatches every kernel once and returns the GPU time in
// nanoseconds when the device has timestamps (ok false otherwise).
func (r *Prepared) Run() (ns uint64, ok bool, err error) { return r.dev.RunTimed(r.dispatch) }

// Outputs reads every program output back, by name.
func (r *Prepared) Outputs() (map[string][]float32, error) {
	out := map[string][]float32{}
	for _, o := range r.p.Outputs {
		v := make([]float32, o.Shape.Len())
		if o.Buffer < 0 {
			for i := range v {
				v[i] = o.Const
			}
		} else if err := r.dev.Read(r.bufs[o.Buffer], v); err != nil {
			return nil, err
		}
		out[o.Name] = v
	}
	return out, nil
}

// Release frees the buffers and pipelines.
func (r *Prepared) Release() {
	for _, b := range r.owned {
		b.Release()
	}
	for _, p := range r.pipes {
		p.Release()
	}
	r.owned, r.pipes = nil, nil
}

// Exec runs p once on dev and returns its outputs.
func Exec(dev *gpu.Device, p *ir.Sealed) (map[string][]float32, error) {
	r, err := Prepare(dev, p)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	if _, _, err := r.Run(); err != nil {
		return nil, err
	}
	return r.Outputs()
}
