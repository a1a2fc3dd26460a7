package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/chromium"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/wasm"
)

// TestWasmPage runs the wasm backend in the page: the command line's C
// kernels, built with SIMD128 by the Clang of the server that served the
// page (serveBuild) and run in Chromium's own WebAssembly (V8). Real
// models, picked as a visitor picks them, each output cpuref's bits, which
// the scalar modules give on the command line (onnx's TestRealModels on
// wasm), so SIMD128 changes no bit: Silero VAD's float16 export (LSTM, If,
// float16 casts: a typed graph), PaddleOCR's classifier, Silero VAD v5
// (its int64 sample rate fixed in the page's constant field, as --const
// sr=16000 does), PaddleOCR's recognizer and detector. Under -short (make
// test) the VADs and the classifier run; the recognizer and the detector, whose
// modules the server's Clang builds for most of the test's time, are make
// test-all's and make test-web-full's.
func TestWasmPage(t *testing.T) {
	ctx := page(t, "?life=0", 10*time.Minute)
	for _, m := range wasmPageModels(testing.Short()) {
		t.Run(m.name, func(t *testing.T) { runRealModel(t, ctx, m, 3*time.Minute) })
	}
}

// wasmPageModels are TestWasmPage's models, the first three under short.
func wasmPageModels(short bool) []realPageModel {
	wasm := []string{"wasm"}
	ms := []realPageModel{
		{"silero_vad_half", map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, 1, wasm, nil, false},
		{"ppocr_v2_cls", map[string][]int{"x": {1, 3, 48, 192}}, 1, wasm, nil, false},
		{"silero_vad_v5", map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, 1, wasm, map[string]int64{"sr": 16000}, false},
		{"ppocr_v4_rec", map[string][]int{"x": {1, 3, 48, 160}}, 1, wasm, nil, false},
		{"ppocr_v4_det", map[string][]int{"x": {1, 3, 160, 160}}, 1, wasm, nil, false},
	}
	if short {
		return ms[:3]
	}
	return ms
}

// TestServeBuildRefuses: the module endpoint takes a POSTed BuildRequest
// only; anything else is refused with a status and a message, never
// compiled.
func TestServeBuildRefuses(t *testing.T) {
	// A request of nested kernel parts, 16 levels more than a program
	// has, as gob encodes it: refused before the decoder sees it (a
	// deeper one ended the server, runtime/wasm's TestServeBuildHostile).
	part := ir.Kernel{}
	for range 16 {
		part = ir.Kernel{Parts: []ir.Kernel{part}}
	}
	nested, err := wasm.BuildRequest{Program: &ir.Program{Kernels: []ir.Kernel{part}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler(t))
	defer srv.Close()
	for _, tt := range []struct {
		method, body string
		status       int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "int main() { return 0; }", http.StatusBadRequest},
		{http.MethodPost, "", http.StatusBadRequest},
		{http.MethodPost, strings.Repeat("\x00", wasm.MaxBuildRequest+1), http.StatusRequestEntityTooLarge},
		{http.MethodPost, string(nested), http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+"/"+wasmBuildPath, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s %q: %d, want %d", tt.method, tt.body[:min(len(tt.body), 24)], resp.StatusCode, tt.status)
		}
	}
}

// TestModuleToken: the page opened as …/#token=TOKEN sends the token with
// its wasm module requests, which gpucc serve --token holds to it
// (cmd/gpucc's TestAPIModuleEndpoint), and drops it from the address.
// Behind a server that answers 401 to a module request without the
// token, the page's wasm runs a graph with cpuref's bits when given it
// and is refused (HTTP 401 in the message) when not.
func TestModuleToken(t *testing.T) {
	h, err := Handler(builtPage(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ModulePath && r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	graph := []byte(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[3],"data":[-2,3,4]},{"id":1,"op":"input","shape":[3],"data":[10,20,30]},{"id":2,"op":"mul","a":0,"b":1},{"id":3,"op":"relu","a":2}],"outputs":[{"name":"values","id":3}]}`)
	for _, tt := range []struct {
		fragment string
		ok       bool
	}{{"#token=s3cret", true}, {"", false}, {"#token=wrong", false}} {
		ctx := chromium.Open(t, srv.URL+"/index.html?life=0"+tt.fragment, pageDeadline)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo && (window.demo.ready || window.demo.error)`)); err != nil {
			t.Fatal(err)
		}
		if h := evalString(t, ctx, `location.hash`); h != "" {
			t.Errorf("%q: the address still holds %q", tt.fragment, h)
		}
		r := run(t, ctx, graph, "wasm", false)
		switch {
		case tt.ok && (r.Error != nil || fmt.Sprint(r.Outputs["values"].Bits) != fmt.Sprint([]uint32{0, 0x42700000, 0x42f00000})):
			t.Errorf("%q: %+v, want values [0 60 120]", tt.fragment, r)
		case !tt.ok && (r.Error == nil || !strings.Contains(r.Error.Message, "401")):
			t.Errorf("%q: %+v, want the module refused with 401", tt.fragment, r.Error)
		}
	}
}
