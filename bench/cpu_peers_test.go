package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// cpuWorkloads are issue 24's CPU workloads, the ones bench/numpy_cpu.py
// times in numpy: host inputs in, every kernel, outputs into caller slices.
func cpuWorkloads() []struct {
	name  string
	graph *ir.Graph
} {
	mk := func(f func(b *ir.Builder)) *ir.Graph {
		b := ir.NewBuilder()
		f(b)
		g, err := b.Build(Limits())
		if err != nil {
			panic(err)
		}
		return g
	}
	in := func(b *ir.Builder, name string, s ir.Shape) ir.Tensor {
		return b.NamedInput(name, s, make([]float32, s.Len()))
	}
	sq := func(f func(x ir.Tensor) ir.Tensor) *ir.Graph {
		return mk(func(b *ir.Builder) { b.Output("y", f(in(b, "x", ir.Shape{1024, 1024}))) })
	}
	mm := func(n int) *ir.Graph {
		return mk(func(b *ir.Builder) { b.Output("y", in(b, "a", ir.Shape{n, n}).MatMul(in(b, "b", ir.Shape{n, n}))) })
	}
	return []struct {
		name  string
		graph *ir.Graph
	}{
		{"relu(a*b+c)/1M", mk(func(b *ir.Builder) {
			s := ir.Shape{1 << 20}
			b.Output("y", in(b, "a", s).Mul(in(b, "b", s)).Add(in(b, "c", s)).Relu())
		})},
		{"softmax/1024x1024", sq(func(x ir.Tensor) ir.Tensor { return x.Softmax(1) })},
		{"layernorm/1024x1024", sq(func(x ir.Tensor) ir.Tensor { return x.LayerNorm(1, 1e-5) })},
		{"rowsum/1024x1024", sq(func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 1) })},
		{"colsum/1024x1024", sq(func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 0) })},
		{"rowmax/1024x1024", sq(func(x ir.Tensor) ir.Tensor { return x.MaxAxes(false, 1) })},
		{"matmul/512", mm(512)},
		{"matmul/1024", mm(1024)},
		{"mlp/256x784-256-10", mk(func(b *ir.Builder) {
			x := in(b, "x", ir.Shape{256, 784})
			h := x.MatMul(in(b, "w1", ir.Shape{784, 256})).Add(in(b, "b1", ir.Shape{1, 256}).Broadcast(ir.Shape{256, 256})).Relu()
			b.Output("y", h.MatMul(in(b, "w2", ir.Shape{256, 10})).Add(in(b, "b2", ir.Shape{1, 10}).Broadcast(ir.Shape{256, 10})))
		})},
	}
}

// TestCPUPeers prints, for GPUCC_CPU_PEERS=native,wasm, the best of
// GPUCC_CPU_RUNS (default 15) whole warm runs of each CPU workload per
// backend, in ms: host inputs (finiteness checked) in, the kernels, the
// outputs into caller slices. bench/RESULTS.md puts them beside
// bench/numpy_cpu.py's figures, run interleaved.
func TestCPUPeers(t *testing.T) {
	backends := os.Getenv("GPUCC_CPU_PEERS")
	if backends == "" {
		t.Skip("GPUCC_CPU_PEERS is unset")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_CPU_RUNS"))
	runs = max(runs, 15)
	ctx := context.Background()
	for _, be := range splitComma(backends) {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: be, Limits: Limits()})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range cpuWorkloads() {
			exe, err := rt.Compile(ctx, w.graph)
			if err != nil {
				t.Fatal(err)
			}
			in := gpucc.Inputs{}
			for i, n := range w.graph.Nodes {
				if n.Op == ir.OpInput {
					in[n.Name] = gpucc.Tensor{Shape: n.Shape, Data: irtest.Values(uint64(i+1), n.Shape.Len(), 1)}
				}
			}
			into := map[string][]float32{}
			for _, o := range exe.Plan().Program.Outputs {
				into[o.Name] = make([]float32, o.Shape.Len())
			}
			best, kernel := time.Duration(1<<62), 1e9
			for range runs {
				start := time.Now()
				res, err := exe.RunWith(ctx, in, gpucc.RunOptions{Into: into})
				if err != nil {
					t.Fatal(err)
				}
				best, kernel = min(best, time.Since(start)), min(kernel, res.Timings.DispatchMs)
			}
			fmt.Printf("gpucc %s %s %.3f ms (kernels %.3f ms)\n", be, w.name, float64(best.Microseconds())/1e3, kernel)
			exe.Release()
		}
		rt.Close()
	}
}

func splitComma(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ',' {
			i++
		}
		out = append(out, s[:i])
		s = s[min(i+1, len(s)):]
	}
	return out
}
