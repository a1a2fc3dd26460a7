package gpucc_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestScatterBackends: the scatter rows (ir/scatter.go) give cpu's bits on
// every backend with typed code, and fail where cpu fails with its code
// and message: every dtype through every reduction with repeated and
// negative indices (irtest.Typed's scatter graphs), the limits
// (irtest.ScatterLimits: wrap-around, ±0, subnormals, ±3e38, float16's
// rounding after each update, bool's or and and, NaN payloads and -Inf
// under the non-finite policy), indices outside their dimension
// (irtest.ScatterFaults) and random chains of scatters (irtest.RandomScatters:
// 64 seeds, 16 under -short).
func TestScatterBackends(t *testing.T) {
	var cases []irtest.Case
	for _, c := range irtest.Typed() {
		if strings.HasSuffix(c.Name, "/scatter") {
			cases = append(cases, c)
		}
	}
	cases = append(append(cases, irtest.ScatterLimits()...), irtest.ScatterFaults()...)
	seeds := 64
	if testing.Short() {
		seeds = 16
	}
	for seed := range seeds {
		cases = append(cases, irtest.Case{Name: "random/" + itoa(seed), Graph: irtest.RandomScatters(uint64(seed))})
	}
	nonFinite := func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }
	cpu := open(t, "cpu", nonFinite)
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name, nonFinite)
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) { sameTyped(t, cpu, rt, c.Graph) })
			}
		})
	}
}

// TestScatterAtLoopBudget: a scatter whose GPU invocations loop the most
// that ir.LoopBudget allows (65534 index rows a float32 element; lavapipe
// ends an invocation's loops after 65535 iterations in all) still gives
// cpu's bits on every typed backend: 65534 ones added to element 0 in
// order, the last row's 7 stored in element 3 by none.
func TestScatterAtLoopBudget(t *testing.T) {
	const n = ir.LoopBudget - 1
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F32, ir.Shape{4}, []float32{0.5, 1, 2, 3}, nil)
	idx := make([]int64, n)
	upd := make([]float32, n)
	for k := range idx {
		idx[k], upd[k] = int64(k%3), 1
	}
	idx[n-1], upd[n-1] = -1, 7
	i := b.TypedInput("i", ir.I64, ir.Shape{n, 1}, nil, idx)
	u := b.TypedInput("u", ir.F32, ir.Shape{n}, upd, nil)
	b.Output("add", x.ScatterND(i, u, ir.ScatterAdd))
	b.Output("none", x.ScatterND(i, u, ir.ScatterNone))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := open(t, "cpu")
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) { sameTyped(t, cpu, open(t, name), g) })
	}
}

// TestEmbeddingStepBackends: an embedding's training step (grad.Step of
// sum(gather(table, ids)·w)), whose table gradient is a scatter-add of the
// rows' gradients at the ids (gather's rule), gives cpu's bits on every
// typed backend: 64 ids with repeats and negatives into a [40, 8] table.
func TestEmbeddingStepBackends(t *testing.T) {
	b := ir.NewBuilder()
	table := b.Param("table", ir.Shape{40, 8}, irtest.Values(3, 320, 2))
	ids := make([]int64, 64)
	for k := range ids {
		ids[k] = int64((k*17)%80 - 40)
	}
	y := table.Gather(b.TypedInput("ids", ir.I64, ir.Shape{8, 8}, nil, ids), 0)
	b.Output("loss", y.Mul(b.Input(y.Shape(), irtest.Values(4, y.Shape().Len(), 1))).Sum())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	step, err := grad.Step(g, "loss", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	cpu := open(t, "cpu")
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) { sameTyped(t, cpu, open(t, name), step) })
	}
}

// TestScatterLinearPastLoopBudget: a scatter of reduction none runs on the
// GPU as codegen/wgsl's linear passes (copy, mark, apply; TypedKernels),
// which loop nowhere, so 2·ir.LoopBudget index rows into [4] run and give
// cpu's bits (the last row aimed at an element wins) where the output-side
// kernel was refused (unsupported: each element checked every row).
func TestScatterLinearPastLoopBudget(t *testing.T) {
	const n = 2 * ir.LoopBudget
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F16, ir.Shape{5}, []float32{0.5, 1, 2, 3, -0}, nil)
	idx := make([]int64, n)
	upd := make([]float32, n)
	for k := range idx {
		idx[k], upd[k] = int64(k%4-4), float32(k%2048)
	}
	i := b.TypedInput("i", ir.I64, ir.Shape{n, 1}, nil, idx)
	u := b.TypedInput("u", ir.F16, ir.Shape{n}, upd, nil)
	b.Output("none", x.ScatterND(i, u, ir.ScatterNone))
	g, err := b.Build(ir.Limits{MaxElements: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cpu := open(t, "cpu")
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) { sameTyped(t, cpu, open(t, name), g) })
	}
}

// TestScatterLinearReruns: one compiled scatter executable run again and
// again with new run-time indices gives cpu's bits and errors each time,
// a run faulting between valid ones included: the linear GPU scatter's
// scratch words (codegen/wgsl's TypedKernels), which every run must leave
// all zero, carry nothing from one run to the next. Narrow dtypes put
// neighbouring winners in one storage word; the crafted indices are past
// each end of the dimension by one and by 2^32 (a low word in range).
func TestScatterLinearReruns(t *testing.T) {
	const d, rows = 6, 40
	runs := [][]int64{}
	for r := range 4 {
		idx := make([]int64, rows)
		for k := range idx {
			idx[k] = int64((k*(r+3))%(2*d) - d) // every element, negative too, aimed at again and again
		}
		runs = append(runs, idx)
	}
	for _, bad := range []int64{d, -d - 1, 1 << 32, -(1 << 32) + 2} {
		idx := slices.Clone(runs[0])
		idx[rows/2] = bad
		runs = append(runs, idx, runs[len(runs)%4])
	}
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.U8, ir.I64, ir.Bool} {
		for _, red := range []ir.ScatterReduction{ir.ScatterNone, ir.ScatterAdd, ir.ScatterMax} {
			b := ir.NewBuilder()
			data := make([]float32, d)
			ints := make([]int64, d)
			upd := make([]float32, rows)
			uints := make([]int64, rows)
			for k := range upd {
				upd[k], uints[k] = float32(k)-7.25, int64(k%5)
			}
			for k := range data {
				data[k], ints[k] = float32(k)*0.5, int64(k%2)
			}
			if !dt.IsFloat() {
				data, upd = nil, nil
			} else {
				ints, uints = nil, nil
			}
			if dt == ir.Bool {
				for k := range uints {
					uints[k] %= 2
				}
			}
			x := b.TypedInput("x", dt, ir.Shape{d}, data, ints)
			i := b.TypedInput("i", ir.I64, ir.Shape{rows, 1}, nil, runs[0])
			b.Output("y", x.ScatterND(i, b.TypedInput("u", dt, ir.Shape{rows}, upd, uints), red))
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			name := dt.String() + "/" + red.String()
			ctx := context.Background()
			cpu := open(t, "cpu")
			for _, be := range typedBackends {
				t.Run(be+"/"+name, func(t *testing.T) {
					exe, err := open(t, be).Compile(ctx, g)
					if err != nil {
						t.Fatal(err)
					}
					defer exe.Release()
					ref, err := cpu.Compile(ctx, g)
					if err != nil {
						t.Fatal(err)
					}
					defer ref.Release()
					for r, idx := range runs {
						in := gpucc.Inputs{"i": gpucc.Tensor{Shape: []int{rows, 1}, DType: ir.I64, Ints: idx}}
						want, werr := ref.Run(ctx, in)
						got, gerr := exe.Run(ctx, in)
						if werr != nil || gerr != nil {
							if werr == nil || gerr == nil || gpucc.CodeOf(werr) != gpucc.CodeOf(gerr) {
								t.Fatalf("run %d: %v, cpu %v", r, gerr, werr)
							}
							continue
						}
						w, o := want.Outputs["y"], got.Outputs["y"]
						if !slices.Equal(o.Ints, w.Ints) || !slices.Equal(gpucctest.BitsOf(o.Data), gpucctest.BitsOf(w.Data)) {
							t.Fatalf("run %d: %v %v, cpu %v %v", r, o.Data, o.Ints, w.Data, w.Ints)
						}
					}
				})
			}
		}
	}
}

// TestScatterFaultOrder: a scatter whose one index is outside its
// dimension and whose other updates carry a uint64 sum past 2^63 fails
// as the reference does, with invalid_input for the index (the reference
// checks every index before it adds), on every typed backend: WebGPU's
// linear apply raises the uint64 fault only where no index faulted
// (raising it regardless, webgpu's run ends internal: "faulted
// (unsupported at node 3) where the reference gives invalid_input").
func TestScatterFaultOrder(t *testing.T) {
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.U64, ir.Shape{2, 2}, nil, []int64{1 << 62, 0, 0, 0})
	i := b.TypedInput("i", ir.I64, ir.Shape{2, 2}, nil, []int64{0, 0, 0, 2})
	u := b.TypedInput("u", ir.U64, ir.Shape{2, 2}, nil, []int64{1 << 62, 1, 1, 1})
	b.Output("y", x.ScatterElements(i, u, 0, ir.ScatterAdd))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := open(t, "cpu")
	if _, err := cpu.Run(context.Background(), g); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Fatalf("cpu: %v, want invalid_input", err)
	}
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) { sameTyped(t, cpu, open(t, name), g) })
	}
}
