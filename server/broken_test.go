package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// panicOpens counts the opens of the "panicky" backend: the cpu backend
// whose executables panic in Run on a program with a buffer of 5 values.
var panicOpens atomic.Int64

func init() {
	cpu, _ := backend.Lookup("cpu")
	backend.Register("panicky", func(o backend.Options) (backend.Device, error) {
		panicOpens.Add(1)
		d, err := cpu(o)
		return panicDevice{d}, err
	})
}

type panicDevice struct{ backend.Device }

func (d panicDevice) Compile(ctx context.Context, p *backend.Program, st *backend.Stats) (backend.Executable, error) {
	e, err := d.Device.Compile(ctx, p, st)
	if err != nil || p.IR.Program().Buffers[0].Len != 5 {
		return e, err
	}
	return panicExecutable{e}, nil
}

type panicExecutable struct{ backend.Executable }

func (panicExecutable) Run(context.Context, *backend.Call) error { panic("a bug in the backend") }

// TestBrokenRuntimeReopened: a backend that panics answers that request
// execution_failed, and the next request runs on a fresh Runtime: the
// broken one, which may hold a device half way through an operation, is
// closed, never used again.
func TestBrokenRuntimeReopened(t *testing.T) {
	h := New(Options{Policy: Policy{Backends: []string{"panicky"}}})
	defer h.Close(context.Background())
	h.Grant("g")
	c := h.Client("g")
	bomb := strings.NewReplacer("[3]", "[5]", "[-2,3,4]", "[1,2,3,4,5]", "[10,20,30]", "[1,1,1,1,1]").Replace(seed)
	run := func(doc string) Reply {
		return c.Execute(context.Background(), Request{Graph: strings.NewReader(doc), Backend: "panicky"})
	}
	before := panicOpens.Load()
	if r := run(seed); !r.OK {
		t.Fatalf("seed: %+v", r.Error)
	}
	r := run(bomb)
	if codeOf(r) != ir.CodeExecutionFailed || !strings.Contains(r.Error.Message, "panicked") {
		t.Fatalf("bomb: %+v, want execution_failed naming the panic", r.Error)
	}
	if r := run(seed); !r.OK {
		t.Fatalf("seed after the panic: %+v", r.Error)
	}
	if n := panicOpens.Load() - before; n != 2 {
		t.Errorf("the backend was opened %d times, want 2 (once more after the panic)", n)
	}
}

// TestPanicIsInternal: a panic in gpucc's own code, where no backend guard
// stands (an importer, the executor, the passes before a backend is
// reached), answers its request internal and takes nothing else down: the
// process lives (a panic in the request's goroutine would end it), the
// client's pending slot is given back, and the next request runs.
func TestPanicIsInternal(t *testing.T) {
	cases := []struct {
		name string
		exec executor
		req  func() Request
	}{
		{"import", newRuntimes(Options{}), func() Request {
			return Request{Backend: "cpu", Import: func(context.Context) (*ir.Graph, error) { panic("a bug in an importer") }}
		}},
		{"executor", panicExecutor{}, func() Request { return req(seed, "cpu") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newServer(Policy{MaxPending: 1, Backends: []string{"cpu"}}, c.exec)
			defer h.Close(context.Background())
			h.Grant("g")
			cl := h.Client("g")
			for i := range 3 { // past MaxPending: each slot came back
				r := cl.Execute(context.Background(), c.req())
				if codeOf(r) != ir.CodeInternal || !strings.Contains(r.Error.Message, "panicked") {
					t.Fatalf("request %d: %+v, want internal naming the panic", i, r.Error)
				}
			}
		})
	}
}

type panicExecutor struct{}

func (panicExecutor) run(context.Context, string, *ir.Graph) (*gpucc.Result, error) {
	panic("a bug in the executor")
}
func (panicExecutor) close() {}

// TestRuntimePanicDropsRuntime: a panic inside runtimes.run outside the
// backend's guard (here a nil graph, which the structure cache reads)
// closes the backend's Runtime, whose state it may have left half way, so
// the next request opens a fresh one.
func TestRuntimePanicDropsRuntime(t *testing.T) {
	r := newRuntimes(Options{})
	defer r.close()
	g, err := ir.Decode(strings.NewReader(seed), ir.Limits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := panicOpens.Load()
	if _, err := r.run(ctx, "panicky", g); err != nil {
		t.Fatal(err)
	}
	if _, err := safely(func() (*gpucc.Result, error) { return r.run(ctx, "panicky", nil) }); !errors.Is(err, ir.ErrInternal) {
		t.Fatalf("a nil graph: %v, want internal", err)
	}
	if _, err := r.run(ctx, "panicky", g); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
	if n := panicOpens.Load() - before; n != 2 {
		t.Errorf("the backend was opened %d times, want 2 (once more after the panic)", n)
	}
}

type nopExecutor struct{}

func (nopExecutor) run(context.Context, string, *ir.Graph) (*gpucc.Result, error) {
	return &gpucc.Result{}, nil
}
func (nopExecutor) close() {}

// TestSlotFreeOnReply: a request's pending slot is given back before its
// reply is delivered, so a client at MaxPending 1 that submits again on
// each reply is never answered busy by its own finished request (CI saw
// that race under -race when the slot was given back after delivery).
func TestSlotFreeOnReply(t *testing.T) {
	h := newServer(Policy{MaxPending: 1, Backends: []string{"cpu"}}, nopExecutor{})
	defer h.Close(context.Background())
	h.Grant("g")
	cl := h.Client("g")
	for i := range 500 {
		if r := cl.Execute(context.Background(), req(seed, "cpu")); !r.OK {
			t.Fatalf("request %d: %+v", i, r.Error)
		}
	}
}
