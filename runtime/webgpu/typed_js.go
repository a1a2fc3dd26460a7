//go:build js

package webgpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/jsutil"
)

var _ backend.TypedDevice = (*device)(nil)

// CompileTyped is the native device's (typed.go) on the page's WebGPU: the
// WGSL kernels of each typed node (codegen/wgsl's TypedKernels: one, or a
// linear scatter's three over a scratch buffer), float32 islands compiled
// as float32 programs (typedplan.go).
func (d *device) CompileTyped(ctx context.Context, p *backend.TypedProgram, st *backend.Stats) (backend.TypedExecutable, error) {
	g := p.Graph
	stop := st.Start(backend.StageCodegen)
	plan := planTyped(g, true)
	e := &typedExecutable{d: d, g: g, plan: plan, shaders: make([][]codegen.Shader, len(g.Nodes)),
		pipes: make([][]*pipeline, len(g.Nodes)), params: make([]*wgpu.Buffer, len(g.Nodes)), scratch: make([]int, len(g.Nodes))}
	for _, step := range plan.Steps {
		for _, i := range step.Nodes {
			ks, scratch, err := wgsl.TypedKernels(g, i, wgsl.FaultPerNode)
			if err != nil {
				stop()
				return nil, err
			}
			e.shaders[i], e.scratch[i] = ks, scratch
		}
	}
	stop()
	defer st.Start(backend.StageCompile)()
	allHit := true
	for i, ks := range e.shaders {
		if len(ks) == 0 {
			continue
		}
		for _, s := range ks {
			pipe, hit, err := d.pipeline(s)
			if err != nil {
				e.Release()
				return nil, fail(err)
			}
			e.pipes[i], allHit = append(e.pipes[i], pipe), allHit && hit
		}
		var err error
		if e.params[i], err = d.newBuffer(len(ks[0].Params), wgpu.BufferUsageUniform, ks[0].Params); err != nil {
			e.Release()
			return nil, fail(err)
		}
	}
	st.Hit(backend.CachePipeline, allHit)
	for _, ig := range plan.Islands {
		var isl *floatIsland
		if ig.Graph != nil {
			sp, _, err := passes.Compile(ig.Graph, d.info.Profile.Options(islandLimits))
			if err != nil {
				e.Release()
				return nil, err
			}
			exe, err := d.Compile(ctx, &backend.Program{IR: sp}, st)
			if err != nil {
				e.Release()
				return nil, err
			}
			isl = &floatIsland{exe: exe, prog: sp.Program()}
			isl.inputs, isl.outs = ig.Mapping(isl.prog)
		}
		e.islands = append(e.islands, isl)
	}
	return e, nil
}

type typedExecutable struct {
	d       *device
	g       *ir.Graph
	plan    typedPlan
	shaders [][]codegen.Shader // by node, in dispatch order; none for inputs and island nodes
	pipes   [][]*pipeline
	scratch []int // by node, the words of scratch storage its kernels share (a linear scatter's), zero at creation
	params  []*wgpu.Buffer
	islands []*floatIsland
	// inputs holds, by input node, its storage, kept between runs, and
	// held says it holds the bytes the last run wrote: a run whose
	// TypedCall.Same says they are the same (a model's weights) binds them
	// without writing them again.
	inputs []*wgpu.Buffer
	held   []bool
}

// Kernels is the kernels a run dispatches: one per typed node, and each
// island's (backend.KernelCounter).
func (e *typedExecutable) Kernels() int {
	n := 0
	for _, ks := range e.shaders {
		n += len(ks)
	}
	for _, isl := range e.islands {
		if isl != nil {
			n += len(isl.prog.Kernels)
		}
	}
	return n
}

func (e *typedExecutable) Release() {
	for i, b := range e.inputs {
		if b != nil {
			b.Destroy()
			e.inputs[i] = nil
		}
	}
	for i, b := range e.params {
		if b != nil {
			b.Destroy()
			e.params[i] = nil
		}
	}
	for _, isl := range e.islands {
		if isl != nil {
			isl.exe.Release()
		}
	}
	e.islands = nil
}

// RunTyped uploads the inputs into their storage buffers (each node's at
// its dtype's width, in whole words; kept between runs, and not written
// again where cl.Same says a run gives the bytes of the last), runs the
// steps in order, reads the fault words (one per node) and, when no node
// faulted, the outputs; the run's other buffers are destroyed afterwards.
func (e *typedExecutable) RunTyped(ctx context.Context, cl *backend.TypedCall) error {
	d, g, st := e.d, e.g, cl.Stats
	bufs := make([]*wgpu.Buffer, len(g.Nodes))
	var own []*wgpu.Buffer
	defer func() {
		for _, b := range own {
			b.Destroy()
		}
	}()
	var fault error
	err := d.scoped("typed run", func() error {
		stop := st.Start(backend.StageUpload)
		faults, err := d.newBuffer(4*len(g.Nodes), storage, make([]byte, 4*len(g.Nodes)))
		if err != nil {
			stop()
			return err
		}
		own = append(own, faults)
		if e.inputs == nil {
			e.inputs, e.held = make([]*wgpu.Buffer, len(g.Nodes)), make([]bool, len(g.Nodes))
		}
		for i, n := range g.Nodes {
			if e.plan.Island[i] {
				continue
			}
			if n.Op == ir.OpInput {
				if err := e.input(i, cl); err != nil {
					stop()
					return err
				}
				bufs[i] = e.inputs[i]
				continue
			}
			if bufs[i], err = d.newBuffer(4*wgsl.TypedWords(n.DType, n.Shape.Len()), storage, nil); err != nil {
				stop()
				return err
			}
			own = append(own, bufs[i])
		}
		stop()
		st.FirstDispatch = true
		for _, step := range e.plan.Steps {
			if err := ctx.Err(); err != nil {
				return err
			}
			if step.Island >= 0 {
				if isl := e.islands[step.Island]; isl != nil {
					if err := e.runIsland(ctx, isl, bufs, &own, st); err != nil {
						return err
					}
				}
				continue
			}
			if err := e.dispatch(step.Nodes, bufs, faults, &own, st); err != nil {
				return err
			}
		}
		words, err := d.readWords(faults, len(g.Nodes))
		if err != nil {
			return err
		}
		if fault = typedFault(words); fault != nil {
			return nil
		}
		defer st.Start(backend.StageReadback)()
		cl.Outputs = make([][]byte, len(g.Outputs))
		for k, o := range g.Outputs {
			n := g.Nodes[o.ID]
			w, err := d.readWords(bufs[o.ID], wgsl.TypedWords(n.DType, n.Shape.Len()))
			if err != nil {
				return err
			}
			b := make([]byte, 4*len(w))
			for j, x := range w {
				binary.LittleEndian.PutUint32(b[4*j:], x)
			}
			cl.Outputs[k] = b[:n.Shape.Len()*n.DType.Size()]
			st.ReadbackBytes += int64(len(cl.Outputs[k]))
		}
		return nil
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fail(err)
	}
	return fault
}

// input writes input node i's value into its storage, unless cl.Same
// says the storage holds it already.
func (e *typedExecutable) input(i int, cl *backend.TypedCall) error {
	n := e.g.Nodes[i]
	size := n.Shape.Len() * n.DType.Size()
	if i >= len(cl.Inputs) || len(cl.Inputs[i]) != size {
		return fmt.Errorf("node %d: the input holds %d bytes, %v %v needs %d", i, len(inputAt(cl.Inputs, i)), n.DType, n.Shape, size)
	}
	words := 4 * wgsl.TypedWords(n.DType, n.Shape.Len())
	if e.inputs[i] == nil {
		buf, err := e.d.newBuffer(words, storage, nil)
		if err != nil {
			return err
		}
		e.inputs[i] = buf
	}
	if e.held[i] && i < len(cl.Same) && cl.Same[i] {
		return nil
	}
	e.held[i] = false
	data := make([]byte, words) // padded to whole words
	copy(data, cl.Inputs[i])
	if err := e.d.write(e.inputs[i], data); err != nil {
		return err
	}
	e.held[i] = true
	cl.Stats.UploadBytes += int64(size)
	return nil
}

// dispatch records the kernels of nodes into one compute pass and waits
// for it; a node's scratch buffer is created for the run (added to own).
func (e *typedExecutable) dispatch(nodes []int, bufs []*wgpu.Buffer, faults *wgpu.Buffer, own *[]*wgpu.Buffer, st *backend.Stats) error {
	d, g := e.d, e.g
	defer st.Start(backend.StageDispatch)()
	enc, err := d.dev.CreateCommandEncoder(&wgpu.CommandEncoderDescriptor{})
	if err != nil {
		return err
	}
	pass := enc.BeginComputePass(&wgpu.ComputePassDescriptor{})
	for _, i := range nodes {
		var entries []wgpu.BindGroupEntry
		bind := func(buf *wgpu.Buffer, size int) {
			entries = append(entries, wgpu.BindGroupEntry{Binding: uint32(len(entries)), Buffer: buf, Size: uint64(size)})
		}
		seen := map[ir.NodeID]bool{}
		for _, a := range g.Nodes[i].Args { // distinct operands, in order of first use (wgsl.TypedNode's bindings)
			if !seen[a] {
				seen[a] = true
				bind(bufs[a], 4*wgsl.TypedWords(g.Nodes[a].DType, g.Nodes[a].Shape.Len()))
			}
		}
		bind(bufs[i], 4*wgsl.TypedWords(g.Nodes[i].DType, g.Nodes[i].Shape.Len()))
		bind(faults, 4*len(g.Nodes))
		bind(e.params[i], len(e.shaders[i][0].Params))
		if w := e.scratch[i]; w > 0 { // WebGPU zeroes a new buffer, as the kernels need
			buf, err := d.newBuffer(4*w, storage, nil)
			if err != nil {
				return err
			}
			*own = append(*own, buf)
			bind(buf, 4*w)
		}
		for k, s := range e.shaders[i] {
			bg, err := d.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: e.pipes[i][k].layout, Entries: entries})
			if err != nil {
				return err
			}
			gr := s.Groups
			pass.SetPipeline(e.pipes[i][k].pipe)
			pass.SetBindGroup(0, bg, nil)
			pass.DispatchWorkgroups(uint32(gr[0]), uint32(gr[1]), uint32(gr[2]))
		}
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

// runIsland runs a float32 island on the nodes' buffers, its outputs kept
// as the nodes' buffers for the rest of the run (added to own).
func (e *typedExecutable) runIsland(ctx context.Context, isl *floatIsland, bufs []*wgpu.Buffer, own *[]*wgpu.Buffer, st *backend.Stats) error {
	p := isl.prog
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: st, NonFinite: true}
	for b, i := range isl.inputs {
		if i >= 0 {
			call.Args[b].Buf = &buffer{buf: bufs[i], n: p.Buffers[b].Len}
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
			bufs[i] = call.Dests[k].Buf.(*buffer).buf
			*own = append(*own, bufs[i])
		case o.Buffer < 0: // folded: the constant over the shape
			data := make([]float32, max(o.Shape.Len(), 1))
			for j := range data {
				data[j] = o.Const
			}
			buf, err := e.d.newBuffer(4*len(data), storage, f32Bytes(data))
			if err != nil {
				return err
			}
			bufs[i] = buf
			*own = append(*own, buf)
		case p.Buffers[o.Buffer].Input: // the node is an input's value, unchanged
			bufs[i] = bufs[isl.inputs[o.Buffer]]
		}
	}
	for k, o := range p.Outputs { // another output's buffer, now that it is set
		if o.Buffer >= 0 && !p.Buffers[o.Buffer].Input && !call.Dests[k].Keep {
			bufs[isl.outs[k]] = bufs[isl.outs[kept[o.Buffer]]]
		}
	}
	return nil
}

// readWords reads the first n u32 words of buf.
func (d *device) readWords(buf *wgpu.Buffer, n int) ([]uint32, error) {
	f := make([]float32, n)
	if err := d.read(buf, f); err != nil {
		return nil, err
	}
	w := make([]uint32, n)
	for k, v := range f {
		w[k] = math.Float32bits(v) // a copy of the bytes: read moves no value through float arithmetic
	}
	return w, nil
}
