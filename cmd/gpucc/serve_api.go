package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/server"
	"github.com/gpucc/gpucc/web"
)

// TokenEnv names the environment variable that holds serve's bearer token
// when --token is not given.
const TokenEnv = "GPUCC_TOKEN"

// The execute API's routes.
const (
	routeExecute = "/v1/execute"
	routeInfo    = "/v1/info"
	routeHealth  = "/healthz"
)

// apiClient is the host client every HTTP request runs as: starting serve
// grants it, and the token (when set) decides who may act as it, so the
// pending cap is the whole server's.
const apiClient = "http"

// apiConfig is serve's execute-API configuration, from its flags.
type apiConfig struct {
	token    string
	pending  int
	timeout  time.Duration
	grace    time.Duration
	memory   int64
	allowSW  bool
	cacheDir string
	limits   *ir.Limits
	// listen is the host part of the listen address: a Host header may
	// name it, besides localhost and the loopback addresses.
	listen string
}

// serveOutputBytes is serve's default MaxOutputBytes, lower than `gpucc
// run`'s (the storage limit): 1 Mi values, at most about 16 MB of JSON
// per reply.
const serveOutputBytes = 4 << 20

// apiFlags registers the execute API's flags on serve's flag set.
func apiFlags(fs *flag.FlagSet) *apiConfig {
	c := &apiConfig{}
	fs.StringVar(&c.token, "token", "", "require Authorization: Bearer TOKEN on /v1/ (default $"+TokenEnv+"; empty: none)")
	atLeast(fs, &c.pending, "max-pending", server.DefaultMaxPending, 1, "requests pending at once; more are answered busy")
	atLeast(fs, &c.timeout, "timeout", 60*time.Second, time.Millisecond, "longest a request may take, reading its body, running and writing its reply; past it, it is answered timeout")
	atLeast(fs, &c.grace, "grace", 10*time.Second, 0, "on SIGTERM, how long running requests may finish before they are answered disposed")
	atLeast(fs, &c.memory, "max-memory", 1<<30, 1<<20, "bytes of request bodies (3 per byte read), replies (4 per output value) and the page's module builds (9 per byte) held at once, server-wide; a request past it is answered busy")
	fs.BoolVar(&c.allowSW, "allow-software", false, "accept software GPU adapters (lavapipe, SwiftShader, WARP)")
	fs.StringVar(&c.cacheDir, "cache-dir", "", "directory of the on-disk code cache (default $GPUCC_CACHE_DIR or the user cache dir; \"off\" disables it)")
	c.limits = limitFlags(fs)
	fs.Lookup("max-output-bytes").Usage = "host limit: summed output bytes of a reply, 4 per element (0: 4 MiB for serve)"
	return c
}

// api serves POST /v1/execute, GET /v1/info and GET /healthz in front of
// another handler (the demo page), on a server.Server.
type api struct {
	server  *server.Server
	client  *server.Client
	token   string
	limits  ir.Limits
	timeout time.Duration
	grace   time.Duration
	listen  string
	memory  *budget
	next    http.Handler
	// adapters are enumerated once: /v1/info is cheap to ask for, and
	// enumeration creates a wgpu instance.
	adapters func() (any, error)
	active   atomic.Int64 // execute requests being handled
	// importONNX makes the graph of an application/onnx body, inside the
	// request's admission (ctx is the request's); tests replace it.
	// values, when given (the multipart form's data), bind inputs'
	// dynamic dimensions by their shapes and are held by the inputs in
	// place of placeholders (onnx.Options.InputValues).
	importONNX func(ctx context.Context, body []byte, consts map[string]string, values map[string]*onnx.Tensor) (*ir.Graph, error)
}

// newAPI opens the host the execute API runs on, in front of next.
func newAPI(c *apiConfig, next http.Handler) (*api, error) {
	cc, err := openCache(c.cacheDir)
	if err != nil {
		return nil, err
	}
	token := c.token
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	limits := *c.limits
	if limits.MaxOutputBytes == 0 {
		limits.MaxOutputBytes = serveOutputBytes
	}
	h := server.New(server.Options{Policy: server.Policy{Limits: limits, MaxPending: c.pending, Timeout: c.timeout},
		AllowSoftware: c.allowSW, Cache: cc})
	h.Grant(apiClient)
	memory := c.memory
	if memory <= 0 {
		memory = 1 << 30
	}
	a := &api{server: h, client: h.Client(apiClient), token: token, limits: h.Policy().Limits, timeout: c.timeout, grace: c.grace,
		listen: c.listen, memory: &budget{left: memory}, next: next, adapters: sync.OnceValues(adapters)}
	a.importONNX = func(ctx context.Context, body []byte, consts map[string]string, values map[string]*onnx.Tensor) (*ir.Graph, error) {
		c, err := constantsFor(body, a.limits, consts, false)
		if err != nil {
			return nil, err
		}
		var shapes map[string][]int
		if values != nil {
			shapes = map[string][]int{}
			for name, v := range values {
				shapes[name] = v.Shape
			}
		}
		return onnx.LoadContext(ctx, onnx.Bytes(body), onnx.Options{Limits: a.limits, ShapeHint: serveShapeHint, Constants: c, InputShapes: shapes, InputValues: values})
	}
	return a, nil
}

// isLoopback reports whether host (a name or an address, without port)
// is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// newServer returns an http.Server for handler with every timeout set:
// a slow client cannot hold a connection open, and a request's answer
// (the host's timeout at most) still has time to be written.
func newServer(handler http.Handler, timeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       timeout + 30*time.Second, // the body of a graph at the size limit, on a slow link
		WriteTimeout:      2*timeout + 30*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// serve serves on ln until ctx is done, then shuts down gracefully:
// no new connections, requests in flight (their bodies still arriving,
// too) may finish for the grace period, then the host is closed, so what
// still runs is answered disposed, and the connections left are closed.
func (a *api) serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		a.server.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	grace, cancel := context.WithTimeout(context.Background(), a.grace)
	defer cancel()
	err := srv.Shutdown(grace) // returns once every handler has, or when grace ends
	closed, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	a.server.Close(closed) // answers what still runs disposed
	if err != nil {
		// The handlers return once the host answered them; allow a
		// moment to write that answer.
		wait, cancel3 := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel3()
		if err := srv.Shutdown(wait); err != nil {
			fmt.Fprintf(os.Stderr, "gpucc: closing connections still open after the grace period: %v\n", err)
			srv.Close()
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeHTTP routes a request: the API's routes, else the page.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if !utf8.ValidString(p) || !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\") ||
		(p != "/" && path.Clean(p) != strings.TrimSuffix(p, "/")) {
		a.fail(w, http.StatusBadRequest, ir.Errorf(ir.CodeUsage, -1, "", "malformed path %s", ir.Quote(p)))
		return
	}
	switch {
	case p == routeHealth:
		if a.allow(w, r, http.MethodGet, http.MethodHead) {
			writeReply(w, http.StatusOK, map[string]any{"ok": true})
		}
	case p == routeInfo:
		if a.sameOrigin(w, r) && a.authorized(w, r) && a.allow(w, r, http.MethodGet, http.MethodHead) {
			a.info(w)
		}
	case p == routeExecute:
		if a.sameOrigin(w, r) && a.authorized(w, r) && a.allow(w, r, http.MethodPost) && a.jsonBody(w, r) {
			a.execute(w, r)
		}
	case p == web.ModulePath:
		// The page's wasm backend posts its programs here for a Clang build
		// each: held to /v1/'s Host, Origin and token rules, so that
		// another site's page (a form needs no preflight) or a client
		// without the token cannot make this machine compile.
		if a.sameOrigin(w, r) && a.authorized(w, r) && a.allow(w, r, http.MethodPost) {
			a.module(w, r)
		}
	case strings.HasPrefix(p, "/v1/") || p == "/v1":
		if a.sameOrigin(w, r) && a.authorized(w, r) {
			a.fail(w, http.StatusNotFound, ir.Errorf(ir.CodeUsage, -1, "", "no route %s; the API has %s, %s and %s", ir.Quote(p), routeExecute, routeInfo, routeHealth))
		}
	default:
		if a.allow(w, r, http.MethodGet, http.MethodHead) {
			a.next.ServeHTTP(w, r)
		}
	}
}

// module passes a module build to the page's handler charged to the
// memory budget, what wasm.ServeBuild may hold for it (web.ModuleBytes), and
// under the request timeout, which ends its wait for the one build at a
// time and its Clang: a build held both outside --max-memory (577 MiB at
// wasm.MaxBuildRequest) and for as long as its client stayed connected.
// The body is read whole first, within the timeout: the page's handler
// reads it holding the one build slot, so a client sending slowly held
// every other page's build back until the connection's read timeout.
func (a *api) module(w http.ResponseWriter, r *http.Request) {
	n := web.ModuleBytes(r.ContentLength)
	if !a.memory.take(n) {
		w.Header().Set("Retry-After", "1")
		a.fail(w, http.StatusTooManyRequests, ir.Errorf(ir.CodeBusy, -1, "", "the server's memory for module builds (--max-memory) is in use; retry later"))
		return
	}
	defer a.memory.give(n)
	deadline := time.Now().Add(a.timeout)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	http.NewResponseController(w).SetReadDeadline(deadline) // an error here means the writer cannot: httptest's
	body, err := io.ReadAll(io.LimitReader(r.Body, web.MaxModuleRequest+1))
	if err != nil {
		w.Header().Set("Connection", "close")
		if errors.Is(err, os.ErrDeadlineExceeded) {
			a.fail(w, http.StatusRequestTimeout, ir.Errorf(ir.CodeTimeout, -1, "", "the module request's body did not arrive within the request's timeout"))
			return
		}
		a.fail(w, http.StatusBadRequest, ir.Errorf(ir.CodeInvalidGraph, -1, "", "reading the module request's body: %v", err))
		return
	}
	r = r.WithContext(ctx)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	a.next.ServeHTTP(w, r)
}

// allow answers 405 unless r's method is one of methods.
func (a *api) allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	a.fail(w, http.StatusMethodNotAllowed, ir.Errorf(ir.CodeUsage, -1, "", "method %s not allowed; use %s", ir.Quote(r.Method), strings.Join(methods, " or ")))
	return false
}

// sameOrigin refuses (403) what another web page may send. When no token
// is required, a request whose Host is not localhost, a loopback address or
// the listen address (a DNS-rebinding page names its own host); with a
// token, the token is what authenticates, whatever the Host. An Origin is
// held to the same rule, never a stricter one: it is accepted when it is
// the Host itself or when its host would pass as a Host (so a page on
// http://localhost:8080 may call 127.0.0.1:8080).
func (a *api) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			!strings.EqualFold(u.Host, r.Host) && !a.hostAllowed(u.Hostname()) {
			a.fail(w, http.StatusForbidden, ir.Errorf(ir.CodeNotGranted, -1, "Origin", "requests from another origin (%s) are refused", ir.Quote(o)))
			return false
		}
	}
	h := r.Host
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	if !a.hostAllowed(h) {
		a.fail(w, http.StatusForbidden, ir.Errorf(ir.CodeNotGranted, -1, "Host", "Host %s is not this server's (localhost, a loopback address or %s)", ir.Quote(r.Host), ir.Quote(a.listen)))
		return false
	}
	return true
}

// hostAllowed is the Host rule on a host name without its port: any with a
// token; without one, localhost, a loopback address or the listen address.
func (a *api) hostAllowed(h string) bool {
	return a.token != "" || isLoopback(h) || a.listen != "" && strings.EqualFold(strings.Trim(h, "[]"), strings.Trim(a.listen, "[]"))
}

// jsonBody refuses (415) a body that is not declared application/json (a
// graph), application/onnx (a model) or multipart/form-data (a model and
// its inputs): a text/plain or urlencoded post. A web page's form can
// post multipart/form-data without a CORS preflight, but every browser
// sends an Origin with a POST, which sameOrigin has checked first.
func (a *api) jsonBody(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && mt != "application/onnx" && mt != "multipart/form-data") {
		a.fail(w, http.StatusUnsupportedMediaType, ir.Errorf(ir.CodeUsage, -1, "Content-Type", "Content-Type %s; /v1/execute takes application/json, application/onnx or multipart/form-data (a model and its inputs)", ir.Quote(r.Header.Get("Content-Type"))))
		return false
	}
	return true
}

// authorized checks the bearer token, in constant time, before anything
// else is read: a missing or wrong token costs a 401 and nothing more.
func (a *api) authorized(w http.ResponseWriter, r *http.Request) bool {
	if a.token == "" {
		return true
	}
	// The scheme is case-insensitive (RFC 7235 2.1): bearer, BEARER.
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="gpucc"`)
	w.Header().Set("Connection", "close") // do not read what the client may still send
	a.fail(w, http.StatusUnauthorized, ir.Errorf(ir.CodeNotGranted, -1, "", "a valid bearer token is required"))
	return false
}

// execute runs the body, a graph v1 document, with the query's options.
// The body is read whole before the request takes a pending slot, under
// the request's deadline (--timeout) and the server's memory budget; the
// reply is streamed, its values counted in the budget while it is
// written, within the timeout again. Every error answer closes the
// connection, so nothing more of the body is read.
func (a *api) execute(w http.ResponseWriter, r *http.Request) {
	a.active.Add(1)
	defer a.active.Add(-1)
	deadline := time.Now().Add(a.timeout)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	q, consts, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err)
		return
	}
	if r.ContentLength > a.limits.MaxGraphBytes {
		a.fail(w, http.StatusRequestEntityTooLarge, ir.LimitErrorf("MaxGraphBytes", -1, "", "graph JSON of %d bytes exceeds the limit of %d bytes", r.ContentLength, a.limits.MaxGraphBytes))
		return
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(deadline) // an error here means the writer cannot: httptest's
	body, held, err := a.readBody(r)
	defer func() { a.memory.give(held) }()
	if err != nil {
		status := httpStatus(codeOf(err))
		switch codeOf(err) {
		case ir.CodeBusy:
			w.Header().Set("Retry-After", "1")
		case ir.CodeTimeout: // the client's doing, not the server's (504)
			status = http.StatusRequestTimeout
		}
		a.fail(w, status, err)
		return
	}
	req := server.Request{Graph: bytes.NewReader(body), Backend: q}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/onnx" || mt == "multipart/form-data" {
		// A model is imported inside admission (the pending cap, the
		// timeout, the client's going away), and what it and a form's
		// values may allocate is charged first, importBytesPerByte with
		// the body's 3: a uint8 initializer or a bool .npy takes 8 bytes
		// a byte in its int64 carriers, and a uint8 model charged
		// onnx.DecodeBytesPerByte+1 allocated 14 bytes a byte.
		n := (importBytesPerByte - 3) * int64(len(body))
		if !a.memory.take(n) {
			w.Header().Set("Retry-After", "1")
			a.fail(w, http.StatusTooManyRequests, ir.Errorf(ir.CodeBusy, -1, "", "the server's memory for imports (--max-memory) is in use; retry later"))
			return
		}
		held += n
		req.Graph, req.Import = nil, func(ctx context.Context) (*ir.Graph, error) { return a.importONNX(ctx, body, consts, nil) }
		if mt == "multipart/form-data" {
			form, err := parseModelForm(body, params["boundary"], a.limits)
			if err != nil {
				a.fail(w, httpStatus(codeOf(err)), err)
				return
			}
			req.Import = func(ctx context.Context) (*ir.Graph, error) { return a.importForm(ctx, form, consts) }
		}
	} else if len(consts) > 0 {
		a.fail(w, http.StatusBadRequest, ir.Errorf(ir.CodeUsage, -1, "const", "const fixes an input of an ONNX model (Content-Type: application/onnx or multipart/form-data); a graph's inputs are its data"))
		return
	}
	reply := a.client.Execute(ctx, req)
	a.memory.give(held) // the body is decoded and run: let it go
	held, body = 0, nil
	if !reply.OK {
		status := httpStatus(reply.Error.Code)
		if reply.Error.Code == ir.CodeBusy {
			w.Header().Set("Retry-After", "1")
		}
		writeReply(w, status, reply)
		return
	}
	n := replyBytes(reply.Value)
	if !a.memory.take(n) {
		w.Header().Set("Retry-After", "1")
		a.fail(w, http.StatusTooManyRequests, ir.Errorf(ir.CodeBusy, -1, "", "the server's memory for replies (--max-memory) is in use; retry later"))
		return
	}
	defer a.memory.give(n)
	rc.SetWriteDeadline(time.Now().Add(a.timeout))
	if err := writeResult(w, reply.Value); err != nil {
		fmt.Fprintf(os.Stderr, "gpucc: writing an answer: %v\n", err)
	}
}

// importForm imports a multipart form's model at its inputs' shapes and
// gives each input its data, checked against the input's shape and dtype.
func (a *api) importForm(ctx context.Context, f *modelForm, consts map[string]string) (*ir.Graph, error) {
	g, err := a.importONNX(ctx, f.model, consts, f.values())
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(f.inputs)) {
		if err := bindValue(g, name, f.inputs[name], f.from[name], "input "+name, a.limits.NonFinite); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// readBody reads r's body whole, at most MaxGraphBytes+1 bytes (so Decode
// reports limit_exceeded itself), taking 3 bytes of the memory budget per
// byte read (the body, and the graph it decodes to), which the caller
// gives back (held) when it is done.
func (a *api) readBody(r *http.Request) (body []byte, held int64, err error) {
	limit := ir.SatAdd(a.limits.MaxGraphBytes, 1)
	buf := make([]byte, 0, min(max(r.ContentLength, 512), limit))
	chunk := make([]byte, 32<<10)
	for int64(len(buf)) < limit {
		k, rerr := r.Body.Read(chunk[:min(int64(len(chunk)), limit-int64(len(buf)))])
		if k > 0 {
			if !a.memory.take(3 * int64(k)) {
				return nil, held, ir.Errorf(ir.CodeBusy, -1, "", "the server's memory for request bodies (--max-memory) is in use; retry later")
			}
			held += 3 * int64(k)
			buf = append(buf, chunk[:k]...)
		}
		if rerr == io.EOF {
			return buf, held, nil
		}
		if rerr != nil {
			if errors.Is(rerr, os.ErrDeadlineExceeded) {
				return nil, held, ir.Errorf(ir.CodeTimeout, -1, "", "the body did not arrive within the request's timeout")
			}
			return nil, held, ir.Errorf(ir.CodeInvalidGraph, -1, "", "reading the body: %v", rerr)
		}
	}
	return buf, held, nil
}

// budget is a count of bytes the server may still hold; safe for
// concurrent use.
type budget struct {
	mu   sync.Mutex
	left int64
}

// take takes n bytes if they are left.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// give gives n bytes back.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// parseQuery reads /v1/execute's options: backend, and const (repeatable:
// NAME=V0,V1,…, an ONNX body's input fixed at import, as gpucc run's
// --const), and nothing else.
func parseQuery(raw string) (backend string, consts map[string]string, err error) {
	q, perr := url.ParseQuery(raw)
	if perr != nil {
		return "", nil, ir.Errorf(ir.CodeUsage, -1, "", "malformed query: %s", ir.Quote(perr.Error()))
	}
	for k, v := range q {
		switch k {
		case "backend":
			if len(v) != 1 {
				return "", nil, ir.Errorf(ir.CodeUsage, -1, "backend", "backend given %d times", len(v))
			}
			backend = v[0]
		case "const":
			consts = map[string]string{}
			for _, c := range v {
				name, val, ok := strings.Cut(c, "=")
				if !ok || name == "" || val == "" {
					return "", nil, ir.Errorf(ir.CodeUsage, -1, "const", "want const=NAME=V0,V1,…, got %s", ir.Quote(c))
				}
				if _, dup := consts[name]; dup {
					return "", nil, ir.Errorf(ir.CodeUsage, -1, "const", "input %s given twice", ir.Quote(name))
				}
				consts[name] = val
			}
		default:
			return "", nil, ir.Errorf(ir.CodeUsage, -1, "", "unknown query parameter %s; /v1/execute takes backend and const", ir.Quote(k))
		}
	}
	if backend == "" {
		backend = "auto"
	}
	return backend, consts, nil
}

// info answers the backends, adapters and limits.
func (a *api) info(w http.ResponseWriter) {
	v := map[string]any{"backends": a.server.Offered(), "chain": lib.Chain, "limits": camelKeys(a.limits),
		"maxPending": a.server.Policy().MaxPending}
	list, err := a.adapters()
	if err != nil {
		v["adapterError"] = err.Error()
	}
	v["adapters"] = list
	writeReply(w, http.StatusOK, map[string]any{"ok": true, "value": v})
}

// camelKeys is a struct's exported fields under camelCase keys (MaxNodes
// as maxNodes), the JSON's spelling, whatever fields ir.Limits grows.
func camelKeys(v any) map[string]any {
	rv := reflect.Indirect(reflect.ValueOf(v))
	m := map[string]any{}
	for i := range rv.NumField() {
		if f := rv.Type().Field(i); f.IsExported() {
			m[strings.ToLower(f.Name[:1])+f.Name[1:]] = rv.Field(i).Interface()
		}
	}
	return m
}

// fail answers err with status; writeReply closes the connection, so
// that what the client may still send is never read.
func (a *api) fail(w http.ResponseWriter, status int, err error) {
	writeReply(w, status, server.Failed(err))
}

// httpStatus maps a stable code to its HTTP status.
func httpStatus(c ir.Code) int {
	switch c {
	case ir.CodeInvalidGraph, ir.CodeInvalidInput, ir.CodeUsage:
		return http.StatusBadRequest
	case ir.CodeLimitExceeded:
		return http.StatusRequestEntityTooLarge
	case ir.CodeNotGranted:
		return http.StatusForbidden
	case ir.CodeBusy:
		return http.StatusTooManyRequests
	case ir.CodeDisposed, ir.CodeBackendUnavailable:
		return http.StatusServiceUnavailable
	case ir.CodeNonFiniteOutput, ir.CodeUnsupported, ir.CodeIntegerFault:
		return http.StatusUnprocessableEntity
	case ir.CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// serveShapeHint says, for an ONNX body whose input has a dynamic shape,
// what the client can do: /v1/execute binds no dimension.
func serveShapeHint(input string) string {
	return "/v1/execute binds a dynamic dimension from the input's data only, else runs models whose input shapes are static: post the model as multipart/form-data with " + ir.Quote(input) + "'s data (its shape binds the dimension), export the model with its shape fixed, or import it with gpucc import --input-shape and post the graph"
}

// replyBytes is what a reply holds while writeResult streams it: the
// writer's buffer and the outputs' values, 4 bytes a float32-carried
// value and 8 an int64-carried one (integers, bools, float64's bits).
// It charged the float32 values alone, so a typed output cost nothing.
func replyBytes(res *lib.Result) int64 {
	n := int64(64 << 10)
	for _, o := range res.Outputs {
		n += 4*int64(len(o.Data)) + 8*int64(len(o.Ints))
	}
	return n
}

// writeTyped writes a typed output's values, comma-separated, as
// lib.Tensor's MarshalJSON does: bools as true and false, integers as
// integers, floats (float64's bits, a narrow float's float32 carrier) as
// encoding/json writes them (appendJSONFloat), ±Inf and NaN as the
// strings "Infinity", "-Infinity" and "NaN".
func writeTyped(bw *bufio.Writer, t lib.Tensor) error {
	var num []byte
	n := len(t.Ints)
	if t.DType.IsFloat() {
		n = len(t.Data)
	}
	for j := range n {
		num = num[:0]
		if j > 0 {
			num = append(num, ',')
		}
		var f float64
		bits := 64
		switch {
		case t.DType == ir.Bool:
			num = strconv.AppendBool(num, t.Ints[j] != 0)
		case t.DType.IsFloat64():
			f = ir.F64Value(t.Ints[j])
		case t.DType.IsFloat():
			f, bits = float64(t.Data[j]), 32
		default:
			num = strconv.AppendInt(num, t.Ints[j], 10)
		}
		if t.DType.IsFloat() || t.DType.IsFloat64() {
			switch {
			case f != f:
				num = append(num, `"NaN"`...)
			case math.IsInf(f, 1):
				num = append(num, `"Infinity"`...)
			case math.IsInf(f, -1):
				num = append(num, `"-Infinity"`...)
			default:
				num = appendJSONFloat(num, f, bits)
			}
		}
		if _, err := bw.Write(num); err != nil {
			return err
		}
	}
	return nil
}

// appendJSONFloat appends finite f, a float64 or (bits 32) a float32's
// value, as encoding/json writes it: the shortest decimal that reads back
// as the same value, in exponent form below 1e-6 and from 1e21, the
// exponent's leading zero dropped (1e-07 is 1e-7).
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		if n := len(b) - start; n >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b
}

// writeReply writes v, an envelope, as the JSON answer; an error answer
// closes the connection.
func writeReply(w http.ResponseWriter, status int, v any) {
	if status >= 400 {
		w.Header().Set("Connection", "close")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "gpucc: writing an answer: %v\n", err)
	}
}

// writeResult streams {"ok":true,"value":res}, the encoding writeReply
// gives it, without holding the JSON of the outputs' values in memory:
// each value is written as it is formatted (ir.FormatFloat, the shortest
// decimal that reads back as the same float32).
func writeResult(w http.ResponseWriter, res *lib.Result) error {
	shell := *res
	shell.Outputs = map[string]lib.Tensor{}
	head, err := json.Marshal(shell)
	if err != nil {
		return err
	}
	const mark = `"outputs":{}`
	i := bytes.Index(head, []byte(mark))
	if i < 0 {
		return fmt.Errorf("the result's encoding has no %s", mark)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(`{"ok":true,"value":`)
	bw.Write(head[:i])
	bw.WriteString(`"outputs":{`)
	names := slices.Sorted(maps.Keys(res.Outputs))
	var num []byte
	for k, name := range names {
		if k > 0 {
			bw.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		bw.Write(key)
		t := res.Outputs[name]
		bw.WriteString(`:{"shape":[`)
		for d, n := range t.Shape {
			if d > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString(strconv.Itoa(n))
		}
		if t.DType != ir.F32 {
			// A typed output (integers, bools, float64, narrow floats) in
			// the library's encoding (lib.Tensor's MarshalJSON), its dtype
			// said, streamed as float32's is: json.Marshal held its whole
			// JSON, 95.7 MB for 2^19 int64 and float64 values.
			bw.WriteString(`],"dtype":"` + t.DType.String() + `","data":[`)
			if err := writeTyped(bw, t); err != nil {
				return err
			}
			bw.WriteString("]}")
			continue
		}
		bw.WriteString(`],"data":[`)
		for j, v := range t.Data {
			if j > 0 {
				bw.WriteByte(',')
			}
			switch {
			case v != v: // only under the host's --non-finite policy
				num = append(num[:0], `"NaN"`...)
			case math.IsInf(float64(v), 1):
				num = append(num[:0], `"Infinity"`...)
			case math.IsInf(float64(v), -1):
				num = append(num[:0], `"-Infinity"`...)
			default:
				num = strconv.AppendFloat(num[:0], float64(v), 'g', -1, 32)
			}
			if _, err := bw.Write(num); err != nil {
				return err
			}
		}
		bw.WriteString("]}")
	}
	bw.WriteByte('}')
	bw.Write(head[i+len(mark):])
	bw.WriteString("}\n")
	return bw.Flush()
}
