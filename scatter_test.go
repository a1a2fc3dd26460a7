package gpucc_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/grad"
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
