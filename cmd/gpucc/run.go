package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"time"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all" // every backend this build supports
)

func init() {
	commands["run"] = command{summary: "compile and run a graph, print the result as JSON", run: runCmd}
}

// limitFlags registers the host-policy limit flags on fs, one for each
// row of ir.LimitFlags (the table a limit_exceeded error names its flag
// from), each defaulting to ir.DefaultLimits' value.
func limitFlags(fs *flag.FlagSet) *ir.Limits {
	d := ir.DefaultLimits()
	l := &ir.Limits{}
	for _, r := range ir.LimitFlags {
		switch p := r.Of(l).(type) {
		case *int:
			atLeast(fs, p, r.Flag, *r.Of(&d).(*int), int(r.Min), r.Usage)
		case *int64:
			atLeast(fs, p, r.Flag, *r.Of(&d).(*int64), r.Min, r.Usage)
		default:
			panic("gpucc: limit " + r.Field + " is neither int nor int64")
		}
	}
	fs.BoolVar(&l.NonFinite, "non-finite", false, "host policy: allow ±Inf and NaN in inputs, constants and outputs, with IEEE semantics (NaN outputs as the quiet NaN; JSON writes \"Infinity\", \"-Infinity\", \"NaN\"); the default is the seed's finite rule. run sets it for .onnx models")
	cliLimits, cliFlags = l, fs // an .onnx model sizes the ones not set (modellimits.go)
	return l
}

// runtimeFlags registers the flags every command that runs graphs shares
// (backend, software adapters, code cache, host limits) on fs. Call the
// returned function after parsing for the runtime options they give.
func runtimeFlags(fs *flag.FlagSet) (limits *ir.Limits, options func() (lib.Options, error)) {
	backend := fs.String("backend", "auto", "auto, or one of: "+strings.Join(lib.Backends(), ", "))
	allowSW := fs.Bool("allow-software", false, "accept software GPU adapters (lavapipe, SwiftShader, WARP)")
	cacheDir := fs.String("cache-dir", "", "directory of the on-disk code cache (default $GPUCC_CACHE_DIR or the user cache dir; \"off\" disables it)")
	limits = limitFlags(fs)
	inputShapeFlags(fs)
	verboseFlag(fs)
	return limits, func() (lib.Options, error) {
		c, err := openCache(*cacheDir)
		return lib.Options{Backend: *backend, AllowSoftware: *allowSW, Limits: *limits, Cache: c}, err
	}
}

func runCmd(args []string) int {
	fs := newFlags("run", "run [--backend auto|BACKEND] [--allow-software] [--fast] [--input NAME=FILE.npy …] [--output-dir DIR] [--explain] [--kernel-times] GRAPH.json|MODEL.onnx")
	limits, options := runtimeFlags(fs)
	runInputFlags(fs)
	outDir := fs.String("output-dir", "", "also write each output as DIR/NAME.npy")
	explain := fs.Bool("explain", false, "for an .onnx model run on --input data: print its dynamic dimensions, the shape cache's policy and what the run compiled, instead of the result")
	kernelTimes := fs.Bool("kernel-times", false, "also run the graph a second time with each kernel submitted and timed alone (webgpu: by GPU timestamps), and add \"kernelTimes\": each kernel's name, kind and time, in program order. Their sum is not a run's time: each kernel pays a round trip of its own")
	fast := fs.Bool("fast", false, "fast mode: webgpu may contract a matmul's multiply-add (FMA); the result then says \"exact\": false and gives \"errorBound\". Other backends run exact and say \"exact\": true")
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 {
		return usageError("run: want exactly one GRAPH.json argument, got %d", fs.NArg())
	}
	if isONNX(fs.Arg(0)) {
		limits.NonFinite = true // a model's masks hold -Inf; its outputs are IEEE values
	}
	if *explain && *kernelTimes {
		return usageError("run: --explain and --kernel-times do not go together")
	}
	if *explain {
		if !isONNX(fs.Arg(0)) {
			return usageError("run: --explain takes an .onnx model so far")
		}
		opts, err := options()
		if err != nil {
			return fail(err)
		}
		opts.Fast = *fast
		return runDynamic(fs.Arg(0), *limits, opts, *explain, *outDir)
	}
	var g *ir.Graph
	read := time.Now()
	err := step("reading "+filepath.Base(fs.Arg(0)), func() (err error) { // an .onnx import of a large model takes seconds
		// An .onnx model is imported at its --input data's shapes (they
		// bind its dynamic dimensions), and every run binds the data:
		// one compile, counted in the timings with the start-up (a
		// gpucc.Dynamic's run, which run took before, counted neither).
		g, err = loadWithInputs(fs.Arg(0), limits)
		return err
	})
	if err != nil {
		return fail(err)
	}
	imported := float64(time.Since(read).Nanoseconds()) / 1e6
	opts, err := options()
	if err != nil {
		return fail(err)
	}
	opts.Fast = *fast
	res, err := runOnce(context.Background(), g, opts, filepath.Base(fs.Arg(0)), *kernelTimes)
	if err != nil {
		return fail(err)
	}
	res.Timings.ImportMs = imported
	res.Timings.TotalMs += imported
	if *outDir != "" {
		if err := writeOutputs(*outDir, res); err != nil {
			return fail(err)
		}
	}
	writeJSON(res)
	return 0
}

// openCache opens the code cache for --cache-dir: "" is the default
// location, "off" keeps it in memory only. A directory the user named, by
// the flag or by $GPUCC_CACHE_DIR, that gpucc cannot or must not use is a
// usage error, not a silent fall back to memory.
func openCache(dir string) (*cache.Cache, error) {
	switch dir {
	case "":
		c := cache.Default()
		if env := os.Getenv("GPUCC_CACHE_DIR"); env != "" && c.DiskError() != nil {
			return nil, ir.Errorf(ir.CodeUsage, -1, "GPUCC_CACHE_DIR", "%v", c.DiskError())
		}
		return c, nil
	case "off":
		return cache.Open(cache.Options{})
	}
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		return nil, ir.Errorf(ir.CodeUsage, -1, "cache-dir", "%v", err) // a directory gpucc cannot or must not use
	}
	return c, nil
}
