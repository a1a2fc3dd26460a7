package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu"
	"github.com/gpucc/gpucc/server"
)

// loadConfig bounds the load test: clients × requests each, and a wall
// clock limit. GPUCC_LOAD_CLIENTS and GPUCC_LOAD_REQUESTS raise them for
// the figures in bench/RESULTS.md.
type loadConfig struct {
	clients, requests int
	backends          []string
	limit             time.Duration
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil && n > 0 {
		return n
	}
	return def
}

// loadCase is one request of the mix, with what its answer must be.
type loadCase struct {
	kind    string // valid, invalid, over-limit, disconnect
	backend string
	body    []byte
	code    string    // the code it must answer ("ok" for valid)
	want    []float32 // valid: relu(a*b), each product rounded to float32
}

// makeCase draws one request of the mix.
func makeCase(r *rand.Rand, backends []string) loadCase {
	n := []int{4, 16, 64}[r.IntN(3)] // few shapes: few programs to compile
	a, b := make([]float32, n), make([]float32, n)
	want := make([]float32, n)
	for i := range n {
		a[i] = float32(r.NormFloat64() * 100)
		b[i] = float32(r.NormFloat64())
		want[i] = max(a[i]*b[i], 0) // relu: +0 for -0 too
	}
	enc := func(v []float32) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = ir.FormatFloat(x)
		}
		return strings.Join(s, ",")
	}
	doc := fmt.Sprintf(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[%d],"data":[%s]},{"id":1,"op":"input","shape":[%d],"data":[%s]},`+
		`{"id":2,"op":"mul","a":0,"b":1},{"id":3,"op":"relu","a":2}],"outputs":[{"name":"y","id":3}]}`, n, enc(a), n, enc(b))
	c := loadCase{backend: backends[r.IntN(len(backends))], body: []byte(doc)}
	switch k := r.IntN(10); {
	case k < 6:
		c.kind, c.code, c.want = "valid", "ok", want
	case k == 6:
		c.kind, c.code = "invalid", "invalid_graph"
		c.body = [][]byte{[]byte(doc[:len(doc)/2]), bytes.Replace(c.body, []byte(`"version"`), []byte(`"VERSION"`), 1),
			bytes.Replace(c.body, []byte(`"op":"mul"`), []byte(`"op":"mul","op":"add"`), 1)}[r.IntN(3)]
	case k == 7:
		c.kind, c.code = "over-limit", "limit_exceeded"
		c.body = []byte(`{"version":1,"nodes":[{"id":0,"op":"full","shape":[70000],"value":1}],"outputs":[{"name":"y","id":0}]}`)
	default:
		c.kind = "disconnect"
	}
	return c
}

// disconnect sends the headers and half the body, then hangs up.
func disconnect(addr string, c loadCase) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/execute?backend=%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", c.backend, len(c.body))
	_, err = conn.Write(c.body[:len(c.body)/2])
	return err
}

// TestServeLoad is the load test, on loopback and bounded: concurrent
// clients send a mix of valid, invalid and over-limit graphs, and some
// hang up midway, while Go API clients submit and are disposed. Every
// valid request must get its exact answer (busy ones are retried), every
// invalid one its code; nothing is delivered after Dispose; and once the
// server has shut down no goroutine and no GPU buffer is left.
func TestServeLoad(t *testing.T) {
	cfg := loadConfig{clients: envInt("GPUCC_LOAD_CLIENTS", 24), requests: envInt("GPUCC_LOAD_REQUESTS", 12),
		backends: []string{"cpu", "wasm"}, limit: 2 * time.Minute}
	if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
		cfg.backends = append(cfg.backends, "webgpu")
	}
	goroutines, buffers := goruntime.NumGoroutine(), gpu.LiveBuffers()
	a := testAPI(t, func(c *apiConfig) {
		c.allowSW = true
		c.limits = &ir.Limits{MaxElements: 1 << 16}
		c.timeout = time.Minute
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.serve(ctx, newServer(a, time.Minute), ln) }()
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.clients}
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	deadline := time.Now().Add(cfg.limit)

	var (
		mu        sync.Mutex
		latencies []time.Duration
		counts    = map[string]int{}
		busy      atomic.Int64
	)
	start := time.Now()
	var wg sync.WaitGroup
	for k := range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(k), 11))
			for range cfg.requests {
				if time.Now().After(deadline) {
					t.Error("the load test ran past its time limit")
					return
				}
				c := makeCase(r, cfg.backends)
				if c.kind == "disconnect" {
					if err := disconnect(addr, c); err != nil {
						t.Error(err)
					}
					mu.Lock()
					counts[c.kind]++
					mu.Unlock()
					continue
				}
				t0 := time.Now()
				var e envelope
				for {
					resp, err := client.Post("http://"+addr+"/v1/execute?backend="+c.backend, "application/json", bytes.NewReader(c.body))
					if err != nil {
						t.Error(err)
						return
					}
					err = json.NewDecoder(resp.Body).Decode(&e)
					resp.Body.Close()
					if err != nil {
						t.Error(err)
						return
					}
					if e.code() != "busy" {
						break
					}
					busy.Add(1)
					time.Sleep(time.Duration(1+r.IntN(5)) * time.Millisecond)
				}
				d := time.Since(t0)
				if e.code() != c.code {
					t.Errorf("%s on %s: %s (%+v), want %s", c.kind, c.backend, e.code(), e.Error, c.code)
				} else if c.kind == "valid" {
					checkLoadValues(t, c, e)
				}
				mu.Lock()
				latencies = append(latencies, d)
				counts[c.kind+" "+c.backend]++
				mu.Unlock()
			}
		}()
	}
	// Go API clients, disposed while their requests are pending: none may
	// be delivered once Dispose has returned.
	var lateDeliveries atomic.Int64
	for k := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("api-%d", k)
			a.server.Grant(id)
			c := a.server.Client(id)
			var disposed atomic.Bool
			r := rand.New(rand.NewPCG(uint64(k), 12))
			for range 8 {
				lc := makeCase(r, []string{"cpu", "wasm"})
				c.Submit(context.Background(), server.Request{Graph: bytes.NewReader(lc.body), Backend: lc.backend}, func(server.Reply) {
					if disposed.Load() {
						lateDeliveries.Add(1)
					}
				})
			}
			time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
			c.Dispose()
			disposed.Store(true)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := lateDeliveries.Load(); n != 0 {
		t.Errorf("%d replies delivered after Dispose", n)
	}

	stop()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	transport.CloseIdleConnections()
	a.server.Close(context.Background())
	settle := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > goroutines && time.Now().Before(settle) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := goruntime.NumGoroutine(); n > goroutines {
		var dump strings.Builder
		pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("%d goroutines after the load test, %d before:\n%s", n, goroutines, dump.String())
	}
	if n := gpu.LiveBuffers(); n != buffers {
		t.Errorf("%d GPU buffers live after the load test, %d before", n, buffers)
	}
	reportLoad(t, cfg, latencies, counts, busy.Load(), elapsed)
}

// checkLoadValues compares a valid request's output, bit for bit.
func checkLoadValues(t *testing.T, c loadCase, e envelope) {
	outs, _ := e.Value["outputs"].(map[string]any)
	y, _ := outs["y"].(map[string]any)
	data, _ := y["data"].([]any)
	if len(data) != len(c.want) {
		t.Errorf("%s: %d values, want %d", c.backend, len(data), len(c.want))
		return
	}
	for i, v := range data {
		f, _ := v.(float64)
		if math.Float32bits(float32(f)) != math.Float32bits(c.want[i]) {
			t.Errorf("%s: y[%d] = %v, want %v", c.backend, i, f, c.want[i])
			return
		}
	}
}

// reportLoad logs the latency percentiles and the throughput.
func reportLoad(t *testing.T, cfg loadConfig, lat []time.Duration, counts map[string]int, busy int64, elapsed time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var mix strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&mix, " %s=%d", k, counts[k])
	}
	t.Logf("load: %d clients × %d requests on %v in %v: %.1f answered requests/s; latency p50 %v p90 %v p99 %v max %v; %d busy answers retried; mix:%s",
		cfg.clients, cfg.requests, cfg.backends, elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
		pct(0.5).Round(time.Microsecond), pct(0.9).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond), busy, mix.String())
}

// TestServeHostile is the load test with adversaries, on loopback: while
// slowloris clients trickle bodies, clients request large replies and
// never read them, and hostile clients send foreign origins, text/plain,
// broken and over-limit graphs and hang up mid-body, every honest request
// is answered correctly, never busy, within its timeout. Then the
// adversaries' connections are gone and the budget is whole again.
func TestServeHostile(t *testing.T) {
	const timeout = 5 * time.Second // a loaded 2-core machine formats megabytes of JSON slowly
	backends := []string{"cpu"}
	if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
		backends = append(backends, "wasm")
	}
	a := testAPI(t, func(c *apiConfig) {
		c.timeout = timeout
		c.memory = 64 << 20
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.serve(ctx, newServer(a, timeout), ln) }()
	// Warm every backend up (its Runtime opens on first use) before the clock starts.
	for _, b := range backends {
		c := makeCase(rand.New(rand.NewPCG(0, 0)), []string{b})
		if resp, err := http.Post("http://"+addr+"/v1/execute?backend="+b, "application/json", bytes.NewReader(c.body)); err == nil {
			resp.Body.Close()
		}
	}

	var adversaries sync.WaitGroup
	done := make(chan struct{})
	// Slowloris: a byte of body every 100 ms, for as long as the server listens.
	var cutOff atomic.Int64
	for range 32 {
		adversaries.Add(1)
		go func() {
			defer adversaries.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/execute?backend=cpu HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
			for {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := conn.Write([]byte(" ")); err != nil {
					cutOff.Add(1)
					return
				}
			}
		}()
	}
	// Unread replies: 2 MiB of output each, never read.
	big := []byte(`{"version":1,"nodes":[{"id":0,"op":"full","shape":[524288],"value":1.5}],"outputs":[{"name":"y","id":0}]}`)
	for range 6 {
		adversaries.Add(1)
		go func() {
			defer adversaries.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/execute?backend=cpu HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(big), big)
			<-done
		}()
	}
	// Hostile requests, answered with their codes.
	hostile := []struct {
		name, origin, ctype, body string
		status                    int
	}{
		{"foreign origin", "http://evil.example", "application/json", seedGraph, 403},
		{"text/plain", "", "text/plain", seedGraph, 415},
		{"broken", "", "application/json", seedGraph[:40], 400},
		{"over the limit", "", "application/json", `{"version":1,"nodes":[{"id":0,"op":"full","shape":[2000000],"value":1}],"outputs":[{"name":"y","id":0}]}`, 413},
	}
	for k := range 4 {
		adversaries.Add(1)
		go func() {
			defer adversaries.Done()
			r := rand.New(rand.NewPCG(uint64(k), 99))
			for {
				select {
				case <-done:
					return
				default:
				}
				if r.IntN(4) == 0 {
					disconnect(addr, makeCase(r, []string{"cpu"}))
					continue
				}
				h := hostile[r.IntN(len(hostile))]
				req, _ := http.NewRequest("POST", "http://"+addr+"/v1/execute?backend=cpu", strings.NewReader(h.body))
				req.Header.Set("Content-Type", h.ctype)
				if h.origin != "" {
					req.Header.Set("Origin", h.origin)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue // the server may close first
				}
				resp.Body.Close()
				if resp.StatusCode != h.status {
					t.Errorf("%s: %s, want %d", h.name, resp.Status, h.status)
				}
			}
		}()
	}

	testStart := time.Now()
	time.Sleep(200 * time.Millisecond) // the adversaries are at work
	client := &http.Client{Transport: &http.Transport{}, Timeout: 2 * timeout}
	var honest sync.WaitGroup
	var worst atomic.Int64
	var answered atomic.Int64
	var dumpOnce sync.Once
	for k := range 8 {
		honest.Add(1)
		go func() {
			defer honest.Done()
			r := rand.New(rand.NewPCG(uint64(k), 7))
			for range 10 {
				c := makeCase(r, backends)
				for c.kind != "valid" {
					c = makeCase(r, backends)
				}
				t0 := time.Now()
				resp, err := client.Post("http://"+addr+"/v1/execute?backend="+c.backend, "application/json", bytes.NewReader(c.body))
				if err != nil {
					t.Error(err)
					return
				}
				var e envelope
				err = json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				d := time.Since(t0)
				if err != nil || !e.OK {
					dumpOnce.Do(func() { pprof.Lookup("goroutine").WriteTo(os.Stderr, 1) })
					t.Errorf("an honest request on %s: %v %s %+v after %v", c.backend, err, e.code(), e.Error, d)
					continue
				}
				checkLoadValues(t, c, e)
				if d > timeout {
					t.Errorf("an honest request took %v, over its timeout %v: %v, started at %v", d, timeout, e.Value["timings"], t0.Sub(testStart))
				}
				answered.Add(1)
				for w := worst.Load(); int64(d) > w && !worst.CompareAndSwap(w, int64(d)); w = worst.Load() {
				}
			}
		}()
	}
	honest.Wait()
	time.Sleep(timeout + 500*time.Millisecond) // past every deadline of the adversaries' requests
	close(done)
	adversaries.Wait()
	if n := cutOff.Load(); n == 0 {
		t.Error("no slowloris client was cut off")
	}
	for wait := time.Now().Add(5 * time.Second); a.active.Load() > 0 && time.Now().Before(wait); {
		time.Sleep(10 * time.Millisecond)
	}
	if left := a.memory.left; left != 64<<20 {
		t.Errorf("the memory budget has %d bytes left of %d once idle", left, 64<<20)
	}
	stop()
	if err := <-served; err != nil {
		t.Error(err)
	}
	t.Logf("%d honest requests answered, the slowest in %v; %d slowloris clients cut off", answered.Load(), time.Duration(worst.Load()), cutOff.Load())
}
