//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/native"
)

// threadGraphs are graphs whose kernels split into tiles: matmuls (plain,
// transposed, with an epilogue, batched) over odd, prime and power-of-two
// shapes around the 16-row tile, elementwise kernels across the 4096-element
// chunk, rows kernels (softmax, layernorm), column, row and middle-axis
// sums and maxima, convolutions and pooling (irtest's random cases) and
// life.
func threadGraphs(t *testing.T) map[string]*ir.Graph {
	gs := map[string]*ir.Graph{}
	seed := uint32(1)
	data := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			seed = seed*1664525 + 1013904223
			v[i] = float32(int32(seed>>8)%2001-1000) / 256
		}
		return v
	}
	for _, s := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 31, 13}, {16, 64, 16}, {64, 64, 64}, {131, 300, 129}, {257, 3, 520}, {33, 257, 65}} {
		m, k, n := s[0], s[1], s[2]
		gs[fmt.Sprintf("matmul %dx%dx%d", m, k, n)] = build(t, func(b *ir.Builder) {
			a, bb := b.Input(ir.Shape{m, k}, data(m*k)), b.Input(ir.Shape{k, n}, data(k*n))
			at, bt := b.Input(ir.Shape{k, m}, data(m*k)), b.Input(ir.Shape{n, k}, data(k*n))
			bias := b.Input(ir.Shape{n}, data(n))
			b.Output("ab", a.MatMul(bb))
			b.Output("atbt", at.T().MatMul(bt.T()))
			b.Output("relu", a.MatMul(bt.T()).Add(bias).Relu())
		})
	}
	for _, s := range [][2]ir.Shape{{{2, 3, 19, 7}, {2, 3, 7, 33}}, {{5, 37, 9}, {1, 9, 20}}, {{3, 16, 5}, {5, 17}}} {
		as, bs := s[0], s[1]
		gs[fmt.Sprintf("batched matmul %v x %v", as, bs)] = build(t, func(b *ir.Builder) {
			x, y := b.Input(as, data(as.Len())), b.Input(bs, data(bs.Len()))
			b.Output("xy", x.MatMul(y))
			b.Output("relu", x.MatMul(y).AddScalar(0.25).Relu())
		})
	}
	for _, n := range []int{1, 4095, 4096, 4097, 3 * 4096, 65537} {
		gs[fmt.Sprintf("elementwise %d", n)] = build(t, func(b *ir.Builder) {
			x, y := b.Input(ir.Shape{n}, data(n)), b.Input(ir.Shape{n}, data(n))
			b.Output("relu", x.Mul(y).AddScalar(0.5).Relu())
		})
	}
	for _, s := range [][2]int{{1, 7}, {37, 129}, {64, 256}, {127, 17}, {16, 1024}} {
		r, c := s[0], s[1]
		gs[fmt.Sprintf("rows %dx%d", r, c)] = build(t, func(b *ir.Builder) {
			x := b.Input(ir.Shape{r, c}, data(r*c))
			b.Output("softmax", x.Softmax(1))
			b.Output("layernorm", x.LayerNorm(1, 1e-5))
			b.Output("rowsum", x.SumAxes(false, 1))
			b.Output("colsum", x.SumAxes(false, 0))
			b.Output("rowmax", x.MaxAxes(false, 1))
			b.Output("colmax", x.MaxAxes(false, 0))
		})
	}
	gs["middle axis 5x33x17"] = build(t, func(b *ir.Builder) {
		x := b.Input(ir.Shape{5, 33, 17}, data(5*33*17))
		b.Output("sum", x.SumAxes(false, 1))
		b.Output("max", x.MaxAxes(false, 1))
	})
	for s := uint64(0); s < 12; s++ {
		gs[fmt.Sprintf("conv %d", s)] = irtest.RandomConv(s).Graph(s + 100)
		gs[fmt.Sprintf("pool %d", s)] = irtest.RandomPool(s).Graph(s + 200)
	}
	gs["life 37x61"] = build(t, func(b *ir.Builder) {
		v := data(37 * 61)
		for i := range v {
			v[i] = float32(int(v[i]) & 1)
		}
		b.Output("next", b.Input(ir.Shape{37, 61}, v).Life())
	})
	return gs
}

// TestThreadsBits runs every kernel split into as many parts as it has
// tiles allows (MinPartWork 1) on 1, 2, 3 and 8 threads: every output must
// have the same bits on each, and cpuref's. The outputs of concurrent parts
// are disjoint by construction (codegen/c's tiles); go test -race checks
// the Go side that starts and waits for them.
func TestThreadsBits(t *testing.T) {
	skipUnlessCC(t)
	defer native.SetMinPartWork(1)()
	t.Setenv("GPUCC_CACHE_DIR", t.TempDir())
	gs := threadGraphs(t)
	for _, threads := range []int{1, 2, 3, 8} {
		rt := gpucctest.Open(t, "native", func(o *gpucc.Options) { o.Threads = threads })
		for name, g := range gs {
			// a graph whose reference is not finite: refused, then
			// compared on the runtime's twin that allows it (CheckRun)
			t.Run(fmt.Sprintf("%d/%s", threads, name), func(t *testing.T) { gpucctest.CheckRun(t, rt, g) })
		}
	}
}

// TestThreadsOption: a negative thread count and a GPUCC_THREADS that is
// not a positive integer are refused when the backend opens; a count
// given in Options wins over GPUCC_THREADS, which wins over GOMAXPROCS.
func TestThreadsOption(t *testing.T) {
	for _, tc := range []struct {
		opt     int
		env     string
		want    int
		wantErr bool
	}{
		{opt: 3, env: "5", want: 3},
		{env: "5", want: 5},
		{env: "0", wantErr: true},
		{env: "two", wantErr: true},
		{opt: -1, wantErr: true},
	} {
		t.Setenv("GPUCC_THREADS", tc.env)
		got, err := native.Threads(tc.opt)
		if (err != nil) != tc.wantErr || !tc.wantErr && got != tc.want {
			t.Errorf("Threads(%d) with GPUCC_THREADS=%q = %d, %v; want %d, error %v", tc.opt, tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}
