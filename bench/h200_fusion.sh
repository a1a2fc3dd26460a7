#!/bin/bash
# Issue 21 parts 1-4 on the H200 (the fusion engineer's visits), under $OUT,
# within ~4 minutes (the second visit: ~3.5). Build here first (from the repository root):
#
#   go test -c -ldflags='-s -w' -o .dev/fusion/bench.test ./bench &&
#     go test -c -ldflags='-s -w' -o .dev/fusion/gpucc.test . && gzip -f .dev/fusion/*.test &&
#     cp bench/h200_fusion.sh bench/torch_nn.py bench/torch_attn.py .dev/fusion/
#
# then run (device tool) with carry [".gl", ".dev"] and command:
#
#   bash .dev/fusion/h200_fusion.sh
#
# It records (1) bit-exactness against cpuref of the rows, composite and
# reduction cases and the attention fixture on the H200's webgpu; (2)
# BenchmarkNN's rows workloads, the column sum and attention (seq 256 and
# 2048, d 64) with the GPU warm; (3) PyTorch eager, torch.compile and
# scaled_dot_product_attention at the same shapes; with an nvidia-smi
# clock trace over the whole visit.
set -u
. bench/h200_env.sh fusion.log
D=$(dirname "$0")
export GPUCC_REQUIRE_WEBGPU=1
for b in bench gpucc; do gunzip -c "$D/$b.test.gz" > /tmp/$b.test && chmod +x /tmp/$b.test; done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!

log "exactness: the suite, the random rows compositions and the attention fixture on webgpu (H200) against cpuref"
(cd "$D/../.." && timeout 100 /tmp/gpucc.test -test.run 'TestSuite/webgpu|TestRandomRows/webgpu|TestAttentionFixture/webgpu' -test.v) > "$OUT/exactness.txt" 2>&1
log "exit $? ($(grep -c -- '--- PASS' "$OUT/exactness.txt") passed, $(grep -c -- '--- FAIL' "$OUT/exactness.txt") failed)"
(cd "$D/../.." && timeout 40 /tmp/gpucc.test -test.run 'TestRandomGraphs/webgpu' -test.short -test.v) >> "$OUT/exactness.txt" 2>&1
log "random graphs: exit $? ($(grep -c -- '--- PASS' "$OUT/exactness.txt") passed in all, $(grep -c -- '--- FAIL' "$OUT/exactness.txt") failed)"

log "BenchmarkNN at 8192x1024 and attention 256x64 (a warm-up pass first)"
GPUCC_BENCH_NN=8192,1024,256,64 timeout 20 /tmp/bench.test -test.run '^$' -test.bench 'NN/softmax/' -test.benchtime 2000x > /dev/null 2>&1
GPUCC_BENCH_NN=8192,1024,256,64 timeout 60 /tmp/bench.test -test.run '^$' \
  -test.bench 'NN/(softmax|logsoftmax|layernorm|colsum|rowsum|attn|attention)/' -test.benchtime 200x > "$OUT/bench_nn.txt" 2>>"$OUT/fusion.log"
log "exit $?"
log "attention at seq 2048"
GPUCC_BENCH_NN=8192,1024,2048,64 timeout 30 /tmp/bench.test -test.run '^$' \
  -test.bench 'NN/attn/' -test.benchtime 200x >> "$OUT/bench_nn.txt" 2>>"$OUT/fusion.log"
log "exit $?"

log "PyTorch peers"
timeout 45 python3 "$D/torch_attn.py" 64 256 2048 > "$OUT/torch_attn.json" 2>>"$OUT/fusion.log"
log "exit $?"
timeout 80 python3 "$D/torch_nn.py" 8192 1024 256 64 > "$OUT/torch_nn.json" 2>>"$OUT/fusion.log"
log "exit $?"
kill $smi 2>/dev/null
log "done"
