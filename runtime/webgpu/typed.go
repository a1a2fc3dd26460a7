//go:build cgo && !js

package webgpu

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
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
		params: make([]*gpu.Buffer, len(g.Nodes)), groups: make([][3]uint32, len(g.Nodes)), island: make([]bool, len(g.Nodes))}
	var shaders []codegen.Shader
	var ids []int
	var islands [][]int
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			continue
		}
		if mode == wgsl.FaultPerNode && floatNode(g, i) { // a run of float32 nodes: one island
			if len(e.steps) == 0 || e.steps[len(e.steps)-1].island < 0 {
				e.steps = append(e.steps, typedStep{island: len(islands)})
				islands = append(islands, nil)
			}
			islands[len(islands)-1] = append(islands[len(islands)-1], i)
			e.island[i] = true
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
		if len(e.steps) == 0 || e.steps[len(e.steps)-1].island >= 0 {
			e.steps = append(e.steps, typedStep{island: -1})
		}
		e.steps[len(e.steps)-1].nodes = append(e.steps[len(e.steps)-1].nodes, i)
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
	for _, nodes := range islands {
		isl, err := d.compileIsland(ctx, g, nodes, st)
		if err != nil {
			e.Release()
			return nil, err
		}
		e.islands = append(e.islands, isl)
	}
	return e, nil
}

// floatNode reports whether node i of g is float32 over float32 operands
// with a float32 kernel (cpuref computes it by Eval's rule): the compiled
// float32 path runs it, fused with its neighbours, in an island.
func floatNode(g *ir.Graph, i int) bool {
	n := &g.Nodes[i]
	if n.DType != ir.F32 || n.Op.Info().Typed || n.Op == ir.OpInput {
		return false
	}
	for _, a := range n.Args {
		if g.Nodes[a].DType != ir.F32 {
			return false
		}
	}
	return true
}

// typedStep is a stretch of a typed run: typed nodes' kernels dispatched
// together (island < 0), or float32 island number island.
type typedStep struct {
	nodes  []int
	island int
}

// floatIsland is a run of float32 nodes of a typed graph compiled as a
// float32 program of its own (passes.Compile, the WGSL kernels every
// float32 graph gets), reading the nodes before it as its inputs.
type floatIsland struct {
	exe    backend.Executable
	prog   *ir.Program
	inputs []int // by program buffer: the graph node an input buffer holds, else -1
	outs   []int // by program output: the graph node it is
}

// islandLimits bound an island's program: the whole graph was validated
// under the Runtime's limits already.
var islandLimits = ir.Limits{MaxNodes: 1 << 30, MaxElements: 1 << 40, MaxStorageBytes: 1 << 50, MaxOps: 1 << 60,
	MaxKernelOps: 1 << 40, MaxOutputs: 1 << 30, MaxAttrValues: 1 << 30, NonFinite: true}

// compileIsland compiles the float32 nodes of g as one program: their
// operands from outside become its inputs, and each node that a later
// node or a graph output reads becomes its output; nil when none is read.
func (d *device) compileIsland(ctx context.Context, g *ir.Graph, nodes []int, st *backend.Stats) (*floatIsland, error) {
	in := map[int]bool{}
	for _, i := range nodes {
		in[i] = true
	}
	used := map[int]bool{}
	for j, n := range g.Nodes {
		for _, a := range n.Args {
			if !in[j] {
				used[int(a)] = true
			}
		}
	}
	for _, o := range g.Outputs {
		used[int(o.ID)] = true
	}
	ig := &ir.Graph{}
	at := map[int]ir.NodeID{}  // graph node -> island node
	ext := map[ir.NodeID]int{} // island input node -> the graph node it holds
	for _, i := range nodes {
		n := g.Nodes[i]
		args := make([]ir.NodeID, len(n.Args))
		for k, a := range n.Args {
			if _, ok := at[int(a)]; !ok {
				an := g.Nodes[a]
				at[int(a)] = ir.NodeID(len(ig.Nodes))
				ig.Nodes = append(ig.Nodes, ir.Node{Op: ir.OpInput, Shape: an.Shape, Data: make([]float32, an.Shape.Len()), Name: fmt.Sprintf("x%d", a)})
				ext[at[int(a)]] = int(a)
			}
			args[k] = at[int(a)]
		}
		n.Args = args
		at[i] = ir.NodeID(len(ig.Nodes))
		ig.Nodes = append(ig.Nodes, n)
	}
	var outs []int
	for _, i := range nodes {
		if used[i] {
			ig.Outputs = append(ig.Outputs, ir.Output{Name: fmt.Sprintf("y%d", i), ID: at[i]})
			outs = append(outs, i)
		}
	}
	if len(outs) == 0 { // nothing reads it
		return nil, nil
	}
	o := d.info.Profile.Options(islandLimits)
	o.TileFor = d.TileFor(false)
	sp, _, err := passes.Compile(ig, o)
	if err != nil {
		return nil, err
	}
	exe, err := d.Compile(ctx, &backend.Program{IR: sp}, st)
	if err != nil {
		return nil, err
	}
	isl := &floatIsland{exe: exe, prog: sp.Program()}
	isl.inputs = make([]int, len(isl.prog.Buffers))
	for b, pb := range isl.prog.Buffers {
		isl.inputs[b] = -1
		if pb.Input {
			isl.inputs[b] = ext[pb.Node]
		}
	}
	byName := map[string]int{}
	for k, i := range outs {
		byName[ig.Outputs[k].Name] = i
	}
	for _, po := range isl.prog.Outputs {
		isl.outs = append(isl.outs, byName[po.Name])
	}
	return isl, nil
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
	bufs   []*gpu.Buffer // by node, from the first run (a float island's nodes: during a run)
	fault  *gpu.Buffer
	nf     int // fault words
	// steps are the run in order: typed kernels and float32 islands
	// (island[i]: node i is computed by one).
	steps   []typedStep
	islands []*floatIsland
	island  []bool
	runOwn  []*gpu.Buffer // the islands' outputs of the run under way
}

func (e *typedExecutable) Release() {
	e.endRun()
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
	for _, isl := range e.islands {
		if isl != nil {
			isl.exe.Release()
		}
	}
	e.islands = nil
	e.endRun()
	e.byNode = nil
}

// endRun returns the buffers of the islands' outputs of the last run.
func (e *typedExecutable) endRun() {
	for _, b := range e.runOwn {
		e.d.pool.put(b)
	}
	e.runOwn = nil
	for i, isl := range e.island {
		if isl && e.bufs != nil {
			e.bufs[i] = nil
		}
	}
}

// RunTyped uploads the inputs, runs every node's kernel in graph order in
// one submission, reads the fault words and, when no node faulted, the
// outputs.
func (e *typedExecutable) RunTyped(ctx context.Context, cl *backend.TypedCall) error {
	defer e.endRun()
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
			if e.island[i] {
				continue
			}
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
	for _, step := range e.steps {
		if step.island >= 0 {
			if e.islands[step.island] == nil {
				continue
			}
			if err := e.runIsland(ctx, e.islands[step.island], st); err != nil {
				return nil, err
			}
			continue
		}
		var ds []gpu.Dispatch
		for _, i := range step.nodes {
			var bs []*gpu.Buffer
			seen := map[ir.NodeID]bool{}
			for _, a := range g.Nodes[i].Args { // distinct operands, in order of first use (wgsl.TypedNode's bindings)
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

// runIsland runs a float32 island on the nodes' buffers: its inputs are
// the buffers of the graph nodes it reads, its outputs new buffers (or an
// input's, or a constant's) that become the nodes' for the rest of the run.
func (e *typedExecutable) runIsland(ctx context.Context, isl *floatIsland, st *backend.Stats) error {
	p := isl.prog
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: st, NonFinite: true}
	for b, i := range isl.inputs {
		if i >= 0 {
			call.Args[b].Buf = &buffer{d: e.d, buf: e.bufs[i], n: p.Buffers[b].Len}
		}
	}
	kept := map[int]int{} // program buffer -> the output that keeps it
	for k, o := range p.Outputs {
		if _, ok := kept[o.Buffer]; o.Buffer >= 0 && !p.Buffers[o.Buffer].Input && !ok {
			call.Dests[k].Keep = true
			kept[o.Buffer] = k
		}
	}
	if err := isl.exe.Run(ctx, call); err != nil {
		return err
	}
	for k, o := range p.Outputs {
		i := isl.outs[k]
		switch {
		case call.Dests[k].Keep:
			buf := call.Dests[k].Buf.(*buffer).buf
			e.runOwn = append(e.runOwn, buf)
			e.bufs[i] = buf
		case o.Buffer < 0: // folded: the constant over the shape
			n := o.Shape.Len()
			buf, _, err := e.d.pool.get(uint64(4*max(n, 1)), fmt.Sprintf("typed node %d", i))
			if err != nil {
				return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
			}
			e.runOwn = append(e.runOwn, buf)
			data := make([]float32, max(n, 1))
			for j := range data {
				data[j] = o.Const
			}
			if err := e.d.dev.Upload(buf, data); err != nil {
				return &backend.Error{Code: ir.CodeExecutionFailed, Backend: "webgpu", Err: err}
			}
			e.bufs[i] = buf
		case p.Buffers[o.Buffer].Input: // the node is an input's value, unchanged
			e.bufs[i] = e.bufs[isl.inputs[o.Buffer]]
		}
	}
	for k, o := range p.Outputs { // another output's buffer, now that it is set
		if o.Buffer >= 0 && !p.Buffers[o.Buffer].Input && !call.Dests[k].Keep {
			e.bufs[isl.outs[k]] = e.bufs[isl.outs[kept[o.Buffer]]]
		}
	}
	return nil
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
