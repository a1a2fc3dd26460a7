package bench

// BenchmarkNN: issue 10's reductions and composites at the shapes of
// bench/torch_nn.py, so one device visit compares them with PyTorch eager
// and torch.compile side by side. Inputs are resident and the output stays
// on the device: dispatch-ms is the kernels, us-beyond-kernels the rest.
//
//	GPUCC_BENCH_NN  R,C,S,D (default 1024,1024,256,64; H200: 8192,1024,256,64)
//	GPUCC_BENCH_ROWS  comma-separated, the rows kernels' schedules before
//	                  (the same bits): rootall, every thread combines the
//	                  groups' values (wgsl.RowRootOnce off); divslow, a
//	                  per-row divisor's division is ir's div in full
//	                  (wgsl.RowDivFast off); floatmax, max reduced by
//	                  maximum, not order keys (wgsl.RowMaxKeys off);
//	                  maxtree, max's keys by the tree, not one workgroup
//	                  atomicMax and one barrier (wgsl.RowMaxAtomic off);
//	                  nofast, exp, tanh and sigmoid by the table's bodies
//	                  alone, no fast path (wgsl.FastPaths off); threads32,
//	                  threads64, threads128, threads256, a rows kernel's
//	                  workgroup size (wgsl.RowThreads, 256 by default);
//	                  nocheap, no other size for a kernel of cheap leaves
//	                  (wgsl.RowCheapThreads: 128 by default, layer norm's);
//	                  contig, each thread's leaves a contiguous run, not
//	                  staged through workgroup memory (wgsl.RowContiguous);
//	                  vec4, contig's runs read and written as vec4s of 4
//	                  adjacent leaves where the rows and operands allow
//	                  (wgsl.RowVec4, the default since 2026-12-06), novec4
//	                  not;
//	                  nonear, a per-row divisor's leaves divided by the
//	                  fused fast path, not by its correctly rounded
//	                  reciprocal (wgsl.RowDivNear off); partslazy,
//	                  the fused fast path's divisor parts computed in the
//	                  branch of the leaves that take it, not by every
//	                  thread before its leaves (wgsl.RowPartsLazy); and
//	                  of the
//	                  elementwise kernels: vpt1, vpt2, vpt4, vpt8, the
//	                  vec4s a thread of a large kernel takes
//	                  (wgsl.VectorsPerThread, 2 by default); scalar,
//	                  elements, not vec4s (wgsl.Vectorise off);
//	                  vthreads64, vthreads128, its workgroup size
//	                  (wgsl.VectorThreads, 256)

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

func nnSize() (r, c, s, d int) {
	v := []int{1024, 1024, 256, 64}
	if e := os.Getenv("GPUCC_BENCH_NN"); e != "" {
		for i, f := range strings.Split(e, ",") {
			if k, err := strconv.Atoi(f); err == nil && i < 4 && k > 0 {
				v[i] = k
			}
		}
	}
	return v[0], v[1], v[2], v[3]
}

// nnGraphs are torch_nn.py's workloads; each takes its inputs by name.
func nnGraphs(r, c, s, d int) []struct {
	name  string
	graph *ir.Graph
} {
	mk := func(f func(b *ir.Builder) ir.Tensor) *ir.Graph {
		b := ir.NewBuilder()
		f(b)
		g, err := b.Build(Limits())
		if err != nil {
			panic(err)
		}
		return g
	}
	x := func(b *ir.Builder) ir.Tensor { return b.NamedInput("x", ir.Shape{r, c}, make([]float32, r*c)) }
	out := func(b *ir.Builder, t ir.Tensor) ir.Tensor { b.Output("y", t); return t }
	return []struct {
		name  string
		graph *ir.Graph
	}{
		{"rowsum", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).SumAxes(false, 1)) })},
		{"colsum", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).SumAxes(false, 0)) })},
		{"rowmax", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).MaxAxes(false, 1)) })},
		{"softmax", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).Softmax(1)) })},
		{"logsoftmax", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).LogSoftmax(1)) })},
		{"layernorm", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).LayerNorm(1, 1e-5)) })},
		// the exact elementwise primitives (issue 35 item 1): exp, tanh,
		// sigmoid and GELU's tanh form 0.5·x·(1 + tanh(0.7978846·(x + 0.044715·x³)))
		{"exp", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).Exp()) })},
		{"tanh", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).Tanh()) })},
		{"sigmoid", mk(func(b *ir.Builder) ir.Tensor { return out(b, x(b).Apply(ir.OpSigmoid)) })},
		{"gelu", mk(func(b *ir.Builder) ir.Tensor {
			v := x(b)
			inner := v.Add(v.Mul(v).Mul(v).MulScalar(0.044715)).MulScalar(0.7978846)
			return out(b, v.MulScalar(0.5).Mul(inner.Tanh().AddScalar(1)))
		})},
		{"attn", mk(func(b *ir.Builder) ir.Tensor { // issue 21's softmax(Q·Kᵀ·s)·V, no layernorm
			in := func(name string) ir.Tensor { return b.NamedInput(name, ir.Shape{s, d}, make([]float32, s*d)) }
			q, k, v := in("q"), in("k"), in("v")
			return out(b, q.MatMul(k.T()).MulScalar(1/float32(sqrtInt(d))).Softmax(1).MatMul(v))
		})},
		{"fusedattn", mk(func(b *ir.Builder) ir.Tensor { // attn as one attention kernel (issue 33 item 4)
			in := func(name string) ir.Tensor { return b.NamedInput(name, ir.Shape{s, d}, make([]float32, s*d)) }
			q, k, v := in("q"), in("k"), in("v")
			return out(b, q.Attention(k, v, b.Full(ir.Shape{}, float32(math.Copysign(0, -1))), 1/float32(sqrtInt(d)), false))
		})},
		{"attention", mk(func(b *ir.Builder) ir.Tensor {
			in := func(name string) ir.Tensor { return b.NamedInput(name, ir.Shape{s, d}, make([]float32, s*d)) }
			q, k, v := in("q"), in("k"), in("v")
			p := q.MatMul(k.T()).MulScalar(1 / float32(sqrtInt(d))).Softmax(1)
			return out(b, p.MatMul(v).LayerNorm(1, 1e-5))
		})},
	}
}

// sqrtInt is √d for a perfect square d (the head width), else 0.
func sqrtInt(d int) int {
	for i := 1; i*i <= d; i++ {
		if i*i == d {
			return i
		}
	}
	return 0
}

func BenchmarkNN(b *testing.B) {
	r, c, s, d := nnSize()
	defer func(once, fast, near, lazy, keys, atomic, paths, contig, rowvec4, vec bool, threads, cheap, vpt, vthreads int) {
		wgsl.RowRootOnce, wgsl.RowDivFast, wgsl.RowDivNear, wgsl.RowPartsLazy, wgsl.RowMaxKeys, wgsl.RowMaxAtomic, wgsl.FastPaths, wgsl.RowContiguous, wgsl.RowVec4, wgsl.Vectorise = once, fast, near, lazy, keys, atomic, paths, contig, rowvec4, vec
		wgsl.RowThreads, wgsl.RowCheapThreads, wgsl.VectorsPerThread, wgsl.VectorThreads = threads, cheap, vpt, vthreads
	}(wgsl.RowRootOnce, wgsl.RowDivFast, wgsl.RowDivNear, wgsl.RowPartsLazy, wgsl.RowMaxKeys, wgsl.RowMaxAtomic, wgsl.FastPaths, wgsl.RowContiguous, wgsl.RowVec4, wgsl.Vectorise,
		wgsl.RowThreads, wgsl.RowCheapThreads, wgsl.VectorsPerThread, wgsl.VectorThreads)
	for _, k := range strings.Split(os.Getenv("GPUCC_BENCH_ROWS"), ",") {
		switch k {
		case "rootall":
			wgsl.RowRootOnce = false
		case "divslow":
			wgsl.RowDivFast = false
		case "floatmax":
			wgsl.RowMaxKeys = false
		case "maxtree":
			wgsl.RowMaxAtomic = false
		case "nofast":
			wgsl.FastPaths = false
		case "contig":
			wgsl.RowContiguous = true
		case "vec4":
			wgsl.RowVec4 = true
		case "novec4":
			wgsl.RowVec4 = false
		case "nocheap":
			wgsl.RowCheapThreads = 0
		case "nonear":
			wgsl.RowDivNear = false
		case "partslazy":
			wgsl.RowPartsLazy = true
		case "threads32", "threads64", "threads128", "threads256":
			wgsl.RowThreads, _ = strconv.Atoi(strings.TrimPrefix(k, "threads"))
		case "scalar":
			wgsl.Vectorise = false
		case "vpt1", "vpt2", "vpt4", "vpt8":
			wgsl.VectorsPerThread, _ = strconv.Atoi(strings.TrimPrefix(k, "vpt"))
		case "vthreads64", "vthreads128":
			wgsl.VectorThreads, _ = strconv.Atoi(strings.TrimPrefix(k, "vthreads"))
		}
	}
	ctx := context.Background()
	for _, w := range nnGraphs(r, c, s, d) {
		b.Run(fmt.Sprintf("%s/%dx%d", w.name, r, c), func(b *testing.B) {
			rt := openEngine(b)
			exe, err := rt.Compile(ctx, w.graph)
			if err != nil {
				b.Fatal(err)
			}
			in := gpucc.Inputs{}
			for i, p := range w.graph.Nodes {
				if p.Op != ir.OpInput {
					continue
				}
				t, err := rt.Upload(ctx, p.Shape, irtest.Values(uint64(i+1), p.Shape.Len(), 1))
				if err != nil {
					b.Fatal(err)
				}
				defer t.Release()
				in[p.Name] = t
			}
			benchResident(b, exe, in, "y")
			b.ReportMetric(float64(exe.Kernels()), "kernels")
		})
	}
}
