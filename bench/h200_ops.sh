#!/bin/bash
# The ops issue's (10) device measurements, within ~5 minutes, everything
# under $OUT. Build here first:
#
#   ../shared/device/prepare.sh && go test -c -o .device/bench.test ./bench &&
#     go test -c -o .device/gpucc.test . && go build -o .device/accuracy ./bench/accuracy
#
# then run (device tool) with carry [".gl", ".device"] and command:
#
#   bash bench/h200_ops.sh
#
# It records: (1) bit-exactness of every new op against cpuref on the
# H200 (the op suite and random extreme-value graphs; a failure prints the
# differing bits), (2) the cost of gpucc's exp, log, tanh, sqrt, rsqrt and
# div against the WGSL builtins on the H200, and (3) when the machine has a
# C compiler, the accuracy table over every input on its 16 cores, checked
# against the one cpuref's doc states (-check).
set -u
. bench/h200_env.sh h200_ops.log
export GPUCC_REQUIRE_WEBGPU=1

log "info"
.device/gpucc info > "$OUT/info.json" 2>>"$OUT/h200_ops.log"

log "exactness: the op suite and random extreme graphs on webgpu (H200) against cpuref"
timeout 120 .device/gpucc.test -test.run 'TestSuite/webgpu/ops|TestRandomGraphs/webgpu' -test.v \
  > "$OUT/exactness.txt" 2>&1
log "exit $? ($(grep -c -- '--- FAIL' "$OUT/exactness.txt") failures)"

log "cost: gpucc's ops against the WGSL builtins, 16M elements"
timeout 120 .device/bench.test -test.run '^$' -test.bench 'OpsVsBuiltin' -test.benchtime 20x \
  > "$OUT/ops_vs_builtin.txt" 2>>"$OUT/h200_ops.log"

if command -v cc >/dev/null; then
  log "accuracy: every float32 input (2^32 per op), 16 processes per op, checked against cpuref's table"
  timeout 900 .device/accuracy -stride 1 -j 16 -check -doc cpuref/cpuref.go > "$OUT/accuracy.txt" 2>>"$OUT/h200_ops.log"
else
  log "accuracy: no C compiler on this machine; skipped"
fi
log "done"
