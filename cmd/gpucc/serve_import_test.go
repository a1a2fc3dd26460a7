package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// slowImport stands for an ONNX import that takes long: it decodes the
// seed graph over and over (work counts the rounds) until its context is
// done, then records when it stopped. budget is what --max-memory had
// left when it started.
type slowImport struct {
	started chan int64     // the budget left at the start
	stopped chan time.Time // when it saw its context done
	work    atomic.Int64
	calls   atomic.Int64
	left    func() int64
}

func newSlowImport(a *api) *slowImport {
	s := &slowImport{started: make(chan int64, 8), stopped: make(chan time.Time, 8), left: func() int64 {
		a.memory.mu.Lock()
		defer a.memory.mu.Unlock()
		return a.memory.left
	}}
	a.importONNX = func(ctx context.Context, body []byte, _ map[string]string, _ map[string]*onnx.Tensor) (*ir.Graph, error) {
		s.calls.Add(1)
		s.started <- s.left()
		for ctx.Err() == nil {
			if _, err := ir.Decode(strings.NewReader(seedGraph), ir.Limits{}); err != nil {
				return nil, err
			}
			s.work.Add(1)
		}
		s.stopped <- time.Now()
		return nil, ir.Errorf(ir.CodeTimeout, -1, "", "the import stopped: %v", ctx.Err())
	}
	return s
}

// postONNX posts body as application/onnx to srv with ctx.
func postONNX(ctx context.Context, url string, body []byte) (int, envelope, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/execute?backend=cpu", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/onnx")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, envelope{}, err
	}
	defer resp.Body.Close()
	var e envelope
	err = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e, err
}

// TestAPIImportAdmission: serve imports an ONNX body inside admission
// (issue 30, finding 7: the import ran before it, outside --timeout,
// --max-pending and --max-memory, and on after its client hung up).
func TestAPIImportAdmission(t *testing.T) {
	body := bytes.Repeat([]byte{0}, 100<<10)

	t.Run("timeout", func(t *testing.T) {
		a := testAPI(t, func(c *apiConfig) { c.timeout = 300 * time.Millisecond })
		s := newSlowImport(a)
		srv := httptest.NewServer(a)
		defer srv.Close()
		start := time.Now()
		status, e, err := postONNX(context.Background(), srv.URL, body)
		if err != nil || status != http.StatusGatewayTimeout || e.code() != "timeout" {
			t.Errorf("a slow import past --timeout 300ms: %d %s %v, want 504 timeout", status, e.code(), err)
		}
		answered := time.Since(start)
		select {
		case at := <-s.stopped:
			t.Logf("answered in %v, the import stopped %v after the start", answered.Round(time.Millisecond), at.Sub(start).Round(time.Millisecond))
			if answered > 2*time.Second || at.Sub(start) > 2*time.Second {
				t.Errorf("a request of --timeout 300ms answered after %v, its import stopped after %v", answered, at.Sub(start))
			}
		case <-time.After(5 * time.Second):
			t.Error("the import still runs 5 s after its timeout")
		}
	})

	t.Run("pending cap and disconnect", func(t *testing.T) {
		a := testAPI(t, func(c *apiConfig) { c.pending = 1 })
		s := newSlowImport(a)
		srv := httptest.NewServer(a)
		defer srv.Close()
		ctx, hangUp := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { _, _, err := postONNX(ctx, srv.URL, body); first <- err }()
		<-s.started
		status, e, err := postONNX(context.Background(), srv.URL, body)
		if err != nil || status != http.StatusTooManyRequests || e.code() != "busy" {
			t.Errorf("a second import over --max-pending 1: %d %s %v, want 429 busy", status, e.code(), err)
		}
		if n := s.calls.Load(); n != 1 {
			t.Errorf("%d imports started, want 1 (the one over the cap must not start)", n)
		}
		time.Sleep(50 * time.Millisecond)
		hung := time.Now()
		hangUp()
		<-first
		select {
		case at := <-s.stopped:
			t.Logf("the import stopped %v after its client hung up", at.Sub(hung).Round(time.Millisecond))
			if d := at.Sub(hung); d > 2*time.Second {
				t.Errorf("the import ran on %v after its client hung up", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the import still runs 5 s after its client hung up")
		}
		w := s.work.Load()
		time.Sleep(100 * time.Millisecond)
		if w2 := s.work.Load(); w2 != w {
			t.Errorf("the import's work went on after it stopped: %d rounds, then %d", w, w2)
		}
		for wait := time.Now().Add(2 * time.Second); a.client.Pending() > 0 && time.Now().Before(wait); {
			time.Sleep(5 * time.Millisecond)
		}
		if n := a.client.Pending(); n != 0 {
			t.Errorf("%d requests pending after the import stopped, want 0", n)
		}
	})

	t.Run("memory", func(t *testing.T) {
		const memory = 4 << 20
		a := testAPI(t, func(c *apiConfig) { c.memory = memory; c.timeout = 200 * time.Millisecond })
		s := newSlowImport(a)
		srv := httptest.NewServer(a)
		defer srv.Close()
		// The body and its import (importBytesPerByte in all) are
		// charged before the import starts.
		postONNX(context.Background(), srv.URL, body)
		if left := <-s.started; left > memory-importBytesPerByte*int64(len(body)) {
			t.Errorf("the import started with %d bytes of --max-memory left, want at most %d (%d bytes a byte of its %d-byte body charged)", left, memory-importBytesPerByte*int64(len(body)), importBytesPerByte, len(body))
		}
		<-s.stopped
		if left := s.left(); left != memory {
			t.Errorf("%d bytes of --max-memory left once idle, want %d", left, memory)
		}
		// A body whose decoding does not fit is busy before importing.
		big := bytes.Repeat([]byte{0}, 1<<20)
		status, e, err := postONNX(context.Background(), srv.URL, big)
		if err != nil || status != http.StatusTooManyRequests || e.code() != "busy" {
			t.Errorf("a 1 MiB model with 4 MiB of --max-memory: %d %s %v, want 429 busy", status, e.code(), err)
		}
		if n := s.calls.Load(); n != 1 {
			t.Errorf("%d imports started, want 1 (the one over the budget must not start)", n)
		}
	})
}
