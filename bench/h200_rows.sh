#!/bin/bash
# Issue 21's device visit: the row-resident kernels (softmax, log-softmax,
# layernorm) and the column sum over [8192,1024] on the H200's webgpu
# beside PyTorch eager and torch.compile, in one run, within ~4 minutes.
# Build here first:
#
#   ../shared/device/prepare.sh && go test -c -ldflags='-s -w' -o .device/gpucc.test . &&
#     go test -c -ldflags='-s -w' -o .device/bench.test ./bench
#
# then run (device tool) with carry [".gl", ".device"] and command:
#
#   bash bench/h200_rows.sh
#
# It records (1) bit-exactness of the rows cases and the composites on the
# H200 against cpuref; (2) BenchmarkNN at 8192x1024 (dispatch-ms is GPU
# time; the kernels metric shows each workload's kernel count), in a fresh
# process, then again after a large host run; (3) bench/torch_nn.py at the
# same shapes.
set -u
. bench/h200_env.sh h200_rows.log
export GPUCC_REQUIRE_WEBGPU=1

log "exactness: rows cases and composites on webgpu (H200) against cpuref"
timeout 120 .device/gpucc.test -test.run 'TestSuite/webgpu/(rows|composite)/' -test.v > "$OUT/exactness.txt" 2>&1
log "exit $? ($(grep -c -- '--- PASS' "$OUT/exactness.txt") passed, $(grep -c -- '--- FAIL' "$OUT/exactness.txt") failed)"

log "BenchmarkNN rows workloads at 8192x1024, fresh process"
GPUCC_BENCH_NN=8192,1024,256,64 timeout 100 .device/bench.test -test.run '^$' \
  -test.bench 'NN/(softmax|logsoftmax|layernorm|colsum|rowsum)/' -test.benchtime 100x > "$OUT/bench_rows.txt" 2>>"$OUT/h200_rows.log"
log "exit $?"
log "again, in a second process that runs the attention block (matmuls, a large run) first"
GPUCC_BENCH_NN=8192,1024,256,64 timeout 100 .device/bench.test -test.run '^$' \
  -test.bench 'NN/(attention|softmax|logsoftmax|layernorm|colsum)/' -test.benchtime 100x > "$OUT/bench_rows_after.txt" 2>>"$OUT/h200_rows.log"
log "exit $?"

log "PyTorch peers at the same shapes"
timeout 120 python3 bench/torch_nn.py 8192 1024 256 64 > "$OUT/torch_nn.json" 2>>"$OUT/h200_rows.log"
log "done"
