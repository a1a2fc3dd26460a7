package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpucc/gpucc/bench"
	"github.com/gpucc/gpucc/ir"
)

func init() {
	commands["bench"] = command{summary: "run the benchmark suite, write results.json, results.md and report.html", run: benchCmd}
}

// benchCmd runs bench.Run, writes the report into -o and prints a summary:
// where it went, the crossovers and the ratios against PyTorch.
func benchCmd(args []string) int {
	fs := newFlags("bench", "bench [--quick] [-o DIR] [--backends LIST] [--compare torch.json] | bench [--backends LIST] [--input NAME=FILE.npy …] [--const NAME=V …] [-o DIR] GRAPH.json|MODEL.onnx | bench --tune [--fast] [--tune-shapes LIST]")
	quick := fs.Bool("quick", false, "small sizes only (under a minute on a CPU)")
	out := fs.String("o", "bench-out", "directory for results.json, results.md and report.html")
	backends := fs.String("backends", "", "comma-separated backends (default: every one built in)")
	allowSW := fs.Bool("allow-software", false, "accept software GPU adapters (lavapipe, SwiftShader, WARP)")
	var budget time.Duration
	var maxCase float64
	atLeast(fs, &budget, "budget", 0, 0, "stop starting cases after this long (0: no limit)")
	atLeast(fs, &maxCase, "max-case-ms", 0, 0, "skip larger sizes once a run is predicted to exceed this (0: default)")
	compare := fs.String("compare", "", "torch_bench.py JSON to show ratios against")
	upload := fs.String("upload", "", "webgpu upload path: writebuffer or staging")
	chunk := fs.Uint64("upload-chunk", 0, "webgpu upload chunk in bytes (0: default)")
	verboseFlag(fs)
	tf := tuneFlags(fs)
	limits := limitFlags(fs)
	inputShapeFlags(fs)
	runInputFlags(fs)
	coldRuns := 3
	atLeast(fs, &coldRuns, "cold-runs", 3, 1, "GRAPH: cold runs per backend, each in a fresh process")
	warmRuns := 5
	atLeast(fs, &warmRuns, "warm-runs", 5, 1, "GRAPH: the least number of warm runs per backend")
	warmBudget := 2 * time.Second
	atLeast(fs, &warmBudget, "warm-budget", 2*time.Second, 0, "GRAPH: warm runs go on for this long per backend, at most 1000")
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if tf.tune {
		return tuneCmd(tf, *allowSW)
	}
	if fs.NArg() == 1 {
		if *quick || *compare != "" || budget != 0 || maxCase != 0 {
			return usageError("bench: --quick, --compare, --budget and --max-case-ms are the suite's; GRAPH is timed with --cold-runs, --warm-runs and --warm-budget")
		}
		bes, err := benchBackends(*backends)
		if err != nil {
			return fail(err)
		}
		return benchGraph(graphBench{path: fs.Arg(0), args: args, backends: bes, limits: limits, allowSW: *allowSW,
			coldRuns: coldRuns, warmRuns: warmRuns, warmBudget: warmBudget, out: *out})
	}
	if fs.NArg() != 0 {
		return usageError("bench: want at most one GRAPH.json|MODEL.onnx argument, got %v", fs.Args())
	}
	if !slices.Contains([]string{"", "writebuffer", "staging"}, *upload) { // gpu.ParseUploadPath's names
		return usageError("bench: --upload %q: want writebuffer or staging", *upload)
	}
	cfg := bench.Config{Quick: *quick, AllowSoftware: *allowSW, Budget: budget, MaxCaseMs: maxCase,
		Upload: *upload, UploadChunk: *chunk}
	if *backends != "" {
		bes, err := benchBackends(*backends)
		if err != nil {
			return fail(err)
		}
		cfg.Backends = bes
	}
	if bench.IsTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}
	var torch *bench.Torch
	if *compare != "" {
		t, err := bench.ReadTorch(*compare)
		if err != nil {
			if codeOf(err) != ir.CodeIO {
				err = ir.Errorf(ir.CodeUsage, -1, "compare", "%v", err)
			}
			return fail(err)
		}
		torch = t
	}
	// The report directory is made before measuring, so that a run of
	// minutes cannot end in an io error it could have given at once; a
	// run that then fails removes what it made.
	made, err := makeDir(*out)
	if err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "o", "bench: report directory: %v", err))
	}
	r, err := bench.Run(cfg)
	if err != nil {
		if made != "" {
			os.RemoveAll(made)
		}
		return fail(err)
	}
	r.Torch = torch
	if err := r.Write(*out); err != nil {
		return fail(err)
	}
	abs, _ := filepath.Abs(*out)
	writeJSON(map[string]any{"dir": abs, "cases": len(r.Cases), "skipped": len(r.Skipped),
		"crossovers": r.Crossovers, "compare": r.Compare(), "wallSeconds": math.Round(r.WallS*10) / 10})
	return 0
}

// makeDir makes directory dir and its missing parents, returning the
// topmost directory it made ("" when dir already was one), for a caller
// that must leave nothing behind if it fails later.
func makeDir(dir string) (string, error) {
	top := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		top = d
		if filepath.Dir(d) == d {
			break
		}
	}
	return top, os.MkdirAll(dir, 0o755)
}
