package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/web"
)

const seedGraph = `{"version":1,"nodes":[
 {"id":0,"op":"input","shape":[3],"data":[-2,3,4]},
 {"id":1,"op":"input","shape":[3],"data":[10,20,30]},
 {"id":2,"op":"mul","a":0,"b":1},
 {"id":3,"op":"relu","a":2}],
 "outputs":[{"name":"values","id":3}]}`

// testAPI returns an API on the cpu backend and memory-only cache, in
// front of a page that answers "page".
func testAPI(t *testing.T, edit func(*apiConfig)) *api {
	t.Helper()
	c := &apiConfig{pending: 16, timeout: 30 * time.Second, grace: time.Second, cacheDir: "off", limits: &ir.Limits{}}
	if edit != nil {
		edit(c)
	}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
	a, err := newAPI(c, page)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.server.Close(context.Background()) })
	return a
}

// envelope is the seed's answer as the API writes it.
type envelope struct {
	OK    bool           `json:"ok"`
	Value map[string]any `json:"value"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (e envelope) code() string {
	if e.OK {
		return "ok"
	}
	if e.Error == nil {
		return "no error"
	}
	return e.Error.Code
}

// do sends one request to h and decodes the envelope.
func do(t *testing.T, h http.Handler, method, target, body string, header ...string) (int, envelope, http.Header) {
	t.Helper()
	r := localRequest(method, target, strings.NewReader(body))
	for k := 0; k+1 < len(header); k += 2 {
		r.Header.Set(header[k], header[k+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e envelope
	if w.Body.String() != "page" {
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: not an envelope: %v\n%s", method, target, err, w.Body)
		}
	}
	return w.Code, e, w.Header()
}

// localRequest is a request as a local client sends it: to localhost,
// with a JSON body.
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "localhost:8080"
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

func TestAPIExecute(t *testing.T) {
	a := testAPI(t, nil)
	status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", seedGraph)
	if status != 200 || !e.OK {
		t.Fatalf("status %d, %+v", status, e.Error)
	}
	// The value is what `gpucc run` prints.
	out, run, code := gpucc(t, seedGraph, "run", "--backend", "cpu", "--cache-dir", "off", "-")
	if code != 0 {
		t.Fatalf("gpucc run: %s", out)
	}
	for _, k := range []string{"backend", "outputs", "kernels"} {
		if diff := cmp.Diff(run[k], e.Value[k]); diff != "" {
			t.Errorf("value[%q] differs from gpucc run's (-run +api):\n%s", k, diff)
		}
	}
	tests := []struct {
		name, method, target, body string
		status                     int
		code                       string
	}{
		{"malformed graph", "POST", "/v1/execute?backend=cpu", `{"version":1`, 400, "invalid_graph"},
		{"VERSION key", "POST", "/v1/execute?backend=cpu", strings.Replace(seedGraph, "version", "VERSION", 1), 400, "invalid_graph"},
		{"unknown backend", "POST", "/v1/execute?backend=cuda", seedGraph, 503, "backend_unavailable"},
		{"unknown parameter", "POST", "/v1/execute?backend=cpu&max_nodes=9999", seedGraph, 400, "usage"},
		{"backend twice", "POST", "/v1/execute?backend=cpu&backend=wasm", seedGraph, 400, "usage"},
		{"bad escape in query", "POST", "/v1/execute?backend=%zz", seedGraph, 400, "usage"},
		{"GET execute", "GET", "/v1/execute", "", 405, "usage"},
		{"PUT execute", "PUT", "/v1/execute", seedGraph, 405, "usage"},
		{"POST healthz", "POST", "/healthz", "", 405, "usage"},
		{"DELETE info", "DELETE", "/v1/info", "", 405, "usage"},
		{"POST page", "POST", "/", "", 405, "usage"},
		{"unknown route", "GET", "/v1/nope", "", 404, "usage"},
		{"dot segments", "GET", "/v1/../v1/info", "", 400, "usage"},
		{"double slash", "GET", "//v1/info", "", 400, "usage"},
		{"backslash", "GET", "/v1\\info", "", 400, "usage"},
		{"healthz", "GET", "/healthz", "", 200, "ok"},
		{"info", "GET", "/v1/info", "", 200, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, e, h := do(t, a, tt.method, tt.target, tt.body)
			if status != tt.status || e.code() != tt.code {
				t.Errorf("status %d code %s, want %d %s (%+v)", status, e.code(), tt.status, tt.code, e.Error)
			}
			if status == 405 && h.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	_, e, _ = do(t, a, "GET", "/v1/info", "")
	limits, _ := e.Value["limits"].(map[string]any)
	// camelCase keys, as every key of the API's JSON (issue 36: they were
	// ir.Limits' Go field names).
	if limits["maxNodes"] != float64(512) || limits["maxGraphBytes"] != float64(256<<20) || len(limits) < 9 {
		t.Errorf("info limits %v", limits)
	}
	for k := range limits {
		if k[0] < 'a' || k[0] > 'z' {
			t.Errorf("info limit key %q is not camelCase", k)
		}
	}
}

// TestAPIBodyBound: a body over the graph-size limit is refused before it
// is parsed, whether it says its length or not.
func TestAPIBodyBound(t *testing.T) {
	a := testAPI(t, func(c *apiConfig) { c.limits.MaxGraphBytes = 1024 })
	big := seedGraph + strings.Repeat(" ", 2000)
	status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", big)
	if status != 413 || e.code() != "limit_exceeded" {
		t.Errorf("declared length: %d %s", status, e.code())
	}
	r := localRequest("POST", "/v1/execute?backend=cpu", io.MultiReader(strings.NewReader(big)))
	r.ContentLength = -1 // chunked: the length is unknown until read
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	if w.Code != 413 || !strings.Contains(w.Body.String(), "limit_exceeded") {
		t.Errorf("unknown length: %d %s", w.Code, w.Body)
	}
	if status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", seedGraph); !e.OK {
		t.Errorf("a graph under the bound: %d %+v", status, e.Error)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestAPIToken: with a token, /v1/ needs it; a missing or wrong one gets
// 401 without a byte of the body read; /healthz and the page stay open.
func TestAPIToken(t *testing.T) {
	t.Setenv(TokenEnv, "s3cret")
	a := testAPI(t, nil)
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cre", "Basic s3cret", "bearer  s3cret", "Bearers3cret"} {
		body := &countingReader{r: strings.NewReader(seedGraph)}
		r := httptest.NewRequest("POST", "/v1/execute?backend=cpu", body)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		if w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" || body.n != 0 {
			t.Errorf("Authorization %q: status %d, %d body bytes read", auth, w.Code, body.n)
		}
	}
	if status, _, _ := do(t, a, "GET", "/v1/info", ""); status != 401 {
		t.Errorf("info without a token: %d", status)
	}
	// The scheme is case-insensitive (RFC 7235 2.1).
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret"} {
		if status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", seedGraph, "Authorization", auth); status != 200 || !e.OK {
			t.Errorf("Authorization %q: %d %+v", auth, status, e.Error)
		}
	}
	if status, _, _ := do(t, a, "GET", "/healthz", ""); status != 200 {
		t.Errorf("healthz: %d", status)
	}
	// --token wins over the environment.
	b := testAPI(t, func(c *apiConfig) { c.token = "flag" })
	if status, _, _ := do(t, b, "GET", "/v1/info", "", "Authorization", "Bearer flag"); status != 200 {
		t.Errorf("--token: %d", status)
	}
}

// TestAPIServerTimeouts: every timeout of the server is set.
func TestAPIServerTimeouts(t *testing.T) {
	s := newServer(http.NotFoundHandler(), time.Minute)
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout < time.Minute || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts %v %v %v %v, header bytes %d", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	// A client that sends headers too slowly is cut off.
	s.ReadHeaderTimeout = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.1\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Errorf("the server kept a slow client: %v", err)
	}
}

// TestAPIGracefulShutdown: when serve's context ends (SIGTERM), running
// requests finish within the grace period; those still running after it
// are answered disposed, and serve returns.
func TestAPIGracefulShutdown(t *testing.T) {
	for _, tt := range []struct {
		name  string
		grace time.Duration
		want  string
	}{{"finishes", 30 * time.Second, "ok"}, {"cut short", 0, "disposed"}} {
		t.Run(tt.name, func(t *testing.T) {
			a := testAPI(t, func(c *apiConfig) { c.grace = tt.grace })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			served := make(chan error)
			go func() { served <- a.serve(ctx, newServer(a, time.Minute), ln) }()
			// A request whose body arrives slowly is running when the
			// signal comes.
			pr, pw := io.Pipe()
			answer := make(chan envelope)
			go func() {
				resp, err := http.Post("http://"+ln.Addr().String()+"/v1/execute?backend=cpu", "application/json", pr)
				if err != nil {
					t.Error(err)
					answer <- envelope{}
					return
				}
				defer resp.Body.Close()
				var e envelope
				json.NewDecoder(resp.Body).Decode(&e)
				answer <- e
			}()
			io.WriteString(pw, seedGraph[:20])
			for a.active.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			stop()
			time.Sleep(50 * time.Millisecond)
			io.WriteString(pw, seedGraph[20:])
			pw.Close()
			if e := <-answer; e.code() != tt.want {
				t.Errorf("the running request: %s (%+v), want %s", e.code(), e.Error, tt.want)
			}
			select {
			case err := <-served:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not return")
			}
			if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				t.Error("still listening")
			}
		})
	}
}

// TestServeSIGTERM runs the binary: with a token from the environment, a
// request without it is refused; a request running when SIGTERM arrives
// finishes and is answered; then serve exits 0.
func TestServeSIGTERM(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--grace", "30s", "--cache-dir", "off")
	cmd.Dir = workDir
	cmd.Env = env(TokenEnv + "=s3cret")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving the demo on "); ok {
			url = strings.TrimSuffix(u, "/")
		}
	}
	if url == "" {
		t.Fatalf("serve never said where it listens: %v", lines.Err())
	}
	go io.Copy(io.Discard, stderr)
	resp, err := http.Post(url+"/v1/execute?backend=cpu", "application/json", strings.NewReader(seedGraph))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("without the token: %s", resp.Status)
	}
	pr, pw := io.Pipe()
	answer := make(chan envelope, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/v1/execute?backend=cpu", pr)
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		var e envelope
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
		}
		answer <- e
	}()
	io.WriteString(pw, seedGraph[:30])
	time.Sleep(300 * time.Millisecond) // the request is being read
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	io.WriteString(pw, seedGraph[30:])
	pw.Close()
	if e := <-answer; !e.OK {
		t.Errorf("the request running at SIGTERM: %s %+v, want ok", e.code(), e.Error)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// TestAPIRefusesOtherOrigins: what a web page elsewhere may send is
// refused before the body is read: a foreign Origin, a Host that is not
// this server's when no token is required (DNS rebinding), a body not
// declared application/json (a CORS simple request).
func TestAPIRefusesOtherOrigins(t *testing.T) {
	a := testAPI(t, nil)
	tests := []struct {
		name, host, origin, ctype string
		status                    int
		field                     string
	}{
		{"local", "localhost:8080", "", "application/json", 200, ""},
		{"same origin", "127.0.0.1:8080", "http://127.0.0.1:8080", "application/json; charset=utf-8", 200, ""},
		{"loopback v6", "[::1]:8080", "", "application/json", 200, ""},
		{"foreign origin", "localhost:8080", "http://evil.example", "application/json", 403, "Origin"},
		// The Origin is held to the Host's rule, no stricter (issue 36).
		{"loopback origin", "localhost:8080", "http://127.0.0.1:8080", "application/json", 200, ""},
		{"loopback v6 origin", "localhost:8080", "http://[::1]:9000", "application/json", 200, ""},
		{"origin of no host", "localhost:8080", "file://", "application/json", 403, "Origin"},
		{"null origin", "localhost:8080", "null", "application/json", 403, "Origin"},
		{"rebinding", "evil.example", "http://evil.example", "application/json", 403, "Host"},
		{"rebinding without origin", "evil.example:8080", "", "application/json", 403, "Host"},
		{"text/plain", "localhost:8080", "", "text/plain", 415, "Content-Type"},
		{"form", "localhost:8080", "", "application/x-www-form-urlencoded", 415, "Content-Type"},
		{"no content type", "localhost:8080", "", "", 415, "Content-Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &countingReader{r: strings.NewReader(seedGraph)}
			r := httptest.NewRequest("POST", "/v1/execute?backend=cpu", body)
			r.Host = tt.host
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.ctype != "" {
				r.Header.Set("Content-Type", tt.ctype)
			}
			w := httptest.NewRecorder()
			a.ServeHTTP(w, r)
			var e struct {
				Error struct{ Field string } `json:"error"`
			}
			json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != tt.status || e.Error.Field != tt.field {
				t.Errorf("status %d field %q, want %d %q: %s", w.Code, e.Error.Field, tt.status, tt.field, w.Body)
			}
			if tt.status != 200 && (body.n != 0 || w.Header().Get("Connection") != "close") {
				t.Errorf("refused after reading %d body bytes, Connection %q", body.n, w.Header().Get("Connection"))
			}
		})
	}
	// With a token, the token authenticates whatever the Host.
	b := testAPI(t, func(c *apiConfig) { c.token = "tok" })
	r := localRequest("POST", "/v1/execute?backend=cpu", strings.NewReader(seedGraph))
	r.Host = "gpu.example:8080"
	r.Header.Set("Authorization", "Bearer tok")
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("with the token from another Host: %d %s", w.Code, w.Body)
	}
	// ... and whatever the Origin: a page elsewhere cannot send the
	// Authorization header without a CORS preflight, which serve refuses.
	r = localRequest("POST", "/v1/execute?backend=cpu", strings.NewReader(seedGraph))
	r.Host = "gpu.example:8080"
	r.Header.Set("Authorization", "Bearer tok")
	r.Header.Set("Origin", "http://gpu.example")
	w = httptest.NewRecorder()
	b.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("with the token from another Origin: %d %s", w.Code, w.Body)
	}
}

// TestAPIErrorsNameNodeAndField: an error answer carries the node and
// field `gpucc run` prints.
func TestAPIErrorsNameNodeAndField(t *testing.T) {
	a := testAPI(t, nil)
	bad := strings.Replace(seedGraph, `"a":0,"b":1`, `"a":0,"b":7`, 1)
	r := localRequest("POST", "/v1/execute?backend=cpu", strings.NewReader(bad))
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	var e struct {
		Error struct {
			Code  string
			Node  *int
			Field string
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	if w.Code != 400 || e.Error.Code != "invalid_graph" || e.Error.Node == nil || *e.Error.Node != 2 || e.Error.Field != "b" {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	out, _, code := gpucc(t, bad, "run", "--backend", "cpu", "--cache-dir", "off", "-")
	if code != 1 || !strings.Contains(string(out), `"node":2,"field":"b"`) {
		t.Errorf("gpucc run: %d %s", code, out)
	}
}

// TestServeNeedsTokenOffLoopback: an address other than loopback needs a
// token.
func TestServeNeedsTokenOffLoopback(t *testing.T) {
	out, _, code := gpucc(t, "", "serve", "--addr", "0.0.0.0:0", "--cache-dir", "off")
	if code != 2 || !strings.Contains(string(out), "token") {
		t.Errorf("exit %d: %s", code, out)
	}
}

// TestAPIStreamedReply: the streamed reply is the envelope writeReply
// would write, a scalar output included.
func TestAPIStreamedReply(t *testing.T) {
	a := testAPI(t, nil)
	doc := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[4],"data":[1.5,-0,3e-39,16777217]},{"id":1,"op":"sum","a":0},{"id":2,"op":"neg","a":0}],"outputs":[{"name":"s","id":1},{"name":"n","id":2}]}`
	status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", doc)
	if status != 200 || !e.OK {
		t.Fatalf("%d %+v", status, e.Error)
	}
	outs := e.Value["outputs"].(map[string]any)
	want := map[string]any{
		"s": map[string]any{"shape": []any{}, "data": []any{float64(float32(1.5 + 3e-39 + 16777216))}},
		"n": map[string]any{"shape": []any{float64(4)}, "data": []any{-1.5, 0.0, -3e-39, float64(-16777216)}},
	}
	if diff := cmp.Diff(want, outs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

// startServe runs `gpucc serve` on a free loopback port with args and
// returns its URL; the process is killed when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	_, url := startServeCmd(t, args...)
	return url
}

// TestServeREADME runs the curl examples of the README's serve section
// against the binary: each line after a curl command, "# EXPECTED", is its
// output, where "…" stands for anything.
func TestServeREADME(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(readme), "\n## A server: gpucc serve\n")
	sec, _, _ = strings.Cut(sec, "\n## ")
	url := startServe(t)
	lines := strings.Split(sec, "\n")
	ran := 0
	for i, line := range lines {
		if !strings.HasPrefix(line, "curl ") || i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "# ") {
			continue
		}
		want := strings.TrimPrefix(lines[i+1], "# ")
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(line, "http://127.0.0.1:8080", url))
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		got := strings.TrimSpace(string(out))
		rest := got
		for k, piece := range strings.Split(want, "…") {
			j := strings.Index(rest, piece)
			if j < 0 || (k == 0 && j != 0) {
				t.Errorf("%s\n got %s\nwant %s", line, got, want)
				break
			}
			rest = rest[j+len(piece):]
		}
		if !strings.HasSuffix(want, "…") && rest != "" {
			t.Errorf("%s\n got %s\nwant %s (ends differently)", line, got, want)
		}
		ran++
	}
	if ran < 5 {
		t.Errorf("only %d curl examples found in the README's serve section", ran)
	}
}

// TestAPIMemoryBudget: a reply whose values do not fit in what is left of
// --max-memory is answered busy, and the budget is whole after.
func TestAPIMemoryBudget(t *testing.T) {
	a := testAPI(t, func(c *apiConfig) { c.memory = 2 << 20 })
	big := `{"version":1,"nodes":[{"id":0,"op":"full","shape":[1048576],"value":1.5}],"outputs":[{"name":"y","id":0}]}`
	status, e, h := do(t, a, "POST", "/v1/execute?backend=cpu", big)
	if status != 429 || e.code() != "busy" || h.Get("Retry-After") == "" {
		t.Errorf("a 4 MiB reply with 2 MiB of budget: %d %s", status, e.code())
	}
	if status, e, _ := do(t, a, "POST", "/v1/execute?backend=cpu", seedGraph); status != 200 || !e.OK {
		t.Errorf("a small reply: %d %+v", status, e.Error)
	}
	if a.memory.left != 2<<20 {
		t.Errorf("%d bytes of budget left of %d", a.memory.left, 2<<20)
	}
}

// TestAPIStatusTable: every code the execute API can answer is in the
// README's status table, on a row of the status it answers with (issue 36:
// unsupported answered 422 and the table did not list it; invalid_input
// answered 500).
func TestAPIStatusTable(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[ir.Code][]int{} // the statuses each code's rows give
	row := regexp.MustCompile("(?m)^\\| ([0-9, ]+) \\| ([^|]*) \\|")
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		for _, c := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[2], -1) {
			for _, s := range strings.Split(m[1], ",") {
				n, _ := strconv.Atoi(strings.TrimSpace(s))
				rows[ir.Code(c[1])] = append(rows[ir.Code(c[1])], n)
			}
		}
	}
	doc, err := os.ReadFile("../../docs/schema/result-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs struct {
			Code struct {
				Enum []ir.Code `json:"enum"`
			} `json:"code"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(doc, &schema); err != nil {
		t.Fatal(err)
	}
	for _, c := range schema.Defs.Code.Enum {
		switch c {
		case ir.CodeIO, ir.CodeInvalidTensor: // no file, no device tensor in a request
			continue
		}
		if !slices.Contains(rows[c], httpStatus(c)) {
			t.Errorf("code %s answers %d; the README's status table gives it %v", c, httpStatus(c), rows[c])
		}
	}
	for _, c := range []ir.Code{ir.CodeInvalidInput, ir.CodeUnsupported, ir.CodeIntegerFault} {
		if s := httpStatus(c); s < 400 || s >= 500 {
			t.Errorf("%s, the client's input, answers %d, not a 4xx", c, s)
		}
	}
}

// TestAPIModuleEndpoint: the page's wasm module endpoint (web.ModulePath),
// where a POST costs a Clang build, is held to the API's rules: a local
// POST reaches the page's handler, another origin or Host is refused
// (403), and with a token a request without it is 401, before the page's
// handler sees anything. serve answered every POST there 405 before, so
// the page's wasm backend could not build a module under serve.
func TestAPIModuleEndpoint(t *testing.T) {
	a := testAPI(t, nil)
	post := func(h http.Handler, host, origin, auth string) (int, string) {
		r := httptest.NewRequest("POST", web.ModulePath, strings.NewReader("request"))
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	for _, tt := range []struct {
		name, host, origin string
		status             int
	}{
		{"local", "localhost:8080", "", 200},
		{"same origin", "127.0.0.1:8080", "http://127.0.0.1:8080", 200},
		{"foreign origin", "localhost:8080", "http://evil.example", 403},
		{"rebinding", "evil.example", "http://evil.example", 403},
	} {
		if status, body := post(a, tt.host, tt.origin, ""); status != tt.status || (status == 200) != (body == "page") {
			t.Errorf("%s: %d %q, want %d", tt.name, status, body, tt.status)
		}
	}
	if status, _, _ := do(t, a, "GET", web.ModulePath, ""); status != 405 {
		t.Errorf("GET: %d, want 405", status)
	}
	b := testAPI(t, func(c *apiConfig) { c.token = "tok" })
	for _, auth := range []string{"", "Bearer wrong"} {
		if status, body := post(b, "localhost:8080", "", auth); status != 401 || body == "page" {
			t.Errorf("with a token, Authorization %q: %d %q, want 401", auth, status, body)
		}
	}
	if status, body := post(b, "gpu.example:8080", "", "Bearer tok"); status != 200 || body != "page" {
		t.Errorf("with the token: %d %q", status, body)
	}
}

// TestAPIModuleBudget: a module build is charged to --max-memory (its
// body and 8 bytes a byte decoded, a MiB besides; a chunked body as the
// largest) and runs under --timeout: the page's handler sees a deadline,
// and a build the budget cannot hold is busy (429) before the handler
// runs. Before, a build held up to 577 MiB outside the budget, for as long
// as its client stayed connected.
func TestAPIModuleBudget(t *testing.T) {
	var sawDeadline bool
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, sawDeadline = r.Context().Deadline()
		io.WriteString(w, "page")
	})
	c := &apiConfig{pending: 16, timeout: 30 * time.Second, grace: time.Second, cacheDir: "off", limits: &ir.Limits{}, memory: 64 << 20}
	a, err := newAPI(c, page)
	if err != nil {
		t.Fatal(err)
	}
	defer a.server.Close(context.Background())
	post := func(body io.Reader, length int64) (int, string) {
		r := httptest.NewRequest("POST", web.ModulePath, body)
		r.Host = "localhost:8080"
		r.ContentLength = length
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	if status, body := post(strings.NewReader("request"), 7); status != 200 || body != "page" || !sawDeadline {
		t.Errorf("a small build: %d %q, deadline %v; want the page's answer under a deadline", status, body, sawDeadline)
	}
	if a.memory.left != 64<<20 {
		t.Errorf("after the build, %d bytes of the budget left, want all %d", a.memory.left, 64<<20)
	}
	for _, length := range []int64{8 << 20, -1} { // 8 MiB charged 9 times over 64 MiB, and a chunked body
		if status, body := post(strings.NewReader("request"), length); status != 429 || !strings.Contains(body, "busy") {
			t.Errorf("a build of length %d within a budget of 64 MiB: %d %q, want 429 busy", length, status, body)
		}
	}
}

// TestAPIModuleSlowClient: a module request whose body arrives slowly
// does not reach the page's handler, which reads the body holding the one
// build slot (modelled here by slot), until the body is whole, so another
// page's build runs meanwhile; before, the slow body held the slot and the
// second build waited.
func TestAPIModuleSlowClient(t *testing.T) {
	slot := make(chan struct{}, 1)
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slot <- struct{}{}
		defer func() { <-slot }()
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	c := &apiConfig{pending: 16, timeout: 30 * time.Second, grace: time.Second, cacheDir: "off", limits: &ir.Limits{}, memory: 1 << 30}
	a, err := newAPI(c, page)
	if err != nil {
		t.Fatal(err)
	}
	defer a.server.Close(context.Background())
	post := func(body io.Reader) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", web.ModulePath, body)
		r.Host = "localhost:8080"
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		return w
	}
	pr, pw := io.Pipe()
	slow := make(chan *httptest.ResponseRecorder, 1)
	go func() { slow <- post(pr) }()
	pw.Write([]byte("slow "))
	fast := make(chan *httptest.ResponseRecorder, 1)
	go func() { fast <- post(strings.NewReader("fast")) }()
	select {
	case w := <-fast:
		if w.Body.String() != "fast" {
			t.Errorf("the second build: %d %q", w.Code, w.Body.String())
		}
	case <-time.After(5 * time.Second):
		t.Error("the second build waited for the slow body: it held the build slot")
	}
	pw.Write([]byte("body"))
	pw.Close()
	if w := <-slow; w.Body.String() != "slow body" {
		t.Errorf("the slow build: %d %q", w.Code, w.Body.String())
	}
}
