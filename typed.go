package gpucc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Typed reports whether g holds a value of a dtype other than float32 or
// an op of a typed row (cast, where, the logical and bitwise ops): a graph
// that the cpu backend runs with the reference and a backend that
// implements backend.TypedDevice (native, wasm, webgpu, webgl2) with its typed code.
// Every other backend refuses it by name (unsupported) until its kernels
// handle the dtype.
func Typed(g *ir.Graph) bool { return g != nil && passes.FloatOnly(g) != nil }

// typedRunner reports whether this Runtime's backend runs typed graphs:
// cpu by the reference, or a backend.TypedDevice.
func (rt *Runtime) typedRunner() bool {
	if rt.info.Name == "cpu" {
		return true
	}
	_, ok := rt.dev.(backend.TypedDevice)
	return ok
}

// compileTyped is Compile of a typed graph on a backend that runs them
// (typedRunner): the graph, validated against the Runtime's limits, is
// what each run evaluates, with cpuref.EvalTyped on the cpu backend (no
// kernels), with the executable that the backend's CompileTyped made of
// it elsewhere (an op its code does not hold is unsupported, naming the
// node).
func (rt *Runtime) compileTyped(ctx context.Context, g *ir.Graph) (*Executable, error) {
	return rt.compileTypedWith(ctx, g, rt.opts.Limits)
}

// compileTypedWith is compileTyped validating g against limits (a split
// graph's segment's: segmentLimits).
func (rt *Runtime) compileTypedWith(ctx context.Context, g *ir.Graph, limits ir.Limits) (*Executable, error) {
	if err := ir.Validate(g, limits); err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dev == nil {
		return nil, rt.errClosed()
	}
	e := &Executable{rt: rt, typed: g.Clone()}
	td, ok := rt.dev.(backend.TypedDevice)
	if rt.info.Name == "cpu" || !ok {
		return e, nil
	}
	exe, err := guard(rt.info.Name, func() (backend.TypedExecutable, error) {
		return td.CompileTyped(ctx, &backend.TypedProgram{Graph: e.typed}, &e.compile)
	})
	if err != nil {
		return nil, rt.wrap(err)
	}
	e.typedExe = exe
	rt.exes[e] = struct{}{}
	return e, nil
}

// runTyped is one run of a typed executable; rt.mu held. Each input given
// replaces the graph's data: a host Tensor of the input's shape and dtype
// (float values of a float dtype, finite and already rounded to it;
// integers within an integer dtype's range; 0 and 1 for bool). A run that
// has no right answer (an integer division by zero, a cast with none)
// fails with integer_fault; a float output holding ±Inf or NaN with
// non_finite_output, as for float32 graphs.
func (e *Executable) runTyped(ctx context.Context, in Inputs, opts RunOptions, start time.Time) (*Result, error) {
	rt := e.rt
	if rt.dev == nil {
		return nil, rt.errClosed()
	}
	if e.typedExe == nil && rt.info.Name != "cpu" {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "run: the executable was released")
	}
	if len(opts.Keep) > 0 || len(opts.Into) > 0 {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, "", "a typed graph's run returns host outputs only (no Keep, no Into) so far")
	}
	g := &ir.Graph{Nodes: slices.Clone(e.typed.Nodes), Outputs: e.typed.Outputs}
	given := map[int]bool{}
	for name, v := range in {
		id := inputNamed(g, name)
		if id < 0 {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "the graph has no input named %s", ir.Quote(name))
		}
		t, ok := v.(Tensor)
		if !ok {
			return nil, ir.Errorf(ir.CodeUnsupported, id, name, "input %s: a typed graph takes host tensors (NewTensor) so far", ir.Quote(name))
		}
		if err := setTypedInput(&g.Nodes[id], name, t, rt.opts.Limits.NonFinite || e.segment); err != nil {
			return nil, err
		}
		given[id] = true
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var vals []cpuref.Value
	var err error
	var st backend.Stats
	if e.typedExe != nil {
		vals, err = e.runTypedOn(ctx, g, given, &st)
	} else {
		vals, err = cpuref.EvalTyped(g)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Backend: rt.info.Name, Adapter: &rt.info.Adapter, Outputs: map[string]Tensor{},
		FallbackAttempts: slices.Clone(rt.attempts), Exact: true}
	if res.FallbackAttempts == nil {
		res.FallbackAttempts = []Attempt{}
	}
	seen := map[ir.NodeID]bool{}
	for _, o := range g.Outputs {
		v := vals[o.ID]
		if e.typedExe == nil || seen[o.ID] { // the reference's values may be the graph's; one node's outputs are two tensors
			v.F, v.I = slices.Clone(v.F), slices.Clone(v.I)
		}
		seen[o.ID] = true
		data := v.F
		if rt.opts.Limits.NonFinite || e.segment {
			canonicalNaN(data)
		} else if err := checkFinite(rt.info.Name, fmt.Sprintf("output %q", o.Name), v.F); err != nil {
			return nil, err
		}
		res.Outputs[o.Name] = Tensor{Shape: slices.Clone(g.Nodes[o.ID].Shape), DType: v.DType, Data: data, Ints: v.I}
		if e.typedExe == nil {
			res.Timings.ReadbackBytes += int64(v.DType.Size() * v.Len())
		}
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	res.Timings.DispatchMs, res.Timings.TotalMs, res.Timings.DispatchClock = ms, ms, "wall"
	if e.typedExe != nil { // the backend's stages, as a float32 run reports them
		res.Timings = timings(&st)
		res.Timings.TotalMs = ms
		res.Cache = st.Caches()
	}
	return res, nil
}

// runTypedOn runs g (the executable's graph with this run's inputs, given
// by node those the run gave) on the backend's typed executable: each
// input node's value goes at its dtype's width (backend.TypedBytes), each
// output comes back the same way. An input the run does not give (the
// graph's embedded data: a model's weights) is encoded once and kept, and
// the backend told when it is the same as its previous run's
// (TypedCall.Same), so that it need not copy it again. A fault
// (a run with no right answer) is answered with the reference's own error
// for the run, found by evaluating it (cpuref.EvalTyped), so that it
// names the op, the element and the value as the cpu backend does; if the
// reference computes the run, the backend is wrong, which is internal.
func (e *Executable) runTypedOn(ctx context.Context, g *ir.Graph, given map[int]bool, st *backend.Stats) ([]cpuref.Value, error) {
	rt := e.rt
	call := &backend.TypedCall{Inputs: make([][]byte, len(g.Nodes)), Same: make([]bool, len(g.Nodes)), Stats: st}
	if e.typedIn == nil {
		e.typedIn, e.typedSame = map[int][]byte{}, map[int]bool{}
	}
	for i, n := range g.Nodes {
		switch {
		case n.Op != ir.OpInput:
		case given[i]:
			call.Inputs[i] = backend.TypedBytes(n.DType, n.Data, n.Ints)
			e.typedSame[i] = false
		default:
			if e.typedIn[i] == nil {
				e.typedIn[i] = backend.TypedBytes(n.DType, n.Data, n.Ints)
			}
			call.Inputs[i], call.Same[i] = e.typedIn[i], e.typedSame[i]
			e.typedSame[i] = true
		}
	}
	_, err := guard(rt.info.Name, func() (struct{}, error) { return struct{}{}, e.typedExe.RunTyped(ctx, call) })
	var fault *backend.TypedFault
	if err != nil && !errors.As(err, &fault) { // the storage may hold part of this run's inputs
		clear(e.typedSame)
	}
	if errors.As(err, &fault) {
		_, ref := cpuref.EvalTyped(g)
		var re *ir.Error
		if errors.As(ref, &re) && re.Code == fault.Code && re.Node == fault.Node {
			return nil, ref
		}
		return nil, &Error{Code: ir.CodeInternal, Backend: rt.info.Name,
			Err: fmt.Errorf("the typed run faulted (%v) where the reference gives %v", fault, ref)}
	}
	if err != nil {
		return nil, rt.wrap(err)
	}
	if len(call.Outputs) != len(g.Outputs) {
		return nil, &Error{Code: ir.CodeInternal, Backend: rt.info.Name, Err: fmt.Errorf("the typed run returned %d outputs of %d", len(call.Outputs), len(g.Outputs))}
	}
	vals := make([]cpuref.Value, len(g.Nodes))
	for k, o := range g.Outputs {
		n := g.Nodes[o.ID]
		if len(call.Outputs[k]) != n.Shape.Len()*n.DType.Size() {
			return nil, &Error{Code: ir.CodeInternal, Backend: rt.info.Name,
				Err: fmt.Errorf("output %q: the typed run returned %d bytes, %v %v has %d", o.Name, len(call.Outputs[k]), n.DType, n.Shape, n.Shape.Len()*n.DType.Size())}
		}
		v := cpuref.Value{DType: n.DType}
		v.F, v.I = backend.TypedValues(n.DType, call.Outputs[k])
		vals[o.ID] = v
	}
	return vals, nil
}

// inputNamed returns the input node that runs name: by its Name, or, for
// an unnamed input, by its default name (ir.DefaultInputName); -1 if none.
func inputNamed(g *ir.Graph, name string) int {
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput && (n.Name == name || n.Name == "" && ir.DefaultInputName(i) == name) {
			return i
		}
	}
	return -1
}

// setTypedInput checks t against input node n (shape, dtype, values) and
// gives n its values; float values may be ±Inf or NaN only when nonFinite
// (ir.Limits.NonFinite).
func setTypedInput(n *ir.Node, name string, t Tensor, nonFinite bool) error {
	bad := func(format string, a ...any) error {
		return ir.Errorf(ir.CodeInvalidInput, -1, name, "input %s: "+format, append([]any{ir.Quote(name)}, a...)...)
	}
	if !ir.Shape(t.Shape).Equal(n.Shape) {
		return bad("shape %v, the graph's is %v", ir.Shape(t.Shape), n.Shape)
	}
	if t.DType != n.DType {
		return bad("dtype %v, the graph's is %v", t.DType, n.DType)
	}
	if t.DType.IsFloat() {
		if len(t.Data) != n.Shape.Len() {
			return bad("%d values, shape %v needs %d", len(t.Data), n.Shape, n.Shape.Len())
		}
		for k, v := range t.Data {
			if !nonFinite && firstNonFinite([]float32{v}) == 0 || !t.DType.Holds(v) {
				return bad("value %d (%v) is not a finite %v", k, v, t.DType)
			}
		}
		n.Data = t.Data
		return nil
	}
	if len(t.Ints) != n.Shape.Len() {
		return bad("%d values, shape %v needs %d", len(t.Ints), n.Shape, n.Shape.Len())
	}
	lo, hi := t.DType.Range()
	for k, v := range t.Ints {
		if v < lo || v > hi {
			return bad("value %d (%d) is outside %v's range [%d, %d]", k, v, t.DType, lo, hi)
		}
	}
	n.Ints = t.Ints
	return nil
}
