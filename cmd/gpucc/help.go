package main

// help is each command's description for -h: what it does and what it
// prints. The flags and the exit codes are added by newFlags.
var help = map[string]string{
	"run": `
Compiles GRAPH.json (protocol v1; "-" reads stdin) and runs it on a backend.
Prints one JSON result object: outputs (shape and data per named output),
backend, adapter, timings in milliseconds, cache hits and fallbackAttempts
(the backends auto tried first and why each could not start).`,
	"build": `
Compiles GRAPH.json ahead of time into DIR: each target's kernels under
DIR/kernels (a .wgsl per kernel, a .glsl per WebGL2 pass, kernels.c and
kernels.wasm) and manifest.json (graph hash, profile, kernels, bindings,
dispatch sizes, files); with --package also plan.gob and a Go package
embedding them. Files an earlier build into DIR listed and this one does
not write are removed. Prints one JSON object: dir, manifest, files (the
paths written), skipped (targets left out, and why) and passesMs; or, as
text instead, the IR after a pass (--dump-after) or the kernel plan
(--explain); with --quiet nothing.`,
	"train": `
Runs --steps SGD steps on the scalar output --loss of GRAPH.json, updating
its param inputs by p -= lr * grad in float32. Prints one JSON object:
losses (one per step), params (the final values, by name), backend and
fallbackAttempts. With --explain it runs nothing and prints, as text, the
kernel plan of one step (as build --explain does, for --profile): each
kernel's flops and bytes, and their totals.`,
	"bench": `
Runs the benchmark suite on every backend built in (or --backends) and
writes results.json, results.md and report.html into -o. Prints one JSON
summary: dir, cases, skipped, crossovers and, with --compare, the ratios
against PyTorch.

With GRAPH.json or MODEL.onnx, times that graph instead (--input, --const
and --input-shape as run takes them): --cold-runs runs per backend, each in
a fresh process of gpucc (start-up, compile with an empty cache, first
run), and warm runs on resident inputs for --warm-budget (at least
--warm-runs). Every figure is a median with its min and max; where two
spreads overlap no backend is called faster. Writes the same report and
prints one JSON summary: dir, graph, cases, verdicts (the dominant stage,
and the runs after which a backend has paid its start back against cpu),
notes (the verdicts in words), failed and wallSeconds.`,
	"info": `
Prints one JSON object: backends (built into this binary), chain (the order
auto tries them in) and adapters (the GPU adapters wgpu sees, with their
limits), or adapterError when none can be listed.`,
	"version": `
Prints one JSON object: module, version (v1.2.3 for go install ...@v1.2.3,
a pseudo-version or "(devel)" for a local build), revision, time and
modified (the VCS commit built from, when known) and go (the toolchain).`,
}
