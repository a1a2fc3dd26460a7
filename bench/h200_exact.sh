#!/bin/bash
# Exactness and kernel measurements on the device machine (the core and
# passes issues). Build here first:
#
#   ../shared/device/prepare.sh && go test -c -o .device/runtime.test ./runtime
#   go test -c -o .device/gpu.test ./runtime/gpu
#
# then run (device tool, carry [".gl", ".device"]): bash bench/h200_exact.sh
set -u
. bench/h200_env.sh exact.log
export GPUCC_CACHE_DIR=/tmp/gpucc-cache-exact GPUCC_REQUIRE_WEBGPU=1
log "suite and random graphs, bit for bit against cpuref"
timeout 150 .device/runtime.test -test.run 'TestSuite/webgpu|TestRandomGraphs/webgpu|TestRandomViewGraphs/webgpu|TestTrainFixture/webgpu' -test.v > "$OUT/suite.txt" 2>&1
log "suite: $(grep -c -- '--- PASS' "$OUT/suite.txt") passed, $(grep -c -- '--- FAIL' "$OUT/suite.txt") failed"
grep -E -- "--- FAIL|differs|got|want|[-+] " "$OUT/suite.txt" | head -80 > "$OUT/suite-failures.txt"
log "FMA probe at 1M, then 64M over vec4s per thread x workgroup size"
timeout 60 .device/runtime.test -test.run 'TestFMAProbe' -test.v > "$OUT/fma.txt" 2>&1
for vt in 1:256 2:256 4:256 8:256 4:128 4:512 2:1024; do
  GPUCC_PROBE_N=67108864 GPUCC_PROBE_VPT=${vt%:*} GPUCC_PROBE_THREADS=${vt#*:} timeout 60 \
    .device/runtime.test -test.run 'TestFMAProbe' -test.v >> "$OUT/fma.txt" 2>&1
done
grep -h "exactness_test\|FAIL" "$OUT"/fma.txt | tee -a "$OUT/exact.log"
log "matmul tile sweep 4096"
GPUCC_MATMUL_SWEEP=4096 timeout 120 .device/runtime.test -test.run 'TestMatmulTileSweep' -test.v > "$OUT/sweep.txt" 2>&1
grep -h "TFLOP" "$OUT/sweep.txt" | tee -a "$OUT/exact.log"
log "sums from 64K to 64M, split into blocks against one workgroup"
GPUCC_SUM_SWEEP=26 timeout 120 .device/runtime.test -test.run 'TestSumSweep' -test.v > "$OUT/sums.txt" 2>&1
grep -h "sum over\|FAIL" "$OUT/sums.txt" | tee -a "$OUT/exact.log"
log "train the PyTorch fixture for 5 steps"
.device/gpucc train --backend webgpu --steps 5 --lr 0.1 testdata/fixtures/mlp_train_public.graph.json > "$OUT/train.json" 2>>"$OUT/exact.log"
head -c 400 "$OUT/train.json" | tee -a "$OUT/exact.log"; echo | tee -a "$OUT/exact.log"
grep -h "max\|bound" "$OUT/suite.txt" | head -5 | tee -a "$OUT/exact.log"
log "round trip of one tiny dispatch, by phase"
timeout 60 .device/gpu.test -test.run XXX -test.bench 'RoundTrip|TinyDispatch' -test.benchtime 200x > "$OUT/roundtrip.txt" 2>&1
grep -h Benchmark "$OUT/roundtrip.txt" | tee -a "$OUT/exact.log"
log "done"
