package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// progressEnv sets how long a compile runs before gpucc says so on
// stderr (a Go duration; default 1s).
const progressEnv = "GPUCC_PROGRESS_AFTER"

// progress, when not nil, receives the progress lines of long steps:
// `run --verbose` and bench set it to stderr.
var progress io.Writer

// progressAfter is the first line's delay: $GPUCC_PROGRESS_AFTER, else 1 s.
func progressAfter() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(progressEnv)); err == nil && d > 0 {
		return d
	}
	return time.Second
}

// step runs f, and if it takes longer than progressAfter, writes a line
// to progress saying what is still running and for how long, again every
// 5 s, and one when it ends: a first compile of a large model takes
// seconds (2-10 s on the H200), which showed nothing.
func step(what string, f func() error) error {
	w := progress
	if w == nil {
		return f()
	}
	var mu sync.Mutex
	said := false
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTimer(progressAfter())
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				select {
				case <-done: // ended meanwhile: its own line says so
				default:
					fmt.Fprintf(w, "gpucc: %s: %.1f s so far\n", what, time.Since(start).Seconds())
					said = true
				}
				mu.Unlock()
				t.Reset(5 * time.Second)
			}
		}
	}()
	err := f()
	mu.Lock()
	close(done)
	if said {
		verdict := "done"
		if err != nil {
			verdict = "failed"
		}
		fmt.Fprintf(w, "gpucc: %s: %s in %.1f s\n", what, verdict, time.Since(start).Seconds())
	}
	mu.Unlock()
	return err
}

// runOnce is gpucc.Run with the compile as its own step (a progress line
// past a second): open the backend (start-up), compile, run once; the
// result's timings count the start-up and the compile as gpucc.Run's do.
func runOnce(ctx context.Context, g *ir.Graph, opts lib.Options, name string, kernelTimes bool) (*lib.Result, error) {
	if (opts.Backend == "" || opts.Backend == "auto") && lib.Typed(g) {
		opts.Backend = "cpu" // gpucc.Run's rule: the backend that computes every dtype
	}
	start := time.Now()
	rt, err := lib.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	startup := float64(time.Since(start).Nanoseconds()) / 1e6
	var exe *lib.Executable
	if err := step(fmt.Sprintf("compiling %s (%d nodes) for %s", name, len(g.Nodes), rt.Backend()), func() error {
		exe, err = rt.Compile(ctx, g)
		return err
	}); err != nil {
		return nil, err
	}
	defer exe.Release()
	res, err := exe.Run(ctx, nil)
	if err != nil {
		return nil, err
	}
	compiled, caches := exe.CompileTimings()
	res.Timings.Add(compiled)
	for k, v := range caches {
		if res.Cache == nil {
			res.Cache = map[string]bool{}
		}
		if _, ok := res.Cache[k]; !ok {
			res.Cache[k] = v
		}
	}
	res.Timings.StartupMs = startup
	res.Timings.TotalMs += startup
	if kernelTimes {
		// A second run, each kernel alone: the first one's kernels pay
		// the driver's deferred compilation and fresh memory's first touch.
		var pr *lib.Result
		if err := step("timing each kernel of "+name, func() (err error) {
			pr, err = exe.RunWith(ctx, nil, lib.RunOptions{KernelTimes: true})
			return err
		}); err != nil {
			return nil, err
		}
		res.KernelTimes = pr.KernelTimes
	}
	return res, nil
}
