package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/bench"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
)

// coldChildEnv names the backend a `gpucc bench GRAPH` child process runs
// its one cold run on; the parent sets it, with the parent's own
// arguments, for each cold run.
const coldChildEnv = "GPUCC_BENCH_COLD_CHILD"

// graphBench is what `gpucc bench GRAPH` measures.
type graphBench struct {
	path       string
	args       []string // the command line, for the cold children
	backends   []string
	limits     *ir.Limits
	allowSW    bool
	coldRuns   int
	warmRuns   int
	warmBudget time.Duration
	out        string
}

// coldResult is what a cold child prints: its run's stages (start-up,
// import, compile, upload, first dispatch, readback) and what it ran on.
type coldResult struct {
	Cold     bench.Stage    `json:"cold"`
	ImportMs float64        `json:"importMs"` // reading and importing the graph, before Cold
	Kernels  int            `json:"kernels"`
	Adapter  *lib.Adapter   `json:"adapter"`
	Error    map[string]any `json:"error"`
}

// benchGraph times the user's graph: on each backend, cold runs in fresh
// child processes of this binary and warm runs here, then writes the
// report and prints its summary.
func benchGraph(gb graphBench) int {
	progress = os.Stderr // bench always says how it goes (its cold children through its stderr)
	if be := os.Getenv(coldChildEnv); be != "" {
		return coldChild(gb, be)
	}
	start := time.Now()
	// Read the graph once here, so that a bad graph or input fails before
	// any child starts, with the child's own error.
	g, err := loadWithInputs(gb.path, gb.limits)
	if err != nil {
		return fail(err)
	}
	made, err := makeDir(gb.out)
	if err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "o", "bench: report directory: %v", err))
	}
	host, _ := os.Hostname()
	r := &bench.Report{Date: time.Now().UTC().Format(time.RFC3339), Host: host, Adapters: map[string]*lib.Adapter{},
		Graph: filepath.Base(gb.path)}
	name := filepath.Base(gb.path)
	for _, be := range gb.backends {
		c := bench.Case{Workload: name, Unit: "graph", Size: 1, Backend: be}
		adapter, err := measureGraph(gb, g, &c)
		if err != nil {
			c.Error = err.Error()
		}
		if adapter != nil {
			r.Adapters[be] = adapter
		}
		r.Cases = append(r.Cases, c)
	}
	if !slices.ContainsFunc(r.Cases, func(c bench.Case) bool { return c.Error == "" }) {
		if made != "" {
			os.RemoveAll(made)
		}
		return fail(ir.Errorf(ir.CodeBackendUnavailable, -1, "backends", "bench: no backend ran %s: %s", name, r.Cases[0].Error))
	}
	r.Verdicts = bench.Verdicts(r.Cases, "cpu")
	r.WallS = time.Since(start).Seconds()
	if err := r.Write(gb.out); err != nil {
		return fail(err)
	}
	abs, _ := filepath.Abs(gb.out)
	var notes []string
	for _, v := range r.Verdicts {
		n := v.Backend + ": " + v.Cold + ". " + v.Warm + "."
		if v.Versus != "" {
			n += " " + v.Versus + "."
		}
		notes = append(notes, n)
	}
	failed := []string{}
	for _, c := range r.Cases {
		if c.Error != "" {
			failed = append(failed, c.Backend+": "+c.Error)
		}
	}
	writeJSON(map[string]any{"dir": abs, "graph": name, "cases": r.Cases, "verdicts": r.Verdicts, "notes": notes,
		"failed": failed, "wallSeconds": math.Round(r.WallS*10) / 10})
	return exitOK
}

// measureGraph fills c with be's cold runs (each a child process) and
// warm runs (here, on one compiled executable whose inputs stay on the
// device).
func measureGraph(gb graphBench, g *ir.Graph, c *bench.Case) (*lib.Adapter, error) {
	var colds, procs []bench.Stage
	var adapter *lib.Adapter
	for i := range gb.coldRuns {
		progressf("bench: %s: cold run %d of %d (a fresh process)", c.Backend, i+1, gb.coldRuns)
		cr, wall, err := runColdChild(gb, c.Backend)
		if err != nil {
			return adapter, err
		}
		colds = append(colds, cr.Cold)
		procs = append(procs, bench.Stage{Timings: lib.Timings{TotalMs: wall}})
		c.Kernels, adapter = cr.Kernels, cr.Adapter
	}
	c.Cold, c.ColdSpread = bench.Median(colds), bench.SpreadOf(colds)
	ps := bench.SpreadOf(procs)
	c.ProcessSpread = &ps

	progressf("bench: %s: warm runs for %v", c.Backend, gb.warmBudget)
	ctx := context.Background()
	mem, _ := cache.Open(cache.Options{})
	rt, err := lib.Open(ctx, lib.Options{Backend: c.Backend, AllowSoftware: gb.allowSW, Limits: *gb.limits, Cache: mem})
	if err != nil {
		return adapter, err
	}
	defer rt.Close()
	var exe *lib.Executable
	if err := step(fmt.Sprintf("compiling %s for %s", c.Workload, c.Backend), func() error {
		exe, err = rt.Compile(ctx, g)
		return err
	}); err != nil {
		return adapter, err
	}
	defer exe.Release()
	// The first run uploads the inputs, which the executable then keeps on
	// the device: every later run finds them resident.
	if _, err := exe.Run(ctx, nil); err != nil {
		return adapter, err
	}
	warm, err := bench.WarmRuns(ctx, exe, nil, gb.warmRuns, gb.warmBudget, 0)
	if err != nil {
		return adapter, err
	}
	c.Warm, c.WarmSpread = bench.Median(warm), bench.SpreadOf(warm)
	// Where the warm run's kernels go, on a backend that can say.
	kt, err := exe.RunWith(ctx, nil, lib.RunOptions{KernelTimes: true})
	switch {
	case lib.CodeOf(err) == ir.CodeUnsupported:
	case err != nil:
		return adapter, err
	default:
		c.KernelTimes = kt.KernelTimes
	}
	return adapter, nil
}

// runColdChild runs one cold run of be in a fresh process of this binary
// and returns what it printed and its wall time, exec to exit.
func runColdChild(gb graphBench, be string) (*coldResult, float64, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, 0, ir.Errorf(ir.CodeInternal, -1, "", "bench: cannot find this binary for the cold runs: %v", err)
	}
	cmd := exec.Command(self, append([]string{"bench"}, gb.args...)...)
	cmd.Env = append(os.Environ(), coldChildEnv+"="+be)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&errOut, os.Stderr) // the child's progress lines pass through
	start := time.Now()
	runErr := cmd.Run()
	wall := float64(time.Since(start).Nanoseconds()) / 1e6
	var cr coldResult
	if err := json.Unmarshal(out.Bytes(), &cr); err != nil {
		return nil, 0, ir.Errorf(ir.CodeInternal, -1, "", "bench: the cold run on %s printed no result (%v): %s%s", be, runErr, out.String(), errOut.String())
	}
	if cr.Error != nil {
		code, _ := cr.Error["code"].(string)
		msg, _ := cr.Error["message"].(string)
		msg = strings.TrimPrefix(msg, code+": ") // the message as printed starts with its code, which Errorf adds again
		return nil, 0, ir.Errorf(ir.Code(code), -1, "", "%s", msg)
	}
	return &cr, wall, nil
}

// coldChild is one cold run in this fresh process: open backend be
// (start-up), import the graph, compile it with a new, empty, memory-only
// cache, run it once; it prints a coldResult.
func coldChild(gb graphBench, be string) int {
	start := time.Now()
	g, err := loadWithInputs(gb.path, gb.limits)
	if err != nil {
		return fail(err)
	}
	imported := time.Since(start)
	mem, _ := cache.Open(cache.Options{})
	res, err := runOnce(context.Background(), g, lib.Options{Backend: be, AllowSoftware: gb.allowSW, Limits: *gb.limits, Cache: mem}, filepath.Base(gb.path), false)
	if err != nil {
		return fail(err)
	}
	st := bench.Stage{Timings: res.Timings, Cache: res.Cache}
	writeJSON(coldResult{Cold: st, ImportMs: float64(imported.Nanoseconds()) / 1e6, Kernels: res.Kernels, Adapter: res.Adapter})
	return exitOK
}

// progressf prints a progress line on stderr.
func progressf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
}

// benchBackends checks --backends: every backend built in by default.
func benchBackends(list string) ([]string, error) {
	if list == "" {
		return lib.Backends(), nil
	}
	var out []string
	for _, be := range strings.Split(list, ",") {
		be = strings.TrimSpace(be)
		if !slices.Contains(lib.Backends(), be) {
			// The code run gives an unknown --backend.
			return nil, ir.Errorf(ir.CodeBackendUnavailable, -1, "backends", "bench: backend %q is not built into this binary (have %s)", be, strings.Join(lib.Backends(), ", "))
		}
		out = append(out, be)
	}
	return out, nil
}
