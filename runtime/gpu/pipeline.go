//go:build !js

package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	times    CreateTimes
}

// CreateTimes are the steps of one pipeline's creation: when it started
// after its CompileAll began, its shader module (wgpu parses and
// validates the WGSL with naga, on the host) and its compute pipeline
// (naga writes SPIR-V, then the driver compiles it to machine code: on
// the H200 the bulk of a model's first compile).
type CreateTimes struct {
	Start, Module, Pipeline time.Duration
}

// CreateTimes returns how long p's creation took, by step.
func (p *Pipeline) CreateTimes() CreateTimes { return p.times }

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
	ps, err := d.CompileAll([]Shader{{WGSL: wgsl, Entry: entry, Bindings: bindings}})
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// Shader is one pipeline to create: WGSL source, its entry point and the
// kinds of its group 0 bindings (see Compile).
type Shader struct {
	WGSL     string
	Entry    string
	Bindings []BindingKind
	// Label names the shader in GPUCC_VERBOSE's log (a kernel's name);
	// empty, Entry does.
	Label string
}

// compileWorkers bounds how many pipelines CompileAll creates at once:
// GOMAXPROCS, or GPUCC_COMPILE_WORKERS when it is a positive integer (1
// creates them one at a time, as before 2026-12-04).
var compileWorkers = workers(os.Getenv("GPUCC_COMPILE_WORKERS"))

func workers(env string) int {
	if n, err := strconv.Atoi(env); err == nil && n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// CompileAll creates the pipelines of shaders, several at once: wgpu's
// device is thread-safe, and creating a pipeline is where the driver
// compiles the shader to machine code (on the H200, 10 s for the 115
// kernels of EfficientNet-B0 one at a time). The result has one pipeline
// per shader, in order; on error none is kept.
//
// wgpu reports a creation error through an error scope, and its scopes
// are one stack per device, not per thread, so an error raised by one
// creation may surface in another's scope. It never vanishes, so a batch
// with an error is released and created again one shader at a time, which
// names the shader that failed.
func (d *Device) CompileAll(shaders []Shader) ([]*Pipeline, error) {
	const op = "compile"
	for _, s := range shaders {
		if err := d.checkShader(op, s); err != nil {
			return nil, err
		}
	}
	// Close waits for creations under way: they run without d.mu.
	d.life.RLock()
	defer d.life.RUnlock()
	d.mu.Lock()
	err := d.check(op)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ps := make([]*Pipeline, len(shaders))
	errs := make([]error, len(shaders))
	workers := max(min(compileWorkers, len(shaders)), 1)
	create := d.create
	if d.info.Backend == BackendGL {
		// wgpu's GL backend keeps one context behind a lock that a thread
		// waits on for a second at most and then panics, which aborts the
		// process: on the H100 (2026-12-05) a test process whose device
		// was the GL adapter died so ("Could not lock adapter context")
		// under concurrent creations. On GL the pipelines are created one
		// at a time, each under d.mu, so that no run waits on the context
		// behind a long compile either.
		workers = 1
		create = func(op string, s Shader, batch time.Time) (*Pipeline, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.create(op, s, batch)
		}
	}
	start := time.Now()
	if workers == 1 {
		for i, s := range shaders {
			if ps[i], errs[i] = create(op, s, start); errs[i] != nil {
				break
			}
		}
	} else {
		order := longestFirst(shaders)
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := int(next.Add(1) - 1); j < len(order); j = int(next.Add(1) - 1) {
					i := order[j]
					ps[i], errs[i] = create(op, shaders[i], start)
				}
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		for _, p := range ps {
			if p != nil {
				p.Release()
			}
		}
		if workers == 1 {
			return nil, err
		}
		for i, s := range shaders { // again, one at a time, to name the shader
			if ps[i], err = create(op, s, start); err != nil {
				for _, p := range ps[:i] {
					p.Release()
				}
				return nil, err
			}
		}
	}
	if Verbose || os.Getenv("GPUCC_VERBOSE") != "" {
		logCreation(os.Stderr, shaders, ps, workers, time.Since(start))
	}
	return ps, nil
}

// logCreation writes GPUCC_VERBOSE's account of a CompileAll: a line per
// pipeline in the order they started, then the batch's wall time beside
// the sum of the creations over the workers (what full use of the
// workers would give) and the longest creation (what no schedule goes
// below). A wall time near the longest says one kernel's compile is the
// critical path; near sum/workers, that the workers are the bound.
func logCreation(w io.Writer, shaders []Shader, ps []*Pipeline, workers int, wall time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a].times.Start, ps[b].times.Start) })
	var sum, module time.Duration
	longest := -1
	for _, i := range order {
		t, s := ps[i].times, shaders[i]
		fmt.Fprintf(w, "gpucc: webgpu: pipeline %s (%d bytes): at %.1f ms, module %.1f ms, pipeline %.1f ms\n",
			s.label(), len(s.WGSL), ms(t.Start), ms(t.Module), ms(t.Pipeline))
		sum += t.Module + t.Pipeline
		module += t.Module
		if longest < 0 || t.Module+t.Pipeline > ps[longest].times.Module+ps[longest].times.Pipeline {
			longest = i
		}
	}
	if longest < 0 {
		return
	}
	lt := ps[longest].times
	fmt.Fprintf(w, "gpucc: webgpu: %d pipelines created in %.1f ms by %d workers: %.1f ms of creation in all (%.1f ms of it modules), %.1f ms a worker; longest %s (%d bytes) %.1f ms\n",
		len(ps), ms(wall), workers, ms(sum), ms(module), ms(sum/time.Duration(workers)),
		shaders[longest].label(), len(shaders[longest].WGSL), ms(lt.Module+lt.Pipeline))
}

func (s Shader) label() string {
	if s.Label != "" {
		return s.Label
	}
	return s.Entry
}

// longestFirst orders shaders for the workers, longest source first: the
// longest to compile start first, so that a few long kernels are not
// left to the end of a batch to run alone (a model's compile is bound by
// its longest kernels once there are as many workers as cores: ViT's
// attention rows on the H200). Source length stands in for compile time.
func longestFirst(shaders []Shader) []int {
	order := make([]int, len(shaders))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(shaders[b].WGSL) - len(shaders[a].WGSL) })
	return order
}

// checkShader checks s against the device's binding limits.
func (d *Device) checkShader(op string, s Shader) error {
	if strings.TrimSpace(s.WGSL) == "" {
		return errorf(op, "empty WGSL source")
	}
	if strings.IndexByte(s.WGSL, 0) >= 0 {
		return errorf(op, "WGSL source contains a NUL byte")
	}
	if s.Entry == "" {
		return errorf(op, "empty entry point name")
	}
	var nStorage, nUniform uint32
	for i, k := range s.Bindings {
		switch k {
		case ReadOnlyStorage, Storage:
			nStorage++
		case Uniform:
			nUniform++
		default:
			return errorf(op, "binding %d: invalid kind %v", i, k)
		}
	}
	if uint32(len(s.Bindings)) > d.lim.MaxBindingsPerBindGroup {
		return errorf(op, "%d bindings > MaxBindingsPerBindGroup %d: %w", len(s.Bindings), d.lim.MaxBindingsPerBindGroup, ErrLimit)
	}
	if nStorage > d.lim.MaxStorageBuffersPerShaderStage {
		return errorf(op, "%d storage bindings > MaxStorageBuffersPerShaderStage %d of %s: %w", nStorage, d.lim.MaxStorageBuffersPerShaderStage, d.info.Name, ErrLimit)
	}
	if nUniform > d.lim.MaxUniformBuffersPerShaderStage {
		return errorf(op, "%d uniform bindings > MaxUniformBuffersPerShaderStage %d: %w", nUniform, d.lim.MaxUniformBuffersPerShaderStage, ErrLimit)
	}
	return nil
}

// create makes s's module, layouts and pipeline. It takes no lock: the
// caller holds d.life for reading.
func (d *Device) create(op string, s Shader, batch time.Time) (*Pipeline, error) {
	wgsl, entry, bindings := s.WGSL, s.Entry, s.Bindings
	p := &Pipeline{d: d, kinds: append([]BindingKind(nil), bindings...), entry: entry, id: nextID.Add(1)}
	t0 := time.Now()
	p.times.Start = t0.Sub(batch)
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
	t1 := time.Now()
	p.times.Module = t1.Sub(t0)
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
	p.times.Pipeline = time.Since(t1)
	return p, nil
}
