package bench

// BenchmarkEmbeddingGather: issue 32's embedding lookup, N int64 ids into
// a [V, D] float32 table (GPT-2's: 50257 × 768, 4096 ids), beside a copy
// of the gathered bytes ([N, D] float32 times one, a float32 graph whose
// one kernel reads and writes them), so one device visit sets the ratio
// the issue asks for (the gather within 2× the copy) and torch_gather.py
// times PyTorch's embedding and copy on the same GPU. dispatch-ms is the
// run's dispatch stage (GPU timestamps where the backend has them);
// upload-ms is the table's first upload spread over the runs (every
// backend keeps a typed graph's weights after its first run) and the ids.
//
//	GPUCC_BENCH_GATHER    V,D,N (default 50257,768,4096)
//	GPUCC_BENCH_BACKENDS  (default webgpu,native)

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

func gatherSize() (v, d, n int) {
	s := []int{50257, 768, 4096}
	if e := os.Getenv("GPUCC_BENCH_GATHER"); e != "" {
		for i, f := range strings.Split(e, ",") {
			if k, err := strconv.Atoi(f); err == nil && i < 3 && k > 0 {
				s[i] = k
			}
		}
	}
	return s[0], s[1], s[2]
}

func BenchmarkEmbeddingGather(b *testing.B) {
	v, d, n := gatherSize()
	r := rand.New(rand.NewPCG(32, 1))
	table := make([]float32, v*d)
	for i := range table {
		table[i] = r.Float32()*2 - 1
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = r.Int64N(int64(v))
	}
	limits := ir.Limits{MaxElements: int64(v * d), MaxStorageBytes: 1 << 31, MaxOps: 1 << 40}
	gb := ir.NewBuilder()
	tab := gb.NamedInput("table", ir.Shape{v, d}, table)
	idx := gb.TypedInput("ids", ir.I64, ir.Shape{n}, nil, ids)
	gb.Output("y", tab.Gather(idx, 0))
	gather, err := gb.Build(limits)
	if err != nil {
		b.Fatal(err)
	}
	cb := ir.NewBuilder()
	cb.Output("y", cb.NamedInput("x", ir.Shape{n, d}, make([]float32, n*d)).MulScalar(1))
	copyGraph, err := cb.Build(limits)
	if err != nil {
		b.Fatal(err)
	}
	backends := []string{"webgpu", "native"}
	if e := os.Getenv("GPUCC_BENCH_BACKENDS"); e != "" {
		backends = strings.Split(e, ",")
	}
	for _, backend := range backends {
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: backend, Limits: limits, AllowSoftware: true})
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		for _, c := range []struct {
			name string
			g    *ir.Graph
		}{{"gather", gather}, {"copy", copyGraph}} {
			b.Run(backend+"/"+c.name, func(b *testing.B) {
				exe, err := rt.Compile(context.Background(), c.g)
				if err != nil {
					b.Skipf("%v", err)
				}
				defer exe.Release()
				var in gpucc.Inputs
				if c.name == "copy" {
					x, err := rt.Upload(context.Background(), ir.Shape{n, d}, table[:n*d])
					if err != nil {
						b.Fatal(err)
					}
					defer x.Release()
					in = gpucc.Inputs{"x": x}
				}
				var dispatch, upload float64
				b.ResetTimer()
				for range b.N {
					res, err := exe.Run(context.Background(), in)
					if err != nil {
						b.Fatal(err)
					}
					dispatch += res.Timings.DispatchMs
					upload += res.Timings.UploadMs
				}
				b.ReportMetric(dispatch/float64(b.N), "dispatch-ms")
				b.ReportMetric(upload/float64(b.N), "upload-ms")
				b.ReportMetric(float64(n*d*4)/1e6, "gathered-MB")
			})
		}
		rt.Close()
	}
}
