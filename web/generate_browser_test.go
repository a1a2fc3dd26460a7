package web

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/npy"
)

// TestGeneratePage decodes the gpt2kv fixture (onnx/testdata/transformers)
// through the page's decoding card (generate.js): the model picked as a
// visitor picks it, the fixture's prompt, 16 ids. On cpu (cpuref in the
// page), webgpu and webgl2 the ids are PyTorch float64's, each shown as it comes
// (onToken, in order) and in the card's text, with the cache kept on the
// device. gpucc.generate refuses bad arguments with stable codes.
func TestGeneratePage(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "onnx", "testdata", "transformers"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "gpt2kv.tokens.npy"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := npy.Read(f, 1<<20)
	f.Close()
	if err != nil || len(a.Int64) != 72 {
		t.Fatalf("gpt2kv.tokens.npy: %v", err)
	}
	const n = 16
	prompt, want := a.Int64[:8], a.Int64[8:8+n]
	ctx := page(t, "?life=0", 5*time.Minute)
	// index.html loads generate.js, which adds the card.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("generate") !== null`)); err != nil {
		t.Fatalf("the page has no decoding card: %v", err)
	}
	pick(t, ctx, "#genFile", filepath.Join(dir, "gpt2kv.onnx"))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`demo.generate.picked > 0`)); err != nil {
		t.Fatal(err)
	}
	ids := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(prompt)), ","), "[]")
	for _, backend := range []string{"cpu", "webgpu", "webgl2"} {
		t.Run(backend, func(t *testing.T) {
			evalString(t, ctx, fmt.Sprintf(`(document.getElementById("backend").value = %q,
				document.getElementById("allowSoftware").checked = true,
				document.getElementById("genPrompt").value = %q,
				document.getElementById("genTokens").value = "%d",
				document.getElementById("genRun").click(),
				"")`, backend, ids, n))
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`demo.generate.done > 0 && !demo.generate.busy`, chromedp.WithPollingTimeout(3*time.Minute))); err != nil {
				t.Fatal(err)
			}
			r := evalJSON[struct {
				Streamed []int64 `json:"streamed"`
				Result   *struct {
					Backend string  `json:"backend"`
					Tokens  []int64 `json:"tokens"`
					Cache   string  `json:"cache"`
					StepMs  []float64
				} `json:"result"`
				Error *struct{ Code, Message string } `json:"error"`
				Shown string                          `json:"shown"`
			}](t, ctx, `JSON.stringify({...demo.generate, model: null, shown: document.getElementById("genOut").textContent})`)
			if r.Error != nil {
				if backend == "webgpu" && r.Error.Code == "backend_unavailable" && os.Getenv("GPUCC_REQUIRE_BROWSER") == "" {
					t.Skip(r.Error.Message)
				}
				t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
			}
			if r.Result == nil || !slices.Equal(r.Result.Tokens, want) || r.Result.Backend != backend || r.Result.Cache != "device" {
				t.Fatalf("result %+v; want %v on %s with the cache on the device", r.Result, want, backend)
			}
			if !slices.Equal(r.Streamed, want) {
				t.Errorf("onToken streamed %v, want %v", r.Streamed, want)
			}
			if shown := strings.Join(strings.Fields(fmt.Sprint(want)), " "); r.Shown != strings.Trim(shown, "[]") {
				t.Errorf("the card shows %q, want %q", r.Shown, strings.Trim(shown, "[]"))
			}
		})
		evalString(t, ctx, `(demo.generate.done = 0, "")`)
	}
	for _, tt := range []struct{ call, code string }{
		{`gpucc.generate(42)`, "invalid_graph"},
		{`gpucc.generate(demo.generate.model, {backend: "cpu", prompt: [34, 256]})`, "invalid_input"},
		{`gpucc.generate(demo.generate.model, {backend: "cpu", prompt: []})`, "invalid_input"},
		{`gpucc.generate(demo.generate.model, {backend: "cpu", prompt: "34"})`, "invalid_input"},
		{`gpucc.generate(demo.generate.model, {backend: "cpu", prompt: [1.5]})`, "invalid_input"},
		{`gpucc.generate(demo.generate.model, {backend: "cpu", prompt: [1], tokens: 8, maxLen: 4})`, "invalid_input"},
		{`gpucc.generate(new Uint8Array([8, 7]), {backend: "cpu", prompt: [1]})`, "invalid_graph"},
	} {
		code, err := chromedp.Run(ctx, chromedp.Evaluate[string](tt.call+`.then(() => "resolved", e => e.code)`, chromedp.EvalAwaitPromise))
		if err != nil || code != tt.code {
			t.Errorf("%s = %q, %v; want a rejection with code %s", tt.call, code, err, tt.code)
		}
	}
}
