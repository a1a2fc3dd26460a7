package web

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/chromium"
	"github.com/gpucc/gpucc/ir"
)

// pageDeadline bounds a browser test that runs a few graphs.
const pageDeadline = 3 * time.Minute

// page opens the demo page, as built from the current sources, in headless
// Chromium (flags from shared/browser.md) and waits until gpucc.wasm is
// loaded. query is appended to the URL; the browser stops when t ends or
// after deadline.
func page(t *testing.T, query string, deadline time.Duration) context.Context {
	t.Helper()
	h, err := Handler(builtPage(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx := chromium.Open(t, srv.URL+"/index.html"+query, deadline)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo && (window.demo.ready || window.demo.error)`)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// handler serves the embedded page, which may be absent or older than
// the sources (TestEmbeddedPage says which).
func handler(t *testing.T) http.Handler {
	t.Helper()
	h, err := Handler(Assets())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// result is gpucc.run's answer as the test harness returns it: output data
// as float32 bit patterns (JSON numbers lose the sign of zero), or error.
type result struct {
	Backend string `json:"backend"`
	Adapter *struct {
		Name     string `json:"name"`
		Software bool   `json:"software"`
	} `json:"adapter"`
	Outputs map[string]struct {
		Shape []int    `json:"shape"`
		Bits  []uint32 `json:"bits"`
	} `json:"outputs"`
	Timings          map[string]any `json:"timings"`
	FallbackAttempts []struct {
		Backend string `json:"backend"`
		Code    string `json:"code"`
		Error   string `json:"error"`
	} `json:"fallbackAttempts"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// run calls gpucc.run in the page.
func run(t *testing.T, ctx context.Context, graph []byte, backend string, allowSoftware bool) result {
	t.Helper()
	return runWith(t, ctx, graph, map[string]any{"backend": backend, "allowSoftware": allowSoftware})
}

// runWith calls gpucc.run with options opts.
func runWith(t *testing.T, ctx context.Context, graph []byte, opts map[string]any) result {
	t.Helper()
	o, _ := json.Marshal(opts)
	expr := fmt.Sprintf(`gpucc.run(%s, %s).then(r => {
		for (const o of Object.values(r.outputs)) { o.bits = Array.from(new Uint32Array(new Float32Array(o.data).buffer)); delete o.data; }
		return JSON.stringify(r);
	}, e => JSON.stringify({error: e}))`, jsString(graph), o)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return r
}

func jsString(b []byte) string {
	s, _ := json.Marshal(string(b))
	return string(s)
}

// ulps is the distance between two floats in units in the last place
// (+0 and -0 are one apart, so a lost sign of zero shows).
func ulps(a, b float32) int64 {
	key := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u & (1<<31 - 1)) - 1
		}
		return u
	}
	d := key(a) - key(b)
	if d < 0 {
		d = -d
	}
	return d
}

// opSuiteDeadline is each backend's deadline for TestOpSuite, sized for a
// busy 2-core machine: at load average 19–23 the 55 cases took 266 s on
// webgpu, 242 s on webgl2 and 47 s on cpu (2026-12-01), where the three
// once shared 3 minutes. 12 minutes leaves webgpu a 2.7× margin.
const opSuiteDeadline = 12 * time.Minute

// TestOpSuite runs every case through gpucc.run on each browser backend and
// compares the bits with cpuref. All must be bit-exact (0 ULP), except that
// the GPU backends may flush subnormals to zero (see flushes). A case whose
// reference holds ±Inf or NaN must be refused (non_finite_output, the
// seed's policy), then runs again with {nonFinite: true}, and its values
// are compared too (NaN as the canonical quiet NaN).
// Each backend runs in its own browser with its own deadline
// (opSuiteDeadline), so a slow one neither eats another's time nor leaves
// it a page still busy with its last graph.
func TestOpSuite(t *testing.T) {
	for _, backend := range []string{"webgpu", "webgl2", "wasm", "cpu"} {
		t.Run(backend, func(t *testing.T) {
			start := time.Now()
			ctx := page(t, "?life=0", opSuiteDeadline)
			worst, flushed, nonFinite := int64(0), 0, 0
			for _, c := range suite(t) {
				r := run(t, ctx, ir.Encode(c.g), backend, true)
				if r.Error != nil {
					if r.Error.Code == string(ir.CodeNonFiniteOutput) && !finite(c.g, flushes[backend]) {
						// the refusal the reference calls for; then its values
						r = runWith(t, ctx, ir.Encode(c.g), map[string]any{"backend": backend, "allowSoftware": true, "nonFinite": true})
						if r.Error != nil {
							t.Errorf("%s, nonFinite: %s: %s", c.name, r.Error.Code, r.Error.Message)
							continue
						}
						d, f := compare(t, c, r, flushes[backend])
						worst, flushed, nonFinite = max(worst, d), flushed+f, nonFinite+1
						continue
					}
					t.Errorf("%s: %s: %s", c.name, r.Error.Code, r.Error.Message)
					continue
				}
				if r.Backend != backend {
					t.Fatalf("%s: ran on %s, want %s", c.name, r.Backend, backend)
				}
				d, f := compare(t, c, r, flushes[backend])
				worst, flushed = max(worst, d), flushed+f
			}
			t.Logf("%s: worst difference to cpuref over %d cases (%d of them refused, then run with nonFinite): %d ULP; %d subnormal values flushed to ±0; %.1fs of its %v",
				backend, len(suite(t)), nonFinite, worst, flushed, time.Since(start).Seconds(), opSuiteDeadline)
		})
	}
}

// finite reports whether every output of g is finite in cpuref.Eval and,
// for a backend that may flush, also in cpuref.EvalFlushed: where it is
// not, the run must be refused with non_finite_output.
func finite(g *ir.Graph, flush bool) bool {
	evals := [][][]float32{cpuref.Eval(g)}
	if flush {
		evals = append(evals, cpuref.EvalFlushed(g))
	}
	for _, vals := range evals {
		for _, o := range g.Outputs {
			for _, v := range vals[o.ID] {
				if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
					return false
				}
			}
		}
	}
	return true
}

// flushes lists the backends allowed to flush subnormals to zero: GLSL ES
// 3.00 and WGSL both permit it, and Chromium on SwiftShader does it for
// WebGL2 and WebGPU alike (measured here). Their values must then be
// cpuref.EvalFlushed's, bit for bit, as cpuref's package doc states; every
// other value must be bit-exact to cpuref.Eval on every backend.
var flushes = map[string]bool{"webgl2": true, "webgpu": true}

// compare checks every output of r against cpuref and returns the largest
// ULP distance and the number of values that matched cpuref.EvalFlushed
// instead of cpuref.Eval (only when flush is set).
func compare(t *testing.T, c testCase, r result, flush bool) (worst int64, flushed int) {
	t.Helper()
	vals := cpuref.Eval(c.g)
	var flushedVals [][]float32
	if flush {
		flushedVals = cpuref.EvalFlushed(c.g)
	}
	for _, o := range c.g.Outputs {
		got, ok := r.Outputs[o.Name]
		if !ok {
			t.Errorf("%s: output %q missing", c.name, o.Name)
			continue
		}
		want := vals[o.ID]
		if len(got.Bits) != len(want) {
			t.Errorf("%s/%s: %d values, want %d", c.name, o.Name, len(got.Bits), len(want))
			continue
		}
		bad := 0
		for i, w := range want {
			g := math.Float32frombits(got.Bits[i])
			if got.Bits[i] == gpucc.QuietNaN { // every NaN a run returns is the canonical one
				if w != w {
					continue
				}
				if f := flushedVals; flush && f[o.ID][i] != f[o.ID][i] {
					flushed++
					continue
				}
			}
			if d := ulps(g, w); d > 0 {
				if flush && got.Bits[i] == math.Float32bits(flushedVals[o.ID][i]) {
					flushed++
					continue
				}
				worst = max(worst, d)
				if bad++; bad <= 3 {
					t.Errorf("%s/%s[%d] = %v (%#08x), cpuref %v (%#08x)", c.name, o.Name, i, g, got.Bits[i], w, math.Float32bits(w))
				}
			}
		}
	}
	return worst, flushed
}

// TestBadArguments: a graph JSON.stringify cannot encode rejects with
// invalid_graph instead of ending the wasm program, and gpucc.run still
// works afterwards.
func TestBadArguments(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	for _, graph := range []string{
		`(() => { const g = {version: 1}; g.self = g; return g; })()`, // cyclic
		`({version: 1n})`, // a BigInt
	} {
		expr := `gpucc.run(` + graph + `, {backend: "cpu"}).then(() => "resolved", e => e.code)`
		code, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil || code != "invalid_graph" {
			t.Errorf("gpucc.run(%s) = %q, %v; want a rejection with code invalid_graph", graph, code, err)
		}
	}
	if r := run(t, ctx, ir.Encode(suite(t)[0].g), "cpu", false); r.Error != nil {
		t.Errorf("gpucc.run after bad arguments: %s: %s", r.Error.Code, r.Error.Message)
	}
}

func TestFallback(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	g := suite(t)[0].g
	t.Run("auto without allowSoftware", func(t *testing.T) {
		r := run(t, ctx, ir.Encode(g), "auto", false)
		if r.Error != nil {
			t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
		}
		seen := map[string]string{}
		for _, a := range r.FallbackAttempts {
			seen[a.Backend] = a.Code + ": " + a.Error
		}
		t.Logf("ran on %s; attempts %v", r.Backend, seen)
		for _, b := range []string{"webgpu", "webgl2"} {
			if !strings.Contains(seen[b], "software") {
				t.Errorf("%s attempt = %q, want a software-adapter rejection", b, seen[b])
			}
		}
		if a, ok := seen["wasm"]; ok { // only gpucc's own server builds its modules
			t.Errorf("auto tried wasm in the browser (%q); the browser chain is webgpu, webgl2, cpu", a)
		}
		if r.Backend != "cpu" {
			t.Errorf("ran on %s, want cpu (every GPU here is software)", r.Backend)
		}
	})
	tests := []struct {
		name, graph, backend, code string
	}{
		{"bad json", `{"version":1,`, "cpu", "invalid_graph"},
		{"unknown op", `{"version":1,"nodes":[{"id":0,"op":"nope"}],"outputs":[]}`, "cpu", "invalid_graph"},
	}
	t.Run("explicit wasm runs", func(t *testing.T) { // its kernels built by the page's server
		if r := run(t, ctx, ir.Encode(g), "wasm", false); r.Error != nil || r.Backend != "wasm" {
			t.Fatalf("ran on %s: %+v", r.Backend, r.Error)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, ctx, []byte(tt.graph), tt.backend, false)
			if r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("got %+v, want error code %s", r.Error, tt.code)
			}
		})
	}
}

var updateScreenshot = flag.Bool("update", false, "rewrite docs/demo.png, the README's screenshot")

// TestDemoScreenshot lets the Life demo draw a few generations, checks
// that the canvas is not blank and takes a screenshot; with -update it
// becomes docs/demo.png, so that a test run leaves the tree as it was.
func TestDemoScreenshot(t *testing.T) {
	ctx := page(t, "?allowSoftware=1", pageDeadline)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo.frames >= 5 || window.demo.error`)); err != nil {
		t.Fatal(err)
	}
	errText, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.demo.error ? JSON.stringify(window.demo.error) : ""`))
	if errText != "" {
		t.Fatalf("demo failed: %s", errText)
	}
	colours, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
		const c = document.getElementById("life");
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		const seen = new Set();
		for (let i = 0; i < d.length; i += 4) seen.add(d[i] << 16 | d[i+1] << 8 | d[i+2]);
		return seen.size;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if colours < 2 {
		t.Errorf("the Life canvas holds %d colour(s); it drew nothing", colours)
	}
	backend, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.demo.last.backend`))
	t.Logf("demo ran on %s; canvas has %d colours", backend, colours)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.png")
	if *updateScreenshot {
		path = filepath.Join("..", "docs", "demo.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
