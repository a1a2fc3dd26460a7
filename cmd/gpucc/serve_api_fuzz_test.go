package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucc/gpucc/ir"
)

// fuzzAPI is one API for every fuzz input, on cpu and wasm, with a token.
var fuzzAPI = sync.OnceValue(func() *api {
	c := &apiConfig{token: "tok", pending: 64, timeout: 10 * time.Second, grace: time.Second, cacheDir: "off",
		limits: &ir.Limits{MaxGraphBytes: 1 << 16, MaxElements: 1 << 12, MaxStorageBytes: 1 << 16, MaxOps: 1 << 18}}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) })
	a, err := newAPI(c, page)
	if err != nil {
		panic(err)
	}
	return a
})

var fuzzMethods = []string{"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "BREW"}

// fuzzTypes are the Content-Types FuzzAPI posts, by method/16: a graph
// (the seeds' and the corpus's), a model, a form, and one refused.
var fuzzTypes = []string{"application/json", "application/onnx", "multipart/form-data; boundary=b", "text/plain"}

// FuzzAPI sends arbitrary requests to the execute API's handler, with a
// graph, a model, a form or a refused body's Content-Type. It must
// never panic; every answer but the page's is the seed's envelope, with
// the status its code maps to, and 200 only when ok.
func FuzzAPI(f *testing.F) {
	f.Add(uint8(1), "/v1/execute", "backend=cpu", "Bearer tok", []byte(seedGraph))
	f.Add(uint8(1), "/v1/execute", "backend=wasm", "Bearer tok", []byte(seedGraph))
	f.Add(uint8(0), "/v1/info", "", "Bearer tok", []byte(nil))
	f.Add(uint8(0), "/healthz", "", "", []byte(nil))
	f.Add(uint8(1), "/v1/execute", "backend=cpu", "Bearer nope", []byte(seedGraph))
	f.Add(uint8(3), "/v1/../execute", "x=%zz", "Bearer tok", []byte(`{"version":1}`))
	f.Add(uint8(16+1), "/v1/execute", "backend=cpu", "Bearer tok", int64Model())
	f.Add(uint8(16+1), "/v1/execute", "backend=cpu&const=ids=1,2,3", "Bearer tok", int64Model())
	f.Add(uint8(32+1), "/v1/execute", "backend=cpu", "Bearer tok", []byte("--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nxx\r\n--b--\r\n"))
	f.Fuzz(func(t *testing.T, method uint8, path, query, auth string, body []byte) {
		a := fuzzAPI()
		r := httptest.NewRequest("GET", "/", bytes.NewReader(body))
		r.Method = fuzzMethods[int(method)%len(fuzzMethods)]
		r.URL.Path, r.URL.RawQuery = path, query
		r.Header.Set("Authorization", auth)
		r.Header.Set("Content-Type", fuzzTypes[int(method)/16%len(fuzzTypes)])
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		if w.Body.String() == "page" {
			if w.Code != 200 || !strings.HasPrefix(path, "/") {
				t.Fatalf("the page answered %d for %q", w.Code, path)
			}
			return
		}
		var e envelope
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %q: not an envelope (%v): %q", r.Method, path, err, w.Body)
		}
		switch {
		case e.OK:
			if w.Code != 200 {
				t.Fatalf("ok with status %d", w.Code)
			}
		case e.Error == nil || e.Error.Code == "" || e.Error.Code == string(ir.CodeInternal):
			t.Fatalf("%s %q %q: a failure without a user code: %s", r.Method, path, query, w.Body)
		case w.Code != 401 && w.Code != 403 && w.Code != 404 && w.Code != 405 && w.Code != 408 && w.Code != 415 && w.Code != httpStatus(ir.Code(e.Error.Code)):
			t.Fatalf("code %s with status %d", e.Error.Code, w.Code)
		}
		if len(w.Body.Bytes()) > 4096 && !e.OK {
			t.Fatalf("an error answer of %d bytes", len(w.Body.Bytes()))
		}
	})
}
