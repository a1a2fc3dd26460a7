package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/host"
	"github.com/gpucc/gpucc/ir"
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
	allowSW  bool
	cacheDir string
	limits   *ir.Limits
}

// apiFlags registers the execute API's flags on serve's flag set.
func apiFlags(fs *flag.FlagSet) *apiConfig {
	c := &apiConfig{}
	fs.StringVar(&c.token, "token", "", "require Authorization: Bearer TOKEN on /v1/ (default $"+TokenEnv+"; empty: none)")
	atLeast(fs, &c.pending, "max-pending", host.DefaultMaxPending, 1, "requests pending at once; more are answered busy")
	atLeast(fs, &c.timeout, "timeout", 60*time.Second, time.Millisecond, "longest a request may run before it is answered timeout")
	atLeast(fs, &c.grace, "grace", 10*time.Second, 0, "on SIGTERM, how long running requests may finish before they are answered disposed")
	fs.BoolVar(&c.allowSW, "allow-software", false, "accept software GPU adapters (lavapipe, SwiftShader, WARP)")
	fs.StringVar(&c.cacheDir, "cache-dir", "", "directory of the on-disk code cache (default $GPUCC_CACHE_DIR or the user cache dir; \"off\" disables it)")
	c.limits = limitFlags(fs)
	return c
}

// api serves POST /v1/execute, GET /v1/info and GET /healthz in front of
// another handler (the demo page), on a host.
type api struct {
	host   *host.Host
	client *host.Client
	token  string
	limits ir.Limits
	grace  time.Duration
	next   http.Handler
	// adapters are enumerated once: /v1/info is cheap to ask for, and
	// enumeration creates a wgpu instance.
	adapters func() (any, error)
	active   atomic.Int64 // execute requests being handled
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
	h := host.New(host.Options{Policy: host.Policy{Limits: *c.limits, MaxPending: c.pending, Timeout: c.timeout},
		AllowSoftware: c.allowSW, Cache: cc})
	h.Grant(apiClient)
	return &api{host: h, client: h.Client(apiClient), token: token, limits: h.Policy().Limits, grace: c.grace, next: next,
		adapters: sync.OnceValues(adapters)}, nil
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
		a.host.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	grace, cancel := context.WithTimeout(context.Background(), a.grace)
	defer cancel()
	err := srv.Shutdown(grace) // returns once every handler has, or when grace ends
	closed, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	a.host.Close(closed) // answers what still runs disposed
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
		if a.authorized(w, r) && a.allow(w, r, http.MethodGet, http.MethodHead) {
			a.info(w)
		}
	case p == routeExecute:
		if a.authorized(w, r) && a.allow(w, r, http.MethodPost) {
			a.execute(w, r)
		}
	case strings.HasPrefix(p, "/v1/") || p == "/v1":
		if a.authorized(w, r) {
			a.fail(w, http.StatusNotFound, ir.Errorf(ir.CodeUsage, -1, "", "no route %s; the API has %s, %s and %s", ir.Quote(p), routeExecute, routeInfo, routeHealth))
		}
	default:
		if a.allow(w, r, http.MethodGet, http.MethodHead) {
			a.next.ServeHTTP(w, r)
		}
	}
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

// authorized checks the bearer token, in constant time, before anything
// else is read: a missing or wrong token costs a 401 and nothing more.
func (a *api) authorized(w http.ResponseWriter, r *http.Request) bool {
	if a.token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="gpucc"`)
	w.Header().Set("Connection", "close") // do not read what the client may still send
	a.fail(w, http.StatusUnauthorized, ir.Errorf(ir.CodeNotGranted, -1, "", "a valid bearer token is required"))
	return false
}

// execute runs the body, a graph v1 document, with the query's options.
func (a *api) execute(w http.ResponseWriter, r *http.Request) {
	a.active.Add(1)
	defer a.active.Add(-1)
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err)
		return
	}
	if r.ContentLength > a.limits.MaxGraphBytes {
		w.Header().Set("Connection", "close")
		a.fail(w, http.StatusRequestEntityTooLarge, ir.Errorf(ir.CodeLimitExceeded, -1, "", "graph JSON of %d bytes exceeds the limit of %d bytes", r.ContentLength, a.limits.MaxGraphBytes))
		return
	}
	// One byte over the limit, so that Decode, which reads at most that,
	// reports limit_exceeded itself.
	body := http.MaxBytesReader(w, r.Body, ir.SatAdd(a.limits.MaxGraphBytes, 1))
	graph, err := onnxBody(r.Header.Get("Content-Type"), body, a.limits) // import.go
	if err != nil {
		a.fail(w, httpStatus(lib.CodeOf(err)), err)
		return
	}
	reply := a.client.Execute(r.Context(), host.Request{Graph: graph, Backend: q})
	status := http.StatusOK
	if !reply.OK {
		status = httpStatus(reply.Error.Code)
		if reply.Error.Code == ir.CodeBusy {
			w.Header().Set("Retry-After", "1")
		}
	}
	writeReply(w, status, reply)
}

// parseQuery reads /v1/execute's options: backend, and nothing else.
func parseQuery(raw string) (backend string, err error) {
	q, perr := url.ParseQuery(raw)
	if perr != nil {
		return "", ir.Errorf(ir.CodeUsage, -1, "", "malformed query: %s", ir.Quote(perr.Error()))
	}
	for k, v := range q {
		if k != "backend" {
			return "", ir.Errorf(ir.CodeUsage, -1, "", "unknown query parameter %s; /v1/execute takes backend", ir.Quote(k))
		}
		if len(v) != 1 {
			return "", ir.Errorf(ir.CodeUsage, -1, "backend", "backend given %d times", len(v))
		}
		backend = v[0]
	}
	if backend == "" {
		backend = "auto"
	}
	return backend, nil
}

// info answers the backends, adapters and limits.
func (a *api) info(w http.ResponseWriter) {
	v := map[string]any{"backends": a.host.Offered(), "chain": lib.Chain, "limits": a.limits,
		"maxPending": a.host.Policy().MaxPending}
	list, err := a.adapters()
	if err != nil {
		v["adapterError"] = err.Error()
	}
	v["adapters"] = list
	writeReply(w, http.StatusOK, map[string]any{"ok": true, "value": v})
}

func (a *api) fail(w http.ResponseWriter, status int, err error) {
	writeReply(w, status, host.Failed(err))
}

// httpStatus maps a stable code to its HTTP status.
func httpStatus(c ir.Code) int {
	switch c {
	case ir.CodeInvalidGraph, ir.CodeUsage:
		return http.StatusBadRequest
	case ir.CodeLimitExceeded:
		return http.StatusRequestEntityTooLarge
	case ir.CodeNotGranted:
		return http.StatusForbidden
	case ir.CodeBusy:
		return http.StatusTooManyRequests
	case ir.CodeDisposed, ir.CodeBackendUnavailable:
		return http.StatusServiceUnavailable
	case ir.CodeNonFiniteOutput, ir.CodeUnsupported:
		return http.StatusUnprocessableEntity
	case ir.CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// writeReply writes v, an envelope, as the JSON answer.
func writeReply(w http.ResponseWriter, status int, v any) {
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
