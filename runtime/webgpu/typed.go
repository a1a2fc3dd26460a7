//go:build cgo && !js

package webgpu

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/gpu"
)

var _ backend.TypedDevice = (*device)(nil)

// CompileTyped generates one WGSL kernel per node of the typed graph that
// is not an input (codegen/wgsl's TypedNode: each node into its own
// storage at its dtype's width, a fault word per node) and obtains their
// pipelines through the device's pipeline cache, as Compile does. An op
// or dtype the WGSL typed path does not hold is unsupported, naming the
// node, before anything is compiled.
func (d *device) CompileTyped(ctx context.Context, p *backend.TypedProgram, st *backend.Stats) (backend.TypedExecutable, error) {
	return d.compileTyped(ctx, p.Graph, wgsl.FaultPerNode, st)
}

func (d *device) compileTyped(ctx context.Context, g *ir.Graph, mode wgsl.FaultMode, st *backend.Stats) (*typedExecutable, error) {
	stop := st.Start(backend.StageCodegen)
	e := &typedExecutable{d: d, g: g, mode: mode, byNode: make([]*gpu.Pipeline, len(g.Nodes)),
		params: make([]*gpu.Buffer, len(g.Nodes)), groups: make([][3]uint32, len(g.Nodes))}
	var shaders []codegen.Shader
	var ids []int
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			continue
		}
		s, err := wgsl.TypedNode(g, i, mode)
		if err != nil {
			stop()
			return nil, err
		}
		shaders = append(shaders, s)
		ids = append(ids, i)
		e.groups[i] = [3]uint32{uint32(s.Groups[0]), uint32(s.Groups[1]), uint32(s.Groups[2])}
	}
	stop()
	defer st.Start(backend.StageCompile)()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(err error) error {
		return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
	}
	pipes, allHit, err := d.acquire(shaders)
	if err != nil {
		return nil, fail(err)
	}
	e.pipes = pipes
	st.Hit(backend.CachePipeline, allHit)
	for k, i := range ids {
		e.byNode[i] = pipes[k].p
		if e.params[i], err = d.dev.NewUniform(shaders[k].Params, fmt.Sprintf("typed node %d params", i)); err != nil {
			e.Release()
			return nil, fail(err)
		}
	}
	return e, nil
}

// typedExecutable is a typed graph compiled for the device: a pipeline
// and a parameter block per node that is not an input, and, from the first
// run on, each node's storage and the fault words.
type typedExecutable struct {
	d      *device
	g      *ir.Graph
	mode   wgsl.FaultMode
	pipes  []*pipeline     // the references acquire took
	byNode []*gpu.Pipeline // by node; nil for an input
	params []*gpu.Buffer
	groups [][3]uint32
	bufs   []*gpu.Buffer // by node, from the first run
	fault  *gpu.Buffer
	nf     int // fault words
}

func (e *typedExecutable) Release() {
	if e.pipes != nil {
		e.d.unref(e.pipes)
		e.pipes = nil
	}
	for i := range e.params {
		if e.params[i] != nil {
			e.params[i].Release()
			e.params[i] = nil
		}
	}
	for i, b := range e.bufs {
		if b != nil {
			e.d.pool.put(b)
			e.bufs[i] = nil
		}
	}
	if e.fault != nil {
		e.d.pool.put(e.fault)
		e.fault = nil
	}
	e.byNode = nil
}

// RunTyped uploads the inputs, runs every node's kernel in graph order in
// one submission, reads the fault words and, when no node faulted, the
// outputs.
func (e *typedExecutable) RunTyped(ctx context.Context, cl *backend.TypedCall) error {
	faults, err := e.dispatch(ctx, cl.Inputs, cl.Stats)
	if err != nil {
		return err
	}
	if err := typedFault(faults); err != nil {
		return err
	}
	defer cl.Stats.Start(backend.StageReadback)()
	cl.Outputs = make([][]byte, len(e.g.Outputs))
	for k, o := range e.g.Outputs {
		if cl.Outputs[k], err = e.read(int(o.ID)); err != nil {
			return err
		}
		cl.Stats.ReadbackBytes += int64(len(cl.Outputs[k]))
	}
	return nil
}

// dispatch uploads inputs (by node, TypedBytes' layout), runs the kernels
// and returns the fault words: one per node, or, for wgsl.FaultPerElement,
// one per element of the largest node.
func (e *typedExecutable) dispatch(ctx context.Context, inputs [][]byte, st *backend.Stats) ([]uint32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e.byNode == nil {
		return nil, &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: fmt.Errorf("the typed executable was released")}
	}
	fail := func(err error) error {
		return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
	}
	g := e.g
	stop := st.Start(backend.StageUpload)
	if e.bufs == nil {
		e.nf = len(g.Nodes)
		if e.mode == wgsl.FaultPerElement {
			for _, n := range g.Nodes {
				e.nf = max(e.nf, n.Shape.Len())
			}
		}
		e.bufs = make([]*gpu.Buffer, len(g.Nodes))
		var err error
		if e.fault, _, err = e.d.pool.get(uint64(4*e.nf), "typed faults"); err != nil {
			stop()
			return nil, fail(err)
		}
		for i, n := range g.Nodes {
			if e.bufs[i], _, err = e.d.pool.get(uint64(4*wgsl.TypedWords(n.DType, n.Shape.Len())), fmt.Sprintf("typed node %d", i)); err != nil {
				stop()
				return nil, fail(err)
			}
		}
		st.FirstDispatch = true
	}
	if err := e.d.dev.UploadBytes(e.fault, make([]byte, 4*e.nf)); err != nil {
		stop()
		return nil, fail(err)
	}
	for i, n := range g.Nodes {
		if n.Op != ir.OpInput {
			continue
		}
		size := n.Shape.Len() * n.DType.Size()
		if i >= len(inputs) || len(inputs[i]) != size {
			stop()
			return nil, fail(fmt.Errorf("node %d: the input holds %d bytes, %v %v needs %d", i, len(inputs[i]), n.DType, n.Shape, size))
		}
		words := make([]byte, 4*wgsl.TypedWords(n.DType, n.Shape.Len())) // padded to whole words
		copy(words, inputs[i])
		if err := e.d.dev.UploadBytes(e.bufs[i], words); err != nil {
			stop()
			return nil, fail(err)
		}
		st.UploadBytes += int64(size)
	}
	stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ds []gpu.Dispatch
	for i, n := range g.Nodes {
		if e.byNode[i] == nil {
			continue
		}
		var bs []*gpu.Buffer
		seen := map[ir.NodeID]bool{}
		for _, a := range n.Args { // distinct operands, in order of first use (wgsl.TypedNode's bindings)
			if !seen[a] {
				seen[a] = true
				bs = append(bs, e.bufs[a])
			}
		}
		bs = append(bs, e.bufs[i], e.fault, e.params[i])
		ds = append(ds, gpu.Dispatch{Pipeline: e.byNode[i], Buffers: bs, Groups: e.groups[i]})
	}
	stop = st.Start(backend.StageDispatch)
	err := e.d.dev.Run(ds)
	stop()
	if err != nil {
		return nil, fail(err)
	}
	raw := make([]byte, 4*e.nf)
	if err := e.d.dev.ReadBytes(e.fault, raw); err != nil {
		return nil, fail(err)
	}
	faults := make([]uint32, e.nf)
	for k := range faults {
		faults[k] = binary.LittleEndian.Uint32(raw[4*k:])
	}
	return faults, nil
}

// read returns node i's value in TypedBytes' layout (its storage less the
// padding of its last word).
func (e *typedExecutable) read(i int) ([]byte, error) {
	n := e.g.Nodes[i]
	raw := make([]byte, 4*wgsl.TypedWords(n.DType, n.Shape.Len()))
	if err := e.d.dev.ReadBytes(e.bufs[i], raw); err != nil {
		return nil, &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
	}
	return raw[:n.Shape.Len()*n.DType.Size()], nil
}

// typedFault returns the *backend.TypedFault of fault words one per node
// (wgsl.FaultPerNode): the first node in graph order that faulted, as
// the reference stops at it, or nil.
func typedFault(faults []uint32) error {
	for i, f := range faults {
		switch f {
		case 0:
		case wgsl.FaultInteger:
			return &backend.TypedFault{Code: ir.CodeIntegerFault, Node: i}
		case wgsl.FaultIndex:
			return &backend.TypedFault{Code: ir.CodeInvalidInput, Node: i}
		default:
			return &backend.Error{Code: ir.CodeInternal, Backend: "webgpu", Err: fmt.Errorf("a typed kernel set fault %d at node %d", f, i)}
		}
	}
	return nil
}
