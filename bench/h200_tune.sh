#!/bin/bash
# One H200 visit: peers, data path, lone dispatch, matmul tuner (exact and fast).
# Carry .gl and .device: .device/gpucc (go build ./cmd/gpucc), .device/gpu.test
# (go test -c ./runtime/gpu), .device/torch_matmul.py (bench/torch_matmul.py).
. bench/h200_env.sh tune.log
D=.device; chmod +x $D/gpucc $D/gpu.test
S=1024,4096,4096x64x4096,64x4096x64,1x4096x4096,1023x1025x1027,4096x4096x1,256,2048,8192,1000
date -u > $OUT/date.txt; nvidia-smi -L >> $OUT/date.txt 2>&1
$D/gpucc info > $OUT/info.json 2>&1
timeout 90 python3 $D/torch_matmul.py $S > $OUT/torch.json 2> $OUT/torch.err
GPUCC_BENCH_BYTES=268435456 timeout 80 $D/gpu.test -test.run '^$' -test.bench 'Transfer|LoneRun|RoundTripPhases|TinyDispatch' -test.benchtime 1s > $OUT/gpubench.txt 2>&1
timeout -s INT 360 $D/gpucc bench --tune --fast --tune-shapes $S --tune-budget 15s --tune-reps 5 --tune-table $OUT/h200.json > $OUT/tune.json 2> $OUT/tune.err
echo rc=$? >> $OUT/date.txt; date -u >> $OUT/date.txt
