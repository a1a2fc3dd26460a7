package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/ir"
)

// TestImportInsideAdmission: a request whose graph is made by Import
// (serve's ONNX bodies) is admitted first, so the pending cap, the
// timeout and the client's going away all apply to the import (issue 30,
// finding 7: the import ran before admission, unbounded, and on after
// the client had hung up).
func TestImportInsideAdmission(t *testing.T) {
	h := New(Options{Policy: Policy{Backends: []string{"cpu"}, MaxPending: 1}})
	defer h.Close(context.Background())
	h.Grant("g")
	c := h.Client("g")
	graph := func(ctx context.Context) (*ir.Graph, error) { return ir.Decode(strings.NewReader(seed), ir.Limits{}) }

	// The import holds the pending slot while it runs.
	started, release := make(chan struct{}), make(chan struct{})
	slow := func(ctx context.Context) (*ir.Graph, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return graph(ctx)
	}
	done := make(chan Reply, 1)
	go func() { done <- c.Execute(context.Background(), Request{Import: slow, Backend: "cpu"}) }()
	<-started
	if n := c.Pending(); n != 1 {
		t.Errorf("%d pending while the import runs, want 1", n)
	}
	ran := false
	r := c.Execute(context.Background(), Request{Import: func(ctx context.Context) (*ir.Graph, error) { ran = true; return graph(ctx) }, Backend: "cpu"})
	if r.OK || r.Error.Code != ir.CodeBusy || ran {
		t.Errorf("a second import over the cap of 1: %+v (import ran: %v), want busy before importing", r.Error, ran)
	}
	close(release)
	if r := <-done; !r.OK {
		t.Fatalf("the slow import's run: %+v", r.Error)
	}

	// A client that goes away (its context) stops the import, which
	// sees its context done, and gives the slot back.
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	r = c.Execute(ctx, Request{Import: func(ctx context.Context) (*ir.Graph, error) {
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}, Backend: "cpu"})
	if r.OK || r.Error.Code != ir.CodeTimeout {
		t.Errorf("an import whose client went away: %+v, want timeout", r.Error)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("the import saw %v, want its context cancelled", err)
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("%d pending after the import stopped, want 0", n)
	}

	// The host's timeout bounds the import too.
	ht := New(Options{Policy: Policy{Backends: []string{"cpu"}, Timeout: 30 * time.Millisecond}})
	defer ht.Close(context.Background())
	ht.Grant("g")
	r = ht.Client("g").Execute(context.Background(), Request{Import: func(ctx context.Context) (*ir.Graph, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, Backend: "cpu"})
	if r.OK || r.Error.Code != ir.CodeTimeout {
		t.Errorf("an import past the host's timeout: %+v, want timeout", r.Error)
	}

	// The graph an import makes is held to the host's limits.
	hl := New(Options{Policy: Policy{Backends: []string{"cpu"}, Limits: ir.Limits{MaxElements: 2}}})
	defer hl.Close(context.Background())
	hl.Grant("g")
	r = hl.Client("g").Execute(context.Background(), Request{Import: graph, Backend: "cpu"})
	if r.OK || r.Error.Code != ir.CodeLimitExceeded {
		t.Errorf("an imported graph over the host's element limit: %+v, want limit_exceeded", r.Error)
	}
}
