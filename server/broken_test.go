package server

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

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
