//go:build cgo && !js

package webgpu

import (
	"encoding/binary"
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// typedProgram is a typed graph compiled for a device, node by node: one
// WGSL kernel (wgsl.TypedNode) per node that is not an input, each
// writing its node's own storage at its dtype's width, and the fault
// words the kernels set.
type typedProgram struct {
	g      *ir.Graph
	mode   wgsl.FaultMode
	pipes  []*gpu.Pipeline // by node; nil for an input
	params []*gpu.Buffer
	groups [][3]uint32
}

// compileTyped generates and compiles the kernels of the validated typed
// graph g: an op or dtype the WGSL typed path does not hold is refused
// with unsupported, naming the node, before anything is compiled.
func compileTyped(dev *gpu.Device, g *ir.Graph, mode wgsl.FaultMode) (*typedProgram, error) {
	p := &typedProgram{g: g, mode: mode, pipes: make([]*gpu.Pipeline, len(g.Nodes)),
		params: make([]*gpu.Buffer, len(g.Nodes)), groups: make([][3]uint32, len(g.Nodes))}
	var shaders []gpu.Shader
	var ids []int
	var params [][]byte
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			continue
		}
		s, err := wgsl.TypedNode(g, i, mode)
		if err != nil {
			return nil, err
		}
		kinds := make([]gpu.BindingKind, len(s.Bindings))
		for j, k := range s.Bindings {
			kinds[j] = map[codegen.BindingKind]gpu.BindingKind{codegen.ReadOnly: gpu.ReadOnlyStorage,
				codegen.ReadWrite: gpu.Storage, codegen.Uniform: gpu.Uniform}[k]
		}
		shaders = append(shaders, gpu.Shader{WGSL: s.Source, Entry: s.Entry, Bindings: kinds})
		ids = append(ids, i)
		params = append(params, s.Params)
		p.groups[i] = [3]uint32{uint32(s.Groups[0]), uint32(s.Groups[1]), uint32(s.Groups[2])}
	}
	pipes, err := dev.CompileAll(shaders)
	if err != nil {
		return nil, err
	}
	for k, i := range ids {
		p.pipes[i] = pipes[k]
		if p.params[i], err = dev.NewUniform(params[k], fmt.Sprintf("typed node %d params", i)); err != nil {
			p.release()
			return nil, err
		}
	}
	return p, nil
}

// release releases the program's pipelines and parameter blocks.
func (p *typedProgram) release() {
	for i := range p.pipes {
		if p.pipes[i] != nil {
			p.pipes[i].Release()
			p.pipes[i] = nil
		}
		if p.params[i] != nil {
			p.params[i].Release()
			p.params[i] = nil
		}
	}
}

// typedRun is what one run gives: the values of the nodes asked for, and
// the fault words (one per node, or per element of the node for
// wgsl.FaultPerElement).
type typedRun struct {
	vals   map[int]cpuref.Value
	faults []uint32
}

// run uploads the inputs' values (the graph's own, or in's by node id),
// runs every kernel in node order in one submission and reads back the
// fault words and the nodes of read.
func (p *typedProgram) run(dev *gpu.Device, in map[int]cpuref.Value, read []int) (*typedRun, error) {
	g := p.g
	bufs := make([]*gpu.Buffer, len(g.Nodes))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}()
	nf := len(g.Nodes)
	if p.mode == wgsl.FaultPerElement {
		nf = 1
		for _, n := range g.Nodes {
			nf = max(nf, n.Shape.Len())
		}
	}
	fault, err := dev.NewBuffer(uint64(4*nf), "typed faults")
	if err != nil {
		return nil, err
	}
	defer fault.Release()
	if err := dev.UploadBytes(fault, make([]byte, 4*nf)); err != nil {
		return nil, err
	}
	for i, n := range g.Nodes {
		if bufs[i], err = dev.NewBuffer(uint64(4*wgsl.TypedWords(n.DType, n.Shape.Len())), fmt.Sprintf("typed node %d", i)); err != nil {
			return nil, err
		}
		if n.Op != ir.OpInput {
			continue
		}
		v, ok := in[i]
		if !ok {
			v = cpuref.Value{DType: n.DType, F: n.Data, I: n.Ints}
		}
		if err := dev.UploadBytes(bufs[i], wgsl.PackTyped(v)); err != nil {
			return nil, err
		}
	}
	var ds []gpu.Dispatch
	for i, n := range g.Nodes {
		if p.pipes[i] == nil {
			continue
		}
		var bs []*gpu.Buffer
		seen := map[ir.NodeID]bool{}
		for _, a := range n.Args { // distinct operands, in order of first use (wgsl.TypedNode's bindings)
			if !seen[a] {
				seen[a] = true
				bs = append(bs, bufs[a])
			}
		}
		bs = append(bs, bufs[i], fault, p.params[i])
		ds = append(ds, gpu.Dispatch{Pipeline: p.pipes[i], Buffers: bs, Groups: p.groups[i]})
	}
	if err := dev.Run(ds); err != nil {
		return nil, err
	}
	r := &typedRun{vals: map[int]cpuref.Value{}, faults: make([]uint32, nf)}
	raw := make([]byte, 4*nf)
	if err := dev.ReadBytes(fault, raw); err != nil {
		return nil, err
	}
	for k := range r.faults {
		r.faults[k] = binary.LittleEndian.Uint32(raw[4*k:])
	}
	for _, i := range read {
		n := g.Nodes[i]
		raw := make([]byte, bufs[i].Size())
		if err := dev.ReadBytes(bufs[i], raw); err != nil {
			return nil, err
		}
		r.vals[i] = wgsl.UnpackTyped(n.DType, n.Shape.Len(), raw)
	}
	return r, nil
}

// typedFault returns the error of a run whose fault words are faults
// (wgsl.FaultPerNode): the first node in order that faulted, as cpuref
// fails at it, or nil.
func typedFault(g *ir.Graph, faults []uint32) error {
	for i, f := range faults {
		switch f {
		case 0:
			continue
		case wgsl.FaultIndex:
			return ir.Errorf(ir.CodeInvalidInput, i, "b", "%v: an index is outside its axis (webgpu)", g.Nodes[i].Op)
		default:
			return ir.Errorf(ir.CodeIntegerFault, i, "", "%v of %v: an element has no right answer (an integer division by zero, or a cast of NaN, ±Inf or a value outside %v's range) (webgpu)",
				g.Nodes[i].Op, g.Nodes[g.Nodes[i].Args[0]].DType, g.Nodes[i].DType)
		}
	}
	return nil
}
