package onnx_test

// BenchmarkTopK and BenchmarkScatterND time TopK and ScatterND as the
// importer builds them (topk.go, scatter.go): ScatterND as ir's
// scatter_nd row beside the selection over every pair of target and
// update that it replaced, whose cost grows with targets × updates; TopK
// as k passes over the n elements where n > 16k (below, the n² pairs).
// Run on the cpu backend (the reference):
//
//	go test -run X -bench 'TopK|ScatterND' -benchtime 3x ./onnx/

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// benchRun loads raw, gives it the inputs and times its runs on cpu; an
// import or compile refused is reported and skipped.
func benchRun(b *testing.B, raw []byte, floats map[string][]float32, ints map[string][]int64, limits ir.Limits) {
	ctx := context.Background()
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{TypedOutputs: true, Limits: limits})
	if err != nil {
		b.Skipf("refused at import: %v", err)
	}
	for name, v := range floats {
		g.Nodes[g.Input(name)].Data = v
	}
	for name, v := range ints {
		g.Nodes[g.Input(name)].Ints = v
	}
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu", Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		b.Skipf("refused at compile: %v", err)
	}
	defer exe.Release()
	b.ResetTimer()
	for range b.N {
		if _, err := exe.Run(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(g.Nodes)), "nodes")
}

// BenchmarkTopK: the 50 largest of n float32 logits (a sampling step's
// top-k), n from 1,024 to GPT-2's vocabulary.
func BenchmarkTopK(b *testing.B) {
	limits := ir.Limits{MaxElements: 1 << 28, MaxStorageBytes: 1 << 33, MaxOps: 1 << 40, MaxNodes: 1 << 14}
	for _, n := range []int{1024, 2048, 4096, 50257} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32((i*7919)%n) * 0.125
			}
			raw := model(11, graph([]msg{node("TopK", "t", []string{"x", "k"}, []string{"v", "i"})}, []msg{int64s("k", []int64{1}, 50)},
				[]msg{valueInfo("x", int64(n))}, []msg{valueInfo("v", 50), typedValueInfo("i", int64(onnx.Int64), 50)}))
			benchRun(b, raw, map[string][]float32{"x": x}, nil, limits)
		})
	}
}

// BenchmarkScatterND: u rows of 64 float32 written into a [32768, 64]
// table (an embedding table's update, a KV cache's write) by ScatterND:
// "kernel" as the importer builds it now (ir's scatter_nd row, cpuref's
// loop over the data and the updates), "pairs" the selection over every
// pair of target row and update that the importer built before (the
// graph scatterPairs rebuilds), timed in the same run.
func BenchmarkScatterND(b *testing.B) {
	const rows, d = 32768, 64
	limits := ir.Limits{MaxElements: 1 << 28, MaxStorageBytes: 1 << 33, MaxOps: 1 << 40}
	for _, u := range []int{1, 4, 16} {
		idx := make([]int64, u)
		for i := range idx {
			idx[i] = int64((i * 5003) % rows)
		}
		data, upd := make([]float32, rows*d), make([]float32, u*d)
		b.Run(fmt.Sprint("kernel/", u), func(b *testing.B) {
			raw := model(13, graph([]msg{node("ScatterND", "s", []string{"data", "idx", "upd"}, []string{"y"})}, nil,
				[]msg{valueInfo("data", rows, d), typedValueInfo("idx", int64(onnx.Int64), int64(u), 1), valueInfo("upd", int64(u), d)},
				[]msg{valueInfo("y", rows, d)}))
			benchRun(b, raw, map[string][]float32{"data": data, "upd": upd}, map[string][]int64{"idx": idx}, limits)
		})
		b.Run(fmt.Sprint("pairs/", u), func(b *testing.B) {
			benchGraph(b, scatterPairs(rows, d, idx, data, upd), limits)
		})
	}
}

// scatterPairs is ScatterND of index rows idx into data [q, d] by the
// composition that onnx/scatter.go imported before ir's scatter rows: each
// row's offset and range check, then for each target row the last update
// aimed at it found by a mask over every (target, update) pair.
func scatterPairs(q, d int, idx []int64, data, upd []float32) *ir.Graph {
	b := ir.NewBuilder()
	k := len(idx)
	x := b.NamedInput("data", ir.Shape{q, d}, data)
	u := b.NamedInput("upd", ir.Shape{k, d}, upd)
	i := b.TypedInput("idx", ir.I64, ir.Shape{k}, nil, idx)
	full := func(s ir.Shape, v int64) ir.Tensor { return b.FullOf(ir.I64, s, 0, v) }
	neg := full(ir.Shape{k}, 0).ApplyTo(ir.Bool, ir.OpGreater, i)
	w := neg.Where(i.Add(full(ir.Shape{k}, int64(q))), i)
	ok := w.ApplyTo(ir.Bool, ir.OpGreaterEqual, full(ir.Shape{k}, 0)).ApplyTo(ir.Bool, ir.OpAnd, full(ir.Shape{k}, int64(q)).ApplyTo(ir.Bool, ir.OpGreater, w))
	iota := func(n int) []int64 {
		v := make([]int64, n)
		for j := range v {
			v[j] = int64(j)
		}
		return v
	}
	ks := b.TypedInput("", ir.I64, ir.Shape{k}, nil, iota(k))
	u = u.Gather(ok.Where(ks, full(ir.Shape{k}, int64(k))), 0)
	pair := ir.Shape{q, k}
	mask := w.Reshape(ir.Shape{1, k}).Broadcast(pair).ApplyTo(ir.Bool, ir.OpEqual, b.TypedInput("", ir.I64, ir.Shape{q, 1}, nil, iota(q)).Broadcast(pair))
	last := mask.Where(ks.Reshape(ir.Shape{1, k}).Broadcast(pair), full(pair, -1)).MaxAxes(false, 1)
	hit := last.ApplyTo(ir.Bool, ir.OpGreaterEqual, full(ir.Shape{q}, 0))
	pick := u.Gather(hit.Where(last, full(ir.Shape{q}, 0)), 0)
	b.Output("y", hit.Reshape(ir.Shape{q, 1}).Broadcast(ir.Shape{q, d}).Where(pick, x))
	g, err := b.Build(ir.Limits{MaxElements: 1 << 28, MaxStorageBytes: 1 << 33, MaxOps: 1 << 40})
	if err != nil {
		panic(err)
	}
	return g
}

// benchGraph times g's runs on cpu.
func benchGraph(b *testing.B, g *ir.Graph, limits ir.Limits) {
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu", Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		b.Fatal(err)
	}
	defer exe.Release()
	b.ResetTimer()
	for range b.N {
		if _, err := exe.Run(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(g.Nodes)), "nodes")
}
