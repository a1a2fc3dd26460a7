#!/bin/bash
# Runs the issue-4 measurements on the device machine, within ~4 minutes,
# and writes everything under $OUT. Build here first:
#
#   ../shared/device/prepare.sh && go test -c -o .device/bench.test ./bench
#
# then run (device tool) with carry [".gl", ".device"] and command:
#
#   bash bench/h200.sh
set -u
. bench/h200_env.sh h200.log
export GPUCC_CACHE_DIR=/tmp/gpucc-cache GPUCC_REQUIRE_WEBGPU=1

log "info"
.device/gpucc info > "$OUT/info.json" 2>>"$OUT/h200.log"

log "torch"
timeout 60 python3 bench/torch_bench.py > "$OUT/torch.json" 2>>"$OUT/h200.log"

log "go benchmarks: transfers, dispatch, compile at 256 MiB"
GPUCC_BENCH_BYTES=268435456 timeout 70 .device/bench.test -test.run '^$' \
  -test.bench 'Upload|Readback|Compile' -test.benchtime 5x > "$OUT/gobench-transfer.txt" 2>>"$OUT/h200.log"
# Many iterations: with few, the first dispatch's one-time costs dominate the mean.
timeout 30 .device/bench.test -test.run '^$' -test.bench 'TinyDispatch' -test.benchtime 200x >> "$OUT/gobench-transfer.txt" 2>>"$OUT/h200.log"
log "go benchmarks: relu(a*b+c) 64M, matmul 4096"
GPUCC_BENCH_ELEMS=67108864 GPUCC_BENCH_MATMUL=4096 timeout 60 .device/bench.test -test.run '^$' \
  -test.bench 'ReluMulAdd|Matmul' -test.benchtime 3x > "$OUT/gobench-kernels.txt" 2>>"$OUT/h200.log"

log "gpucc bench (budget 80 s)"
# torch_bench.py reports a missing torch or CUDA as {"error": ...}, which
# --compare refuses (as it does an empty file): compare only against real
# figures.
compare=()
grep -q '"device"' "$OUT/torch.json" && compare=(--compare "$OUT/torch.json")
timeout 110 .device/gpucc bench -o "$OUT/report" --budget 80s --max-case-ms 4000 \
  "${compare[@]}" > "$OUT/bench.json" 2>>"$OUT/h200.log"

log "second process: codegen from disk"
.device/gpucc run --backend webgpu examples/seed.json > "$OUT/run1.json" 2>>"$OUT/h200.log"
.device/gpucc run --backend webgpu examples/seed.json > "$OUT/run2.json" 2>>"$OUT/h200.log"
log "done"
grep -h Benchmark "$OUT"/gobench-*.txt | tee -a "$OUT/h200.log"
