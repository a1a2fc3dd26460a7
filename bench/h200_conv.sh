#!/bin/bash
# A device visit for issue 23's convolution kernels, under $OUT: the conv
# exactness tests on the H200's webgpu against cpuref (and fast mode against
# float64), BenchmarkConv at batch 32 (exact, fast, and TILES, a sweep of
# implicit-GEMM tiles), and with TORCH set bench/torch_conv.py beside it.
# Build here first (from the repository root), into D (default .dev/convk):
#
#   go test -c -ldflags='-s -w' -o $D/gpucc.test . && go test -c -ldflags='-s -w' -o $D/bench.test ./bench &&
#     gzip -f $D/gpucc.test $D/bench.test
#
# then run (device tool, carry [".gl", "$D"], the usual prelude of
# ../shared/device/README.md) e.g.:
#
#   TORCH=1 TILES="128x64/8x8k8 256x64/8x8k8" bash bench/h200_conv.sh
#
# It takes about 65 s with TORCH (the first visit: RESULTS.md, "conv2d as a
# tiled implicit GEMM").
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
D=${D:-.dev/convk}
S=$SECONDS
log() { echo "[$((SECONDS - S))s] $*" | tee -a "$OUT/visit.log"; }
[ -e $D/gpucc.test.gz ] && gunzip -f $D/gpucc.test.gz $D/bench.test.gz; chmod +x $D/*.test
export GPUCC_REQUIRE_WEBGPU=1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv -lms 250 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
log "exactness: conv tests on webgpu (H200) against cpuref"
timeout 60 $D/gpucc.test -test.run 'TestConvRandom/webgpu|TestConvTiles|TestSuite/webgpu/conv|TestPoolRandom/webgpu|TestConvFast' -test.v > "$OUT/conv_exact.txt" 2>&1
log "exit $? ($(grep -c -- '--- PASS' "$OUT/conv_exact.txt") passed, $(grep -c -- '--- FAIL' "$OUT/conv_exact.txt") failed)"
grep largest "$OUT/conv_exact.txt" | tee -a "$OUT/visit.log"
log "BenchmarkConv batch 32 with a tile sweep"
GPUCC_BENCH_CONV=32 GPUCC_BENCH_CONV_TILES="${TILES:-}" GPUCC_BENCH_CONV_STAGES="${STAGES:-}" timeout ${BT:-100} $D/bench.test -test.run '^$' -test.bench 'Conv' -test.benchtime 20x -test.v > "$OUT/bench_conv.txt" 2>&1
log "exit $?"
grep -E "^Benchmark" "$OUT/bench_conv.txt" | awk '{print $1, $3, $4, $5, $6}' | tee -a "$OUT/visit.log"
if [ -n "${TORCH:-}" ]; then
  log "torch_conv.py 32"
  timeout ${TT:-80} python3 bench/torch_conv.py 32 ${STAGES:+--stages} > "$OUT/torch_conv.json" 2>>"$OUT/visit.log"
  log "exit $?"; cat "$OUT/torch_conv.json" >> "$OUT/visit.log"
fi
kill $smi 2>/dev/null
log done
