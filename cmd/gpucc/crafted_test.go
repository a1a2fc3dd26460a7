//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Issue 30's bounds on a hostile model, from the outside: each crafted
// model runs or is refused with a JSON code within craftedRSS of memory
// and craftedTime, from the CLI and from serve, and serve stays up.
const (
	craftedRSS  = 512 << 20
	craftedTime = 20 * time.Second
)

// craftedCase is one hostile model and the code its import gives.
type craftedCase struct {
	name string
	path string
	code string
}

// craftedCases are onnx/testdata/crafted's models (expect.json gives
// their codes) and two generated ones that are too large to keep: 16 MB
// of empty node attributes (finding 4: 4.96 GB in the decoder) and a
// 360 KB chain of Dropouts with an unused mask each (finding 6: a
// quadratic import, 35 s), imported with --max-nodes 20000 (craftedArgs).
func craftedCases(t *testing.T) []craftedCase {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "crafted"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	var cases []craftedCase
	for name, code := range want {
		cases = append(cases, craftedCase{name, filepath.Join(dir, name), code})
	}
	slices.SortFunc(cases, func(a, b craftedCase) int { return strings.Compare(a.name, b.name) })
	gen := t.TempDir()
	for _, c := range []struct {
		name, code string
		doc        []byte
	}{
		{"attribute_flood_16mb.onnx", "limit_exceeded", attributeFlood(16 << 20)},
		{"dropout_chain_360kb.onnx", "ok", dropoutChain(10000)},
	} {
		p := filepath.Join(gen, c.name)
		if err := os.WriteFile(p, c.doc, 0o644); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, craftedCase{c.name, p, c.code})
	}
	return cases
}

// craftedArgs are the limits every crafted model is imported with: the
// defaults, but nodes enough for the Dropout chain.
var craftedArgs = []string{"--max-nodes", "20000"}

// TestCraftedCLI runs `gpucc import` and `gpucc run` on each crafted
// model as a child process: it prints one JSON object (an error's code,
// or the result), never a stack trace, within craftedTime and with a
// peak RSS of at most craftedRSS (see runChild).
func TestCraftedCLI(t *testing.T) {
	for _, c := range craftedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "graph.json")
			for _, args := range [][]string{
				{"import", c.path, "-o", out},
				{"run", "--backend", "cpu", c.path},
			} {
				code, rss, hwm, took, stdout := runChild(t, append(args, craftedArgs...))
				t.Logf("%s: %s, peak RSS %d MiB (VmHWM polled; rusage's bound %d MiB), %v", args[0], code, hwm>>20, rss>>20, took.Round(time.Millisecond))
				if code != c.code {
					t.Errorf("gpucc %s: %s, want %s; stdout: %.300s", args[0], code, c.code, stdout)
				}
				if rss > craftedRSS {
					t.Errorf("gpucc %s: peak RSS %d MiB, over %d MiB", args[0], rss>>20, craftedRSS>>20)
				}
				if took > craftedTime {
					t.Errorf("gpucc %s took %v, over %v", args[0], took, craftedTime)
				}
			}
		})
	}
}

// runChild runs gpucc with args and returns the code of what it printed
// ("ok" for a result, the error's code, or "no JSON"), its peak RSS in
// bytes (rss) and its wall time. The peak is the larger of the child's rusage,
// an upper bound (Go starts a child sharing the parent's memory until
// exec, so it counts this test's RSS too), and its VmHWM, read while it
// runs (hwm, which can miss a peak in the last 2 ms).
func runChild(t *testing.T, args []string) (code string, rss, hwm int64, took time.Duration, stdout []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*craftedTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = workDir
	cmd.Env = env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("gpucc %v: %v", args, err)
	}
	polled := make(chan int64)
	exited := make(chan struct{})
	go func() {
		var hwm int64
		for {
			if n, err := readHWM(cmd.Process.Pid); err == nil {
				hwm = max(hwm, n)
			}
			select {
			case <-exited:
				polled <- hwm
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	took = time.Since(start)
	close(exited)
	hwm = <-polled
	rss = hwm
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = max(rss, ru.Maxrss<<10) // KiB on Linux
	}
	var v struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	switch {
	case json.Unmarshal(out.Bytes(), &v) != nil:
		code = "no JSON"
		t.Logf("stderr: %.2000s", errb.Bytes())
	case v.Error != nil:
		code = v.Error.Code
	case err != nil:
		code = "exit " + err.Error()
	default:
		code = "ok"
	}
	return code, rss, hwm, took, out.Bytes()
}

// TestCraftedServe posts each crafted model to `gpucc serve` (a child
// process, cpu backend): each is answered with its code within
// craftedTime, the server's peak RSS (VmHWM) stays within craftedRSS, and
// it still answers a graph and /healthz after them.
func TestCraftedServe(t *testing.T) {
	cmd, url := startServeCmd(t, craftedArgs...)
	client := &http.Client{Timeout: 2 * craftedTime}
	for _, c := range craftedCases(t) {
		body, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := client.Post(url+"/v1/execute?backend=cpu", "application/onnx", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v (the server is down?)", c.name, err)
		}
		var e envelope
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		took := time.Since(start)
		got := e.code()
		if derr != nil {
			got = "no JSON: " + derr.Error()
		}
		t.Logf("%s: %d %s in %v", c.name, resp.StatusCode, got, took.Round(time.Millisecond))
		if got != c.code {
			t.Errorf("%s: %s, want %s", c.name, got, c.code)
		}
		if took > craftedTime {
			t.Errorf("%s took %v, over %v", c.name, took, craftedTime)
		}
	}
	resp, err := client.Post(url+"/v1/execute?backend=cpu", "application/json", strings.NewReader(seedGraph))
	if err != nil {
		t.Fatalf("a graph after the crafted models: %v", err)
	}
	var e envelope
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if !e.OK {
		t.Errorf("a graph after the crafted models: %s %+v", resp.Status, e.Error)
	}
	if resp, err := client.Get(url + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz after the crafted models: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	hwm := vmHWM(t, cmd.Process.Pid)
	t.Logf("serve's peak RSS: %d MiB", hwm>>20)
	if hwm > craftedRSS {
		t.Errorf("serve's peak RSS %d MiB, over %d MiB", hwm>>20, craftedRSS>>20)
	}
}

// startServeCmd runs `gpucc serve` on a free loopback port with args and
// returns the process and its URL; the process is killed when the test
// ends.
func startServeCmd(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--cache-dir", "off"}, args...)...)
	cmd.Dir = workDir
	cmd.Env = env()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving the demo on "); ok {
			go io.Copy(io.Discard, stderr)
			return cmd, strings.TrimSuffix(u, "/")
		}
	}
	t.Fatalf("serve never said where it listens: %v", lines.Err())
	return nil, ""
}

// vmHWM is process pid's peak resident set, from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := readHWM(pid)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// readHWM reads VmHWM, in bytes, from /proc/PID/status.
func readHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// A few ONNX messages, written with protowire (the onnx package's test
// helpers are not importable here).

// onnxModel is a ModelProto of IR version 8, opset 13, holding graph.
func onnxModel(graph []byte) []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.VarintType)
	m = protowire.AppendVarint(m, 8)
	var opset []byte
	opset = protowire.AppendTag(opset, 2, protowire.VarintType)
	opset = protowire.AppendVarint(opset, 13)
	m = protowire.AppendTag(m, 8, protowire.BytesType)
	m = protowire.AppendBytes(m, opset)
	m = protowire.AppendTag(m, 7, protowire.BytesType)
	return protowire.AppendBytes(m, graph)
}

// onnxValue is a float32 ValueInfoProto of name and shape.
func onnxValue(name string, dims ...uint64) []byte {
	var shape []byte
	for _, d := range dims {
		var dim []byte
		dim = protowire.AppendTag(dim, 1, protowire.VarintType)
		dim = protowire.AppendVarint(dim, d)
		shape = protowire.AppendTag(shape, 1, protowire.BytesType)
		shape = protowire.AppendBytes(shape, dim)
	}
	var tt []byte
	tt = protowire.AppendTag(tt, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, 1) // FLOAT
	tt = protowire.AppendTag(tt, 2, protowire.BytesType)
	tt = protowire.AppendBytes(tt, shape)
	var typ []byte
	typ = protowire.AppendTag(typ, 1, protowire.BytesType)
	typ = protowire.AppendBytes(typ, tt)
	var v []byte
	v = protowire.AppendTag(v, 1, protowire.BytesType)
	v = protowire.AppendString(v, name)
	v = protowire.AppendTag(v, 2, protowire.BytesType)
	return protowire.AppendBytes(v, typ)
}

// onnxNode is a NodeProto; extra is appended as raw fields.
func onnxNode(op string, inputs, outputs []string, extra []byte) []byte {
	var n []byte
	for _, in := range inputs {
		n = protowire.AppendTag(n, 1, protowire.BytesType)
		n = protowire.AppendString(n, in)
	}
	for _, out := range outputs {
		n = protowire.AppendTag(n, 2, protowire.BytesType)
		n = protowire.AppendString(n, out)
	}
	n = protowire.AppendTag(n, 4, protowire.BytesType)
	n = protowire.AppendString(n, op)
	return append(n, extra...)
}

// onnxGraph is a GraphProto of nodes, one input x and one output y.
func onnxGraph(nodes [][]byte, x, y []byte) []byte {
	var g []byte
	for _, n := range nodes {
		g = protowire.AppendTag(g, 1, protowire.BytesType)
		g = protowire.AppendBytes(g, n)
	}
	g = protowire.AppendTag(g, 11, protowire.BytesType)
	g = protowire.AppendBytes(g, x)
	g = protowire.AppendTag(g, 12, protowire.BytesType)
	return protowire.AppendBytes(g, y)
}

// attributeFlood is a Relu node with size/2 empty attributes (finding 4).
func attributeFlood(size int) []byte {
	attrs := make([]byte, 0, size)
	for len(attrs) < size {
		attrs = protowire.AppendTag(attrs, 5, protowire.BytesType)
		attrs = protowire.AppendBytes(attrs, nil)
	}
	relu := onnxNode("Relu", []string{"x"}, []string{"y"}, attrs)
	return onnxModel(onnxGraph([][]byte{relu}, onnxValue("x", 2), onnxValue("y", 2)))
}

// dropoutChain is n Dropouts in a chain, each with a mask output that
// nothing reads (finding 6).
func dropoutChain(n int) []byte {
	nodes := make([][]byte, n)
	for i := range nodes {
		nodes[i] = onnxNode("Dropout", []string{fmt.Sprintf("x%d", i)}, []string{fmt.Sprintf("x%d", i+1), fmt.Sprintf("mask%d", i)}, nil)
	}
	return onnxModel(onnxGraph(nodes, onnxValue("x0", 4), onnxValue(fmt.Sprintf("x%d", n), 4)))
}
