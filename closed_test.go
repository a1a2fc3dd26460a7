package gpucc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestClosedRuntime: a closed Runtime still names its backend, refuses to
// run with backend_unavailable, and may be closed again; Close racing
// with Backend is safe (run with -race).
func TestClosedRuntime(t *testing.T) {
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(rt.Close)
	wg.Go(func() { _ = rt.Backend() })
	wg.Wait()
	rt.Close()
	if got := rt.Backend(); got != "cpu" {
		t.Errorf("Backend() after Close = %q, want cpu", got)
	}
	if _, err := rt.Run(context.Background(), chain(4, 2)); gpucc.CodeOf(err) != ir.CodeBackendUnavailable {
		t.Errorf("Run after Close: %v, want %s", err, ir.CodeBackendUnavailable)
	}
}
