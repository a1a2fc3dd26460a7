package gpucc_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	_ "github.com/gpucc/gpucc/runtime/all"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestTypedExecutable: a typed graph compiles on the cpu backend and runs
// many times with typed host inputs (int64 ids, a float16 tensor), each
// run cpuref.EvalTyped's bits; inputs of the wrong dtype, shape or range
// are invalid_input; a division by zero is integer_fault. The same runs
// give the same bits on the backends with typed code (native, wasm).
func TestTypedExecutable(t *testing.T) {
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) { typedExecutable(t, open(t, name)) })
	}
}

func typedExecutable(t *testing.T, rt *gpucc.Runtime) {
	ctx := context.Background()
	b := ir.NewBuilder()
	ids := b.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{0, 0, 0})
	h := b.TypedInput("h", ir.F16, ir.Shape{3}, []float32{0, 0, 0}, nil)
	b.Output("next", ids.Add(b.FullOf(ir.I64, ir.Shape{3}, 0, 1)))
	b.Output("q", ids.Div(b.TypedInput("d", ir.I64, ir.Shape{3}, nil, []int64{2, 2, 2})))
	b.Output("h2", h.Mul(h))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	for _, c := range []struct {
		ids, next, q []int64
		h, h2        []float32
	}{
		{[]int64{math.MaxInt64, -7, 7}, []int64{math.MinInt64, -6, 8}, []int64{math.MaxInt64 / 2, -3, 3}, []float32{300, 0.5, 1e-4}, []float32{float32(math.Inf(1)), 0.25, 0}},
		{[]int64{1, 2, 3}, []int64{2, 3, 4}, []int64{0, 1, 1}, []float32{2, 3, -4}, []float32{4, 9, 16}},
	} {
		hin := make([]float32, len(c.h))
		for i, v := range c.h {
			hin[i] = ir.F16Round(v)
		}
		res, err := exe.Run(ctx, gpucc.Inputs{
			"ids": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: c.ids},
			"h":   gpucc.Tensor{Shape: []int{3}, DType: ir.F16, Data: hin},
		})
		if c.h2[0] > 65504 { // float16 overflow: 300² is +Inf, an output error as float32's
			if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
				t.Errorf("float16 300²: %v, want non_finite_output", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if o := res.Outputs["next"]; o.DType != ir.I64 || !slices.Equal(o.Ints, c.next) {
			t.Errorf("next = %v %v, want %v", o.DType, o.Ints, c.next)
		}
		if o := res.Outputs["q"]; !slices.Equal(o.Ints, c.q) {
			t.Errorf("q = %v, want %v", o.Ints, c.q)
		}
		if o := res.Outputs["h2"]; o.DType != ir.F16 || !slices.Equal(o.Data, c.h2) {
			t.Errorf("h2 = %v %v, want %v", o.DType, o.Data, c.h2)
		}
	}
	bad := map[string]gpucc.Inputs{
		"a float32 tensor for int64": {"ids": gpucc.NewTensor(ir.Shape{3}, []float32{1, 2, 3})},
		"a wrong shape":              {"ids": gpucc.Tensor{Shape: []int{2}, DType: ir.I64, Ints: []int64{1, 2}}},
		"float16 not rounded":        {"h": gpucc.Tensor{Shape: []int{3}, DType: ir.F16, Data: []float32{0.1, 0, 0}}},
		"an unknown name":            {"x": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: []int64{1, 2, 3}}},
	}
	for name, in := range bad {
		if _, err := exe.Run(ctx, in); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("%s: %v, want invalid_input", name, err)
		}
	}
	_, err = exe.Run(ctx, gpucc.Inputs{"d": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: []int64{1, 0, 1}}})
	if !errors.Is(err, ir.ErrIntegerFault) {
		t.Errorf("a division by zero: %v, want integer_fault", err)
	}
}

// typedBackends are the backends besides cpu that run typed graphs
// (backend.TypedDevice).
var typedBackends = []string{"native", "wasm", "webgpu"}

// untyped is the cpu device under another name and without typed code:
// a backend that is no backend.TypedDevice.
type untyped struct{ backend.Device }

func (d untyped) Info() backend.Info {
	i := d.Device.Info()
	i.Name = "untyped"
	return i
}

func init() {
	cpu, _ := backend.Lookup("cpu")
	backend.Register("untyped", func(o backend.Options) (backend.Device, error) {
		d, err := cpu(o)
		return untyped{d}, err
	})
}

// TestTypedRefused: a backend without typed code refuses a typed graph by
// name (unsupported), at Compile.
func TestTypedRefused(t *testing.T) {
	rt := open(t, "untyped")
	g := irtest.TypedLimits()[0].Graph
	if _, err := rt.Compile(context.Background(), g); gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("compiling a typed graph: %v, want unsupported", err)
	}
}

// TestTypedBackends: typed graphs give cpu's bits on every backend with
// typed code (typedBackends), and fail where cpu fails, with its code and
// message: the graphs at the limits (irtest.TypedLimits: wrap-around at
// ±2^31 and ±2^63, MIN / -1, float16 and bfloat16 subnormals, -0, casts
// at the range's edges, negative gather indices), the runs with no answer
// (irtest.TypedFaults: division by zero, casts out of range, gather
// indices outside the axis), every op of every dtype (irtest.Typed), the
// scalar forms on the float dtypes (irtest.TypedScalarForms), graphs
// whose float32 matmuls, convolutions and pools run as float32 segments
// between typed ones (irtest.TypedMixed),
// random graphs over every dtype (irtest.RandomTyped, faults included),
// and ±Inf and NaN outputs (irtest.TypedNonFinite), each under both
// policies (non_finite_output, or ±Inf and NaN returned).
func TestTypedBackends(t *testing.T) {
	cases := append(append(irtest.TypedLimits(), irtest.TypedFaults()...), irtest.Typed()...)
	cases = append(append(cases, irtest.TypedScalarForms()...), irtest.TypedMixed()...)
	n := 64
	if testing.Short() {
		n = 24
	}
	for seed := range n {
		cases = append(cases, irtest.Case{Name: "random/" + itoa(seed), Graph: irtest.RandomTyped(uint64(seed), 24)})
	}
	nonFinite := func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }
	cpu, cpuNF := open(t, "cpu"), open(t, "cpu", nonFinite)
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt, rtNF := open(t, name), open(t, name, nonFinite)
			for _, c := range append(cases, irtest.TypedNonFinite()...) {
				t.Run(c.Name, func(t *testing.T) {
					sameTyped(t, cpu, rt, c.Graph)
					sameTyped(t, cpuNF, rtNF, c.Graph)
				})
			}
		})
	}
}

// sameTyped runs g on ref and rt and checks that they agree: the same
// error (code and message), or the same outputs, dtype, shape and bits.
func sameTyped(t *testing.T, ref, rt *gpucc.Runtime, g *ir.Graph) {
	t.Helper()
	ctx := context.Background()
	want, werr := ref.Run(ctx, g)
	got, gerr := rt.Run(ctx, g)
	if werr != nil || gerr != nil {
		if werr == nil || gerr == nil || gpucc.CodeOf(werr) != gpucc.CodeOf(gerr) ||
			strings.ReplaceAll(gerr.Error(), rt.Backend()+":", "cpu:") != werr.Error() {
			t.Fatalf("%s: %v\ncpu: %v", rt.Backend(), gerr, werr)
		}
		return
	}
	for name, w := range want.Outputs {
		o, ok := got.Outputs[name]
		switch {
		case !ok:
			t.Errorf("output %s missing", name)
		case o.DType != w.DType || !slices.Equal(o.Shape, w.Shape):
			t.Errorf("output %s: %v %v, cpu %v %v", name, o.DType, o.Shape, w.DType, w.Shape)
		case !slices.Equal(o.Ints, w.Ints):
			t.Errorf("output %s: %v, cpu %v", name, o.Ints, w.Ints)
		case !slices.Equal(gpucctest.BitsOf(o.Data), gpucctest.BitsOf(w.Data)) && !flushedTyped(t, rt, g, name, o.Data, w.Data):
			t.Errorf("output %s: %v, cpu %v", name, o.Data, w.Data)
		}
	}
}

// flushedTyped reports whether got differs from want only where a GPU
// backend returned cpuref.EvalTypedFlushed's value: a typed graph's
// float32 islands are compiled float32 programs, which may flush
// subnormals as the float32 path may (cpuref's package doc; the H200's
// driver does, lavapipe does not), while its typed kernels keep them.
func flushedTyped(t *testing.T, rt *gpucc.Runtime, g *ir.Graph, name string, got, want []float32) bool {
	t.Helper()
	if rt.Backend() != "webgpu" && rt.Backend() != "webgl2" {
		return false
	}
	vals, err := cpuref.EvalTypedFlushed(g)
	if err != nil {
		return false
	}
	for _, o := range g.Outputs {
		if o.Name != name {
			continue
		}
		f := gpucctest.BitsOf(vals[o.ID].F)
		gb, wb := gpucctest.BitsOf(got), gpucctest.BitsOf(want)
		if len(f) != len(gb) {
			return false
		}
		n := 0
		for i := range gb {
			if gb[i] != wb[i] {
				if gb[i] != f[i] {
					return false
				}
				n++
			}
		}
		t.Logf("output %s: %d values are cpuref.EvalTypedFlushed's (subnormals flushed in a float32 island), not cpuref's", name, n)
		return true
	}
	return false
}

// TestTypedLarge: typed graphs past the random generators' 60 elements
// give cpu's bits on native and wasm: a float16 sum over 2^17 leaves (the
// pairwise tree of a whole tensor, which overflowed wasm's 64 KiB stack
// as an array), row sums, a transpose and a broadcast of an int64 tensor
// of 2^17 elements (4 MB of C as index tables, 1.7 KB as loops), on
// webgpu too (it gave 0 for the float16 sum where cpu's is NaN until
// reductions past wgsl.SerialLeaves were split across a workgroup).
func TestTypedLarge(t *testing.T) {
	b := ir.NewBuilder()
	const rows, cols = 256, 512
	h := irtest.TypedInput(b, ir.F16, ir.Shape{rows, cols}, 7)
	x := irtest.TypedInput(b, ir.I64, ir.Shape{rows, cols}, 8)
	b.Output("sum", h.ApplyShaped(ir.OpSum, ir.Shape{}))
	b.Output("rows", h.ApplyShaped(ir.OpSum, ir.Shape{rows, 1}))
	b.Output("cols", x.ApplyShaped(ir.OpSum, ir.Shape{1, cols}))
	b.Output("t", x.T())
	b.Output("bcast", x.Reshape(ir.Shape{rows, 1, cols}).Broadcast(ir.Shape{rows, 2, cols}).Cast(ir.I8))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := open(t, "cpu", func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} })
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			sameTyped(t, cpu, open(t, name, func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }), g)
		})
	}
	// webgpu sums the 2^17 leaves in one workgroup of wgsl.WideThreads
	// (one invocation's loop gave 0 for NaN: lavapipe cuts loops short,
	// see wgsl.SerialLeaves), and gives cpu's bits at the serial bound.
	t.Run("webgpu", func(t *testing.T) {
		nf := func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }
		rt := open(t, "webgpu", nf)
		sameTyped(t, cpu, rt, g)
		b := ir.NewBuilder()
		h := irtest.TypedInput(b, ir.F16, ir.Shape{64, 128}, 7)
		b.Output("sum", h.ApplyShaped(ir.OpSum, ir.Shape{}))
		small, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		sameTyped(t, cpu, rt, small)
	})
}

// TestTypedWeightsStay: an input a run does not give (the graph's
// embedded data, a model's weights) is copied to the backend once: later
// runs upload only the inputs they give (Timings.UploadBytes), and still
// give cpu's bits when the same input is given in between, and when
// another executable of the same graph with other weights (the same code:
// wasm shares one module's memory between them) runs in between. A
// float32 weight read by float32 work after the gather (a matmul: a float
// segment on native and wasm, an island on webgpu) stays too. On webgpu
// every run uploaded the table again before the typed executable kept
// its inputs' storage (the H200: 65 ms a run for a [50257,768] table).
func TestTypedWeightsStay(t *testing.T) {
	ctx := context.Background()
	graph := func(scale float32) *ir.Graph {
		b := ir.NewBuilder()
		tab := make([]float32, 64*8)
		for i := range tab {
			tab[i] = float32(i) * scale
		}
		table := b.TypedInput("table", ir.F32, ir.Shape{64, 8}, tab, nil)
		ids := b.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{0, 0, 0})
		b.Output("e", table.Gather(ids, 0))
		w := make([]float32, 8*4)
		for i := range w {
			w[i] = float32(i%7) * scale
		}
		b.Output("m", table.Gather(ids, 0).MatMul(b.TypedInput("w", ir.F32, ir.Shape{8, 4}, w, nil)))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gb := graph(1), graph(-0.5)
	ids := gpucc.Inputs{"ids": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: []int64{5, -1, 63}}}
	other := make([]float32, 64*8)
	withTable := gpucc.Inputs{"ids": ids["ids"], "table": gpucc.NewTensor(ir.Shape{64, 8}, other)}
	cpu := open(t, "cpu")
	want := func(g *ir.Graph, in gpucc.Inputs) map[string]gpucc.Tensor {
		exe, err := cpu.Compile(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		defer exe.Release()
		r, err := exe.Run(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return r.Outputs
	}
	wa, wb, wt := want(ga, ids), want(gb, ids), want(ga, withTable)
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			a, err := rt.Compile(ctx, ga)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release()
			b, err := rt.Compile(ctx, gb)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			// On native and wasm the gathered rows go from the typed
			// segment to the float one's matmul as a host tensor
			// (split.go): 3×8 float32 uploaded each run besides the ids.
			var passed int64
			if name != "webgpu" {
				passed = 3 * 8 * 4
			}
			for k, step := range []struct {
				exe    *gpucc.Executable
				in     gpucc.Inputs
				want   map[string]gpucc.Tensor
				upload int64 // bytes, -1: any
			}{
				{a, ids, wa, -1}, {a, ids, wa, 24 + passed}, {b, ids, wb, -1}, {a, ids, wa, -1}, {a, ids, wa, 24 + passed},
				{a, withTable, wt, 24 + 64*8*4 + passed}, {a, ids, wa, -1}, {a, ids, wa, 24 + passed},
			} {
				r, err := step.exe.Run(ctx, step.in)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range []string{"e", "m"} {
					if got := r.Outputs[o].Data; !slices.Equal(gpucctest.BitsOf(got), gpucctest.BitsOf(step.want[o].Data)) {
						t.Errorf("step %d: %s = %v, cpu %v", k, o, got, step.want[o].Data)
					}
				}
				if step.upload >= 0 && r.Timings.UploadBytes != step.upload {
					t.Errorf("step %d: uploaded %d bytes, want %d", k, r.Timings.UploadBytes, step.upload)
				}
			}
		})
	}
}

// TestTypedOutputsOwned: each output of a typed run is the caller's own
// slice, on every backend that runs typed graphs: two outputs of one node
// share no memory, and no output is the graph's input data.
func TestTypedOutputsOwned(t *testing.T) {
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F16, ir.Shape{3}, []float32{1, 2, 3}, nil)
	i := b.TypedInput("i", ir.I32, ir.Shape{2}, nil, []int64{4, 5})
	y := x.Add(x)
	b.Output("a", y)
	b.Output("b", y)
	b.Output("x", x)
	b.Output("i", i)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) {
			res, err := open(t, name).Run(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			res.Outputs["a"].Data[0] = 99
			res.Outputs["x"].Data[0] = 99
			res.Outputs["i"].Ints[0] = 99
			if res.Outputs["b"].Data[0] != 2 || g.Nodes[x.ID()].Data[0] != 1 || g.Nodes[i.ID()].Ints[0] != 4 {
				t.Errorf("outputs share memory: b %v, x's data %v, i's %v", res.Outputs["b"].Data, g.Nodes[x.ID()].Data, g.Nodes[i.ID()].Ints)
			}
		})
	}
}

// TestTypedKernelsCounted: a typed run's Result.Kernels is the kernels it
// dispatched, as Executable.Kernels says: an embedding gather (one typed
// kernel, or native's and wasm's one typed function) feeding a matmul and
// an exp (the float32 graph's kernels on that backend, as an island or a
// float segment). Typed runs reported 0 (gpucc bench's report gave GPT-2
// and BERT 0 kernels on webgpu), and webgpu's Executable.Kernels 1.
func TestTypedKernelsCounted(t *testing.T) {
	ctx := context.Background()
	w := make([]float32, 8*4)
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	tb := ir.NewBuilder()
	table := tb.TypedInput("table", ir.F32, ir.Shape{16, 8}, make([]float32, 16*8), nil)
	ids := tb.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{1, 2, 3})
	tb.Output("y", table.Gather(ids, 0).MatMul(tb.TypedInput("w", ir.F32, ir.Shape{8, 4}, w, nil)).Exp())
	typed, err := tb.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fb := ir.NewBuilder()
	fb.Output("y", fb.NamedInput("rows", ir.Shape{3, 8}, make([]float32, 24)).MatMul(fb.NamedInput("w", ir.Shape{8, 4}, w)).Exp())
	float, err := fb.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			fe, err := rt.Compile(ctx, float)
			if err != nil {
				t.Fatal(err)
			}
			defer fe.Release()
			te, err := rt.Compile(ctx, typed)
			if err != nil {
				t.Fatal(err)
			}
			defer te.Release()
			want := 1 + fe.Kernels()
			if name == "cpu" { // the reference's evaluation: no kernels
				want = 0
			}
			r, err := te.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if te.Kernels() != want || r.Kernels != want {
				t.Errorf("Executable.Kernels %d, Result.Kernels %d; want %d (a gather and the float graph's %d)", te.Kernels(), r.Kernels, want, fe.Kernels())
			}
		})
	}
}

// TestTypedWeightsCountAgainstCap: a typed graph's weights, which the
// backend keeps from the first run (TestTypedWeightsStay), count against
// MaxDeviceBytes until the executable is released, as a float32 graph's
// embedded data does (TestEmbeddedCountsAgainstCap); they did not count.
func TestTypedWeightsCountAgainstCap(t *testing.T) {
	ctx := context.Background()
	const capBytes, rows = 64 << 10, 1024
	b := ir.NewBuilder()
	table := b.TypedInput("table", ir.F32, ir.Shape{rows, 8}, make([]float32, rows*8), nil) // 32 KiB
	b.Output("e", table.Gather(b.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{0, 1, 2}), 0))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name, func(o *gpucc.Options) { o.MaxDeviceBytes = capBytes })
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exe.Run(ctx, nil); err != nil {
				t.Fatal(err)
			}
			big := make([]float32, (capBytes-rows*8*4)/4+1) // fits in the cap, not beside the table
			if _, err := rt.Upload(ctx, ir.Shape{len(big)}, big); gpucc.CodeOf(err) != ir.CodeLimitExceeded {
				t.Fatalf("an upload of %d bytes beside the 32 KiB table under a %d-byte cap: %v, want limit_exceeded", 4*len(big), capBytes, err)
			}
			exe.Release()
			tt, err := rt.Upload(ctx, ir.Shape{len(big)}, big)
			if err != nil {
				t.Fatalf("after Release: %v", err)
			}
			tt.Release()
		})
	}
}
