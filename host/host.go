// Package host executes protocol v1 graphs for clients, the seed's host
// model: a guest never touches the GPU; it sends a graph as a request and
// gets back a reply, {ok: true, value} or {ok: false, error: {code,
// message}}. Three rules keep that safe, and a Host enforces them:
//
//   - execution is default-deny: a client runs nothing until the host
//     grants its id (Grant), and a revoked id runs nothing new;
//   - each client has a cap on pending requests (Policy.MaxPending, 16 by
//     default); a request beyond it is answered busy at once. A request is
//     pending from Submit until its work has finished, also when its caller
//     stopped waiting, so cancelling and resubmitting cannot pile up work;
//   - a result that arrives after its client was disposed is dropped:
//     once Dispose has returned, no reply of that client is delivered.
//
// Limits are host policy (Policy.Limits): a request carries a graph and a
// backend name, never limits. Every call takes a context.Context; a
// cancelled or expired context answers timeout (the work it started runs
// to its end and its result is dropped). A Host and its Clients are safe
// for concurrent use.
//
// Codes are stable (see the ir.Code constants): invalid_graph,
// limit_exceeded, not_granted, busy, disposed, backend_unavailable,
// execution_failed, non_finite_output and timeout.
package host

import (
	"context"
	"crypto/sha256"
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

// Policy is what a host allows. The zero Policy is the seed's: default
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

// Options configure a Host.
type Options struct {
	Policy Policy
	// AllowSoftware accepts software GPU adapters (lavapipe, SwiftShader).
	AllowSoftware bool
	// Cache keeps generated code; nil means cache.Default().
	Cache *cache.Cache
}

// Request is one execution request.
type Request struct {
	Graph   io.Reader // a protocol v1 document, read once by the host
	Backend string    // "auto" (or ""), or a backend name
}

// Reply is the seed's envelope: OK with the result a `gpucc run` prints,
// or an error with a stable code.
type Reply struct {
	OK    bool          `json:"ok"`
	Value *gpucc.Result `json:"value,omitempty"`
	Error *ErrorBody    `json:"error,omitempty"`
}

// ErrorBody is a failed reply's error.
type ErrorBody struct {
	Code    ir.Code `json:"code"`
	Message string  `json:"message"`
}

// Failed returns the reply for err: its stable code (internal when it
// has none) and message.
func Failed(err error) Reply {
	return Reply{Error: &ErrorBody{Code: gpucc.CodeOf(err), Message: err.Error()}}
}

// hostError is an error the host itself reports.
func hostError(code ir.Code, format string, a ...any) *ir.Error {
	return ir.Errorf(code, -1, "", format, a...)
}

// Host runs requests for the clients it has granted.
type Host struct {
	policy Policy
	exec   executor

	mu      sync.Mutex
	granted map[string]bool
	clients map[*Client]bool
	closed  bool
	work    sync.WaitGroup // requests admitted and not finished
}

// New returns a Host that runs graphs on the runtime's backends, opened on
// first use. Close it to release them.
func New(opts Options) *Host {
	return newHost(opts.Policy, newRuntimes(opts))
}

func newHost(p Policy, exec executor) *Host {
	if p.MaxPending <= 0 {
		p.MaxPending = DefaultMaxPending
	}
	p.Limits = p.Limits.WithDefaults()
	return &Host{policy: p, exec: exec, granted: map[string]bool{}, clients: map[*Client]bool{}}
}

// Policy returns the host's policy with its defaults filled in.
func (h *Host) Policy() Policy { return h.policy }

// Grant allows the client id to execute graphs.
func (h *Host) Grant(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.granted[id] = true
}

// Revoke withdraws id's grant: its later requests are refused with
// not_granted; those already admitted run on.
func (h *Host) Revoke(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.granted, id)
}

// Client returns a new client handle with the given id. Its requests run
// only while the id is granted. Dispose it when its guest goes away.
func (h *Host) Client(id string) *Client {
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

// Close shuts the host down: new requests are answered disposed, running
// ones may finish until ctx is done, then every client is disposed (so
// what is still running is answered disposed and its result dropped) and
// the backends are released once their runs end. It returns ctx's error
// when it had to cut running requests short.
func (h *Host) Close(ctx context.Context) error {
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

// Client is one guest's handle on a Host (the seed's engine).
type Client struct {
	h  *Host
	id string

	delivering sync.Mutex // held while a reply is delivered
	mu         sync.Mutex // guards pending and disposed
	pending    int
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

// Pending returns the number of the client's requests admitted and not
// finished.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}

// Submit admits a request and returns at once. deliver is called exactly
// once with the reply, from another goroutine, unless the client is
// disposed first: then never. A request that cannot be admitted (the
// client not granted, disposed, or at its cap) returns that error and
// deliver is not called. When ctx is done before the result, deliver gets
// timeout and the result, when it comes, is dropped.
func (c *Client) Submit(ctx context.Context, req Request, deliver func(Reply)) error {
	if err := c.admit(); err != nil {
		return err
	}
	cancel := func() {}
	if t := c.h.policy.Timeout; t > 0 {
		ctx, cancel = context.WithTimeout(ctx, t)
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
		defer c.finish()
		defer cancel()
		defer close(done)
		answer(c.h.execute(ctx, req))
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

// admit counts a new pending request, or says why it cannot be.
func (c *Client) admit() error {
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
	case c.pending >= h.policy.MaxPending:
		return hostError(ir.CodeBusy, "client %s has %d requests pending, the cap; retry later", ir.Quote(c.id), c.pending)
	}
	c.pending++
	h.work.Add(1)
	return nil
}

func (c *Client) finish() {
	c.mu.Lock()
	c.pending--
	c.mu.Unlock()
	c.h.work.Done()
}

// timeoutError is the timeout error for a done ctx.
func timeoutError(ctx context.Context) error {
	why := "its context was cancelled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "its deadline passed"
	}
	return hostError(ir.CodeTimeout, "the request was abandoned: %s", why)
}

// execute decodes, checks and runs one request.
func (h *Host) execute(ctx context.Context, req Request) Reply {
	backend := req.Backend
	if backend == "" {
		backend = "auto"
	}
	if !h.allows(backend) {
		return Failed(hostError(ir.CodeBackendUnavailable, "backend %s is not offered by this host (offered: %v)", ir.Quote(backend), h.offered()))
	}
	if req.Graph == nil {
		return Failed(hostError(ir.CodeInvalidGraph, "the request has no graph"))
	}
	g, err := ir.Decode(req.Graph, h.policy.Limits)
	if err != nil {
		return Failed(err)
	}
	if err := ctx.Err(); err != nil {
		return Failed(timeoutError(ctx))
	}
	res, err := h.exec.run(ctx, backend, g)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return Failed(timeoutError(ctx))
		}
		return Failed(err)
	}
	return Reply{OK: true, Value: res}
}

func (h *Host) allows(backend string) bool {
	if h.policy.Backends == nil {
		return backend == "auto" || slices.Contains(gpucc.Backends(), backend)
	}
	return slices.Contains(h.policy.Backends, backend)
}

// offered lists the backend names a request may use.
func (h *Host) offered() []string {
	if h.policy.Backends != nil {
		return h.policy.Backends
	}
	return append([]string{"auto"}, gpucc.Backends()...)
}

// Offered returns the backend names a request may name.
func (h *Host) Offered() []string { return slices.Clone(h.offered()) }

// executor runs validated graphs on named backends: the seam between the
// host's rules and the runtime that does the work.
type executor interface {
	// run executes g on backend; it may return ctx's error when ctx is
	// done before the work starts.
	run(ctx context.Context, backend string, g *ir.Graph) (*gpucc.Result, error)
	close()
}

// runtimes is the executor on package gpucc: one Runtime per backend
// name, opened on first use and kept, each running one graph at a time.
// Each keeps the executables of the last maxExecutables graph structures
// it ran, so a request shaped like an earlier one skips the passes and
// the compile and only sends its data.
type runtimes struct {
	opts gpucc.Options

	mu     sync.Mutex
	open   map[string]*backendSlot
	closed bool
}

// backendSlot is one opened backend; turn admits one run at a time, so a
// request whose context ends while it waits never starts.
type backendSlot struct {
	turn chan struct{}
	rt   *gpucc.Runtime
	err  error
	// exes holds compiled graphs by structure (see structureKey), oldest
	// first in order; guarded by turn.
	exes  map[[sha256.Size]byte]*gpucc.Executable
	order [][sha256.Size]byte
}

// maxExecutables bounds the executables a backend keeps.
const maxExecutables = 64

// structureKey identifies what a compiled executable depends on: the
// graph's canonical encoding (every field Decode reads, so a field added
// to the protocol is in it) with the input data left out.
func structureKey(g *ir.Graph) [sha256.Size]byte {
	c := g.Clone()
	for i := range c.Nodes {
		c.Nodes[i].Data = nil
	}
	return sha256.Sum256(ir.Encode(c))
}

// runCached runs g on an executable of its structure, compiled now or
// before, with g's input data as the run's inputs. turn is held.
func (s *backendSlot) runCached(ctx context.Context, g *ir.Graph) (*gpucc.Result, error) {
	key := structureKey(g)
	if exe := s.exes[key]; exe != nil {
		in := gpucc.Inputs{}
		for i, n := range g.Nodes {
			if n.Op == ir.OpInput {
				name := n.Name
				if name == "" {
					name = fmt.Sprintf("input%d", i)
				}
				in[name] = gpucc.Host(n.Shape, n.Data)
			}
		}
		return exe.Run(ctx, in)
	}
	exe, err := s.rt.Compile(ctx, g)
	if err != nil {
		return nil, err
	}
	res, err := exe.Run(ctx, nil) // the data it was compiled with is g's
	if err != nil {
		exe.Release()
		return nil, err
	}
	t, caches := exe.CompileTimings()
	res.Timings.PassesMs += t.PassesMs
	res.Timings.CodegenMs += t.CodegenMs
	res.Timings.CompileMs += t.CompileMs
	res.Timings.TotalMs += t.TotalMs
	for k, v := range caches {
		if res.Cache == nil {
			res.Cache = map[string]bool{}
		}
		if _, ok := res.Cache[k]; !ok {
			res.Cache[k] = v
		}
	}
	if len(s.order) == maxExecutables {
		s.exes[s.order[0]].Release()
		delete(s.exes, s.order[0])
		s.order = s.order[1:]
	}
	s.exes[key] = exe
	s.order = append(s.order, key)
	return res, nil
}

func newRuntimes(o Options) *runtimes {
	return &runtimes{opts: gpucc.Options{AllowSoftware: o.AllowSoftware, Limits: o.Policy.Limits, Cache: o.Cache},
		open: map[string]*backendSlot{}}
}

func (r *runtimes) slot(backend string) (*backendSlot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, hostError(ir.CodeDisposed, "the host is closed")
	}
	s := r.open[backend]
	if s == nil || s.err != nil { // retry a backend that failed to start
		opts := r.opts
		opts.Backend = backend
		rt, err := gpucc.Open(context.Background(), opts)
		s = &backendSlot{turn: make(chan struct{}, 1), rt: rt, err: err, exes: map[[sha256.Size]byte]*gpucc.Executable{}}
		r.open[backend] = s
	}
	return s, s.err
}

func (r *runtimes) run(ctx context.Context, backend string, g *ir.Graph) (*gpucc.Result, error) {
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.runCached(ctx, g)
}

func (r *runtimes) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, s := range r.open {
		if s.rt != nil {
			s.rt.Close()
		}
	}
	clear(r.open)
}

// String describes the policy, for logs.
func (p Policy) String() string {
	return fmt.Sprintf("max pending %d, timeout %v, backends %v, limits %+v", p.MaxPending, p.Timeout, p.Backends, p.Limits)
}
