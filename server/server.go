// Package server executes protocol v1 graphs for clients, the seed's host
// model (gpucc serve's execute API runs on it; "host" alone means host
// memory in gpucc): a guest never touches the GPU; it sends a graph as a request and
// gets back a reply, {ok: true, value} or {ok: false, error: {code,
// message}}. Three rules keep that safe, and a Server enforces them:
//
//   - execution is default-deny: a client runs nothing until the server
//     grants its id (Grant), and a revoked id runs nothing new;
//   - each client id has a cap on pending requests (Policy.MaxPending, 16
//     by default), counted over all its handles; a request beyond it is
//     answered busy at once. A request is
//     pending from Submit until its work has finished, also when its caller
//     stopped waiting, so cancelling and resubmitting cannot pile up work;
//   - a result that arrives after its client was disposed is dropped:
//     once Dispose has returned, no reply of that client is delivered.
//
// Limits are host policy (Policy.Limits): a request carries a graph and a
// backend name, never limits. Every call takes a context.Context; a
// cancelled or expired context answers timeout (the work it started runs
// to its end and its result is dropped). A Server and its Clients are safe
// for concurrent use.
//
// A Server runs on the backends built into the binary: import
// github.com/gpucc/gpucc/runtime/all (or single ones, runtime/cpu, ...);
// Offered lists those a request may name.
//
// Codes are stable (see the ir.Code constants): invalid_graph,
// limit_exceeded, not_granted, busy, disposed, backend_unavailable,
// execution_failed, non_finite_output and timeout.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
)

// DefaultMaxPending is the seed's cap on pending requests per client.
const DefaultMaxPending = 16

// Policy is what a server allows. The zero Policy is the seed's: default
// limits, 16 pending requests per client, no timeout of its own, every
// backend built in.
type Policy struct {
	Limits     ir.Limits     // graph limits; zero fields are the defaults
	MaxPending int           // pending requests per client (0: DefaultMaxPending)
	Timeout    time.Duration // a request's deadline when its context has none sooner (0: none)
	// Backends lists the backends a request may name ("auto" among them
	// to allow auto selection); nil allows every backend built in and auto.
	Backends []string
}

// Options configure a Server.
type Options struct {
	Policy Policy
	// AllowSoftware accepts software GPU adapters (lavapipe, SwiftShader).
	AllowSoftware bool
	// Cache keeps generated code; nil means cache.Default().
	Cache *cache.Cache
	// PoolBytes bounds the device (or host) memory each backend keeps
	// between runs for reuse (0: DefaultPoolBytes; negative: none).
	PoolBytes int64
}

// DefaultPoolBytes is a server's default buffer pool per backend: less than
// a Runtime's own (gpucc.DefaultPoolBytes), since a server runs many
// callers' graphs of many sizes and keeps what it pools while idle.
const DefaultPoolBytes = 64 << 20

// Request is one execution request.
type Request struct {
	Graph io.Reader // a protocol v1 document, read once by the server
	// Import, when Graph is nil, makes the graph once the request is
	// admitted: in its pending slot, under its timeout, with its context
	// (an ONNX import can take seconds; a client that goes away stops
	// it). The graph is validated against the host's limits again.
	Import  func(ctx context.Context) (*ir.Graph, error)
	Backend string // "auto" (or ""), or a backend name
}

// Reply is the seed's envelope: OK with the result a `gpucc run` prints,
// or an error with a stable code.
type Reply struct {
	OK    bool          `json:"ok"`
	Value *gpucc.Result `json:"value,omitempty"`
	Error *ErrorBody    `json:"error,omitempty"`
}

// ErrorBody is a failed reply's error: the fields `gpucc run` prints.
type ErrorBody struct {
	Code    ir.Code `json:"code"`
	Message string  `json:"message"`
	Node    *int    `json:"node,omitempty"`  // the node at fault (its wire id), when known
	Field   string  `json:"field,omitempty"` // the field at fault, when known
}

// Failed returns the reply for err: its stable code (internal when it
// has none), message, and the node and field of an *ir.Error.
func Failed(err error) Reply {
	e := &ErrorBody{Code: gpucc.CodeOf(err), Message: err.Error()}
	var ie *ir.Error
	if errors.As(err, &ie) {
		if ie.Node >= 0 {
			n := ie.Node
			e.Node = &n
		}
		e.Field = ie.Field
	}
	return Reply{Error: e}
}

// hostError is an error the server itself reports.
func hostError(code ir.Code, format string, a ...any) *ir.Error {
	return ir.Errorf(code, -1, "", format, a...)
}

// Server runs requests for the clients it has granted.
type Server struct {
	policy Policy
	exec   executor

	mu      sync.Mutex
	granted map[string]bool
	pending map[string]int // requests admitted and not finished, per client id
	clients map[*Client]bool
	closed  bool
	work    sync.WaitGroup // requests admitted and not finished
}

// New returns a Server that runs graphs on the runtime's backends, opened on
// first use. Close it to release them.
func New(opts Options) *Server {
	return newServer(opts.Policy, newRuntimes(opts))
}

func newServer(p Policy, exec executor) *Server {
	if p.MaxPending <= 0 {
		p.MaxPending = DefaultMaxPending
	}
	p.Limits = p.Limits.WithDefaults()
	return &Server{policy: p, exec: exec, granted: map[string]bool{}, pending: map[string]int{}, clients: map[*Client]bool{}}
}

// Policy returns the server's policy with its defaults filled in.
func (h *Server) Policy() Policy { return h.policy }

// Grant allows the client id to execute graphs.
func (h *Server) Grant(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.granted[id] = true
}

// Revoke withdraws id's grant: its later requests are refused with
// not_granted; those already admitted run on.
func (h *Server) Revoke(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.granted, id)
}

// Client returns a new client handle with the given id. Its requests run
// only while the id is granted. Dispose it when its guest goes away.
func (h *Server) Client(id string) *Client {
	c := &Client{h: h, id: id, gone: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		c.disposeLocked()
	} else {
		h.clients[c] = true
	}
	return c
}

// Close shuts the server down: new requests are answered disposed, running
// ones may finish until ctx is done, then every client is disposed (so
// what is still running is answered disposed and its result dropped) and
// the backends are released once their runs end. It returns ctx's error
// when it had to cut running requests short.
func (h *Server) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	finished := make(chan struct{})
	go func() { h.work.Wait(); close(finished) }()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = ctx.Err()
	}
	h.mu.Lock()
	clients := make([]*Client, 0, len(h.clients))
	for c := range h.clients {
		clients = append(clients, c)
	}
	h.mu.Unlock()
	for _, c := range clients {
		c.Dispose()
	}
	if err == nil {
		h.exec.close()
	} else {
		go func() { <-finished; h.exec.close() }()
	}
	return err
}

// Client is one guest's handle on a Server (the seed's engine).
type Client struct {
	h  *Server
	id string

	delivering sync.Mutex // held while a reply is delivered
	mu         sync.Mutex // guards disposed
	disposed   bool
	gone       chan struct{} // closed by Dispose
}

// ID returns the client's id.
func (c *Client) ID() string { return c.id }

// Dispose disposes the client: its requests not yet answered are never
// answered (Execute returns disposed), later ones are refused with
// disposed. When Dispose returns, no delivery of this client is running
// and none will run. A deliver function must not call Dispose.
func (c *Client) Dispose() {
	c.mu.Lock()
	c.disposeLocked()
	c.mu.Unlock()
	c.delivering.Lock() // waits for a delivery in progress
	c.delivering.Unlock()
	c.h.mu.Lock()
	delete(c.h.clients, c)
	c.h.mu.Unlock()
}

func (c *Client) disposeLocked() {
	if !c.disposed {
		c.disposed = true
		close(c.gone)
	}
}

// Pending returns the number of requests of the client's id admitted and
// not finished, through any of its handles: the count the cap applies to.
func (c *Client) Pending() int {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.h.pending[c.id]
}

// Submit reads and decodes the request's graph, admits it and returns;
// the graph runs in another goroutine. deliver is called exactly once with
// the reply, from another goroutine, unless the client is disposed first:
// then never. A request that cannot be admitted (the client not granted,
// disposed, or at its cap; the backend not offered; the graph refused by
// Decode; ctx done while the graph was read) returns that error and
// deliver is not called. When ctx is done before the result, deliver gets
// timeout and the result, when it comes, is dropped.
//
// The graph is read before the request counts as pending, so a slow
// sender holds no pending slot; the caller bounds the read itself (serve
// sets its connection's read deadline), since an io.Reader cannot be
// interrupted. Policy.Timeout starts before the read.
func (c *Client) Submit(ctx context.Context, req Request, deliver func(Reply)) error {
	if err := c.check(); err != nil { // refuse before reading a byte
		return err
	}
	cancel := func() {}
	if t := c.h.policy.Timeout; t > 0 {
		ctx, cancel = context.WithTimeout(ctx, t)
	}
	var g *ir.Graph
	var err error
	if req.Graph == nil && req.Import != nil {
		g, err = c.imported(ctx, req)
	} else {
		g, err = c.h.decode(ctx, req)
		if err == nil {
			err = c.admit()
		}
	}
	if err != nil {
		cancel()
		return err
	}
	var once sync.Once
	answer := func(r Reply) {
		once.Do(func() {
			c.delivering.Lock()
			defer c.delivering.Unlock()
			if !c.isDisposed() {
				deliver(r)
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer c.h.work.Done()
		defer cancel()
		defer close(done)
		r := c.h.execute(ctx, req.backend(), g)
		// The slot is free before the reply is delivered, so a caller that
		// submits again on its reply is never answered busy by its own
		// finished request; Close still waits for the delivery.
		c.release()
		answer(r)
	}()
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
			answer(Failed(timeoutError(ctx)))
		case <-c.gone:
		}
	}()
	return nil
}

// imported admits req, then makes its graph with req.Import inside the
// pending slot; on error the slot is given back.
func (c *Client) imported(ctx context.Context, req Request) (*ir.Graph, error) {
	if b := req.backend(); !c.h.allows(b) {
		return nil, hostError(ir.CodeBackendUnavailable, "backend %s is not offered by this host (offered: %v)", ir.Quote(b), c.h.offered())
	}
	if err := c.admit(); err != nil {
		return nil, err
	}
	g, err := safely(func() (*ir.Graph, error) { return req.Import(ctx) })
	if err == nil {
		err = ir.Validate(g, c.h.policy.Limits)
	}
	if err != nil {
		c.finish()
		if ctx.Err() != nil {
			return nil, timeoutError(ctx)
		}
		return nil, err
	}
	return g, nil
}

func (c *Client) isDisposed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disposed
}

// Execute runs a request and returns its reply: Submit, then wait for the
// delivery, ctx, or the client's disposal (answered disposed).
func (c *Client) Execute(ctx context.Context, req Request) Reply {
	replies := make(chan Reply, 1)
	if err := c.Submit(ctx, req, func(r Reply) { replies <- r }); err != nil {
		return Failed(err)
	}
	select {
	case r := <-replies:
		return r
	case <-c.gone:
		return Failed(hostError(ir.CodeDisposed, "client %s was disposed before its result was delivered", ir.Quote(c.id)))
	}
}

// check says why a request of c cannot be admitted now, if it cannot.
func (c *Client) check() error {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.disposed || h.closed:
		return hostError(ir.CodeDisposed, "client %s is disposed", ir.Quote(c.id))
	case !h.granted[c.id]:
		return hostError(ir.CodeNotGranted, "client %s has not been granted execution", ir.Quote(c.id))
	case h.pending[c.id] >= h.policy.MaxPending:
		return hostError(ir.CodeBusy, "client %s has %d requests pending, the cap; retry later", ir.Quote(c.id), h.pending[c.id])
	}
	return nil
}

// admit counts a new pending request, or says why it cannot be.
func (c *Client) admit() error {
	h := c.h
	if err := c.check(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[c.id] >= h.policy.MaxPending { // another request was admitted meanwhile
		return hostError(ir.CodeBusy, "client %s has %d requests pending, the cap; retry later", ir.Quote(c.id), h.pending[c.id])
	}
	h.pending[c.id]++
	h.work.Add(1)
	return nil
}

// finish ends an admitted request: its slot is given back and Close no
// longer waits for it.
func (c *Client) finish() {
	c.release()
	c.h.work.Done()
}

// release gives an admitted request's pending slot back.
func (c *Client) release() {
	h := c.h
	h.mu.Lock()
	if h.pending[c.id]--; h.pending[c.id] == 0 {
		delete(h.pending, c.id)
	}
	h.mu.Unlock()
}

// timeoutError is the timeout error for a done ctx.
func timeoutError(ctx context.Context) error {
	why := "its context was cancelled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "its deadline passed"
	}
	return hostError(ir.CodeTimeout, "the request was abandoned: %s", why)
}

func (r Request) backend() string {
	if r.Backend == "" {
		return "auto"
	}
	return r.Backend
}

// decode checks the request's backend and decodes its graph under the
// server's limits.
func (h *Server) decode(ctx context.Context, req Request) (*ir.Graph, error) {
	if b := req.backend(); !h.allows(b) {
		return nil, hostError(ir.CodeBackendUnavailable, "backend %s is not offered by this host (offered: %v)", ir.Quote(b), h.offered())
	}
	if req.Graph == nil {
		return nil, hostError(ir.CodeInvalidGraph, "the request has no graph")
	}
	g, err := ir.Decode(req.Graph, h.policy.Limits)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, timeoutError(ctx)
	}
	return g, nil
}

// execute runs one decoded request. It runs on a goroutine of its own,
// where a panic nobody recovers would end the process, every client's
// work with it: a panic is the request's internal error instead.
func (h *Server) execute(ctx context.Context, backend string, g *ir.Graph) Reply {
	if err := ctx.Err(); err != nil {
		return Failed(timeoutError(ctx))
	}
	res, err := safely(func() (*gpucc.Result, error) { return h.exec.run(ctx, backend, g) })
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return Failed(timeoutError(ctx))
		}
		return Failed(err)
	}
	return Reply{OK: true, Value: res}
}

func (h *Server) allows(backend string) bool { return slices.Contains(h.offered(), backend) }

// offered lists the backend names a request may use: Policy.Backends
// that are built in (or auto), else every one built in and auto.
func (h *Server) offered() []string {
	if h.policy.Backends != nil {
		var names []string
		for _, b := range h.policy.Backends {
			if b == "auto" || slices.Contains(gpucc.Backends(), b) {
				names = append(names, b)
			}
		}
		return names
	}
	return append([]string{"auto"}, gpucc.Backends()...)
}

// Offered returns the backend names a request may name.
func (h *Server) Offered() []string { return slices.Clone(h.offered()) }

// executor runs validated graphs on named backends: the seam between the
// server's rules and the runtime that does the work.
type executor interface {
	// run executes g on backend; it may return ctx's error when ctx is
	// done before the work starts.
	run(ctx context.Context, backend string, g *ir.Graph) (*gpucc.Result, error)
	close()
}

// runtimes is the executor on package gpucc: one Runtime per backend
// name, opened on first use and kept, each running one graph at a time.
// Each has a gpucc.ExecutableCache of maxExecutables graph structures, so
// a request shaped like an earlier one skips the passes and the compile
// and only sends its data; the cache holds no request's data.
//
// A compile runs beside the request that needs it: when the request's
// context ends first, the request is answered timeout at once, and the
// backend's Runtime (with its cache) is set aside for the compile to
// finish on and then closed; the next request opens a fresh one. So a
// compile that cannot be cancelled (a webgpu pipeline) holds its backend
// no longer than its request's timeout. At most maxAbandoned such
// compiles run per backend; past that, requests that need a new Runtime
// are answered busy until one ends.
type runtimes struct {
	opts gpucc.Options

	mu     sync.Mutex
	open   map[string]*backendSlot
	closed bool
}

// backendSlot is one backend; turn admits one request at a time, so a
// request whose context ends while it waits never starts.
type backendSlot struct {
	name string
	turn chan struct{}
	// rt and exes are the open Runtime and its cache, nil until opened or
	// once set aside; written with turn and runtimes.mu held.
	rt        *gpucc.Runtime
	exes      *gpucc.ExecutableCache
	abandoned int // compiles set aside and still running; guarded by runtimes.mu
}

// maxExecutables bounds the executables a backend keeps, and maxAbandoned
// the compiles left running after their request timed out, per backend.
const (
	maxExecutables = 64
	maxAbandoned   = 2
)

func newRuntimes(o Options) *runtimes {
	pool := o.PoolBytes
	if pool == 0 {
		pool = DefaultPoolBytes
	}
	return &runtimes{opts: gpucc.Options{AllowSoftware: o.AllowSoftware, Limits: o.Policy.Limits, Cache: o.Cache, PoolBytes: pool},
		open: map[string]*backendSlot{}}
}

func (r *runtimes) slot(backend string) (*backendSlot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, hostError(ir.CodeDisposed, "the host is closed")
	}
	s := r.open[backend]
	if s == nil {
		s = &backendSlot{name: backend, turn: make(chan struct{}, 1)}
		r.open[backend] = s
	}
	return s, nil
}

// ready opens s's Runtime unless it is open (a backend that failed to
// start is tried again by the next request); turn held.
func (r *runtimes) ready(ctx context.Context, s *backendSlot) error {
	if s.rt != nil {
		return nil
	}
	r.mu.Lock()
	n := s.abandoned
	r.mu.Unlock()
	if n >= maxAbandoned {
		return hostError(ir.CodeBusy, "backend %s is still finishing %d compiles whose requests timed out; retry later", ir.Quote(s.name), n)
	}
	opts := r.opts
	opts.Backend = s.name
	rt, err := gpucc.Open(ctx, opts)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		rt.Close()
		return hostError(ir.CodeDisposed, "the host is closed")
	}
	s.rt, s.exes = rt, gpucc.NewExecutableCache(rt, maxExecutables)
	return nil
}

func (r *runtimes) run(ctx context.Context, backend string, g *ir.Graph) (_ *gpucc.Result, err error) {
	s, err := r.slot(backend)
	if err != nil {
		return nil, err
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.turn }()
	defer r.dropBroken(s)
	// A panic outside the backend's guard (gpucc's passes, say) leaves
	// s's Runtime in a state nobody knows: it is closed like a broken one
	// (the panic goes on to execute, which answers it internal).
	defer func() {
		if p := recover(); p != nil {
			r.drop(s)
			panic(p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.ready(ctx, s); err != nil {
		return nil, err
	}
	if gpucc.Typed(g) {
		// A typed graph (an ONNX model's int64 ids, say) has no plan for
		// the structure cache to hold: the backend compiles it for this
		// request (cpu: validation only; native and wasm: through their
		// artifact cache) or refuses it by name.
		exe, err := s.rt.Compile(ctx, g)
		if err != nil {
			return nil, err
		}
		defer exe.Release()
		return exe.Run(ctx, nil)
	}
	req := s.exes.Request(g) // the graph's structure key, once per request
	if !req.Cached() {
		if err := r.compile(ctx, s, req); err != nil {
			return nil, err
		}
	}
	return req.Run(ctx)
}

// compile compiles g into s's cache, beside the request: when ctx ends
// first, s's Runtime is set aside for the compile to finish on, then
// closed; turn held.
func (r *runtimes) compile(ctx context.Context, s *backendSlot, req gpucc.CacheRequest) error {
	rt, exes := s.rt, s.exes
	done := make(chan error, 1)
	panicked := make(chan any, 1)
	go func() {
		// A panic here would end the process: it is handed to the
		// request's goroutine, which panics with it (run closes the
		// Runtime, execute answers internal), or, once the request has
		// gone, only ends the abandoned compile, whose Runtime is closed.
		defer func() {
			if p := recover(); p != nil {
				panicked <- p
				done <- internalPanic(p)
			}
		}()
		done <- req.Prepare(ctx)
	}()
	select {
	case err := <-done:
		select {
		case p := <-panicked:
			panic(p)
		default:
		}
		return err
	case <-ctx.Done():
	}
	r.mu.Lock()
	s.rt, s.exes = nil, nil
	s.abandoned++
	r.mu.Unlock()
	go func() {
		<-done
		exes.Close()
		rt.Close()
		r.mu.Lock()
		s.abandoned--
		r.mu.Unlock()
	}()
	return ctx.Err()
}

// dropBroken closes s's Runtime when a backend panic broke it
// (gpucc.Runtime.Broken), so that the next request opens a fresh one;
// turn held.
func (r *runtimes) dropBroken(s *backendSlot) {
	if s.rt == nil || s.rt.Broken() == nil {
		return
	}
	r.drop(s)
}

// drop closes s's Runtime, so that the next request opens a fresh one;
// turn held.
func (r *runtimes) drop(s *backendSlot) {
	if s.rt == nil {
		return
	}
	r.mu.Lock()
	rt, exes := s.rt, s.exes
	s.rt, s.exes = nil, nil
	r.mu.Unlock()
	exes.Close()
	rt.Close()
}

func (r *runtimes) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, s := range r.open {
		if s.rt != nil {
			s.exes.Close()
			s.rt.Close()
		}
	}
	clear(r.open)
}

// String describes the policy, for logs.
func (p Policy) String() string {
	return fmt.Sprintf("max pending %d, timeout %v, backends %v, limits %+v", p.MaxPending, p.Timeout, p.Backends, p.Limits)
}

// safely calls f, turning a panic into an internal error: a bug in gpucc
// fails the request that met it, not the host (a panic in a request's
// goroutine ends the process) nor its pending slot (net/http recovers a
// handler's panic but gives no slot back).
func safely[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, internalPanic(p)
		}
	}()
	return f()
}

// internalPanic is the internal error for a recovered panic p.
func internalPanic(p any) *ir.Error {
	return hostError(ir.CodeInternal, "gpucc panicked, a bug (report it with the request): %v", p)
}
