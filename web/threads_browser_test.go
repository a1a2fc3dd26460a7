package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/chromium"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// threadCases are graphs whose kernels the page's wasm splits over its
// threads where a part's least work is 2^17 (each kernel's estimated work
// is at least 4 × that): float32's limits (±0, subnormals, ±3e38 and
// math.MaxFloat32, scaled by powers of two so that every output stays
// finite, as protocol v1 requires, and products round to subnormals and
// ±0), a flat elementwise kernel of two outputs, a matmul with a bias and
// relu epilogue feeding a second matmul (kernels in order, each split),
// and sums and maxima over rows and columns.
func threadCases(t *testing.T) []testCase {
	t.Helper()
	scaled := func(seed uint64, n int, exp int) []float32 {
		v := irtest.Extremes(seed, n)
		for i := range v {
			v[i] = float32(math.Ldexp(float64(v[i]), exp))
		}
		return v
	}
	cases := []struct {
		name string
		f    func(b *ir.Builder)
	}{
		{"elementwise", func(b *ir.Builder) {
			const n = 1 << 17
			x, y := b.Input(ir.Shape{n}, scaled(1, n, -64)), b.Input(ir.Shape{n}, scaled(2, n, -64))
			b.Output("prod", x.Mul(y))
			b.Output("max", x.Maximum(y).MulScalar(0.5).Relu().AddScalar(-1))
		}},
		{"mlp", func(b *ir.Builder) {
			x := b.Input(ir.Shape{96, 200}, scaled(3, 96*200, -70))
			w1 := b.Input(ir.Shape{200, 130}, scaled(4, 200*130, -70))
			b1 := b.Input(ir.Shape{130}, scaled(5, 130, -140))
			w2 := b.Input(ir.Shape{130, 70}, scaled(6, 130*70, -128))
			h := x.MatMul(w1).Add(b1).Relu()
			b.Output("h", h)
			b.Output("y", h.MatMul(w2))
		}},
		{"reductions", func(b *ir.Builder) {
			x := b.Input(ir.Shape{300, 2048}, scaled(7, 300*2048, -20))
			b.Output("rows", x.SumAxes(false, 1))
			b.Output("cols", x.MaxAxes(false, 0))
		}},
	}
	out := make([]testCase, len(cases))
	for i, c := range cases {
		b := ir.NewBuilder()
		c.f(b)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !finite(g, false) {
			t.Fatalf("%s: cpuref's outputs are not all finite", c.name)
		}
		out[i] = testCase{c.name, g}
	}
	return out
}

// runThreads calls gpucc.run on wasm with the threads option.
func runThreads(t *testing.T, ctx context.Context, g *ir.Graph, threads int) result {
	t.Helper()
	return runWith(t, ctx, ir.Encode(g), map[string]any{"backend": "wasm", "threads": threads})
}

// workerTiles is how many kernel tiles the page's workers have computed.
func workerTiles(t *testing.T, ctx context.Context) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`globalThis.gpuccWasmWorkerTiles || 0`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWasmThreads: the page is cross-origin isolated (web.Handler's
// headers), and its wasm backend runs threadCases on 1, 2 and 4 threads
// (the page's main thread and Web Workers on one shared memory, claiming
// chunks of each kernel's tiles) with cpuref's bits on every output, the
// main thread claiming chunks too and, with gpuccWasmMainWaits, leaving
// them all to the workers: then the workers computed tiles of every case
// on 2 and 4 threads (the main thread claiming, a loaded machine may leave
// them none), and none on 1. The adapter names the threads.
func TestWasmThreads(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	if iso := evalString(t, ctx, `String(crossOriginIsolated)`); iso != "true" {
		t.Fatalf("crossOriginIsolated is %s", iso)
	}
	// The native backend's MinPartWork, under which every case splits in
	// 4; the page's default splits none of them (they are too short).
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`globalThis.gpuccWasmMinPartWork = 131072`)); err != nil {
		t.Fatal(err)
	}
	cases := threadCases(t)
	for _, mainWaits := range []bool{true, false} {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`globalThis.gpuccWasmMainWaits = %v`, mainWaits))); err != nil {
			t.Fatal(err)
		}
		testThreads(t, ctx, cases, mainWaits)
	}
}

func testThreads(t *testing.T, ctx context.Context, cases []testCase, mainWaits bool) {
	for _, threads := range []int{1, 2, 4} {
		for _, c := range cases {
			before := workerTiles(t, ctx)
			r := runThreads(t, ctx, c.g, threads)
			if r.Error != nil {
				t.Fatalf("%d threads, %s: %s: %s", threads, c.name, r.Error.Code, r.Error.Message)
			}
			want := "the page's WebAssembly (SIMD128)"
			if threads > 1 {
				want = fmt.Sprintf("the page's WebAssembly (SIMD128, %d threads)", threads)
			}
			if r.Backend != "wasm" || r.Adapter == nil || r.Adapter.Name != want {
				t.Errorf("%d threads, %s: ran on %s %+v, want wasm on %q", threads, c.name, r.Backend, r.Adapter, want)
			}
			c.name = fmt.Sprintf("%d threads (main thread waits: %v), %s", threads, mainWaits, c.name)
			if worst, _ := compare(t, c, r, false); worst != 0 {
				t.Errorf("%s: %d ULP from cpuref", c.name, worst)
			}
			ran := workerTiles(t, ctx) - before
			if threads == 1 && ran != 0 || mainWaits && threads > 1 && ran == 0 {
				t.Errorf("%s: the workers computed %d tiles", c.name, ran)
			}
		}
	}
}

// TestWasmThreadsNotIsolated: served without the isolation headers (as a
// server in front of the page might), the page has no SharedArrayBuffer;
// its wasm backend asked for 2 threads runs on one, says why in its
// adapter, and gives cpuref's bits.
func TestWasmThreadsNotIsolated(t *testing.T) {
	h, err := Handler(builtPage(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(stripIsolation{w}, r)
	}))
	defer srv.Close()
	ctx := chromium.Open(t, srv.URL+"/index.html?life=0", pageDeadline)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo && (window.demo.ready || window.demo.error)`)); err != nil {
		t.Fatal(err)
	}
	if iso := evalString(t, ctx, `String(crossOriginIsolated)`); iso != "false" {
		t.Fatalf("crossOriginIsolated is %s without the headers", iso)
	}
	c := threadCases(t)[1]
	r := runThreads(t, ctx, c.g, 2)
	if r.Error != nil {
		t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
	}
	const want = "the page's WebAssembly (SIMD128, 1 thread: the page is not cross-origin isolated (no SharedArrayBuffer))"
	if r.Adapter == nil || r.Adapter.Name != want {
		t.Errorf("adapter %+v, want %q", r.Adapter, want)
	}
	if worst, _ := compare(t, c, r, false); worst != 0 {
		t.Errorf("%d ULP from cpuref", worst)
	}
	if n := workerTiles(t, ctx); n != 0 {
		t.Errorf("the workers computed %d tiles", n)
	}
}

// TestWasmThreadsPageOption: the page's address chooses the threads
// (?threads=2 or 1 for every run of the page, its Life demo included),
// which the adapter line shows; without it the wasm backend takes ONNX
// Runtime Web's default, half the cores the browser reports (rounded up,
// at most 4).
func TestWasmThreadsPageOption(t *testing.T) {
	adapter := func(n int) string {
		if n == 1 {
			return "the page's WebAssembly (SIMD128)"
		}
		return fmt.Sprintf("the page's WebAssembly (SIMD128, %d threads)", n)
	}
	for _, tt := range []struct {
		query   string
		threads int // 0: the default
	}{{"?backend=wasm&threads=2", 2}, {"?backend=wasm&threads=1", 1}, {"?backend=wasm", 0}} {
		ctx := page(t, tt.query, pageDeadline)
		want := adapter(tt.threads)
		if tt.threads == 0 {
			hc, err := chromedp.Run(ctx, chromedp.Evaluate[int](`navigator.hardwareConcurrency`))
			if err != nil {
				t.Fatal(err)
			}
			want = adapter(min(4, (hc+1)/2))
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo.frames > 0 || window.demo.error`)); err != nil {
			t.Fatal(err)
		}
		if got := evalString(t, ctx, `document.getElementById("adapter").textContent`); got != want {
			t.Errorf("%s: the adapter line is %q, want %q", tt.query, got, want)
		}
	}
}

// stripIsolation drops the isolation headers from what it writes.
type stripIsolation struct{ http.ResponseWriter }

func (s stripIsolation) WriteHeader(code int) {
	s.Header().Del("Cross-Origin-Opener-Policy")
	s.Header().Del("Cross-Origin-Embedder-Policy")
	s.ResponseWriter.WriteHeader(code)
}

func (s stripIsolation) Write(b []byte) (int, error) {
	s.Header().Del("Cross-Origin-Opener-Policy")
	s.Header().Del("Cross-Origin-Embedder-Policy")
	return s.ResponseWriter.Write(b)
}

// TestWasmThreadsTiming times the page's wasm on 1, 2 and 4 threads when
// GPUCC_WASM_THREADS_BENCH is set (a measurement, not a check: make test
// leaves it out): each workload's best dispatch time (every kernel, no
// copies) over GPUCC_WASM_THREADS_BENCH runs, the thread counts
// interleaved run by run so that a burst of the machine's load falls on
// each alike; the outputs' bits are checked against cpuref on the way.
func TestWasmThreadsTiming(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_WASM_THREADS_BENCH"))
	if runs <= 0 {
		t.Skip("set GPUCC_WASM_THREADS_BENCH=N to time N runs of each workload")
	}
	mm := func(name string, m, k, n int) testCase {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{m, k}, values(1, m*k, 1))
		w := b.Input(ir.Shape{k, n}, values(2, k*n, 1))
		bias := b.Input(ir.Shape{n}, values(3, n, 1))
		b.Output("y", x.MatMul(w).Add(bias).Relu())
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return testCase{name, g}
	}
	mlp := func() testCase { // bench/peers' mlp: x [64,256], 256→256→128→10
		b := ir.NewBuilder()
		h := b.Input(ir.Shape{64, 256}, values(4, 64*256, 1))
		for i, n := range []int{256, 128, 10} {
			k := h.Shape()[1]
			h = h.MatMul(b.Input(ir.Shape{k, n}, values(uint32(10+i), k*n, 0.1))).Add(b.Input(ir.Shape{n}, values(uint32(20+i), n, 0.1)))
			if i < 2 {
				h = h.Relu()
			}
		}
		b.Output("y", h)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return testCase{"mlp 64x256 256-256-128-10", g}
	}
	cases := append([]testCase{mm("matmul 256x256x512 bias relu", 256, 256, 512), mlp()}, threadCases(t)...)
	ctx := page(t, "?life=0", 20*time.Minute)
	threads := []int{1, 2, 4}
	for _, c := range cases {
		best := map[int]float64{}
		before := workerTiles(t, ctx)
		for i := range runs {
			for _, n := range threads {
				r := runThreads(t, ctx, c.g, n)
				if r.Error != nil {
					t.Fatalf("%s: %s", c.name, r.Error.Message)
				}
				if i == 0 {
					if worst, _ := compare(t, c, r, false); worst != 0 {
						t.Fatalf("%s on %d threads: %d ULP", c.name, n, worst)
					}
				}
				ms, _ := r.Timings["dispatchMs"].(float64)
				if b, ok := best[n]; !ok || ms < b {
					best[n] = ms
				}
			}
		}
		t.Logf("%s: best dispatch of %d: 1 thread %.3f ms, 2 threads %.3f ms (%.2fx), 4 threads %.3f ms (%.2fx); the workers computed %d tiles",
			c.name, runs, best[1], best[2], best[1]/best[2], best[4], best[1]/best[4], workerTiles(t, ctx)-before)
	}
}
