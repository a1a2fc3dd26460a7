package gpucc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// Typed reports whether g holds a value of a dtype other than float32 or
// an op of a typed row (cast, where, the logical and bitwise ops): a graph
// only the cpu backend runs so far. Every other backend refuses it by name
// (unsupported) until its kernels handle the dtype.
func Typed(g *ir.Graph) bool { return g != nil && passes.FloatOnly(g) != nil }

// compileTyped is Compile of a typed graph on the cpu backend: the graph,
// validated against the Runtime's limits, is what each run evaluates with
// cpuref.EvalTyped, the reference; no kernels are made.
func (rt *Runtime) compileTyped(g *ir.Graph) (*Executable, error) {
	if err := ir.Validate(g, rt.opts.Limits); err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dev == nil {
		return nil, rt.errClosed()
	}
	return &Executable{rt: rt, typed: g.Clone()}, nil
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
	if len(opts.Keep) > 0 || len(opts.Into) > 0 {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, "", "a typed graph's run returns host outputs only (no Keep, no Into) so far")
	}
	g := &ir.Graph{Nodes: slices.Clone(e.typed.Nodes), Outputs: e.typed.Outputs}
	for name, v := range in {
		id := inputNamed(g, name)
		if id < 0 {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "the graph has no input named %s", ir.Quote(name))
		}
		t, ok := v.(Tensor)
		if !ok {
			return nil, ir.Errorf(ir.CodeUnsupported, id, name, "input %s: a typed graph takes host tensors (NewTensor) so far", ir.Quote(name))
		}
		if err := setTypedInput(&g.Nodes[id], name, t, rt.opts.Limits.NonFinite); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		return nil, err
	}
	res := &Result{Backend: rt.info.Name, Adapter: &rt.info.Adapter, Outputs: map[string]Tensor{},
		FallbackAttempts: slices.Clone(rt.attempts), Exact: true}
	if res.FallbackAttempts == nil {
		res.FallbackAttempts = []Attempt{}
	}
	for _, o := range g.Outputs {
		v := vals[o.ID]
		data := slices.Clone(v.F)
		if rt.opts.Limits.NonFinite {
			canonicalNaN(data)
		} else if err := checkFinite(rt.info.Name, fmt.Sprintf("output %q", o.Name), v.F); err != nil {
			return nil, err
		}
		res.Outputs[o.Name] = Tensor{Shape: slices.Clone(g.Nodes[o.ID].Shape), DType: v.DType, Data: data, Ints: slices.Clone(v.I)}
		res.Timings.ReadbackBytes += int64(v.DType.Size() * v.Len())
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	res.Timings.DispatchMs, res.Timings.TotalMs, res.Timings.DispatchClock = ms, ms, "wall"
	return res, nil
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
