#!/bin/bash
# Runs the issue-9 measurements (executables, resident tensors, transfers,
# the MLP train step) on the device machine, within ~4 minutes, and writes
# everything under $OUT. Build here first:
#
#   ../shared/device/prepare.sh && go test -c -o .device/bench.test ./bench
#
# then run (device tool) with carry [".gl", ".device"] and command:
#
#   bash bench/h200_engine.sh
#
# PyTorch's figures for the same workloads come from torch_bench.py in the
# same visit (relu(a*b+c), transfers) and /work/shared/device/README.md
# (the MLP step, 1.23 ms eager).
set -u
. bench/h200_env.sh h200_engine.log
export GPUCC_CACHE_DIR=/tmp/gpucc-cache GPUCC_REQUIRE_WEBGPU=1 GPUCC_BENCH_BACKEND=webgpu
bench() { # name, timeout, env..., -- benchmark regexp, benchtime
	local name=$1 t=$2; shift 2
	log "$name"
	env "$@" timeout "$t" .device/bench.test -test.run '^$' -test.bench "$BENCH" -test.benchtime "$TIMES" \
		> "$OUT/$name.txt" 2>>"$OUT/h200_engine.log"
}

log "torch"
timeout 60 python3 bench/torch_bench.py > "$OUT/torch.json" 2>>"$OUT/h200_engine.log"

# Warm Executable.Run of relu(a*b+c) over 64M: host slices in, a caller
# slice out (goal <= 60 ms), and resident inputs with the output kept
# (goal <= 50 us beyond the kernels: the us-beyond-kernels metric).
BENCH='ExecutableRun' TIMES=10x bench run-64M 90 GPUCC_BENCH_ELEMS=67108864
# Upload into a device tensor and readback into a caller slice, 256 MiB
# (goal >= 25 GB/s each: the MB/s column).
BENCH='TensorTransfer' TIMES=10x bench transfer-256MiB 60 GPUCC_BENCH_BYTES=268435456
# The MLP step, batch 4096, 1024->1024->1024->16: resident against
# re-uploading (goal >= 5x), and against PyTorch eager's 1.23 ms (goal
# within 2x).
BENCH='MLPTrainStep' TIMES=20x bench mlp-4096 120 GPUCC_BENCH_MLP=4096,1024,1024,16

log "done"
grep -h Benchmark "$OUT"/*.txt | tee -a "$OUT/h200_engine.log"
