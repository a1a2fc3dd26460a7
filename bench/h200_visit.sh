#!/bin/bash
# The closing device visit of the 2026-12-02 session (issues 22, 23): every
# change on a real driver, within ~8 minutes, under $OUT. Build here first
# (from the repository root; the binaries travel xz-compressed, since three
# test binaries pass the device tool's 64 MiB carry):
#
#   ../shared/device/prepare.sh && for p in .:gpucc ./onnx:onnx ./bench:bench; do
#     go test -c -ldflags='-s -w' -o .device/${p#*:}.test ${p%:*}; done && xz -T2 -f .device/*.test
#
# then run (device tool) with carry [".gl", ".device", ".dev/models"] and command:
#
#   bash bench/h200_visit.sh
#
# It records (1) bit-exactness against cpuref on the H200's webgpu: the
# suite, random graphs and rows, convolutions, transposed convolutions,
# pools and their gradients, batched matmuls, and the exported ONNX models
# against PyTorch's float64; (2) the ONNX models' kernel time with weights
# resident, beside PyTorch eager and torch.compile timed by export.py in
# the same visit; (3) the convolutions at batch 32 beside cuDNN; (4) the
# PyTorch autograd fixtures of convolution and pooling gradients.
set -u
. bench/h200_env.sh visit.log
export GPUCC_REQUIRE_WEBGPU=1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
for f in .device/*.test.xz; do xz -d -k -f "$f"; done
chmod +x .device/*.test

EXACT=${EXACT:-'TestSuite/webgpu|TestRandomGraphs/webgpu|TestRandomRows/webgpu|TestAttentionFixture/webgpu|TestConv[A-Za-z]*/webgpu|TestPool[A-Za-z]*/webgpu|TestMatmul[A-Za-z]*/webgpu|TestEmbedded[A-Za-z]*/webgpu'}
log "exactness on webgpu (H200) against cpuref: $EXACT"
timeout 200 .device/gpucc.test -test.run "$EXACT" -test.short -test.v > "$OUT/exactness.txt" 2>&1
log "exit $? ($(grep -c -- '--- PASS' "$OUT/exactness.txt") passed, $(grep -c -- '--- FAIL' "$OUT/exactness.txt") failed)"
(cd onnx && timeout 120 ../.device/onnx.test -test.run 'TestExportedModels|TestConv|TestBatchNorm|TestMatMul' -test.v) > "$OUT/onnx.txt" 2>&1
log "onnx: exit $? ($(grep -c -- '--- PASS' "$OUT/onnx.txt") passed, $(grep -c -- '--- FAIL' "$OUT/onnx.txt") failed)"

log "the ONNX models, weights resident (BenchmarkONNXModels), then PyTorch eager and compile (export.py)"
(cd bench && GPUCC_BENCH_MODELS=../.dev/models timeout 90 ../.device/bench.test -test.run '^$' \
  -test.bench 'ONNXModels' -test.benchtime 400x) > "$OUT/bench_models.txt" 2>>"$LOG"
log "exit $?"
timeout 150 python3 onnx/testdata/models/export.py /tmp/models > "$OUT/torch_models.txt" 2>&1
log "exit $?"
cp /tmp/models/manifest.json "$OUT/torch_models.json" 2>/dev/null

log "the convolution workloads at batch 32, exact and fast, and cuDNN's beside them"
(cd bench && GPUCC_BENCH_CONV=32 timeout 120 ../.device/bench.test -test.run '^$' \
  -test.bench 'Conv' -test.benchtime 20x) > "$OUT/bench_conv.txt" 2>&1
log "exit $?"
timeout 100 python3 bench/torch_conv.py 32 > "$OUT/torch_conv.json" 2>>"$LOG"
log "exit $?"

if [ -n "${GRADS:-}" ]; then
  log "PyTorch autograd fixtures: $GRADS"
  timeout 100 python3 $GRADS > "$OUT/grads.txt" 2>&1
  log "exit $?"
fi
kill $smi 2>/dev/null
log "done"
