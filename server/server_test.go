package server

import (
	"context"
	"errors"
	_ "github.com/gpucc/gpucc/runtime/all"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

const seed = `{"version":1,"nodes":[
 {"id":0,"op":"input","shape":[3],"data":[-2,3,4]},
 {"id":1,"op":"input","shape":[3],"data":[10,20,30]},
 {"id":2,"op":"mul","a":0,"b":1},
 {"id":3,"op":"relu","a":2}],
 "outputs":[{"name":"values","id":3}]}`

func req(doc, backend string) Request {
	return Request{Graph: strings.NewReader(doc), Backend: backend}
}

// gate is an executor whose runs block until released, so tests can hold
// requests pending.
type gate struct {
	started chan struct{} // one send per run started
	release chan struct{} // one receive per run finished
	runs    atomic.Int32
	closed  atomic.Bool
	err     error
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (f *gate) run(ctx context.Context, backend string, g *ir.Graph) (*gpucc.Result, error) {
	f.runs.Add(1)
	f.started <- struct{}{}
	<-f.release
	if f.err != nil {
		return nil, f.err
	}
	return &gpucc.Result{Backend: "gate", Outputs: map[string]gpucc.Tensor{}}, nil
}

func (f *gate) close() { f.closed.Store(true) }

func codeOf(r Reply) ir.Code {
	if r.OK {
		return "ok"
	}
	return r.Error.Code
}

func TestDefaultDeny(t *testing.T) {
	h := New(Options{Policy: Policy{Backends: []string{"cpu"}}})
	defer h.Close(context.Background())
	c := h.Client("guest")
	defer c.Dispose()
	ctx := context.Background()
	if got := codeOf(c.Execute(ctx, req(seed, "cpu"))); got != ir.CodeNotGranted {
		t.Fatalf("before Grant: %s, want not_granted", got)
	}
	h.Grant("other")
	if got := codeOf(c.Execute(ctx, req(seed, "cpu"))); got != ir.CodeNotGranted {
		t.Fatalf("another id granted: %s, want not_granted", got)
	}
	h.Grant("guest")
	r := c.Execute(ctx, req(seed, "cpu"))
	if !r.OK {
		t.Fatalf("granted: %+v", r.Error)
	}
	if diff := cmp.Diff([]float32{0, 60, 120}, r.Value.Outputs["values"].Data); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	h.Revoke("guest")
	if got := codeOf(c.Execute(ctx, req(seed, "cpu"))); got != ir.CodeNotGranted {
		t.Fatalf("after Revoke: %s, want not_granted", got)
	}
}

// TestCodes: each failure answers its stable code, and the host's limits
// hold whatever the request says.
func TestCodes(t *testing.T) {
	h := New(Options{Policy: Policy{Backends: []string{"cpu", "auto"}, Limits: ir.Limits{MaxElements: 4}}})
	defer h.Close(context.Background())
	c := h.Client("g")
	h.Grant("g")
	tests := []struct {
		name, doc, backend string
		want               ir.Code
	}{
		{"ok", seed, "cpu", "ok"},
		{"auto", seed, "", "ok"},
		{"malformed", `{"version":1,`, "cpu", ir.CodeInvalidGraph},
		{"over the host's element limit", `{"version":1,"nodes":[{"id":0,"op":"full","shape":[5],"value":1}],"outputs":[{"name":"y","id":0}]}`, "cpu", ir.CodeLimitExceeded},
		{"backend not offered", seed, "wasm", ir.CodeBackendUnavailable},
		{"unknown backend", seed, "cuda", ir.CodeBackendUnavailable},
		{"non-finite output", `{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":[3e38]},{"id":1,"op":"mul","a":0,"scalar":10}],"outputs":[{"name":"y","id":1}]}`, "cpu", ir.CodeNonFiniteOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.Execute(context.Background(), req(tt.doc, tt.backend))
			if got := codeOf(r); got != tt.want {
				t.Errorf("code %s (%+v), want %s", got, r.Error, tt.want)
			}
		})
	}
	g := newGate()
	g.err = &gpucc.Error{Code: ir.CodeExecutionFailed, Backend: "gate", Err: errors.New("device lost")}
	hf := newServer(Policy{}, g)
	cf := hf.Client("g")
	hf.Grant("g")
	go func() { <-g.started; g.release <- struct{}{} }()
	if got := codeOf(cf.Execute(context.Background(), req(seed, "cpu"))); got != ir.CodeExecutionFailed {
		t.Errorf("a failing backend: %s, want execution_failed", got)
	}
}

// TestPendingCap: the 17th pending request is busy; one finishing admits
// the next. Abandoned requests stay pending until their work ends.
func TestPendingCap(t *testing.T) {
	g := newGate()
	h := newServer(Policy{}, g)
	c := h.Client("g")
	h.Grant("g")
	ctx, cancel := context.WithCancel(context.Background())
	var delivered sync.WaitGroup
	for range DefaultMaxPending {
		delivered.Add(1)
		if err := c.Submit(ctx, req(seed, "cpu"), func(Reply) { delivered.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	for range DefaultMaxPending {
		<-g.started
	}
	err := c.Submit(context.Background(), req(seed, "cpu"), func(Reply) { t.Error("a refused request was delivered") })
	if ir.Code(gpucc.CodeOf(err)) != ir.CodeBusy {
		t.Fatalf("17th request: %v, want busy", err)
	}
	// Cancelling answers every one (timeout) but frees no slot.
	cancel()
	delivered.Wait()
	if got := codeOf(c.Execute(context.Background(), req(seed, "cpu"))); got != ir.CodeBusy {
		t.Fatalf("after cancelling: %s, want busy", got)
	}
	g.release <- struct{}{}
	for c.Pending() == DefaultMaxPending {
		time.Sleep(time.Millisecond)
	}
	done := make(chan Reply)
	go func() { done <- c.Execute(context.Background(), req(seed, "cpu")) }()
	<-g.started
	for range DefaultMaxPending {
		g.release <- struct{}{}
	}
	if r := <-done; !r.OK {
		t.Fatalf("after one finished: %+v", r.Error)
	}
	// A request stops being pending just after its reply is delivered.
	for wait := time.Now().Add(10 * time.Second); c.Pending() != 0 && time.Now().Before(wait); {
		time.Sleep(time.Millisecond)
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("%d pending at the end", n)
	}
}

// TestDisposeDropsLateResults: a result that arrives after Dispose is
// never delivered, Execute answers disposed, and later requests are
// refused.
func TestDisposeDropsLateResults(t *testing.T) {
	g := newGate()
	h := newServer(Policy{}, g)
	c := h.Client("g")
	h.Grant("g")
	var late atomic.Int32
	if err := c.Submit(context.Background(), req(seed, "cpu"), func(Reply) { late.Add(1) }); err != nil {
		t.Fatal(err)
	}
	exec := make(chan Reply)
	go func() { exec <- c.Execute(context.Background(), req(seed, "cpu")) }()
	<-g.started
	<-g.started
	c.Dispose()
	if r := <-exec; codeOf(r) != ir.CodeDisposed {
		t.Errorf("Execute across Dispose: %+v, want disposed", r)
	}
	g.release <- struct{}{}
	g.release <- struct{}{}
	for c.Pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	if n := late.Load(); n != 0 {
		t.Errorf("%d results delivered after Dispose", n)
	}
	if err := c.Submit(context.Background(), req(seed, "cpu"), func(Reply) { t.Error("delivered") }); gpucc.CodeOf(err) != ir.CodeDisposed {
		t.Errorf("Submit after Dispose: %v, want disposed", err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if !g.closed.Load() {
		t.Error("Close did not release the executor")
	}
}

// TestCancellation: a cancelled or expired context answers timeout at
// once, and the late result is dropped.
func TestCancellation(t *testing.T) {
	g := newGate()
	h := newServer(Policy{}, g)
	c := h.Client("g")
	h.Grant("g")
	ctx, cancel := context.WithCancel(context.Background())
	var replies []Reply
	var mu sync.Mutex
	got := make(chan struct{}, 2)
	record := func(r Reply) { mu.Lock(); replies = append(replies, r); mu.Unlock(); got <- struct{}{} }
	if err := c.Submit(ctx, req(seed, "cpu"), record); err != nil {
		t.Fatal(err)
	}
	<-g.started
	cancel()
	<-got
	g.release <- struct{}{}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	r := c.Execute(short, req(seed, "cpu"))
	if codeOf(r) != ir.CodeTimeout || !strings.Contains(r.Error.Message, "deadline") {
		t.Errorf("deadline: %+v, want timeout", r)
	}
	<-g.started
	g.release <- struct{}{}
	for c.Pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(replies) != 1 || codeOf(replies[0]) != ir.CodeTimeout {
		t.Errorf("replies %+v, want one timeout", replies)
	}
	// The policy's timeout applies without a deadline of the caller's.
	hp := newServer(Policy{Timeout: 10 * time.Millisecond}, g)
	cp := hp.Client("g")
	hp.Grant("g")
	if r := cp.Execute(context.Background(), req(seed, "cpu")); codeOf(r) != ir.CodeTimeout {
		t.Errorf("policy timeout: %+v", r)
	}
	<-g.started
	g.release <- struct{}{}
}

// TestCloseDisposesRunning: Close lets running requests finish while its
// context lasts, then answers the rest disposed.
func TestCloseDisposesRunning(t *testing.T) {
	g := newGate()
	h := newServer(Policy{}, g)
	c := h.Client("g")
	h.Grant("g")
	out := make(chan Reply, 2)
	go func() { out <- c.Execute(context.Background(), req(seed, "cpu")) }()
	go func() { out <- c.Execute(context.Background(), req(seed, "cpu")) }()
	<-g.started
	<-g.started
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error)
	go func() { closed <- h.Close(ctx) }()
	for closing := false; !closing; {
		h.mu.Lock()
		closing = h.closed
		h.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	g.release <- struct{}{} // one finishes in time
	if r := <-out; !r.OK {
		t.Errorf("finished in time: %+v", r.Error)
	}
	if got := codeOf(h.Client("late").Execute(context.Background(), req(seed, "cpu"))); got != ir.CodeDisposed {
		t.Errorf("a request while closing: %s, want disposed", got)
	}
	cancel()
	if err := <-closed; !errors.Is(err, context.Canceled) {
		t.Errorf("Close: %v", err)
	}
	if r := <-out; codeOf(r) != ir.CodeDisposed {
		t.Errorf("cut short: %+v, want disposed", r)
	}
	g.release <- struct{}{}
	for !g.closed.Load() {
		time.Sleep(time.Millisecond)
	}
}

// TestConcurrentClients runs many clients at once on the cpu backend,
// disposing some midway; run it with -race.
func TestConcurrentClients(t *testing.T) {
	h := New(Options{Policy: Policy{MaxPending: 4}})
	var wg sync.WaitGroup
	var ok, refused atomic.Int32
	for k := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + k))
			h.Grant(id)
			c := h.Client(id)
			var inner sync.WaitGroup
			for j := range 8 {
				inner.Add(1)
				go func() {
					defer inner.Done()
					r := c.Execute(context.Background(), req(seed, "cpu"))
					switch {
					case r.OK:
						if got := r.Value.Outputs["values"].Data; !cmp.Equal(got, []float32{0, 60, 120}) {
							t.Errorf("wrong values %v", got)
						}
						ok.Add(1)
					case r.Error.Code == ir.CodeBusy || r.Error.Code == ir.CodeDisposed:
						refused.Add(1)
					default:
						t.Errorf("unexpected %+v", r.Error)
					}
					if k%4 == 0 && j == 3 {
						c.Dispose()
					}
				}()
			}
			inner.Wait()
			c.Dispose()
		}()
	}
	wg.Wait()
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok.Load() == 0 {
		t.Error("nothing ran")
	}
	t.Logf("%d ok, %d busy or disposed", ok.Load(), refused.Load())
}

// TestPendingCapPerID: the cap counts a client id's requests over all its
// handles; four handles of one id cannot get past it.
func TestPendingCapPerID(t *testing.T) {
	g := newGate()
	h := newServer(Policy{MaxPending: 2}, g)
	h.Grant("g")
	h.Grant("other")
	var admitted int
	for k := range 4 {
		c := h.Client("g")
		for range 2 {
			if err := c.Submit(context.Background(), req(seed, "cpu"), func(Reply) {}); err == nil {
				admitted++
			} else if gpucc.CodeOf(err) != ir.CodeBusy {
				t.Fatalf("handle %d: %v, want busy", k, err)
			}
		}
	}
	if admitted != 2 {
		t.Errorf("%d requests of one id admitted with MaxPending 2", admitted)
	}
	other := h.Client("other") // another id has its own cap
	if err := other.Submit(context.Background(), req(seed, "cpu"), func(Reply) {}); err != nil {
		t.Errorf("another id: %v", err)
	}
	for range 3 {
		<-g.started
		g.release <- struct{}{}
	}
	h.Close(context.Background())
}

// TestOfferedIsBuiltIn: Offered lists only backends built in, so a policy
// naming one that is not never says it is offered.
func TestOfferedIsBuiltIn(t *testing.T) {
	h := New(Options{Policy: Policy{Backends: []string{"cpu", "not-built-in", "auto"}}})
	defer h.Close(context.Background())
	if diff := cmp.Diff([]string{"cpu", "auto"}, h.Offered()); diff != "" {
		t.Errorf("Offered (-want +got):\n%s", diff)
	}
}
