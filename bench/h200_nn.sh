#!/bin/bash
# Issue 10's device visit (broadcasting, views, axis reductions, composites,
# the digits classifier and the attention block), everything under $OUT,
# within ~8 minutes. Build here first:
#
#   ../shared/device/prepare.sh && go test -c -ldflags='-s -w' -o .device/gpucc.test . &&
#     go test -c -ldflags='-s -w' -o .device/bench.test ./bench
#
# with the digits data beside them (cp /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
# .device/), then run (device tool) with carry [".gl", ".device"] and command:
#
#   bash bench/h200_nn.sh
#
# It records (1) bit-exactness on the H200 against cpuref of the whole
# suite (every op, broadcasting, views, reductions, composites) and the
# random graphs; (2) the digits classifier and the attention block on the
# H200's webgpu against the PyTorch fixture and cpuref; (3) BenchmarkNN and
# BenchmarkReductions beside bench/torch_nn.py (PyTorch eager and
# torch.compile) at the same shapes, in the same run.
set -u
. bench/h200_env.sh h200_nn.log
export GPUCC_REQUIRE_WEBGPU=1

log "exactness: the suite and the random graphs on webgpu (H200) against cpuref"
timeout 240 .device/gpucc.test -test.run 'TestSuite/webgpu|TestRandomGraphs/webgpu' -test.v \
  > "$OUT/exactness.txt" 2>&1
log "exit $? ($(grep -c -- '--- PASS' "$OUT/exactness.txt") passed, $(grep -c -- '--- FAIL' "$OUT/exactness.txt") failed)"

log "digits (5 steps, against cpu bit for bit) and attention on webgpu (H200), against the PyTorch fixture"
export GPUCC_DIGITS_CSV=.device/digits.csv.gz
for run in 'TestDigitsTrain/^(cpu|webgpu)$' 'TestAttentionFixture/^(cpu|webgpu)$'; do
  timeout 120 .device/gpucc.test -test.run "$run" -test.v >> "$OUT/nn.txt" 2>&1
  log "$run: exit $? ($(grep -c -- '--- PASS' "$OUT/nn.txt") passed, $(grep -c -- '--- FAIL' "$OUT/nn.txt") failed so far)"
done

log "BenchmarkNN at 8192x1024 and attention 256x64, and BenchmarkReductions"
GPUCC_BENCH_NN=8192,1024,256,64 timeout 150 .device/bench.test -test.run '^$' -test.bench 'NN' \
  -test.benchtime 50x > "$OUT/bench_nn.txt" 2>>"$OUT/h200_nn.log"
timeout 100 .device/gpucc.test -test.run '^$' -test.bench 'Reductions/webgpu' -test.benchtime 50x \
  > "$OUT/bench_reductions.txt" 2>>"$OUT/h200_nn.log"

log "PyTorch peers at the same shapes"
timeout 150 python3 bench/torch_nn.py 8192 1024 256 64 > "$OUT/torch_nn.json" 2>>"$OUT/h200_nn.log"
log "done"
