//go:build cgo && !js

package webgpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/typedplan"
)

// typedInputs returns g's input nodes' own values, TypedBytes' layout.
func typedInputs(g *ir.Graph) [][]byte {
	in := make([][]byte, len(g.Nodes))
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			in[i] = backend.TypedBytes(n.DType, n.Data, n.Ints)
		}
	}
	return in
}

// value decodes node bytes of dtype t.
func value(t ir.DType, b []byte) cpuref.Value {
	f, i := backend.TypedValues(t, b)
	return cpuref.Value{DType: t, F: f, I: i}
}

// rowCase is one typed row over one dtype: op over operands a (and b, and
// c for where's condition) of dtype in, giving out.
type rowCase struct {
	op      ir.Op
	in, out ir.DType
	a, b, c cpuref.Value
}

// intEdges are pairs of an integer dtype's hardest operands, wrapped to
// its range: its least and greatest values against -1, 0, 1 and
// themselves (MIN / -1, a zero divisor, wrap-around at ±2^31 and ±2^63),
// shift counts about the width, the float formats' ties.
func intEdges(t ir.DType) (a, b []int64) {
	lo, hi := t.Range()
	w := int64(t.Bits())
	pairs := [][2]int64{{lo, -1}, {lo, 0}, {hi, 1}, {hi, hi}, {lo, lo}, {lo, 1}, {-1, lo}, {0, 0}, {hi, -1}, {lo, hi},
		{5, w}, {5, w - 1}, {1, w + 1}, {hi, w - 1}, {hi, 2}, {-7, 2}, {7, -2}, {-7, -2}, {lo + 1, -1},
		{2049, 3}, {257, 5}, {1<<24 + 1, 7}, {1<<31 + 1<<23 + 1, 1 << 32}, {-(1<<24 + 1), 1<<32 + 1}, {1<<63 - 1, 1 << 31}}
	for _, p := range pairs {
		a, b = append(a, t.Wrap(p[0])), append(b, t.Wrap(p[1]))
	}
	return a, b
}

// floatEdges are a float dtype's hardest operands: NaN, ±Inf, ±0, the
// greatest finite, subnormals (float16's and float32's), and the values
// where casts to integers leave their ranges, each rounded to t.
func floatEdges(t ir.DType) []float32 {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	vs := []float32{nan, inf, -inf, 0, float32(math.Copysign(0, -1)), 65504, -65504, 65520, math.MaxFloat32, -math.MaxFloat32,
		ir.F16Float(1), ir.F16Float(0x3ff), -ir.F16Float(0x200), ir.F16Float(0x400), 0x1p-25, 0x1p-149, -0x1p-130,
		-0x1p31, 0x1p31, 0x1p31 - 128, -0x1p63, 0x1p63, 0x1p32, 0x1p32 - 256, 255.9, 256, -128.5, -129, 127.9, -0.5, 0.5, 1.0 / 3, 2.5, -2.5}
	out := make([]float32, len(vs))
	for k, v := range vs {
		out[k] = t.Round(v)
	}
	return out
}

// rowCases returns every elementwise row WGSL holds over every dtype it
// takes (the scalar forms over the float dtypes), where over every dtype,
// and every cast, over each dtype's edges then its extremes (irtest).
func rowCases(t *testing.T) []rowCase {
	const n = 96
	values := func(dt ir.DType, seed uint64, first []int64, firstF []float32) cpuref.Value {
		if dt.IsFloat() {
			f := irtest.FloatExtremes(dt, seed, n)
			copy(f, firstF)
			return cpuref.Value{DType: dt, F: f}
		}
		i := irtest.IntExtremes(dt, seed, n)
		copy(i, first)
		return cpuref.Value{DType: dt, I: i}
	}
	operands := func(dt ir.DType, seed uint64) (a, b cpuref.Value) {
		ea, eb := intEdges(dt)
		if dt.IsFloat() {
			fe := floatEdges(dt)
			fb := make([]float32, 0, len(fe)*2)
			for k := range fe { // each edge against each of a few others
				fb = append(fb, fe[(k*7+3)%len(fe)])
			}
			return values(dt, seed, nil, fe), values(dt, seed+50, nil, fb)
		}
		return values(dt, seed, ea, nil), values(dt, seed+50, eb, nil)
	}
	var cs []rowCase
	for _, dt := range ir.DTypes() {
		for _, op := range ir.Ops() {
			info := op.Info()
			if info.Args > 2 || !info.Elementwise || !info.Types.In.Has(dt) || op == ir.OpCast {
				continue
			}
			if info.ScalarOf != 0 && !dt.IsFloat() {
				continue
			}
			out, err := ir.ResultDType(0, op, []ir.DType{dt, dt}[:info.Args], ir.Bool)
			if err != nil {
				continue
			}
			a, b := operands(dt, uint64(op)*100+uint64(dt))
			cs = append(cs, rowCase{op: op, in: dt, out: out, a: a, b: b})
		}
		a, b := operands(dt, uint64(dt)*7+1)
		cond := values(ir.Bool, uint64(dt), nil, nil)
		cs = append(cs, rowCase{op: ir.OpWhere, in: dt, out: dt, a: a, b: b, c: cond})
		for _, to := range ir.DTypes() {
			a, _ := operands(dt, uint64(dt)*10+uint64(to))
			if dt.IsFloat() { // large values too, so that casts leave the range
				for i := len(floatEdges(dt)); i < len(a.F); i++ {
					if i%3 == 0 {
						a.F[i] = dt.Round(a.F[i] * 1e6)
					}
				}
			}
			cs = append(cs, rowCase{op: ir.OpCast, in: dt, out: to, a: a})
		}
	}
	return cs
}

// graph returns the case as a graph over elements lo..hi-1 of its
// operands: the inputs, then the node.
func (c rowCase) graph(t *testing.T, lo, hi int) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	in := func(v cpuref.Value) ir.Tensor {
		if v.DType.IsFloat() {
			return b.TypedInput("", v.DType, ir.Shape{hi - lo}, v.F[lo:hi], nil)
		}
		return b.TypedInput("", v.DType, ir.Shape{hi - lo}, nil, v.I[lo:hi])
	}
	var y ir.Tensor
	info := c.op.Info()
	switch {
	case c.op == ir.OpCast:
		y = in(c.a).Cast(c.out)
	case c.op == ir.OpWhere:
		y = in(c.c).Where(in(c.a), in(c.b))
	case info.ScalarOf != 0:
		s := c.b.F[0]
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			s = 0.75
		}
		y = in(c.a).ApplyScalar(c.op, s)
	case info.Args == 2:
		y = in(c.a).ApplyTo(c.out, c.op, in(c.b))
	default:
		y = in(c.a).Apply(c.op)
	}
	b.Output("y", y)
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatalf("%v of %v: %v", c.op, c.in, err)
	}
	return g
}

// reference returns cpuref.EvalTyped's value of each element, and whether
// it faults (then its value is not compared): the whole case at once, or,
// when the reference fails the run, element by element.
func (c rowCase) reference(t *testing.T) (cpuref.Value, []bool) {
	m := c.a.Len()
	g := c.graph(t, 0, m)
	faults := make([]bool, m)
	if v, err := cpuref.EvalTyped(g); err == nil {
		return v[len(g.Nodes)-1], faults
	}
	out := cpuref.Value{DType: c.out}
	for k := range m {
		g := c.graph(t, k, k+1)
		v, err := cpuref.EvalTyped(g)
		if err != nil {
			if codeOf(err) != ir.CodeIntegerFault {
				t.Fatalf("%v of %v, element %d: %v", c.op, c.in, k, err)
			}
			faults[k] = true
			out.F, out.I = append(out.F, 0), append(out.I, 0)
			continue
		}
		y := v[len(g.Nodes)-1]
		out.F, out.I = append(out.F, y.F...), append(out.I, y.I...)
	}
	return out, faults
}

// TestTypedRowsMatchCpuref: every typed row WGSL holds over every dtype it
// takes, where, and every cast between two dtypes, run through real
// WebGPU (lavapipe here), gives cpuref.EvalTyped's bits on each element
// and faults exactly where the reference fails the run: int64 as two
// words, wrapping at ±2^31, ±2^63 and the narrow types' edges, MIN / -1,
// division and modulo by zero, shifts of the width or more, float16 and
// bfloat16 rounding (subnormals, overflow, NaN, -0), integer to float in
// one rounding, float to integer at and past the limits.
func TestTypedRowsMatchCpuref(t *testing.T) {
	d := openDevice(t)
	ctx := context.Background()
	cs := rowCases(t)
	checked, faults := 0, 0
	for _, c := range cs {
		g := c.graph(t, 0, c.a.Len())
		y := len(g.Nodes) - 1
		e, err := d.compileTyped(ctx, g, wgsl.FaultPerElement, &backend.Stats{})
		if err != nil {
			t.Fatalf("%v of %v -> %v: %v", c.op, c.in, c.out, err)
		}
		words, err := e.dispatch(ctx, &backend.TypedCall{Inputs: typedInputs(g), Stats: &backend.Stats{}})
		if err != nil {
			t.Fatalf("%v of %v -> %v: %v", c.op, c.in, c.out, err)
		}
		raw, err := e.read(y)
		e.Release()
		if err != nil {
			t.Fatalf("%v of %v -> %v: %v", c.op, c.in, c.out, err)
		}
		want, wfault := c.reference(t)
		got := value(c.out, raw)
		bad := 0
		for k := range wfault {
			fault := words[k] != 0
			if fault != wfault[k] || !fault && !sameElement(got, want, k) {
				if bad++; bad <= 4 {
					t.Errorf("%v %v -> %v, element %d (a %s, b %s): webgpu gives %s (fault %v), cpuref %s (fault %v)",
						c.op, c.in, c.out, k, show(c.a, k), show(c.b, k), show(got, k), fault, show(want, k), wfault[k])
				}
			}
			checked++
			if wfault[k] {
				faults++
			}
		}
	}
	t.Logf("%d cases, %d elements, %d faults, all cpuref's", len(cs), checked, faults)
}

// sameElement reports whether element k of x and y has the same bits (any
// NaN for a NaN: which one is not observable, see codegen/c's isNaN).
func sameElement(x, y cpuref.Value, k int) bool {
	if x.DType.IsFloat() {
		a, b := x.F[k], y.F[k]
		return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
	}
	return x.I[k] == y.I[k]
}

func show(v cpuref.Value, k int) string {
	if v.DType.IsFloat() {
		if k >= len(v.F) {
			return "-"
		}
		return fmt.Sprintf("%v (0x%08x)", v.F[k], math.Float32bits(v.F[k]))
	}
	if k >= len(v.I) {
		return "-"
	}
	return fmt.Sprint(v.I[k])
}

// codeOf returns err's ir code, or "" when it has none.
func codeOf(err error) ir.Code {
	var e *ir.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// runTypedGraph runs g through the backend's typed path (CompileTyped,
// RunTyped) and returns its outputs' values by node id, or the error.
func runTypedGraph(t *testing.T, d *device, g *ir.Graph) (map[int]cpuref.Value, error) {
	t.Helper()
	ctx := context.Background()
	e, err := d.CompileTyped(ctx, &backend.TypedProgram{Graph: g}, &backend.Stats{})
	if err != nil {
		return nil, err
	}
	defer e.Release()
	cl := &backend.TypedCall{Inputs: typedInputs(g), Stats: &backend.Stats{}}
	if err := e.RunTyped(ctx, cl); err != nil {
		return nil, err
	}
	vals := map[int]cpuref.Value{}
	for k, o := range g.Outputs {
		vals[int(o.ID)] = value(g.Nodes[o.ID].DType, cl.Outputs[k])
	}
	return vals, nil
}

// faultedGraphs counts the graphs checkTypedGraph saw fail on cpuref.
var faultedGraphs int

// checkTypedGraph compares g's run on WebGPU with cpuref.EvalTyped: every
// output's bits, or the same error code at the same node. It reports
// whether WGSL held the graph (else it was refused with unsupported).
func checkTypedGraph(t *testing.T, d *device, name string, g *ir.Graph) bool {
	t.Helper()
	want, werr := cpuref.EvalTyped(g)
	got, err := runTypedGraph(t, d, g)
	if codeOf(err) == ir.CodeUnsupported {
		return false
	}
	if werr != nil || err != nil {
		faultedGraphs++
		var we *ir.Error
		var ge *backend.TypedFault
		if !errors.As(werr, &we) || !errors.As(err, &ge) || we.Code != ge.Code || we.Node != ge.Node {
			t.Errorf("%s: webgpu fails with %v, cpuref with %v", name, err, werr)
		}
		return true
	}
	for _, o := range g.Outputs {
		w, v := want[o.ID], got[int(o.ID)]
		for k := range w.Len() {
			if !sameElement(v, w, k) {
				t.Errorf("%s: output %s (%v %v of %v), element %d: webgpu %s, cpuref %s", name, o.Name, w.DType, g.Nodes[o.ID].Op, g.Nodes[g.Nodes[o.ID].Args[0]].DType, k, show(v, k), show(w, k))
				break
			}
		}
	}
	return true
}

// TestTypedGraphsMatchCpuref: irtest's typed suites (the limits, the runs
// with no answer, non-finite values, every op over every dtype with views,
// reductions, gathers, where and casts) and random typed graphs run node by node through
// WebGPU give cpuref's bits on every output, or fail at the same node with
// the same code.
func TestTypedGraphsMatchCpuref(t *testing.T) {
	d := openDevice(t)
	ran, refused := 0, 0
	count := func(ok bool) {
		if ok {
			ran++
		} else {
			refused++
		}
	}
	cases := append(append(append(irtest.TypedLimits(), irtest.TypedFaults()...), irtest.TypedNonFinite()...), irtest.Typed()...)
	for _, c := range cases {
		count(checkTypedGraph(t, d, c.Name, c.Graph))
	}
	seeds := 200
	if testing.Short() {
		seeds = 60
	}
	for seed := range seeds {
		count(checkTypedGraph(t, d, fmt.Sprintf("random seed %d", seed), irtest.RandomTyped(uint64(seed), 12)))
	}
	t.Logf("%d graphs ran (%d of them fail on cpuref, and alike on webgpu), %d refused (unsupported)", ran, faultedGraphs, refused)
	if refused > 0 {
		t.Errorf("%d graphs refused", refused)
	}
}

// TestTypedFloatIslands: the float32 stretches of a typed graph (a
// matmul, a softmax-like chain, a reduction, a view of an input, a
// constant the passes fold) run as compiled float32 programs between the
// typed kernels, reading their operands from typed nodes (a gather, a
// cast) and read by typed nodes in turn (a cast to int32, a gather),
// with cpuref's bits.
func TestTypedFloatIslands(t *testing.T) {
	d := openDevice(t)
	b := ir.NewBuilder()
	ids := b.TypedInput("ids", ir.I64, ir.Shape{5}, nil, []int64{3, -1, 0, 7, -10})
	table := b.TypedInput("table", ir.F32, ir.Shape{10, 8}, irtest.FloatExtremes(ir.F32, 1, 80), nil)
	w := b.TypedInput("w", ir.F32, ir.Shape{8, 6}, irtest.FloatExtremes(ir.F32, 2, 48), nil)
	emb := table.Gather(ids, 0) // typed
	h := emb.MatMul(w).Add(b.Full(ir.Shape{5, 6}, 0.5)).Relu()
	e := h.Sub(h.ApplyShaped(ir.OpMax, ir.Shape{5, 1}).Broadcast(ir.Shape{5, 6})).Exp()
	s := e.ApplyShaped(ir.OpSum, ir.Shape{5, 1})
	b.Output("soft", e.Div(s.Broadcast(ir.Shape{5, 6})))
	b.Output("q", h.Mul(b.Full(ir.Shape{5, 6}, 3)).Cast(ir.I32))                              // island -> typed
	b.Output("back", h.Gather(b.TypedInput("", ir.I32, ir.Shape{2}, nil, []int64{4, -5}), 0)) // island -> gather
	f := ids.Cast(ir.F32).Reshape(ir.Shape{5, 1})                                             // typed -> island
	b.Output("mix", f.MatMul(b.Full(ir.Shape{1, 4}, 2)).Add(f.Broadcast(ir.Shape{5, 4})))
	b.Output("view", w.T())                         // an island whose output is a view of an input
	b.Output("const", b.Full(ir.Shape{3}, 2).Exp()) // folded to a constant
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	islands := 0
	for i := range g.Nodes {
		if typedplan.FloatNode(g, i) {
			islands++
		}
	}
	if !checkTypedGraph(t, d, "islands", g) {
		t.Fatal("refused")
	}
	t.Logf("%d nodes, %d of them float32 in islands", len(g.Nodes), islands)
}

// TestTypedQueue: with TypedQueue a typed run of 5 steps (typed
// stretches and float32 islands) waits twice (its fault words, its
// output), where it waits 7 times without (once a step too), with cpuref's bits either way, a fault
// included; the dispatch stage is on the wall clock.
func TestTypedQueue(t *testing.T) {
	d := openDevice(t)
	b := ir.NewBuilder()
	ids := b.TypedInput("ids", ir.I64, ir.Shape{5}, nil, []int64{3, -1, 0, 7, -10})
	table := b.TypedInput("table", ir.F32, ir.Shape{10, 8}, irtest.Values(1, 80, 2), nil)
	h := table.Gather(ids, 0).Exp()                         // typed, island
	q := h.Mul(b.Full(ir.Shape{5, 8}, 3)).Cast(ir.I32)      // island, typed
	b.Output("y", q.Cast(ir.F32).Sqrt().Cast(ir.I64).Neg()) // island, typed
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer func(q bool) { TypedQueue = q }(TypedQueue)
	waits := map[bool]int{}
	for _, queue := range []bool{false, true} {
		TypedQueue = queue
		e, err := d.compileTyped(context.Background(), g, wgsl.FaultPerNode, &backend.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.steps) < 4 {
			t.Fatalf("%d steps; want typed stretches and islands in turn", len(e.steps))
		}
		for _, bad := range []int64{3, 10} { // 10 is outside the table: a fault
			in := make([][]byte, len(g.Nodes))
			for i, n := range g.Nodes {
				if n.Op == ir.OpInput {
					in[i] = backend.TypedBytes(n.DType, n.Data, n.Ints)
				}
			}
			ids := []int64{bad, -1, 0, 7, -10}
			in[0] = backend.TypedBytes(ir.I64, nil, ids)
			st := &backend.Stats{}
			_, w0 := d.dev.RoundTrips()
			cl := &backend.TypedCall{Inputs: in, Stats: st}
			err := e.RunTyped(context.Background(), cl)
			_, w := d.dev.RoundTrips()
			gr := &ir.Graph{Nodes: slices.Clone(g.Nodes), Outputs: g.Outputs}
			gr.Nodes[0].Ints = ids
			want, werr := cpuref.EvalTyped(gr)
			if (err != nil) != (werr != nil) {
				t.Fatalf("queue %v, id %d: %v, cpu %v", queue, bad, err, werr)
			}
			if err != nil {
				if bad != 10 {
					t.Fatalf("id %d: %v", bad, err)
				}
				continue
			}
			got := backend.TypedBytes(ir.I64, nil, want[g.Outputs[0].ID].I)
			if !slices.Equal(cl.Outputs[0], got) {
				t.Fatalf("queue %v: not cpu's bits", queue)
			}
			waits[queue] = w - w0
			if queue && st.GPUTimed {
				t.Errorf("queued: the dispatch stage on the GPU's clock")
			}
		}
		e.Release()
	}
	if waits[true] != 2 || waits[false] != 7 {
		t.Errorf("a run's waits: %d queued, %d not; want 2 (the fault words, the output) and 7 (and one a step, 5 steps)", waits[true], waits[false])
	}
}
