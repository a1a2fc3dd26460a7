package onnx_test

// BenchmarkTopK and BenchmarkScatterND time TopK and ScatterND as the
// importer builds them (topk.go, scatter.go): ScatterND as a selection
// over every pair of target and update, whose cost grows with targets ×
// updates; TopK as k passes over the n elements where n > 16k (below, the
// n² pairs). They are the before of issue 32's sort and scatter kernels;
// run on the cpu backend (the reference):
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
// table (an embedding table's update) by ScatterND.
func BenchmarkScatterND(b *testing.B) {
	const rows, d = 32768, 64
	limits := ir.Limits{MaxElements: 1 << 28, MaxStorageBytes: 1 << 33, MaxOps: 1 << 40}
	for _, u := range []int{1, 4, 16} {
		b.Run(fmt.Sprint(u), func(b *testing.B) {
			idx := make([]int64, u)
			for i := range idx {
				idx[i] = int64((i * 5003) % rows)
			}
			raw := model(13, graph([]msg{node("ScatterND", "s", []string{"data", "idx", "upd"}, []string{"y"})}, nil,
				[]msg{valueInfo("data", rows, d), typedValueInfo("idx", int64(onnx.Int64), int64(u), 1), valueInfo("upd", int64(u), d)},
				[]msg{valueInfo("y", rows, d)}))
			benchRun(b, raw, map[string][]float32{"data": make([]float32, rows*d), "upd": make([]float32, u*d)}, map[string][]int64{"idx": idx}, limits)
		})
	}
}
