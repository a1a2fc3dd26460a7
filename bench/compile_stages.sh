#!/bin/bash
# A model's first compile by stage, on the device (issue 35 item 4): for each MODEL.onnx, one fresh
# `gpucc run --backend webgpu --cache-dir off` with GPUCC_VERBOSE=1 and GPUCC_CPUPROFILE, which
# writes under $OUT (default /tmp/out):
#   NAME.json       the result: timings importMs, passesMs, codegenMs, compileMs, startupMs, totalMs
#   NAME.pipelines  each pipeline's creation (start, shader module, pipeline ms, WGSL bytes) and the
#                   batch's summary: wall time beside the creations' sum over the workers and the longest
#   NAME.pprof      the process's CPU profile (go tool pprof -top .device/gpucc NAME.pprof, back here)
# and prints a line per model. About 10 s a model on an H100 (one fresh process each).
#
#   bash bench/compile_stages.sh /tmp/vision/*.onnx      # BIN=.device/gpucc by default
#
# Here, on lavapipe: ARGS=--allow-software BIN=./gpucc bash bench/compile_stages.sh MODEL.onnx (the models:
# GPUCC_VISIONNET_OUT=DIR go test -run TestModelsImport ./internal/visionnet/).
set -u
BIN=${BIN:-.device/gpucc}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
lim='--max-ops 100000000000 --max-storage 4294967296 --max-elements 268435456 --max-nodes 100000 --max-kernel-ops 1000000'
for m in "$@"; do
	n=$(basename "$m" .onnx)
	GPUCC_VERBOSE=1 GPUCC_CPUPROFILE="$OUT/$n.pprof" timeout 120 "$BIN" run --backend webgpu --cache-dir off ${ARGS:-} $lim "$m" \
		>"$OUT/$n.json" 2>"$OUT/$n.err"
	rc=$?
	grep -h 'gpucc: webgpu: pipeline \|pipelines created\|kernels, .* distinct' "$OUT/$n.err" >"$OUT/$n.pipelines"
	echo "$n: exit $rc $(grep -o '"\(import\|passes\|codegen\|compile\|startup\|total\)Ms":[0-9.]*' "$OUT/$n.json" | tr '\n' ' ')"
	echo "  $(grep -h 'pipelines created' "$OUT/$n.pipelines" | tail -1)"
done
