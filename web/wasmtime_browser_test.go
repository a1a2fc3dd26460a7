package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/chromium"
	"github.com/gpucc/gpucc/internal/testmodels"
)

// ortWebEnv names the onnxruntime-web package folder (npm's, holding
// dist/) that TestWasmPageTime serves beside the page.
const ortWebEnv = "GPUCC_ORT_WEB"

// TestWasmPageTime times the page's wasm backend beside ONNX Runtime Web's
// wasm backend in the same Chromium page, one thread each, on the models
// of bench/RESULTS.md's CPU table: the PP-OCRv4 detector at 320², the
// recognizer at 48×320 (or at $GPUCC_OCR_SIZE: 640 is issue 34's size)
// and Silero VAD (the float16 export the page runs:
// v5's int64 sr cannot be given in the page). The inputs are the same
// fixed pattern in [-1, 1) (the VAD's state zeros). Rounds interleave the
// two; each prints the least over its runs of ORT's session.run and of
// gpucc.runONNX's run (upload, kernels and readback: the import each call
// repeats is not counted), in ms of the page's clock. A benchmark, not a
// check: it runs when $GPUCC_ORT_WEB names onnxruntime-web's folder
// (bench/wasm_page.sh sets it).
func TestWasmPageTime(t *testing.T) {
	ortDir, err := os.Getenv(ortWebEnv), error(nil)
	if ortDir == "" {
		t.Skipf("set %s to an onnxruntime-web package folder (npm install onnxruntime-web@1.30.0)", ortWebEnv)
	}
	size := 320 // the OCR models' size: GPUCC_OCR_SIZE (640: issue 34's)
	if v := os.Getenv("GPUCC_OCR_SIZE"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 32 || size%32 != 0 {
			t.Fatalf("GPUCC_OCR_SIZE=%q: want a multiple of 32", v)
		}
	}
	models := []struct {
		name   string
		shapes map[string][]int
	}{
		{"ppocr_v4_det", map[string][]int{"x": {1, 3, size, size}}},
		{"ppocr_v4_rec", map[string][]int{"x": {1, 3, 48, size}}},
		{"silero_vad_half", map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}},
	}
	page, err := Handler(builtPage(t))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ort/", http.StripPrefix("/ort/", http.FileServer(http.Dir(filepath.Join(ortDir, "dist")))))
	for _, m := range models {
		path := testmodels.Path(t, m.name)
		mux.HandleFunc("/models/"+m.name+".onnx", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) })
	}
	mux.Handle("/", page)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := chromium.Open(t, srv.URL+"/index.html?life=0", 20*time.Minute)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo && (window.demo.ready || window.demo.error)`)); err != nil {
		t.Fatal(err)
	}
	evalAwait(t, ctx, `new Promise((ok, bad) => { const s = document.createElement("script");
		s.src = "ort/ort.wasm.min.js"; s.onload = () => ok(""); s.onerror = bad; document.head.appendChild(s); })`)
	rounds, runs := 3, 5
	for _, m := range models {
		shapes, _ := json.Marshal(m.shapes)
		setup := fmt.Sprintf(`(async () => {
			ort.env.wasm.numThreads = 1; ort.env.wasm.wasmPaths = location.origin + "/ort/";
			const bytes = new Uint8Array(await (await fetch("models/%s.onnx")).arrayBuffer());
			const shapes = %s, inputs = {}, feeds = {};
			for (const [name, shape] of Object.entries(shapes)) {
				const n = shape.reduce((a, b) => a * b, 1), x = new Float32Array(n);
				if (name !== "state") for (let i = 0; i < n; i++) x[i] = ((i * 7919) %% 2000) / 1000 - 1;
				inputs[name] = x; feeds[name] = new ort.Tensor("float32", x, shape);
			}
			const session = await ort.InferenceSession.create(bytes, {executionProviders: ["wasm"], graphOptimizationLevel: "all"});
			window.bench = {bytes, shapes, inputs, feeds, session};
			await session.run(feeds);
			await gpucc.runONNX(bytes, {backend: "wasm", inputShapes: shapes, inputs});
			return "";
		})()`, m.name, shapes)
		evalAwait(t, ctx, setup)
		for round := 1; round <= rounds; round++ {
			s := evalAwait(t, ctx, fmt.Sprintf(`(async () => {
				const b = window.bench; let ort1 = Infinity, g1 = Infinity, gk = Infinity;
				for (let i = 0; i < %d; i++) { const t0 = performance.now(); await b.session.run(b.feeds); ort1 = Math.min(ort1, performance.now() - t0); }
				for (let i = 0; i < %d; i++) {
					const r = await gpucc.runONNX(b.bytes, {backend: "wasm", inputShapes: b.shapes, inputs: b.inputs});
					const t = r.timings;
					g1 = Math.min(g1, t.uploadMs + t.dispatchMs + t.readbackMs); gk = Math.min(gk, t.dispatchMs);
				}
				return JSON.stringify({ort: ort1, gpucc: g1, kernels: gk});
			})()`, runs, runs))
			var r struct{ ORT, Gpucc, Kernels float64 }
			if err := json.Unmarshal([]byte(s), &r); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("page-wasm\t%s\tround %d\tort-web %.2f ms\tgpucc %.2f ms (kernels %.2f)\t%.2f×\n", m.name, round, r.ORT, r.Gpucc, r.Kernels, r.Gpucc/r.ORT)
		}
	}
}

// evalAwait evaluates expr, a promise of a string, and returns the string.
func evalAwait(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s
}
