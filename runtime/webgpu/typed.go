//go:build cgo && !js

package webgpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"time"

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
	e := &typedExecutable{d: d, g: g, mode: mode, byNode: make([][]*gpu.Pipeline, len(g.Nodes)),
		params: make([]*gpu.Buffer, len(g.Nodes)), groups: make([][][3]uint32, len(g.Nodes)), scratchWords: make([]int, len(g.Nodes))}
	plan := planTyped(g, mode == wgsl.FaultPerNode)
	e.steps, e.island = plan.Steps, plan.Island
	var shaders []codegen.Shader
	var ids []int
	var inPlace []bool // by shader: a donated scatter's kernel (wgsl.ScatterInPlace)
	readers := make([]int, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			readers[a]++
		}
	}
	for _, o := range g.Outputs {
		readers[o.ID]++
	}
	groupsOf := func(s codegen.Shader) [3]uint32 {
		return [3]uint32{uint32(s.Groups[0]), uint32(s.Groups[1]), uint32(s.Groups[2])}
	}
	for _, step := range plan.Steps {
		for _, i := range step.Nodes {
			ks, scratch, err := wgsl.TypedKernels(g, i, mode)
			if err != nil {
				stop()
				return nil, err
			}
			for _, s := range ks {
				shaders, ids, inPlace = append(shaders, s), append(ids, i), append(inPlace, false)
				e.groups[i] = append(e.groups[i], groupsOf(s))
			}
			e.scratchWords[i] = scratch
			// A scatter of an input that nothing else reads may run in
			// place where a run donates the input's buffer.
			if n := g.Nodes[i]; mode == wgsl.FaultPerNode && codegen.TypedScatters[n.Op] != nil && g.Nodes[n.Args[0]].Op == ir.OpInput && readers[n.Args[0]] == 1 {
				if ip, err := wgsl.ScatterInPlace(g, i); err == nil {
					if e.inPlace == nil {
						e.inPlace, e.inPlaceGroups = map[int][]*gpu.Pipeline{}, map[int][][3]uint32{}
					}
					e.inPlace[i] = nil
					for _, s := range ip {
						shaders, ids, inPlace = append(shaders, s), append(ids, i), append(inPlace, true)
						e.inPlaceGroups[i] = append(e.inPlaceGroups[i], groupsOf(s))
					}
				}
			}
		}
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
		if inPlace[k] {
			e.inPlace[i] = append(e.inPlace[i], pipes[k].p)
			continue
		}
		e.byNode[i] = append(e.byNode[i], pipes[k].p)
		if e.params[i] != nil { // a node's kernels share its parameters
			continue
		}
		if e.params[i], err = d.dev.NewUniform(shaders[k].Params, fmt.Sprintf("typed node %d params", i)); err != nil {
			e.Release()
			return nil, fail(err)
		}
	}
	for _, ig := range plan.Islands {
		var isl *floatIsland
		if ig.Graph != nil {
			var err error
			if isl, err = d.compileIsland(ctx, ig, st); err != nil {
				e.Release()
				return nil, err
			}
		}
		e.islands = append(e.islands, isl)
	}
	return e, nil
}

// compileIsland compiles island graph ig (islandGraph) with the device's
// profile as a float32 program and maps its buffers to the graph's nodes.
func (d *device) compileIsland(ctx context.Context, ig islandGraph, st *backend.Stats) (*floatIsland, error) {
	o := d.info.Profile.Options(islandLimits)
	o.TileFor = d.TileFor(false)
	sp, _, err := passes.Compile(ig.Graph, o)
	if err != nil {
		return nil, err
	}
	exe, err := d.Compile(ctx, &backend.Program{IR: sp}, st)
	if err != nil {
		return nil, err
	}
	isl := &floatIsland{exe: exe, prog: sp.Program()}
	isl.inputs, isl.outs = ig.Mapping(isl.prog)
	return isl, nil
}

// TypedQueue queues a typed run's steps (its typed stretches and float32
// islands) without a wait between them, so that a run waits once (for
// its fault words) instead of once a step, and reports its dispatch stage
// on the wall clock. On by default (GPUCC_TYPED_QUEUE=off waits a step at
// a time): on the H200 on 2026-12-05 (bench/h200/lead-2026-12-05/final) a
// decoding step of gpt2kv_grow took 0.473 ms queued against 0.585
// waiting, and GPT-2 small's 4.15 against 4.48, the same tokens; on
// lavapipe the two were within the noise (16.3 and 18.1 ms at load 11).
var TypedQueue = os.Getenv("GPUCC_TYPED_QUEUE") != "off"

// typedExecutable is a typed graph compiled for the device: a pipeline
// and a parameter block per node that is not an input, and, from the first
// run on, each node's storage and the fault words.
type typedExecutable struct {
	d      *device
	g      *ir.Graph
	mode   wgsl.FaultMode
	pipes  []*pipeline       // the references acquire took
	byNode [][]*gpu.Pipeline // by node, its kernels in dispatch order (wgsl.TypedKernels); nil for an input
	params []*gpu.Buffer
	groups [][][3]uint32
	// scratchWords is, by node, the scratch storage its kernels share
	// (a linear scatter's), and scratch, from the first run, the buffers:
	// every run leaves them all zero, and scratchDirty says one may not
	// be (a run failed between its kernels) and is zeroed again.
	scratchWords []int
	scratch      []*gpu.Buffer
	scratchDirty bool
	// inPlace holds, by scatter node whose data is an input only it reads,
	// its kernels computed in place (wgsl.ScatterInPlace), which a run
	// donating that input's buffer (TypedCall.Donate) dispatches into
	// it; ownStorage keeps such a node's own storage during that run.
	inPlace       map[int][]*gpu.Pipeline
	inPlaceGroups map[int][][3]uint32
	ownStorage    map[int]*gpu.Buffer
	// written is the bytes the last run's kernels wrote (BytesWritten).
	written int64
	bufs    []*gpu.Buffer // by node, from the first run (a float island's nodes: during a run)
	// held says, by input node, that bufs[i] holds the bytes the last
	// run uploaded for it: a run whose TypedCall.Same says they are the
	// same (a model's weights) binds them without sending them again.
	held []bool
	// swapped holds, by input node, the node's own storage while a
	// device tensor's buffer stands in bufs for the run (TypedCall.Bufs).
	swapped map[int]*gpu.Buffer
	fault   *gpu.Buffer
	nf      int // fault words
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
	for i, b := range e.scratch {
		if b != nil {
			e.d.pool.put(b)
			e.scratch[i] = nil
		}
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

// Kernels is the kernels a run dispatches: each typed node's (one, or a
// linear scatter's three), and each island's (backend.KernelCounter).
func (e *typedExecutable) Kernels() int {
	n := 0
	for _, step := range e.steps {
		for _, i := range step.Nodes {
			n += len(e.byNode[i])
		}
	}
	for _, isl := range e.islands {
		if isl != nil {
			n += len(isl.prog.Kernels)
		}
	}
	return n
}

// endRun returns the buffers of the islands' outputs of the last run, and
// gives the inputs bound to device tensors their own storage back.
func (e *typedExecutable) endRun() {
	for _, b := range e.runOwn {
		e.d.pool.put(b)
	}
	e.runOwn = nil
	for i, b := range e.swapped {
		e.bufs[i] = b
		delete(e.swapped, i)
	}
	for i, b := range e.ownStorage {
		e.bufs[i] = b
		delete(e.ownStorage, i)
	}
	for i, isl := range e.island {
		if isl && e.bufs != nil {
			e.bufs[i] = nil
		}
	}
}

// RunTyped uploads the inputs (binding those given as device buffers
// where they are), runs every node's kernel in graph order in one
// submission, reads the fault words and, when no node faulted, the
// outputs: each one kept (cl.Keep) is handed over as the buffer that holds
// it, where that buffer is the run's own (a typed node's storage, which
// the next run allocates again, or an island's output), and read to the
// host otherwise (an input returned as it is, a buffer kept under another
// name already).
func (e *typedExecutable) RunTyped(ctx context.Context, cl *backend.TypedCall) error {
	defer e.endRun()
	faults, err := e.dispatch(ctx, cl)
	if err != nil {
		return err
	}
	if err := typedFault(faults); err != nil {
		return err
	}
	defer cl.Stats.Start(backend.StageReadback)()
	outs := e.g.Outputs
	give := make([]bool, len(outs))
	given := map[*gpu.Buffer]bool{}
	for k, o := range outs {
		if b := e.bufs[o.ID]; k < len(cl.Keep) && cl.Keep[k] && e.owns(int(o.ID)) && !given[b] {
			give[k], given[b] = true, true
		}
	}
	cl.Outputs = make([][]byte, len(outs))
	for k, o := range outs {
		if give[k] {
			continue
		}
		if cl.Outputs[k], err = e.read(int(o.ID)); err != nil {
			return err
		}
		cl.Stats.ReadbackBytes += int64(len(cl.Outputs[k]))
	}
	for k, o := range outs {
		if give[k] {
			i := int(o.ID)
			n := e.g.Nodes[i]
			if _, ok := e.ownStorage[i]; ok { // the donated buffer, computed in place: the donor's no more
				cl.Bufs[e.g.Nodes[i].Args[0]].(*buffer).buf = nil
			}
			cl.Kept[k] = &buffer{d: e.d, buf: e.handOver(i), n: wgsl.TypedWords(n.DType, n.Shape.Len())}
		}
	}
	return nil
}

// BytesWritten is the bytes the last run's kernels wrote: each typed
// node's output (a scatter computed in place: its updates' elements), a
// linear scatter's scratch words (marked and cleared), and each island's
// program's (passes.ProgramCost).
func (e *typedExecutable) BytesWritten() int64 { return e.written }

// TimesKernels says the executable's runs time each kernel alone when
// asked (backend.TypedKernelTimer): its islands are webgpu executables.
func (e *typedExecutable) TimesKernels() bool { return true }

// writtenBy is what node i's kernels write in a run (BytesWritten), in
// place or not.
func (e *typedExecutable) writtenBy(i int, inPlace bool) int64 {
	n := e.g.Nodes[i]
	out := 4 * int64(wgsl.TypedWords(n.DType, n.Shape.Len()))
	if codegen.TypedScatters[n.Op] == nil {
		return out
	}
	upd := int64(e.g.Nodes[n.Args[1]].Shape.Len())
	w := upd * int64(n.DType.Size())
	if e.scratchWords[i] > 0 { // a mark and a clear an update, at most
		w += 2 * 4 * upd * int64(e.scratchWords[i]/max(1, n.Shape.Len()))
	}
	if !inPlace {
		w += out
	}
	return w
}

// owns reports whether node i's buffer is the run's own to hand over: a
// typed node's storage, or an island's output made by this run (not an
// input's storage or a device tensor that an island passed through).
func (e *typedExecutable) owns(i int) bool {
	if e.g.Nodes[i].Op == ir.OpInput {
		return false
	}
	if !e.island[i] {
		return true
	}
	return slices.Contains(e.runOwn, e.bufs[i])
}

// handOver gives up node i's buffer (owns(i)) to the caller: a typed
// node's storage is allocated again by the next run.
func (e *typedExecutable) handOver(i int) *gpu.Buffer {
	b := e.bufs[i]
	if e.island[i] {
		e.runOwn = slices.DeleteFunc(e.runOwn, func(x *gpu.Buffer) bool { return x == b })
	} else {
		e.bufs[i] = nil
	}
	return b
}

// dispatch uploads inputs (by node, TypedBytes' layout), except those that
// same says are the previous run's (backend.TypedCall.Same) and that the
// node's storage still holds, runs the kernels and returns the fault
// words: one per node, or, for wgsl.FaultPerElement, one per element of
// the largest node. The executable's storage is its own, written only
// by its uploads (no kernel writes an input node's), so what an upload
// put there stays until Release.
func (e *typedExecutable) dispatch(ctx context.Context, cl *backend.TypedCall) ([]uint32, error) {
	inputs, same, st := cl.Inputs, cl.Same, cl.Stats
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
		e.held = make([]bool, len(g.Nodes))
		e.swapped = map[int]*gpu.Buffer{}
		var err error
		if e.fault, _, err = e.d.pool.get(uint64(4*e.nf), "typed faults"); err != nil {
			stop()
			return nil, fail(err)
		}
		e.scratch = make([]*gpu.Buffer, len(g.Nodes))
		for i, w := range e.scratchWords {
			if w == 0 {
				continue
			}
			var err error
			if e.scratch[i], _, err = e.d.pool.get(uint64(4*w), fmt.Sprintf("typed node %d scratch", i)); err != nil {
				stop()
				return nil, fail(err)
			}
		}
		e.scratchDirty = true // a pooled buffer holds what it held
		st.FirstDispatch = true
	}
	if e.scratchDirty {
		for i, b := range e.scratch {
			if b == nil {
				continue
			}
			if err := e.d.dev.UploadBytes(b, make([]byte, 4*e.scratchWords[i])); err != nil {
				stop()
				return nil, fail(err)
			}
		}
		e.scratchDirty = false
	}
	for i, n := range g.Nodes { // every node's storage; a kept output's again
		if e.island[i] || e.bufs[i] != nil {
			continue
		}
		var err error
		if e.bufs[i], _, err = e.d.pool.get(uint64(4*wgsl.TypedWords(n.DType, n.Shape.Len())), fmt.Sprintf("typed node %d", i)); err != nil {
			stop()
			return nil, fail(err)
		}
	}
	if err := e.d.dev.UploadBytes(e.fault, make([]byte, 4*e.nf)); err != nil {
		stop()
		return nil, fail(err)
	}
	for i, n := range g.Nodes {
		if n.Op != ir.OpInput {
			continue
		}
		if i < len(cl.Bufs) && cl.Bufs[i] != nil { // a device tensor, bound where it is
			b, ok := cl.Bufs[i].(*buffer)
			if !ok || b.d != e.d || b.buf == nil || b.n != wgsl.TypedWords(n.DType, n.Shape.Len()) {
				stop()
				return nil, fail(fmt.Errorf("node %d: %T is not a live buffer of this device holding %v %v", i, cl.Bufs[i], n.DType, n.Shape))
			}
			e.swapped[i], e.bufs[i] = e.bufs[i], b.buf
			continue
		}
		size := n.Shape.Len() * n.DType.Size()
		if i >= len(inputs) || len(inputs[i]) != size {
			stop()
			return nil, fail(fmt.Errorf("node %d: the input holds %d bytes, %v %v needs %d", i, len(inputAt(inputs, i)), n.DType, n.Shape, size))
		}
		if e.held[i] && i < len(same) && same[i] { // the previous run's bytes, still in the node's storage
			continue
		}
		e.held[i] = false
		words := make([]byte, 4*wgsl.TypedWords(n.DType, n.Shape.Len())) // padded to whole words
		copy(words, inputs[i])
		if err := e.d.dev.UploadBytes(e.bufs[i], words); err != nil {
			stop()
			return nil, fail(err)
		}
		e.held[i] = true
		st.UploadBytes += int64(size)
	}
	stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range e.inPlace { // a donated input's scatter: its storage is the input's buffer
		a := int(g.Nodes[i].Args[0])
		if _, bound := e.swapped[a]; bound && a < len(cl.Donate) && cl.Donate[a] {
			if e.ownStorage == nil {
				e.ownStorage = map[int]*gpu.Buffer{}
			}
			e.ownStorage[i], e.bufs[i] = e.bufs[i], e.bufs[a]
		}
	}
	e.written = 0
	// With TypedQueue, every step but a lone one is queued without a
	// wait (typed stretches by Submit, islands by their RunQueued): the
	// queue runs them in order, and the read of the fault words below
	// waits for them all, one wait a run where each step waits for its
	// own (4 a decoding step of gpt2kv_grow, 8 with its scatter cache).
	// The dispatch stage is then the wall time from the first submission
	// to the end of that wait. Otherwise each step is timed on the GPU's
	// clock.
	queued := TypedQueue && len(e.steps) > 1 && !cl.KernelTimes
	begin, staged := time.Now(), st.Durations
	var gpuTotal time.Duration
	timedAll := len(e.steps) > 0 && !queued
	for _, step := range e.steps {
		if step.Island >= 0 {
			if e.islands[step.Island] == nil {
				continue
			}
			st.GPUDispatch, st.GPUTimed = 0, false
			var times *[]backend.KernelTime
			if cl.KernelTimes {
				times = &cl.Times
			}
			if err := e.runIsland(ctx, step.Island, queued, st, times); err != nil {
				return nil, err
			}
			e.written += passes.ProgramCost(e.islands[step.Island].prog).BytesWritten
			gpuTotal, timedAll = gpuTotal+st.GPUDispatch, timedAll && st.GPUTimed
			continue
		}
		var ds []gpu.Dispatch
		var from []int // with KernelTimes, where each node's dispatches begin in ds
		for _, i := range step.Nodes {
			if cl.KernelTimes {
				from = append(from, len(ds))
			}
			_, inPlace := e.ownStorage[i]
			var bs []*gpu.Buffer
			seen := map[ir.NodeID]bool{}
			for k, a := range g.Nodes[i].Args { // distinct operands, in order of first use (wgsl.TypedNode's bindings; in place, not the data)
				if !seen[a] && !(inPlace && k == 0) {
					seen[a] = true
					bs = append(bs, e.bufs[a])
				}
			}
			bs = append(bs, e.bufs[i], e.fault, e.params[i])
			if e.scratch[i] != nil {
				bs = append(bs, e.scratch[i])
			}
			pipes, groups := e.byNode[i], e.groups[i]
			if inPlace {
				pipes, groups = e.inPlace[i], e.inPlaceGroups[i]
			}
			for k, p := range pipes {
				ds = append(ds, gpu.Dispatch{Pipeline: p, Buffers: bs, Groups: groups[k]})
			}
			e.written += e.writtenBy(i, inPlace)
		}
		if queued {
			if err := e.d.dev.Submit(ds); err != nil {
				e.scratchDirty = true
				return nil, fail(err)
			}
			continue
		}
		parts := [][]gpu.Dispatch{ds}
		if cl.KernelTimes { // each node's dispatches alone
			parts = parts[:0]
			for k := range from {
				end := len(ds)
				if k+1 < len(from) {
					end = from[k+1]
				}
				parts = append(parts, ds[from[k]:end])
			}
		}
		for k, part := range parts {
			if len(part) == 0 && cl.KernelTimes {
				continue // a node of no kernel of its own
			}
			t0 := time.Now()
			stop = st.Start(backend.StageDispatch)
			ns, timed, err := e.d.dev.RunTimed(part)
			stop()
			if err != nil {
				e.scratchDirty = true
				return nil, fail(err)
			}
			gpuTotal, timedAll = gpuTotal+gpuDuration(ns), timedAll && timed
			if cl.KernelTimes {
				i := step.Nodes[k]
				kt := backend.KernelTime{Name: fmt.Sprintf("node %d", i), Kind: g.Nodes[i].Op.String(), Time: time.Since(t0)}
				if timed {
					kt.Time, kt.GPU = gpuDuration(ns), true
				}
				cl.Times = append(cl.Times, kt)
			}
		}
	}
	st.GPUDispatch, st.GPUTimed = gpuTotal, timedAll
	raw := make([]byte, 4*e.nf)
	if err := e.d.dev.ReadBytes(e.fault, raw); err != nil {
		e.scratchDirty = true
		return nil, fail(err)
	}
	if queued { // the run's wall time, its waits' included (the islands' stages less)
		wall := time.Since(begin)
		for s, d := range st.Durations {
			wall -= d - staged[s]
		}
		st.Durations[backend.StageDispatch] += max(0, wall)
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
func (e *typedExecutable) runIsland(ctx context.Context, island int, queued bool, st *backend.Stats, times *[]backend.KernelTime) error {
	isl := e.islands[island]
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
	run := isl.exe.Run
	if q, ok := isl.exe.(interface {
		RunQueued(context.Context, *backend.Call) error
	}); ok && queued {
		run = q.RunQueued
	}
	if t, ok := isl.exe.(backend.KernelTimer); ok && times != nil {
		run = func(ctx context.Context, call *backend.Call) error {
			kts, err := t.RunEachTimed(ctx, call)
			for _, kt := range kts {
				kt.Name = fmt.Sprintf("island %d/%s", island, kt.Name)
				*times = append(*times, kt)
			}
			return err
		}
	}
	if err := run(ctx, call); err != nil {
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
