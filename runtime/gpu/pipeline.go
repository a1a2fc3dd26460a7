//go:build !js

package gpu

import (
	"fmt"
	"strings"

	"github.com/cogentcore/webgpu/wgpu"
)

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
