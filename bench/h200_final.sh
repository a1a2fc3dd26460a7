#!/bin/bash
# The closing device visit of the 2026-12-01 evening session: every change
# of issues 19, 20 and 21 on a real driver, within ~9 minutes, under $OUT.
# Build here first (from the repository root):
#
#   ../shared/device/prepare.sh && go test -c -ldflags='-s -w' -o .device/gpucc.test . &&
#     go test -c -ldflags='-s -w' -o .device/bench.test ./bench
#
# then run (device tool) with carry [".gl", ".device"] and command:
#
#   bash bench/h200_final.sh
#
# It records (1) bit-exactness against cpuref of the whole suite (rows
# kernels, column tiles, primitives as functions, the wide layernorm) and
# the random graphs on the H200's webgpu; (2) the rows workloads and the
# column sum at 8192x1024 with the GPU's clock warm, in a fresh process and
# in one that runs the attention block first; (3) the history probe and the
# MLP train step; (4) PyTorch eager and torch.compile at the same shapes,
# with an nvidia-smi clock trace over the whole visit.
set -u
. bench/h200_env.sh final.log
export GPUCC_REQUIRE_WEBGPU=1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!

log "exactness: the suite and the random graphs on webgpu (H200) against cpuref"
timeout 200 .device/gpucc.test -test.run 'TestSuite/webgpu|TestRandomGraphs/webgpu|TestRandomRows/webgpu|TestAttentionFixture/webgpu' -test.short -test.v > "$OUT/exactness.txt" 2>&1
log "exit $? ($(grep -c -- '--- PASS' "$OUT/exactness.txt") passed, $(grep -c -- '--- FAIL' "$OUT/exactness.txt") failed)"

log "BenchmarkNN rows workloads at 8192x1024, fresh process"
GPUCC_BENCH_NN=8192,1024,256,64 timeout 90 .device/bench.test -test.run '^$' \
  -test.bench 'NN/(softmax|logsoftmax|layernorm|colsum|rowsum)/' -test.benchtime 200x > "$OUT/bench_rows.txt" 2>>"$OUT/final.log"
log "exit $?"
log "again, in a process that runs the attention block first"
GPUCC_BENCH_NN=8192,1024,256,64 timeout 90 .device/bench.test -test.run '^$' \
  -test.bench 'NN/(attention|softmax|logsoftmax|layernorm|colsum)/' -test.benchtime 200x > "$OUT/bench_rows_after.txt" 2>>"$OUT/final.log"
log "exit $?"

log "history probe and the MLP train step"
GPUCC_BENCH_HISTORY=8192,1024,67108864,7 GPUCC_BENCH_MLP=4096,1024,1024,16 timeout 90 .device/bench.test -test.run '^$' \
  -test.bench '^BenchmarkHistory$' -test.benchtime 1x > "$OUT/bench_history.txt" 2>&1
log "exit $?"
GPUCC_BENCH_MLP=4096,1024,1024,16 timeout 60 .device/bench.test -test.run '^$' \
  -test.bench 'MLPTrainStep/(resident|launch)' -test.benchtime 40x >> "$OUT/bench_history.txt" 2>&1
log "exit $?"
log "the MLP step's matmuls and column sums one at a time (which kernel costs what)"
GPUCC_BENCH_MLP=4096,1024,1024,16 timeout 90 .device/bench.test -test.run '^$' \
  -test.bench 'MLPStepKernels' -test.benchtime 40x > "$OUT/bench_step_kernels.txt" 2>&1
log "exit $?"

log "the convolution workloads (issue 23) at batch 32, and cuDNN's beside them"
GPUCC_BENCH_CONV=32 timeout 120 .device/bench.test -test.run '^$' \
  -test.bench 'Conv' -test.benchtime 20x > "$OUT/bench_conv.txt" 2>&1
log "exit $?"
timeout 100 python3 bench/torch_conv.py 32 > "$OUT/torch_conv.json" 2>>"$OUT/final.log"
log "exit $?"

log "PyTorch peers at the same shapes"
timeout 100 python3 bench/torch_nn.py 8192 1024 256 64 > "$OUT/torch_nn.json" 2>>"$OUT/final.log"
log "exit $?"
kill $smi 2>/dev/null
log "done"
