package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// slowCompile is the cpu backend whose Compile of a program with a buffer
// of 7 values blocks until release is closed, whatever its context says:
// a webgpu pipeline creation, which cannot be cancelled.
// A test sets slowRelease before it opens the backend.
var slowRelease chan struct{}

func init() {
	cpu, _ := backend.Lookup("cpu")
	backend.Register("slow-compile", func(o backend.Options) (backend.Device, error) {
		d, err := cpu(o)
		return slowDevice{d, slowRelease}, err
	})
}

type slowDevice struct {
	backend.Device
	release chan struct{}
}

func (d slowDevice) Compile(ctx context.Context, p *backend.Program, st *backend.Stats) (backend.Executable, error) {
	if p.IR.Program().Buffers[0].Len == 7 {
		<-d.release
	}
	return d.Device.Compile(ctx, p, st)
}

// TestCompileAbandoned: a compile that outlives its request is answered
// timeout and does not hold the backend: the next request runs at once on
// a fresh Runtime. Past maxAbandoned compiles still running, a request
// needing a new Runtime is answered busy, until they end.
func TestCompileAbandoned(t *testing.T) {
	slowRelease = make(chan struct{})
	release := slowRelease
	// The timeout leaves an ordinary request room on a loaded 2-core
	// machine (300 ms did not, in make test beside other work): the
	// bombs never finish before release, so any answer in time proves
	// the backend was not held.
	h := New(Options{Policy: Policy{Timeout: 2 * time.Second, Backends: []string{"slow-compile"}}})
	defer h.Close(context.Background())
	h.Grant("g")
	c := h.Client("g")
	bomb := strings.NewReplacer("[3]", "[7]", "[-2,3,4]", "[1,2,3,4,5,6,7]", "[10,20,30]", "[1,1,1,1,1,1,1]").Replace(seed)
	run := func(doc string) (Reply, time.Duration) {
		t0 := time.Now()
		r := c.Execute(context.Background(), Request{Graph: strings.NewReader(doc), Backend: "slow-compile"})
		return r, time.Since(t0)
	}
	if r, _ := run(seed); !r.OK { // the backend is open and seed's executable cached
		t.Fatalf("seed: %+v", r.Error)
	}
	for k := range maxAbandoned {
		if r, d := run(bomb); codeOf(r) != ir.CodeTimeout || d > 10*time.Second {
			t.Fatalf("compile bomb %d: %s after %v, want timeout", k, codeOf(r), d)
		}
		if k == maxAbandoned-1 {
			break
		}
		if r, d := run(seed); !r.OK || d > 5*time.Second {
			t.Fatalf("after compile bomb %d: %s after %v, want ok at once", k, codeOf(r), d)
		}
	}
	if r, _ := run(seed); codeOf(r) != ir.CodeBusy {
		t.Errorf("with %d compiles abandoned: %s, want busy", maxAbandoned, codeOf(r))
	}
	close(release)
	for wait := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r, _ := run(seed)
		if r.OK {
			break
		}
		if codeOf(r) != ir.CodeBusy || time.Now().After(wait) {
			t.Fatalf("after the compiles ended: %s, want ok", codeOf(r))
		}
	}
}
