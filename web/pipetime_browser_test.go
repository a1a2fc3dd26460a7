package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/chromium"
)

// pipelineDirEnv names a folder of .wgsl kernels (gpucc build --targets
// wgsl's DIR/kernels) for TestPipelineTime.
const pipelineDirEnv = "GPUCC_PIPELINE_DIR"

// TestPipelineTime times the creation of each distinct kernel of
// $GPUCC_PIPELINE_DIR as a compute pipeline in headless Chromium's WebGPU
// (SwiftShader here), one at a time (createComputePipelineAsync awaited,
// layout "auto"), and logs each in ms, the slowest first, and their sum:
// which kernels make a model's first run slow in the page
// (bench/page_compile.sh). Every kernel must compile.
func TestPipelineTime(t *testing.T) {
	dir := os.Getenv(pipelineDirEnv)
	if dir == "" {
		t.Skipf("set %s to a folder of .wgsl kernels (bash bench/page_compile.sh MODEL.onnx SHAPE)", pipelineDirEnv)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.wgsl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .wgsl under %s (%v)", dir, err)
	}
	type timed struct {
		name  string
		bytes int
		ms    float64
	}
	var all []timed
	seen := map[string]bool{} // the page's pipeline cache: one pipeline per source
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("<!doctype html><title>pipelines</title>"))
	}))
	defer srv.Close()
	ctx := chromium.Open(t, srv.URL+"/", 60*time.Minute)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(src)] {
			continue
		}
		seen[string(src)] = true
		code, _ := json.Marshal(string(src))
		expr := fmt.Sprintf(`(async () => {
			window.dev ??= await (await navigator.gpu.requestAdapter()).requestDevice();
			const module = dev.createShaderModule({code: %s});
			const t0 = performance.now();
			try { await dev.createComputePipelineAsync({layout: "auto", compute: {module, entryPoint: "main"}}); }
			catch (e) { return JSON.stringify({error: String(e)}); }
			return JSON.stringify({ms: performance.now() - t0});
		})()`, code)
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var r struct {
			Ms    float64
			Error string
		}
		if err := json.Unmarshal([]byte(s), &r); err != nil || r.Error != "" {
			t.Fatalf("%s: %v %s", f, err, r.Error)
		}
		all = append(all, timed{filepath.Base(f), len(src), r.Ms})
	}
	slices.SortFunc(all, func(a, b timed) int { return cmp.Compare(b.ms, a.ms) })
	sum := 0.0
	for _, k := range all {
		sum += k.ms
		t.Logf("pipeline %-24s %7d bytes %9.0f ms", k.name, k.bytes, k.ms)
	}
	t.Logf("pipelines: %d distinct, %.0f ms in all", len(all), sum)
}
