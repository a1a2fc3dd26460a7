package bench

// BenchmarkScatter: issue 32's scatter rows on a device, the uses that
// motivate them: "kv", a KV cache's write (ScatterND of R index rows of a
// [T, D] float32 cache, none), "kvrows", the same with many rows (a
// prefill's), and "embgrad", an embedding's gradient as gather's rule
// builds it (scatter_elements' add of N rows of D gradients into +0s of a
// [V, D] table, every fourth id a repeat). WebGPU runs a scatter as
// codegen/wgsl's linear passes (TypedKernels: a copy of the data, then
// two passes over the updates), so kv and kvrows cost the cache plus the
// rows, not T·D·R checks (kvrows' 8.6e9 at its default, which the
// output-side kernel of 7d3689d refused past ir.LoopBudget); embgrad's
// repeated ids are folded from the N candidates of each element they aim
// at. The C path (native) costs the data plus the updates. dispatch-ms is
// the run's dispatch stage (GPU timestamps where the backend has them),
// moved-GB/s the output's and the updates' bytes over it, to set beside a
// copy's bandwidth. Each case's outputs are checked against cpu's bits
// once before it is timed.
//
//	GPUCC_BENCH_KV        T,D,R (default 32768,64,16)
//	GPUCC_BENCH_KVROWS    T,D,R (default 32768,64,4096)
//	GPUCC_BENCH_EMBGRAD   V,D,N (default 50257,768,64)
//	GPUCC_BENCH_BACKENDS  (default webgpu,native)

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// sizes reads three positive integers from env, else def.
func sizes(env string, def [3]int) [3]int {
	if e := os.Getenv(env); e != "" {
		for i, f := range strings.Split(e, ",") {
			if k, err := strconv.Atoi(f); err == nil && i < 3 && k > 0 {
				def[i] = k
			}
		}
	}
	return def
}

func BenchmarkScatter(b *testing.B) {
	r := rand.New(rand.NewPCG(32, 2))
	floats := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = r.Float32()*2 - 1
		}
		return v
	}
	eg := sizes("GPUCC_BENCH_EMBGRAD", [3]int{50257, 768, 64})
	limits := ir.Limits{MaxElements: 1 << 27, MaxStorageBytes: 1 << 32, MaxOps: 1 << 42}
	kvGraph := func(kv [3]int) *ir.Builder {
		kb := ir.NewBuilder()
		rows := make([]int64, kv[2])
		for i := range rows {
			rows[i] = int64((i * 5003) % kv[0])
		}
		cache := kb.NamedInput("cache", ir.Shape{kv[0], kv[1]}, floats(kv[0]*kv[1]))
		kb.Output("y", cache.ScatterND(kb.TypedInput("rows", ir.I64, ir.Shape{kv[2], 1}, nil, rows),
			kb.NamedInput("new", ir.Shape{kv[2], kv[1]}, floats(kv[2]*kv[1])), ir.ScatterNone))
		return kb
	}
	kb, kr := kvGraph(sizes("GPUCC_BENCH_KV", [3]int{32768, 64, 16})), kvGraph(sizes("GPUCC_BENCH_KVROWS", [3]int{32768, 64, 4096}))
	eb := ir.NewBuilder()
	ids := make([]int64, eg[2]*eg[1])
	for n := range eg[2] {
		id := r.Int64N(int64(eg[0]))
		if n%4 == 3 {
			id = ids[(n-1)*eg[1]] // a repeated id
		}
		for d := range eg[1] {
			ids[n*eg[1]+d] = id
		}
	}
	zeros := eb.Full(ir.Shape{1, eg[0], eg[1]}, 0)
	eb.Output("y", zeros.ScatterElements(eb.TypedInput("ids", ir.I64, ir.Shape{1, eg[2], eg[1]}, nil, ids),
		eb.NamedInput("g", ir.Shape{1, eg[2], eg[1]}, floats(eg[2]*eg[1])), 1, ir.ScatterAdd))
	graphs := map[string]*ir.Graph{}
	for name, bb := range map[string]*ir.Builder{"kv": kb, "kvrows": kr, "embgrad": eb} {
		g, err := bb.Build(limits)
		if err != nil {
			b.Fatal(err)
		}
		graphs[name] = g
	}
	backends := []string{"webgpu", "native"}
	if e := os.Getenv("GPUCC_BENCH_BACKENDS"); e != "" {
		backends = strings.Split(e, ",")
	}
	ctx := context.Background()
	cpu, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu", Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	defer cpu.Close()
	for _, backend := range backends {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: backend, Limits: limits, AllowSoftware: true})
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		for _, name := range []string{"kv", "kvrows", "embgrad"} {
			g := graphs[name]
			b.Run(backend+"/"+name, func(b *testing.B) {
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					b.Skipf("%v", err)
				}
				defer exe.Release()
				want, err := cpu.Run(ctx, g)
				if err != nil {
					b.Fatal(err)
				}
				got, err := exe.Run(ctx, nil)
				if err != nil { // a device's limit (lavapipe binds 128 MiB: the [50257, 768] table is 154 MB)
					b.Skipf("%v", err)
				}
				bits := func(v []float32) []uint32 {
					out := make([]uint32, len(v))
					for i, x := range v {
						out[i] = math.Float32bits(x)
					}
					return out
				}
				if !slices.Equal(bits(got.Outputs["y"].Data), bits(want.Outputs["y"].Data)) {
					b.Fatalf("%s on %s: not cpu's bits", name, backend)
				}
				var dispatch float64
				b.ResetTimer()
				for range b.N {
					res, err := exe.Run(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					dispatch += res.Timings.DispatchMs
				}
				b.ReportMetric(dispatch/float64(b.N), "dispatch-ms")
				n := g.Nodes[len(g.Nodes)-1]
				moved := 4 * float64(n.Shape.Len()+g.Nodes[n.Args[1]].Shape.Len())
				if dispatch > 0 {
					b.ReportMetric(moved/(dispatch/float64(b.N))/1e6, "moved-GB/s")
				}
			})
		}
		rt.Close()
	}
}
