#!/bin/bash
# The one driver of device visits (the H200 through the device tool).
#
# Here, from the repository root of the checkout the device tool sends (the session's own):
#
#   bash bench/device.sh build
#
# builds ./cmd/gpucc and the test binaries below into .device/ (xz-compressed: with the tracked tree
# they pass the tool's 64 MiB carry otherwise) and fetches the Vulkan/GL loader packages into .gl/ (both ignored by
# git). Then run, with the device tool, carry [".gl", ".device"] and the command
#
#   bash bench/device.sh SUITE...
#
# Everything lands under $OUT (/tmp/out by hand) as visit.log and visit.tar.xz (one file per step and
# the GPU clocks; the tool brings back at most 8 files, so the tarball is refreshed after each suite).
# The GPU's clock drops to 345 MHz after ~3 s idle: every timing suite warms it first.
# Suites (each one's steps are below; TestDeviceScripts checks that every test and benchmark named
# here exists):
#   cycles   300 runtimes opened and closed in one process: the adapter, descriptors, threads, memory; then
#            runtime/gpu's devices alone, step by step (instance, open, compile, run, timed; pooled)
#   exactsplit  exactkernels' tests in three processes (one process lost the Vulkan adapter partway, 2026-12-06);
#            exactsuite its first alone
#   elemsweep  the fast paths' bits on the driver, then exp, tanh, sigmoid, GELU and softmax under 1, 2 (the default)
#            and 4 vec4s a thread, an element a thread, and 128 threads a workgroup, beside PyTorch eager
#   rowatomic  max by one workgroup atomicMax (wgsl.RowMaxAtomic) or by the tree: their bits on the driver, then
#            softmax, log-softmax and a row's max and sum under each, beside PyTorch eager
#   rowvec   vec4 loads and stores of contiguous runs (wgsl.RowVec4): bits on the driver, row ops' times beside eager
#   rowsweep the row ops under the default, 64 and 128 threads, and the default again, beside PyTorch eager
#   rowsnext the rows kernels' bits under every workgroup size and knob, then their times under the default, the fused
#            division without the row's reciprocal (nonear), contiguous runs (wgsl.RowContiguous), 128 threads and both,
#            beside PyTorch eager
#   attnsplit  the split order's parts in workgroups of their own: bits on the driver, attention at 512-4096 keys in 2, 4
#            and 8 parts beside the online order in one kernel, eager and SDPA
#   ceiling  a ceiling for exact attention's shape: bench/triton_attn_ceiling.py (Triton on CUDA cores, with and without
#            FMA) at 2048 and 4096 keys, d 64, beside eager, and gpucc's kernel in the same call
#   exactkernels, exactattn  exact's first two steps alone (below); onlinedefault  the online attention default tile's
#            bits on the driver and its time at 2048 keys beside the tile it replaced
#   exact    bit-exactness on webgpu against cpuref: suite, division pairs, random graphs and rows, convs, pools,
#            batched matmuls, the attention fixture, embedded weights, the ONNX exported models
#   models   the exported ONNX models, weights resident, beside PyTorch eager and torch.compile
#   compile  first compile of torchvision models (ResNet-18, MobileNet v2, EfficientNet-B0, a tiny
#            ViT): pipelines one at a time against concurrently, and a second process with the
#            NVIDIA driver's shader cache warm
#   conv     convolutions at batch 32 (GPUCC_BENCH_CONV_TILES, _STAGES sweep), beside cuDNN
#   conv1    issue 35 item 3, batch 1: the conv tiles' bits on the driver (TestConvTiles, the ladder included);
#            torchvision's ResNet-18, MobileNet v2, EfficientNet-B0 at batch 1 under the conv rule and under
#            passes.Options.KeepConvTile (same bits, checked), beside PyTorch eager; ResNet's 3x3 stages at batch 1
#            under the ladder's tiles and double-buffered ones (s2; TILES="..." picks), beside cuDNN
#   mmquick  items 2 and 3 in about 60 s: exact matmul 4096³ under the H200's tuned tile and two staged ones (bits
#            checked), ResNet-18 at batch 1 under the conv rule and the spread one (same bits, checked) beside eager,
#            and ResNet's 3x3 stages at batch 1 under the rule and two small tiles
#   rows     the FMA probe and the row kernels' bits on its path, then row ops and exp, tanh, sigmoid, GELU
#            at [8192,1024] in a fresh process and after other work, with and without the fused division
#            (GPUCC_FMA=on takes them; off by default), beside PyTorch
#   attn     attention at seq 256 and 2048 (unfused, and fusedattn: one attention kernel), and the fused
#            kernel in the online order beside the full-row default tile at seq 128-4096, d 64 and 128
#            (AttnTiles; ATTN_SWEEP=1 adds every full-row WGSL tile, ATTN_TILES="16x16k32 ..." picks), after
#            TestAttentionTiles and TestAttentionOnline check the bits on the driver; beside PyTorch eager,
#            scaled_dot_product_attention and torch.compile
#   engine   a 64M run, 256 MiB transfers, the MLP train step, beside PyTorch; a small run's cost beyond
#            its kernel (host and resident), a launched chain, 200 launched runs keeping 16 MiB outputs
#   upsweep  the upload ring's phases in 16 and 64 MiB chunks, with a Flush after each upload and queued; DeviceTensor's
#            upload in 16-64 MiB chunks; the GPU's copy out of staging alone
#   runprof  CPU profiles of a warm resident run (RunCost/resident), recorded ahead and not
#   mlp      the MLP train step and each of its matmuls and column sums alone (BenchmarkMLPStepKernels)
#   ops      the ops against WGSL builtins; every float32 input against cpuref (bench/accuracy)
#   tune     the matmul tuner over the issue's shapes, and transfers
#   matmul   issue 35 item 2: the staged vec4 matmul kernel's tiles (ir.Tile.Stages) beside the rule's, exact and
#            fast, at 4096³ (SHAPES=4096,1024 ..., MM_TILES="rule 128x128/8x8k8v4s2 ..." pick), each checked against
#            cpuref's bits (fast: its bound) before it is timed, after the staged kernel's bit tests on the driver;
#            beside cuBLAS (TF32 off)
#   mmsweep  the matmul tiles alone (each checked against cpuref's bits before it is timed): exact at 4096³ and the
#            MLP step's three layouts (SHAPES), fast at 4096³, then the MLP step under tile sets (MLP_SETS, as
#            GPUCC_BENCH_MLP_TILES reads them); GPUCC_PLAN_STORAGE=device admits tiles past 16 KiB; beside cuBLAS
#   mmthin   the MLP step's thin products (N or K of 16) under tiles of one output a thread and deep k-steps (THIN_SHAPES,
#            THIN_TILES), each checked against cpuref's bits before it is timed
#   kerneltimes  each kernel of the exported models (transformer, mlp, digits) alone: gpucc run --kernel-times on their inputs
#   gather   an embedding gather of 4096 int64 ids from a [50257, 768] table beside a copy of its bytes,
#            beside PyTorch's embedding
#   scatter  the scatter rows on the driver against cpu's bits (every dtype and reduction, the limits, the
#            loop budget, an embedding's training step, the linear passes' reruns and crafted indices), then a
#            KV cache's write (16 rows into [32768, 64]), a prefill's (4096 rows) and an embedding's gradient
#            (64 rows of 768 into [50257, 768]) timed on webgpu (BenchmarkScatter: dispatch-ms, moved-GB/s)
#   typed    typed graphs on webgpu against cpu's bits (int64 as two words, float16/bfloat16 by their bits,
#            float32/bfloat16 subnormals through codegen.Exact, faults; irtest's typed suites and random
#            graphs; reductions up to 2^21 leaves an output) and the transformer fixtures at run-time ids
#   transformers  export the text-transformer fixtures (onnx/testdata/transformers/export.py: GPT-2 and
#            BERT from configs, a hand-written causal decoder) with float64 and ONNX Runtime outputs
#   decode   per-token latency of greedy decoding with a KV cache (issue 33 item 5; gpt2kv_grow: the same
#            step with a growing cache, through generate's static-cache rewrite): gpucc generate on
#            webgpu (and native) for the gpt2kv fixture (its float32 and float16 caches) and a GPT-2-small-sized step model that
#            bench/torch_decode.py exports, beside HF generate() with its own cache in PyTorch eager;
#            and the matmul tuner's default tile beside its best for the decode's M=1 products; gpt2kv_hf (the
#            attention_mask convention) alone and as a left-padded batch of 4 prompts on webgpu
#   quick    a visit of about 150 s (the third session of 2026-12-04 had 280 s of device time): the FMA probe's
#            verdict and the fused division's and online attention's bits on the driver, then softmax, layernorm,
#            tanh, GELU [8192,1024] with and without the fused twins and attention 512-4096 d 64 (full-row
#            default beside the online order), beside PyTorch eager only (no torch.compile: its compiles
#            alone outlast such a visit); then enginequick (below)
#   enginequick  issue 35's per-run cost in about 15 s (part of quick): the calls a warm run makes (TestRunCounts),
#            its wall time waiting, queued (RunOptions.NoWait), launched and host to host, and the recording alone
#            through the binding's calls beside one cgo call and one error scope
#   verify   the defaults flipped on 2026-12-05 (spread conv tiles, online attention from 512 keys, the fused
#            division), their bits on the driver first, then row ops and attention at 128-512 keys
#   last     the online attention kernel's tiles at 2048 keys (d 64, 128) after their bits and the views' on the driver
#   lastbits the split order's and the wide and span tiles' full tier on the driver (2048 keys), a call of its own
#   defaults the defaults of the 2026-12-05 sessions on the driver in about 200 s: the workgroup-array probe, enginequick
#            (pass timestamps, and the encoder's beside them), a resident run's kernel and wall time both ways, then row
#            ops (fast paths) and attention at 2048 keys beside PyTorch eager, its clock warmed, timed twice
#   userbench  gpucc bench MODEL.onnx on the exported models (cpu, native, webgpu): cold in fresh
#            processes, warm resident, min/median/max, which stage dominates, the runs to break even
set -u
cd "$(dirname "$0")/.."
BIN=.device
PKGS="gpucc:. bench:./bench onnx:./onnx gpu:./runtime/gpu webgpu:./runtime/webgpu"

if [ "${1:-}" = build ]; then
	set -e
	# (a worktree's .git is a file: the exclude list is the common directory's)
	x=$(git rev-parse --git-common-dir)/info/exclude
	for d in /.gl/ /.device/; do grep -qxF "$d" "$x" 2>/dev/null || echo "$d" >>"$x"; done
	if [ ! -f .gl/.done ]; then
		mkdir -p .gl /tmp/amd64/partial
		o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
		apt-get $o update >/dev/null
		(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 2>/dev/null)
		touch .gl/.done
	fi
	mkdir -p $BIN && rm -f $BIN/*.test $BIN/*.xz $BIN/gpucc $BIN/accuracy
	go build -ldflags='-s -w' -o $BIN/gpucc ./cmd/gpucc
	go build -o $BIN/accuracy ./bench/accuracy
	for p in $PKGS; do go test -c -ldflags='-s -w' -o $BIN/${p%%:*}.test ${p#*:}; done
	xz -T2 -f $BIN/*.test $BIN/gpucc $BIN/accuracy
	ls -la $BIN
	exit 0
fi

OUT=${OUT:-/tmp/out}
R=$OUT
OUT=/tmp/visit
# A machine may be lent again with an earlier visit's /tmp (2026-12-05's tarballs carried 12-04's files): start empty.
rm -rf "$OUT"
mkdir -p "$R" "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
# vulkan: gpucctest.Open also fails a test whose webgpu runtime opened another backend (GL, 2026-12-05)
export GPUCC_REQUIRE_WEBGPU=vulkan
# and Open enumerates Vulkan alone: where it finds no adapter, a test fails saying so instead of running on GL
export GPUCC_WEBGPU_BACKEND=vulkan
for f in $BIN/*.xz; do [ -e "$f" ] && xz -d -k -f "$f"; done
chmod +x $BIN/* 2>/dev/null
S=$SECONDS
log() { echo "[$((SECONDS - S))s] $*" | tee -a "$OUT/visit.log" "$R/visit.log"; }
# tests FILE TIMEOUT BINARY PATTERN [args]: run a test binary from its package's folder, log the count.
tests() {
	local file=$1 t=$2 bin=$3 pat=$4 dir=.; shift 4
	case $bin in bench) dir=bench ;; onnx) dir=onnx ;; gpu) dir=runtime/gpu ;; webgpu) dir=runtime/webgpu ;; esac
	(cd $dir && timeout "$t" "$OLDPWD/$BIN/$bin.test" -test.run "$pat" -test.v "$@") >>"$OUT/$file" 2>&1
	log "$bin $pat: exit $? ($(grep -c -- '--- PASS' "$OUT/$file") passed, $(grep -c -- '--- FAIL' "$OUT/$file") failed in $file so far)"
}
# benches FILE TIMEOUT BINARY PATTERN BENCHTIME [env...]: run benchmarks from the package's folder.
benches() {
	local file=$1 t=$2 bin=$3 pat=$4 n=$5 dir=.; shift 5
	case $bin in bench) dir=bench ;; onnx) dir=onnx ;; gpu) dir=runtime/gpu ;; webgpu) dir=runtime/webgpu ;; esac
	(cd $dir && env "$@" timeout "$t" "$OLDPWD/$BIN/$bin.test" -test.run '^$' -test.bench "$pat" -test.benchtime "$n") >>"$OUT/$file" 2>>"$OUT/visit.log"
	log "$bin $pat: exit $?"
}
warm() { timeout 20 $BIN/bench.test -test.run '^$' -test.bench 'NN/softmax/' -test.benchtime 2000x >/dev/null 2>&1; }

# exactkernels and exactattn are exact's first steps: until 2026-12-05 one step of 240 s, which the attention tile tests
# (first in file order) filled on the H100, so the matmul, conv and rows tests after them never ran there.
suite_exactkernels() {
	tests exactness.txt 240 gpucc 'TestSuite/webgpu|TestXMathPairs/webgpu|TestRandomGraphs/webgpu|TestRandomRows/webgpu|TestRow(Knobs|Division|Max)|TestConv[A-Za-z]*/webgpu|TestPool[A-Za-z]*/webgpu|TestMatmul[A-Za-z]*/webgpu|TestBatchedMatmul/webgpu|TestEmbedded[A-Za-z]*/webgpu|TestSlice[A-Za-z]*/webgpu' -test.short
}
suite_exactattn() {
	tests exactness_attn.txt 240 gpucc 'TestAttention[A-Za-z]*/webgpu' -test.short
}
# rowsnext (about 150 s): what decides the rows kernels' next defaults: their bits on the driver under every workgroup
# size (TestRowDivision: 64, 128, 256 threads), every knob (TestRowKnobs: contiguous runs, wgsl.RowContiguous) and
# TestRowThreads, then softmax, log-softmax and layer norm [8192,1024] under the default, nonear (the fused fast division
# instead of the correctly rounded reciprocal's, wgsl.RowDivNear), contig, threads128 and both, beside PyTorch eager, each a
# fresh process (ROWS="default partslazy default partslazy" picks the settings: partslazy, wgsl.RowPartsLazy)
suite_rowsnext() {
	tests rowsnext_exact.txt 150 gpucc 'TestRow(Knobs|Division|Max|Threads)'
	warm
	for v in ${ROWS:-default nonear contig threads128 threads128,contig}; do
		benches rowsnext_rows.txt 60 bench 'NN/(softmax|logsoftmax|layernorm)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=$v
		echo "## GPUCC_BENCH_ROWS=$v" >>"$OUT/rowsnext_rows.txt"
	done
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,logsoftmax,layernorm timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_rowsnext.json" 2>>"$OUT/visit.log"
	log "torch_nn.py: exit $?"
	grep -h '^Benchmark\|^## GPUCC' "$OUT/rowsnext_rows.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# cycles (about 60 s): TestOpenCloseCycles, 300 runtimes opened and closed in one process (on the H100, 2026-12-06, a
# test process found no Vulkan adapter after about a hundred runtimes), each cycle's descriptors, threads and memory
# (on an H200, 2026-12-06, the adapter was gone at cycle 30, memory growing 3.5 MiB a cycle), and TestIdleDevicesHeld
# (three devices held at once, eight rounds: three made); then runtime/gpu's devices alone, each step in its own process
# (TestDeviceCycles: instance, open, compile, run, timed, each on a new device, 40 cycles; pooled, on the device Close
# gave back, 300). A new-device mode fails where its adapter changes: on the H100 of 2026-12-06 05:40 every one went on
# past cycle 30 on another adapter, so those lines measure the driver's limit (NVIDIA's: about 30 devices a process),
# and instance says whether instances alone reach it.
suite_cycles() {
	GPUCC_OPEN_CYCLES=300 tests cycles.txt 120 gpucc 'TestOpenCloseCycles$'
	grep -h 'open_cycles_test' "$OUT/cycles.txt" | tail -8 >>"$OUT/visit.log"
	tests cycles_gpu.txt 60 gpu 'TestIdleDevices'
	for m in instance open compile run timed; do
		GPUCC_DEVICE_CYCLES=40 GPUCC_DEVICE_CYCLE_MODE=$m tests cycles_gpu.txt 60 gpu 'TestDeviceCycles$'
	done
	GPUCC_DEVICE_CYCLES=300 GPUCC_DEVICE_CYCLE_MODE=pooled tests cycles_gpu.txt 60 gpu 'TestDeviceCycles$'
	grep -h 'cycles_test\|idle_test' "$OUT/cycles_gpu.txt" >>"$OUT/visit.log"
}
# exactsplit (about 240 s): exactkernels' tests in three processes, so that no process opens as many runtimes
# exactsuite (about 60 s): its first process alone, the op suite, division pairs, random graphs and rows
suite_exactsuite() {
	tests exactness.txt 120 gpucc 'TestSuite/webgpu|TestXMathPairs/webgpu|TestRandomGraphs/webgpu|TestRandomRows/webgpu|TestRow(Knobs|Division|Max)' -test.short
}
suite_exactsplit() {
	suite_exactsuite
	tests exactness.txt 120 gpucc 'TestConv[A-Za-z]*/webgpu|TestPool[A-Za-z]*/webgpu' -test.short
	tests exactness.txt 120 gpucc 'TestMatmul[A-Za-z]*/webgpu|TestBatchedMatmul/webgpu|TestEmbedded[A-Za-z]*/webgpu|TestSlice[A-Za-z]*/webgpu' -test.short
}
# exactmm: exactsplit's matmul step alone (every staged tile, the built-in tables' among them, transposed and partial)
suite_exactmm() {
	tests exactness.txt 120 gpucc 'TestMatmul[A-Za-z]*/webgpu|TestBatchedMatmul/webgpu' -test.short
}
# rowsweep (about 50 s): softmax, log-softmax and layer norm [8192,1024] under the default, 64 and 128 threads, every
# thread combining the groups' values (rootall: one barrier fewer a reduction, now that max's combination is 3
# instructions), and the default again, each a fresh process, beside PyTorch eager
suite_rowsweep() {
	warm
	for v in default threads64 threads128 rootall threads128,rootall default; do
		benches rowsweep.txt 60 bench 'NN/(softmax|logsoftmax|layernorm)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=$v
		echo "## GPUCC_BENCH_ROWS=$v" >>"$OUT/rowsweep.txt"
	done
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,logsoftmax,layernorm timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_rowsweep.json" 2>>"$OUT/visit.log"
	grep -h '^Benchmark\|^## GPUCC' "$OUT/rowsweep.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# elemsweep (about 60 s): the fast paths' bits on the driver (TestFastPathsBackends/webgpu), then exp, tanh, sigmoid,
# GELU and softmax [8192,1024] under the default (2 vec4s a thread since 2026-12-06; the H100 then: 4 took 12-15%
# longer, 1 up to 5% less), 1 and 4 vec4s a thread, an element a thread (scalar: wgsl.Vectorise off), 128 threads a
# workgroup, and the default again, each a fresh process, beside PyTorch eager
suite_elemsweep() {
	tests elemsweep_exact.txt 60 gpucc 'TestFastPathsBackends/webgpu|TestElementwiseSchedules'
	warm
	for v in default vpt1 vpt4 scalar vthreads128 vpt1,vthreads128 default; do
		benches elemsweep.txt 60 bench 'NN/(exp|tanh|sigmoid|gelu|softmax)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=$v
		echo "## GPUCC_BENCH_ROWS=$v" >>"$OUT/elemsweep.txt"
	done
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=exp,tanh,sigmoid,gelu,softmax timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_elemsweep.json" 2>>"$OUT/visit.log"
	grep -h '^Benchmark\|^## GPUCC' "$OUT/elemsweep.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# rowatomic (about 60 s): max's keys by one workgroup atomicMax (wgsl.RowMaxAtomic, the default since 2026-12-06): the
# row kernels' bits under it and under the tree on the driver (TestRowKnobs, TestRowMax), then softmax, log-softmax, a
# row's max and sum [8192,1024] under the default, the tree (maxtree), 128 threads, and the default again, each a fresh
# process, beside PyTorch eager
suite_rowatomic() {
	tests rowatomic_exact.txt 90 gpucc 'TestRowKnobs$|TestRowMax'
	warm
	for v in default maxtree threads128 default; do
		benches rowatomic.txt 60 bench 'NN/(softmax|logsoftmax|rowmax|rowsum)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=$v
		echo "## GPUCC_BENCH_ROWS=$v" >>"$OUT/rowatomic.txt"
	done
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,logsoftmax timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_rowatomic.json" 2>>"$OUT/visit.log"
	grep -h '^Benchmark\|^## GPUCC' "$OUT/rowatomic.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# rowvec (about 90 s): softmax, log-softmax and layer norm with each thread's contiguous leaves loaded and stored as
# vec4s (wgsl.RowVec4, the default since 2026-12-06): the row kernels' bits on the driver (TestRowKnobs, TestRowMax,
# TestRowThreads), then [8192,1024] under the default (vec4s; 128 threads for layer norm's cheap leaves), without vec4s
# (novec4), without the cheap kernels' 128 threads (nocheap), every kernel at 128 threads, every thread combining the
# groups' values (rootall), and the default again, each a fresh process, beside PyTorch eager
suite_rowvec() {
	tests rowvec_exact.txt 90 gpucc 'TestRowKnobs$|TestRowMax|TestRowThreads'
	warm
	for v in default novec4 nocheap threads128 rootall default; do
		benches rowvec.txt 60 bench 'NN/(softmax|logsoftmax|layernorm)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=$v
		echo "## GPUCC_BENCH_ROWS=$v" >>"$OUT/rowvec.txt"
	done
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,logsoftmax,layernorm timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_rowvec.json" 2>>"$OUT/visit.log"
	grep -h '^Benchmark\|^## GPUCC' "$OUT/rowvec.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# onlinedefault (about 120 s): online attention's default tile (16x16i since 2026-12-05) through the attention and
# transformer tests on the driver, then timed at 2048 keys beside the tile it replaced (online16x16)
suite_onlinedefault() {
	tests onlinedefault.txt 120 gpucc '^TestAttentionOnline$/webgpu|TestAttentionLengths/webgpu|TestAttentionEdges/webgpu|TestTransformerFixtures/webgpu' -test.short
	warm
	benches onlinedefault_attn.txt 40 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_TILES="online online16x16 online"
	benches onlinedefault_attn.txt 40 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_D=128 GPUCC_BENCH_ATTN_TILES="online online16x16 online"
	grep -h '^Benchmark' "$OUT/onlinedefault_attn.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
suite_exact() {
	suite_exactkernels
	suite_exactattn
	# The device machine has no clang: the onnx tests' wasm subtests fail there ("clang not found").
	tests onnx.txt 150 onnx 'TestExportedModels|TestConv|TestBatchNorm|TestOpsExact|TestResizeImport|TestBitwiseNumpy|TestPowUint64Backends'
	tests gpu.txt 60 gpu 'TestCompileAll|TestCompileErrors|TestMultiply'
	# the FMA probe's verdict (webgpu's fmaprobe.go: Keep holds, the bare a*b+c contracts, fma() fused or not)
	tests gpu.txt 60 webgpu 'TestFMAProbe|TestJudgeProbe|TestKeepContractsRefused|TestFusedKernelsCompile'
	# Full tier (no -test.short); the attention tests ran above (their full tier alone took 140 s on the
	# H200 at 59aa824 and cut this step short).
	tests typed.txt 300 gpucc 'TestTyped[A-Za-z]*/webgpu|TestSplitIntermediates/webgpu|TestTransformerFixtures/(cpu|webgpu)|TestGPT2KVDeviceCache|TestGenerateFixture/webgpu|TestGenerateGrowingCache/webgpu'
	# TopK's k passes against the pairwise form (462008c): a failure at 1e-40 says the driver flushes
	# float32 subnormals in the islands, where the passes' maximum is computed (topKSelect's doc).
	GPUCC_TYPED_NODE_BACKENDS=webgpu tests typed_onnx.txt 120 onnx 'TestTopKSelect' -test.short
}
suite_models() {
	mkdir -p /tmp/models
	timeout 150 python3 onnx/testdata/models/export.py /tmp/models >"$OUT/torch_models.txt" 2>&1
	log "export.py: exit $?"
	warm
	benches bench_models.txt 90 bench 'ONNXModels' 400x GPUCC_BENCH_MODELS=/tmp/models
}
suite_compile() {
	# what opening webgpu costs before a first compile, each stage in fresh processes (compile8, startup8: the FMA
	# probe's disk verdict, the primary backends enumerated first): gpucc-open minus gpucc-open-disk is the probe's cost
	GPUCC_STARTUP=1 GPUCC_STARTUP_RUNS=9 tests startup.txt 120 bench '^TestStartupStages$'
	mkdir -p /tmp/vision
	timeout 240 python3 bench/torch_vision.py /tmp/vision >"$OUT/torch_vision.txt" 2>&1
	log "torch_vision.py: exit $?"
	local lim='--max-ops 100000000000 --max-storage 4294967296 --max-elements 268435456 --max-nodes 100000 --max-kernel-ops 1000000'
	for m in /tmp/vision/*.onnx; do
		for run in "serial 1 0 off" "concurrent 0 0 off" "concurrent-nvcache-cold 0 1 /tmp/nv" "concurrent-nvcache-warm 0 1 /tmp/nv"; do
			set -- $run
			[ "$3" = 1 ] && [ "$1" = concurrent-nvcache-cold ] && rm -rf /tmp/nv
			GPUCC_COMPILE_WORKERS=$2 __GL_SHADER_DISK_CACHE=$3 __GL_SHADER_DISK_CACHE_PATH=$4 GPUCC_VERBOSE=1 \
				timeout 120 $BIN/gpucc run --backend webgpu --cache-dir off $lim "$m" >/tmp/run.json 2>/tmp/run.err
			local rc=$?
			# GPUCC_VERBOSE=1: "gpucc: webgpu: K kernels, D distinct, C to compile" (identical kernels share a pipeline).
			echo "$(basename "$m" .onnx) $1: $(grep -h 'gpucc: webgpu:' /tmp/run.err | tail -1)" >>"$OUT/compile_kernels.txt"
			grep -v '^\[wgpu' /tmp/run.err >>"$OUT/visit.log"
			echo "{\"model\":\"$(basename "$m" .onnx)\",\"mode\":\"$1\",\"rc\":$rc,\"timings\":$(python3 -c 'import json,sys; d=json.load(open("/tmp/run.json")); print(json.dumps(d.get("timings", d.get("error"))))' 2>/dev/null || echo null)}" >>"$OUT/compile.jsonl"
			log "$(basename "$m") $1: exit $rc $(tail -1 "$OUT/compile.jsonl" | grep -o '"\(passes\|codegen\|compile\|total\)Ms": *[0-9.]*' | tr "\n" " ")"
		done
	done
}
suite_quick() {
	# GPUCC_FMA=on: the fused twins, opt-in until these bit tests pass on a GPU whose fma() is fused
	GPUCC_FMA=on tests quick_exact.txt 30 webgpu 'TestFMAProbe|TestJudgeProbe|TestFusedKernelsCompile'
	GPUCC_FMA=on tests quick_exact.txt 45 gpucc 'TestRowDivision|TestXMathPairs/webgpu|^TestAttentionOnline$/webgpu' -test.short
	warm
	benches quick_rows.txt 25 bench 'NN/(softmax|layernorm|tanh|gelu)/' 100x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_FMA=on
	benches quick_rows_nofma.txt 25 bench 'NN/(softmax|layernorm|tanh|gelu)/' 100x GPUCC_BENCH_NN=8192,1024,256,64
	benches quick_attn.txt 25 bench 'AttnTiles' 100x GPUCC_BENCH_ATTN=512,2048,4096 GPUCC_BENCH_ATTN_TILES="16x16k32 online"
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,layernorm,tanh,gelu timeout 30 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn.json" 2>>"$OUT/visit.log"
	log "torch_nn.py: exit $?"
	TORCH_NN_EAGER=1 timeout 20 python3 bench/torch_attn.py 64 512 2048 4096 >"$OUT/torch_attn.json" 2>>"$OUT/visit.log"
	log "torch_attn.py: exit $?"
	suite_enginequick
}
# enginequick (about 25 s): issue 35's per-run cost on the driver, what lavapipe could only count
# (TestRunCounts pins the calls: the same counts must hold here), after the queued runs' bits there (queued
# ahead of a real GPU, which lavapipe may not be) and wgpu's errors inside one scope. RunCost: warm runs of relu(a*b+c) over
# 1024 on a backend device, resident waiting, resident queued (RunOptions.NoWait, no wait and no map),
# launched keeping the output, host in and out (1024, and 128 KiB inputs through kept staging): us/run is the whole run's wall time, its kernel a few µs.
# Record: one timed dispatch recorded without submitting, through the binding's calls (as until
# 2026-12-05) against one cgo call and one error scope (runtime/gpu/record.go), untimed, and empty.
suite_enginequick() {
	tests quick_engine.txt 20 webgpu 'TestRunCounts|TestRunQueuedReleases'
	tests quick_engine.txt 20 gpucc 'TestRunNoWait[A-Za-z]*/webgpu'
	tests quick_engine.txt 10 gpu 'TestRecordErrors|TestQueuedBound|TestStagedUploads|TestRecordAhead|TestTimestampPlaces|TestUnmapError|TestWriteError'
	benches quick_engine.txt 15 webgpu 'RunCost' 3000x
	# Since 2026-12-05 a resident run like the last one submits the recording made during that one's wait (ahead/run 1):
	# the same run without it; and with the encoder's timestamps and their copy (GPUCC_TIMESTAMPS=encoder: the default until the
	# H100 timed the pass's own, resolved without a copy, at 39.1 µs against 45.8 on 2026-12-05).
	benches quick_engine.txt 10 webgpu 'RunCost/resident$' 3000x GPUCC_RECORD_AHEAD=off
	benches quick_engine.txt 10 webgpu 'RunCost/resident$' 3000x GPUCC_TIMESTAMPS=encoder
	benches quick_engine.txt 10 gpu 'LoneRun/runtimed' 2000x
	benches quick_engine.txt 10 gpu 'LoneRun/runtimed' 2000x GPUCC_TIMESTAMPS=encoder
	benches quick_engine.txt 10 gpu 'BenchmarkRecord' 20000x
	# engine8 (2026-12-05, seventh session): the allocation pins, the fused copy-and-check, a host run recorded ahead
	# (beside it without), and the root layer's own cost over a backend run that does nothing
	tests quick_engine.txt 30 gpu 'TestRunAllocs|TestRecordAheadReads|TestCopyCheckedPaths|TestUploadChecked|TestReadChecked'
	tests quick_engine.txt 20 webgpu 'TestRunAllocs'
	tests quick_engine.txt 40 gpucc 'TestRunAllocs/webgpu|TestReusedBuffersKeepOwners/webgpu'
	benches quick_engine.txt 10 webgpu 'RunCost/host$' 3000x GPUCC_RECORD_AHEAD=off
	benches quick_engine.txt 10 gpucc 'RootRun' 200000x
	grep -h '^BenchmarkRunCost\|^BenchmarkLoneRun\|^BenchmarkRecord\|counts_test' "$OUT/quick_engine.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# verify (about 150 s): the defaults the 2026-12-05 visits flipped, on the driver: the conv tiles (the spread,
# double-buffered rule and KeepConvTile's), online attention from 512 keys, the fused division by default (no
# GPUCC_FMA), their bits first; then row ops without GPUCC_FMA, and attention at 128-512 keys in both orders.
suite_verify() {
	tests verify_exact.txt 240 gpucc 'TestConvTiles/webgpu|TestConvSteps/webgpu|TestAttentionOnline/webgpu|TestAttentionLengths/webgpu|TestRowDivision|TestRandomRows/webgpu|TestTransformerFixtures/webgpu' -test.short
	warm
	benches verify_rows.txt 25 bench 'NN/(softmax|layernorm|tanh|gelu)/' 100x GPUCC_BENCH_NN=8192,1024,256,64
	benches verify_attn.txt 40 bench 'AttnTiles' 100x GPUCC_BENCH_ATTN=128,256,512 GPUCC_BENCH_ATTN_TILES="16x16k32 online"
	TORCH_NN_EAGER=1 timeout 20 python3 bench/torch_attn.py 64 128 256 512 >"$OUT/torch_attn_short.json" 2>>"$OUT/visit.log"
	log "torch_attn.py 128-512: exit $?"
}
# last (about 90 s): the online attention kernel's tiles at 2048 keys, d 64 and 128 (which one is the default,
# wgsl.DefaultOnlineTile), after their bits (TestAttentionOnlineTiles) and the views' late changes (TestSlice*,
# random graphs, the suite) on the driver; beside eager and SDPA
suite_last() {
	tests last_exact.txt 150 gpucc 'TestSlice[A-Za-z]*/webgpu|TestRandomGraphs/webgpu|TestSuite/webgpu|TestAttentionOnlineTiles/webgpu' -test.short
	# attn8's split order (ir.AttentionSplit, opt-in: a new rounding order, cpuref's) and attn9's tiles (w: planned for
	# the device's workgroup storage, which it is now granted; bN: spans of key blocks), short tier here (their full
	# tier, 2048 keys, is suite lastbits: it ran past 150 s on the H100 on 2026-12-05 and cut the timings off)
	tests last_exact.txt 30 gpu 'TestGrantsAdapterStorage|TestWorkgroupArrays'
	tests last_exact.txt 30 webgpu 'TestStorageReachesAttention'
	tests last_exact.txt 150 gpucc 'TestAttentionSplit/webgpu|TestAttentionSplitTiles/webgpu|TestAttentionWideTiles/webgpu|TestAttentionSpanTiles/webgpu' -test.short
	warm
	# d 64: the sixth session's flags, attn8's register-blocked rows (rN) and the split (@sP); a tile that does not
	# fit the shape is skipped by name, not timed as the default
	benches last_attn.txt 110 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_TILES="${ATTN_TILES:-online online16x16m online16x16c online16x16p online16x16l online16x16 online16x16t online16x16mcpli online16x16mcplit online8x32h online8x32mcpliht online32x8mcpli online8x32r2mcpliht online8x16r2mcplit online16x16r2mcplit online16x8r2mcplit online4x32r2mcpliht online@s2 online@s4 online16x16mcplit@s2 online16x16mcplit@s4 online8x16r2mcplit@s2 online16x16mcplitw online16x16b2w online16x16b4w online16x16b2mcplitw online16x16b4mcplitw online8x32b2mcplihtw online8x16r2b2mcplitw online16x16b2mcplitw@s4}"
	benches last_attn.txt 90 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_D=128 GPUCC_BENCH_ATTN_TILES="${ATTN_D128_TILES:-online online16x16 online16x16mcpli online16x16mcplit online32x8mcpli online16x16mcplit@s2 online16x16mcplit@s4 online16x16w online16x16mcplitw online8x32w online16x16b2w online16x16b2mcplitw online16x16b4mcplitw online8x32b2mcplihtw}"
	TORCH_NN_EAGER=1 timeout 20 python3 bench/torch_attn.py 64 2048 >"$OUT/torch_attn_last.json" 2>>"$OUT/visit.log"
	TORCH_NN_EAGER=1 timeout 20 python3 bench/torch_attn.py 128 2048 >"$OUT/torch_attn_last_d128.json" 2>>"$OUT/visit.log"
	log "torch_attn.py 2048: exit $?"
}
# ceiling (about 90 s): the online order's shape in Triton beside eager and gpucc's default kernel at 2048 and 4096 keys
suite_ceiling() {
	warm
	benches ceiling.txt 60 bench 'AttnTiles' 100x GPUCC_BENCH_ATTN=2048,4096 GPUCC_BENCH_ATTN_TILES="online online@s2"
	grep -h '^Benchmark' "$OUT/ceiling.txt" | awk '{print $1, $3, $4}' >>"$OUT/visit.log"
	timeout 120 python3 bench/triton_attn_ceiling.py 64 2048 4096 >"$OUT/ceiling.json" 2>>"$OUT/visit.log"
	log "triton_attn_ceiling.py: exit $? $(tr -d '\n ' <"$OUT/ceiling.json" | head -c 900)"
}
# attnsplit (about 150 s): the split order's parts in workgroups of their own (the split pass: a kernel of the parts, one
# part of one row tile a workgroup, and a combine kernel) on the driver: the split tests' bits, then attention at 512,
# 2048 and 4096 keys, d 64 and 128, in 2, 4 and 8 parts against the online order in one kernel, beside eager and SDPA
suite_attnsplit() {
	tests attnsplit_exact.txt 150 gpucc 'TestAttentionSplit/webgpu|TestAttentionSplitTiles/webgpu' -test.short
	warm
	benches attnsplit.txt 120 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=512,2048,4096 \
		GPUCC_BENCH_ATTN_TILES="${ATTN_TILES:-online online@s2 online@s4 online@s8 online16x16b4mcplitw online16x16b4mcplitw@s4 online16x16b2mcplitw@s8 online8x16@s4 online8x32@s4 online16x16mcplit@s4}"
	benches attnsplit.txt 60 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_D=128 \
		GPUCC_BENCH_ATTN_TILES="${ATTN_D128_TILES:-online online@s2 online@s4 online@s8 online16x16b2mcplitw@s4}"
	grep -h '^Benchmark' "$OUT/attnsplit.txt" | awk '{print $1, $3, $4, $5, $6, $7, $8}' >>"$OUT/visit.log"
	TORCH_NN_EAGER=1 timeout 30 python3 bench/torch_attn.py 64 512 2048 4096 >"$OUT/torch_attn_split.json" 2>>"$OUT/visit.log"
	TORCH_NN_EAGER=1 timeout 20 python3 bench/torch_attn.py 128 2048 >"$OUT/torch_attn_split_d128.json" 2>>"$OUT/visit.log"
	log "torch_attn.py: exit $? $(tr -d '\n ' <"$OUT/torch_attn_split.json" | head -c 600)"
}
# lastbits (up to 560 s): the split order's and the wide and span tiles' full tier on the driver (every tile under every
# case, 2048 keys at d 64 and 128, causal, in 4 parts), before any of them becomes wgsl.DefaultOnlineTile
suite_lastbits() {
	tests lastbits.txt 200 gpucc 'TestAttentionSplit/webgpu|TestAttentionSplitTiles/webgpu'
	tests lastbits.txt 360 gpucc 'TestAttentionWideTiles/webgpu|TestAttentionSpanTiles/webgpu'
}
# defaults (about 200 s): what the sessions of 2026-12-05 made default, on the driver: the fast paths (and, until b2e0c33, 128-thread rows
# kernels; their bits run in suite exact), the pass's own timestamps (enginequick), and the attention tiles' peers timed
# with the clock warmed (bench/gpuwarm.py), eager before and after gpucc's runs
suite_defaults() {
	tests defaults.txt 30 gpu 'TestGrantsAdapterStorage|TestWorkgroupArrays'
	suite_enginequick
	warm
	benches defaults_engine.txt 30 bench 'ExecutableRun/resident' 3000x GPUCC_BENCH_ELEMS=1024
	benches defaults_engine.txt 30 bench 'ExecutableRun/resident' 3000x GPUCC_BENCH_ELEMS=1024 GPUCC_TIMESTAMPS=encoder
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,logsoftmax,layernorm,exp,tanh,sigmoid,gelu timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_before.json" 2>>"$OUT/visit.log"
	log "torch_nn.py: exit $?"
	warm
	benches defaults_rows.txt 90 bench 'NN/(softmax|logsoftmax|layernorm|exp|tanh|sigmoid|gelu)/' 200x GPUCC_BENCH_NN=8192,1024,256,64
	TORCH_NN_EAGER=1 TORCH_NN_ONLY=softmax,logsoftmax,layernorm,exp,tanh,sigmoid,gelu timeout 60 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn_after.json" 2>>"$OUT/visit.log"
	log "torch_nn.py: exit $?"
	TORCH_NN_EAGER=1 timeout 30 python3 bench/torch_attn.py 64 2048 >"$OUT/torch_attn_before.json" 2>>"$OUT/visit.log"
	warm
	benches defaults_attn.txt 60 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_TILES="online online16x16 online16x16mcplitw"
	benches defaults_attn.txt 60 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_D=128 GPUCC_BENCH_ATTN_TILES="online online16x16 online16x16mcplitw"
	TORCH_NN_EAGER=1 timeout 30 python3 bench/torch_attn.py 64 2048 >"$OUT/torch_attn_after.json" 2>>"$OUT/visit.log"
	TORCH_NN_EAGER=1 timeout 30 python3 bench/torch_attn.py 128 2048 >"$OUT/torch_attn_d128.json" 2>>"$OUT/visit.log"
	log "torch_attn.py: exit $?"
	grep -h '^Benchmark' "$OUT"/defaults_*.txt | sed 's/  */ /g' >>"$OUT/visit.log"
}
suite_conv() {
	warm
	benches bench_conv.txt 120 bench 'Conv' 20x GPUCC_BENCH_CONV=32 GPUCC_BENCH_CONV_TILES="${TILES:-}" GPUCC_BENCH_CONV_STAGES="${STAGES:-}"
	timeout 100 python3 bench/torch_conv.py 32 ${STAGES:+--stages} >"$OUT/torch_conv.json" 2>>"$OUT/visit.log"
	log "torch_conv.py: exit $?"
}
suite_conv1() {
	tests conv1_exact.txt 300 gpucc 'TestConvTiles' -test.short
	mkdir -p /tmp/vision
	[ -f /tmp/vision/resnet18.onnx ] || timeout 240 python3 bench/torch_vision.py /tmp/vision >"$OUT/torch_vision.txt" 2>&1
	log "torch_vision.py: $(grep -h "^[a-z0-9_]* {'eager_ms'" "$OUT/torch_vision.txt" 2>/dev/null | tr '\n' ' ')"
	warm
	benches bench_conv_rule.txt 360 bench 'ConvRule' 400x GPUCC_BENCH_VISION=/tmp/vision
	grep -h 'dispatch-ms\|conv tiles\|bit for bit' "$OUT/bench_conv_rule.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
	benches bench_conv1.txt 300 bench '^BenchmarkConv$' 50x GPUCC_BENCH_CONV=1 GPUCC_BENCH_CONV_STAGES=1 \
		GPUCC_BENCH_CONV_TILES="${TILES:-128x64/8x8k8 64x64/8x8k8 64x64/4x4k16 32x64/4x8k8 32x32/2x2k16 16x32/1x2k16 32x16/2x1k16 16x16/1x1k16 128x64/8x8k8s2 32x32/2x2k16s2 16x32/1x2k16s2 16x16/1x1k16s2}"
	timeout 100 python3 bench/torch_conv.py 1 --stages >"$OUT/torch_conv1.json" 2>>"$OUT/visit.log"
	log "torch_conv.py 1: exit $?"
}
suite_mmquick() {
	warm
	benches mmquick_matmul.txt 60 bench 'MatmulTiles' 1x GPUCC_BENCH_MATMUL_SHAPES=4096 GPUCC_BENCH_MATMUL_REPS=10 \
		GPUCC_BENCH_MATMUL_TILES="${MM_TILES:-64x128/8x8k8v4 64x128/8x8k8v4s2 128x128/8x8k8v4s2}"
	grep -h 'TFLOP/s, exact' "$OUT/mmquick_matmul.txt" | sed 's/^ *matmul_tiles_bench_test.go:[0-9]*: //' >>"$OUT/visit.log"
	mkdir -p /tmp/vision
	[ -f /tmp/vision/resnet18.onnx ] || timeout 60 python3 bench/torch_vision.py /tmp/vision resnet18 >"$OUT/torch_vision.txt" 2>&1
	log "torch_vision.py resnet18: $(grep -h "^resnet18 {" "$OUT/torch_vision.txt" 2>/dev/null)"
	warm
	benches mmquick_rule.txt 60 bench 'ConvRule' 200x GPUCC_BENCH_VISION=/tmp/vision GPUCC_BENCH_VISION_MODELS=resnet18
	grep -h 'dispatch-ms\|conv tiles\|bit for bit' "$OUT/mmquick_rule.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
	benches mmquick_conv1.txt 60 bench '^BenchmarkConv$/resnet' 30x GPUCC_BENCH_CONV=1 GPUCC_BENCH_CONV_STAGES=1 \
		GPUCC_BENCH_CONV_TILES="${TILES:-16x32/1x2k16 16x16/1x1k16 16x16/1x1k16s2}"
	grep -h '^BenchmarkConv' "$OUT/mmquick_conv1.txt" | grep -v '/fast' | awk '{print $1, $5, $6}' >>"$OUT/visit.log"
}
suite_rows() {
	# The FMA probe's verdict on the driver, then the division's and the row kernels' bits against cpuref on the
	# path it picks: the fused twins (ir.Fused, div_row_fma) where the probe saw fma() round once (issue 35 item 1)
	# (GPUCC_FMA=on: the twins are opt-in until these tests pass on a GPU whose fma() is fused)
	GPUCC_FMA=on tests rows_exact.txt 60 webgpu 'TestFMAProbe|TestJudgeProbe|TestKeepContractsRefused|TestFusedKernelsCompile'
	GPUCC_FMA=on tests rows_exact.txt 180 gpucc 'TestXMathPairs/webgpu|TestRow(Knobs|Division|Max)|TestRandomRows/webgpu|TestSuite/webgpu|TestFastPathsBackends/webgpu' -test.short
	# the fast-path probe on the driver (runtime/webgpu/fastprobe.go: every float32 inside each path's interval on
	# hardware; TestFastProbe logs its time and any mismatching inputs; TestFastProbeRejects shows it catches wrong bodies)
	GPUCC_FMA=on tests rows_fastprobe.txt 300 webgpu '^(TestFastProbe|TestFastProbeRejects|TestFastPathsChoice|TestFastProbeDiskCache|TestProbeSpans|TestExportNoFastPaths)$' -test.short
	# the same with the exp/tanh/sigmoid fast paths on where that probe passed (GPUCC_FAST_PATHS=on, the default since
	# the H100's driver passed these on 2026-12-05)
	GPUCC_FMA=on GPUCC_FAST_PATHS=on tests rows_exact_fast.txt 180 gpucc 'TestXMathPairs/webgpu|TestRow(Knobs|Division|Max)|TestRandomRows/webgpu|TestSuite/webgpu|^TestAttentionOnline$/webgpu|TestTransformerFixtures/webgpu' -test.short
	# the rows kernels' workgroup sizes (wgsl.RowThreads 32, 64, 256 besides the default 128), every one, before they are timed
	tests rows_exact.txt 120 gpucc 'TestRowThreads'
	warm
	benches bench_rows.txt 120 bench 'NN/(softmax|logsoftmax|layernorm|colsum|rowsum|exp|tanh|sigmoid|gelu)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_FMA=on GPUCC_FAST_PATHS=on
	benches bench_rows_after.txt 90 bench 'NN/(attention|softmax|logsoftmax|layernorm|colsum)/' 200x GPUCC_BENCH_NN=8192,1024,256,64
	# the same kernels' bits by other schedules (nn_bench_test.go): exp, tanh and sigmoid without their fast paths
	# (nofast, the fifth visit's kernels), and a rows kernel's workgroup of 64 or 128 threads, not 256 (128 was the default from 2026-12-05 14:04 to 18:30)
	# (the rootall/divslow/floatmax knobs were timed on 12-04 and 12-05: see RESULTS.md)
	benches bench_rows_nofast.txt 90 bench 'NN/(softmax|logsoftmax|exp|tanh|sigmoid|gelu)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=nofast
	benches bench_rows_threads64.txt 60 bench 'NN/(softmax|logsoftmax|layernorm)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=threads64
	benches bench_rows_threads128.txt 60 bench 'NN/(softmax|logsoftmax|layernorm)/' 200x GPUCC_BENCH_NN=8192,1024,256,64 GPUCC_BENCH_ROWS=threads128
	# without the fused twins (the default: Dekker's products, as before the probe), beside bench_rows.txt
	benches bench_rows_nofma.txt 90 bench 'NN/(softmax|logsoftmax|layernorm|exp|tanh|sigmoid|gelu)/' 200x GPUCC_BENCH_NN=8192,1024,256,64
	timeout 100 python3 bench/torch_nn.py 8192 1024 256 64 >"$OUT/torch_nn.json" 2>>"$OUT/visit.log"
	log "torch_nn.py: exit $?"
}
suite_attn() {
	# Every WGSL attention kernel gives cpuref's bits on the driver before any is timed: the full-row
	# tiles, and the online order's kernel (TestAttentionOnline, full tier: 2048 keys at d 64 and 128 too).
	tests attn_exact.txt 240 gpucc 'TestAttentionTiles/webgpu|TestAttentionEdges/webgpu|TestAttentionLengths/webgpu' -test.short
	tests attn_exact.txt 300 gpucc 'TestAttentionOnline/webgpu|TestAttentionOnlineTiles/webgpu'
	warm
	benches bench_attn.txt 60 bench 'NN/(attn|fusedattn|attention)/' 200x GPUCC_BENCH_NN=8192,1024,256,64
	benches bench_attn.txt 90 bench 'NN/(attn|fusedattn)/' 200x GPUCC_BENCH_NN=8192,1024,2048,64
	# The online order's kernel beside the full-row default (16x16k32), d 64 and 128: where the online
	# order becomes the default (ir.AttentionOnlineFrom) is read from these.
	benches bench_attn.txt 300 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=128,256,512,1024,2048,4096 GPUCC_BENCH_ATTN_TILES="16x16k32 online online8x32 online32x8 online64x4"
	benches bench_attn.txt 180 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=512,2048,4096 GPUCC_BENCH_ATTN_D=128 GPUCC_BENCH_ATTN_TILES="16x16k32 online online8x32 online32x8 online64x4"
	# The full-row kernel under each tile (ATTN_SWEEP=1; ATTN_TILES="16x16k32 ..." picks), d 64 and 128.
	if [ -n "${ATTN_SWEEP:-}" ]; then
		benches bench_attn.txt 300 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_TILES="${ATTN_TILES:-}"
		benches bench_attn.txt 120 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=256 GPUCC_BENCH_ATTN_TILES="${ATTN_TILES:-16x16k32 16x16k64g 8x32k64g 8x32k64gc64 rows}"
		benches bench_attn.txt 120 bench 'AttnTiles' 200x GPUCC_BENCH_ATTN=2048 GPUCC_BENCH_ATTN_D=128 GPUCC_BENCH_ATTN_TILES="${ATTN_TILES:-16x16k32 16x16k64g 8x32k64g 8x32k64gc64 rows}"
	fi
	timeout 120 python3 bench/torch_attn.py 64 128 256 512 1024 2048 4096 >"$OUT/torch_attn.json" 2>>"$OUT/visit.log"
	log "torch_attn.py: exit $?"
	timeout 90 python3 bench/torch_attn.py 128 512 2048 4096 >"$OUT/torch_attn_d128.json" 2>>"$OUT/visit.log"
	log "torch_attn.py d128: exit $?"
}
# upsweep (about 30 s): the upload ring's phases (fill, wait for a map, unmap and submit; BenchmarkTransfer) at 256
# MiB in 16 (the default) and 64 MiB chunks, with a Flush after each upload and queued one after another; DeviceTensor's
# upload in 16, 32 and 64 MiB chunks; the GPU's copy out of staging alone (StagingParts' dma-up). On 2026-12-06 a ring of
# 3 and 4 buffers gained nothing on the H100 (an upload is bound by that copy), so the ring's length is no knob
suite_upsweep() {
	warm
	for c in 16777216 67108864; do
		benches upsweep.txt 30 gpu 'Transfer/upload-checked' 10x GPUCC_BENCH_BYTES=268435456 GPUCC_BENCH_CHUNK=$c
		echo "## chunk=$c" >>"$OUT/upsweep.txt"
	done
	for c in 16777216 33554432 67108864 16777216; do
		benches upsweep.txt 30 bench 'TensorTransfer/upload' 20x GPUCC_BENCH_BYTES=268435456 GPUCC_UPLOAD_CHUNK=$c
		echo "## tensor chunk=$c" >>"$OUT/upsweep.txt"
	done
	for c in 16777216 67108864; do
		benches upsweep.txt 30 gpu 'StagingParts/(dma-up|into-staging-checked)' 5x GPUCC_BENCH_BYTES=268435456 GPUCC_BENCH_CHUNK=$c
		echo "## parts chunk=$c" >>"$OUT/upsweep.txt"
	done
	grep -h '^Benchmark\|^## ' "$OUT/upsweep.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
# runprof (about 20 s): where a warm resident run's host time goes on the driver: CPU profiles (pprof, from the Go side:
# a cgo call's time is its Go caller's) of RunCost/resident over 150000 runs (about 6 s each: the profiler samples at 100 Hz), with the next run recorded ahead (the
# default) and without (GPUCC_RECORD_AHEAD=off)
suite_runprof() {
	warm
	for a in on off; do
		(cd runtime/webgpu && GPUCC_RECORD_AHEAD=$a timeout 60 "$OLDPWD/$BIN/webgpu.test" -test.run '^$' -test.bench 'RunCost/resident$' \
			-test.benchtime 150000x -test.cpuprofile "$OUT/runcost_ahead_$a.pprof") >>"$OUT/runprof.txt" 2>&1
		log "runprof ahead=$a: exit $?"
	done
	grep -h '^Benchmark' "$OUT/runprof.txt" | sed 's/  */ /g' >>"$OUT/visit.log"
}
suite_engine() {
	timeout 60 python3 bench/torch_bench.py >"$OUT/torch.json" 2>>"$OUT/visit.log"
	warm
	benches bench_engine.txt 90 bench 'ExecutableRun' 10x GPUCC_BENCH_ELEMS=67108864
	benches bench_engine.txt 60 bench 'TensorTransfer' 10x GPUCC_BENCH_BYTES=268435456
	# Host copies on 8 goroutines (the bound before 2026-12-04) against 16 (now); runtime/gpu's path with and without the check.
	benches bench_engine.txt 60 bench 'TensorTransfer' 10x GPUCC_BENCH_BYTES=268435456 GPUCC_COPY_WORKERS=8
	benches bench_engine.txt 60 gpu 'Transfer' 10x GPUCC_BENCH_BYTES=268435456 GPUCC_COPY_WORKERS=8
	benches bench_engine.txt 60 gpu 'Transfer' 10x GPUCC_BENCH_BYTES=268435456
	# The staging path's parts, each alone, from filled memory (2026-12-05): the host's copy into mapped upload staging
	# (plain, checked), out of read staging (plain, checked, and checked64k: the readback's check until then), and the GPU's
	# copies alone. An upload through the ring runs near the slower of into-staging-checked and dma-up.
	benches bench_engine.txt 60 gpu 'StagingParts' 5x GPUCC_BENCH_BYTES=268435456
	# The check fused into the copy (runtime/gpu/internal/copycheck, default since 2026-12-05) against the blocks it
	# replaced (GPUCC_COPY_CHECK=blocks), and the check's own speed on host memory
	benches bench_engine.txt 60 bench 'TensorTransfer' 10x GPUCC_BENCH_BYTES=268435456 GPUCC_COPY_CHECK=blocks
	benches bench_engine.txt 60 gpu 'Transfer$' 10x GPUCC_BENCH_BYTES=268435456 GPUCC_COPY_CHECK=blocks
	benches bench_engine.txt 60 gpu 'StagingParts' 5x GPUCC_BENCH_BYTES=268435456 GPUCC_COPY_CHECK=blocks
	benches bench_engine.txt 30 gpu 'CopyChecked|CheckSmall' 1s
	benches bench_engine.txt 120 bench 'MLPTrainStep' 20x GPUCC_BENCH_MLP=4096,1024,1024,16
	benches bench_engine.txt 60 gpu 'RoundTrip|TinyDispatch' 200x
	benches bench_engine.txt 90 bench 'Upload|Readback' 5x GPUCC_BENCH_BYTES=268435456
	# A small run's cost beyond its kernel: host in and out (one wait since 2026-12-04), and resident.
	benches bench_engine.txt 60 bench 'ExecutableRun' 3000x GPUCC_BENCH_ELEMS=1024
	benches bench_engine.txt 30 bench 'ExecutableRun/resident' 3000x GPUCC_BENCH_ELEMS=1024 GPUCC_RECORD_AHEAD=off
	benches bench_engine.txt 60 gpu 'LoneRun' 2000x
	benches bench_engine.txt 60 bench 'LaunchChain' 200x GPUCC_BENCH_ELEMS=1048576
	# 200 launched runs keeping 16 MiB outputs each, released at the round's end: the pool keeps a round's worth.
	benches bench_engine.txt 120 bench 'LaunchKept' 5x GPUCC_BENCH_KEPT=4194304 GPUCC_BENCH_QUEUE=200
	# Where a resident run's time beyond its kernel goes: a CPU profile of 20000 small runs.
	(cd bench && GPUCC_BENCH_ELEMS=1048576 timeout 60 ../$BIN/bench.test -test.run '^$' -test.bench 'ExecutableRun/resident' \
		-test.benchtime 150000x -test.cpuprofile "$OUT/resident.prof") >>"$OUT/bench_engine.txt" 2>&1
	log "resident profile: exit $?"
	cp $BIN/bench.test "$OUT/" 2>/dev/null # pprof needs the binary
}
# mlp (about 90 s): issue 35's MLP train step (4096, 1024→1024→1024→16), the whole step and each of its matmuls and
# column sums alone (BenchmarkMLPStepKernels: which tile each takes, at what TFLOP/s), then the step beside each of
# its own kernels run alone, epilogues included (BenchmarkMatmulMLPStep's kernel times), clock warmed
suite_mlp() {
	warm
	benches bench_mlp.txt 120 bench 'MLPTrainStep/resident' 20x GPUCC_BENCH_MLP=4096,1024,1024,16
	benches bench_mlp.txt 180 bench 'MLPStepKernels' 50x GPUCC_BENCH_MLP=4096,1024,1024,16
	# the step beside each of its kernels run alone with its epilogue (RunOptions.KernelTimes), MLP_SETS as mmsweep's
	benches bench_mlp.txt 150 bench 'MatmulMLPStep' 20x GPUCC_BENCH_MLP=4096,1024,1024,16 GPUCC_BENCH_MLP_TILES="${MLP_SETS:-base}"
	grep -h '^Benchmark' "$OUT/bench_mlp.txt" | awk '{print $1, $4, $5}' >>"$OUT/visit.log"
	grep -h '^  [a-z_0-9]* \|^  sum ' "$OUT/bench_mlp.txt" >>"$OUT/visit.log"
}
suite_ops() {
	benches ops_vs_builtin.txt 120 bench 'OpsVsBuiltin' 20x
	timeout 900 $BIN/accuracy -stride 1 -j 16 -check -doc cpuref/cpuref.go >"$OUT/accuracy.txt" 2>>"$OUT/visit.log"
	log "accuracy: exit $?"
}
suite_tune() {
	local s=1024,4096,4096x64x4096,64x4096x64,1x4096x4096,1023x1025x1027,4096x4096x1,256,2048,8192,1000
	timeout 90 python3 bench/torch_matmul.py $s >"$OUT/torch_matmul.json" 2>>"$OUT/visit.log"
	timeout -s INT 360 $BIN/gpucc bench --tune --fast --tune-shapes $s --tune-budget 15s --tune-reps 5 --tune-table "$OUT/h200.json" >"$OUT/tune.json" 2>>"$OUT/visit.log"
	log "tune: exit $?"
}
suite_matmul() {
	tests matmul_exact.txt 240 gpucc 'TestMatmulStagedExact|TestBatchedMatmulTiles' -test.short
	warm
	benches bench_matmul.txt 420 bench 'MatmulTiles' 1x GPUCC_BENCH_MATMUL_SHAPES="${SHAPES:-4096}" GPUCC_BENCH_MATMUL_TILES="${MM_TILES:-}"
	grep -h 'TFLOP/s, exact' "$OUT/bench_matmul.txt" | sed 's/^ *matmul_tiles_bench_test.go:[0-9]*: //' >>"$OUT/visit.log"
	timeout 90 python3 bench/torch_matmul.py "${SHAPES:-4096}" >"$OUT/torch_matmul.json" 2>>"$OUT/visit.log"
	log "torch_matmul.py: exit $? $(grep -o '"matmul_tflops": {[^}]*}' "$OUT/torch_matmul.json")"
}
suite_mmsweep() {
	warm
	benches bench_matmul.txt 300 bench 'MatmulTiles' 1x GPUCC_BENCH_MATMUL_MODES=exact \
		GPUCC_BENCH_MATMUL_SHAPES="${SHAPES:-4096,4096x1024x1024,4096x1024x1024tb,1024x4096x1024ta}" GPUCC_BENCH_MATMUL_TILES="${MM_TILES:-}"
	benches bench_matmul.txt 150 bench 'MatmulTiles' 1x GPUCC_BENCH_MATMUL_MODES=fast GPUCC_BENCH_MATMUL_SHAPES=4096 \
		GPUCC_BENCH_MATMUL_TILES="${MM_FAST_TILES:-${MM_TILES:-}}"
	grep -h 'TFLOP/s' "$OUT/bench_matmul.txt" | sed 's/^ *matmul_tiles_bench_test.go:[0-9]*: //' >>"$OUT/visit.log"
	benches bench_mlp.txt 150 bench 'MatmulMLPStep' 20x GPUCC_BENCH_MLP=4096,1024,1024,16 GPUCC_BENCH_MLP_TILES="${MLP_SETS:-base}"
	grep -h '^Benchmark' "$OUT/bench_mlp.txt" | awk '{print $1, $3, $4, $5, $6}' >>"$OUT/visit.log"
	timeout 90 python3 bench/torch_matmul.py 4096 >"$OUT/torch_matmul.json" 2>>"$OUT/visit.log"
	log "torch_matmul.py: exit $? $(grep -o '"matmul_tflops": {[^}]*}' "$OUT/torch_matmul.json")"
}
# mmthin (about 60 s): the MLP step's thin products (its last layer: N or K of 16) under tiles of one output a thread
# and deep k-steps, beside the rule (16x16/1x1k16: 64 workgroups for the weight gradient, 0.112 ms alone on an H100)
suite_mmthin() {
	warm
	benches bench_thin.txt 150 bench 'MatmulTiles' 1x GPUCC_BENCH_MATMUL_MODES=exact \
		GPUCC_BENCH_MATMUL_SHAPES="${THIN_SHAPES:-1024x4096x16ta,4096x1024x16,4096x16x1024tb}" \
		GPUCC_BENCH_MATMUL_TILES="${THIN_TILES:-rule 4x16/1x1k64 8x16/1x1k32 8x16/1x1k64 16x16/1x1k64 32x16/2x1k64 16x16/4x4k16v4s2l 16x16/4x4k32v4s2l 32x16/4x4k32v4s2l 64x16/4x4k16v4s2l 64x64/4x4k16v4s2l}"
	grep -h 'TFLOP/s' "$OUT/bench_thin.txt" | sed 's/^ *matmul_tiles_bench_test.go:[0-9]*: //' >>"$OUT/visit.log"
}
# kerneltimes (about 15 s): each kernel of the exported models alone (gpucc run --kernel-times, GPU timestamps), on their
# recorded inputs, after a run that compiles and warms
suite_kerneltimes() {
	warm
	local m shape
	for m in transformer:1,128,256 mlp:64,256 digits:32,64; do
		shape=${m#*:} m=${m%%:*}
		python3 -c "import numpy as np,sys; np.save(sys.argv[1], np.fromfile(sys.argv[2], '<f4').reshape([int(d) for d in sys.argv[3].split(',')]))" \
			/tmp/$m.npy onnx/testdata/models/$m.input.bin $shape
		timeout 120 $BIN/gpucc run --kernel-times --backend webgpu --max-ops 200000000 --input x=/tmp/$m.npy onnx/testdata/models/$m.onnx \
			>"$OUT/kerneltimes_$m.json" 2>>"$OUT/visit.log"
		log "kernel times $m: exit $? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['timings']['dispatchMs'], [(k['kernel'], k['ms']) for k in d.get('kernelTimes', [])])" "$OUT/kerneltimes_$m.json" 2>&1 | head -c 1500)"
	done
	# the text-transformer fixtures (typed: int64 ids) at 512 tokens: their gathers, typed nodes and islands' kernels
	local d=onnx/testdata/transformers
	for m in gpt2 bert decoder; do
		local a="--input input_ids=$d/$m.512.ids.npy"
		[ -e $d/$m.512.mask.npy ] && a="$a --input attention_mask=$d/$m.512.mask.npy"
		timeout 120 $BIN/gpucc run --kernel-times --backend webgpu $a $d/$m.onnx >"$OUT/kerneltimes_$m.json" 2>>"$OUT/visit.log"
		log "kernel times $m (512 tokens): exit $? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('kernelTimes', []); print(d['timings']['dispatchMs'], 'sum', round(sum(k['ms'] for k in t), 4), sorted([(k['ms'], k['kernel']) for k in t], reverse=True)[:10])" "$OUT/kerneltimes_$m.json" 2>&1 | head -c 1500)"
	done
}
suite_gather() {
	warm
	benches bench_gather.txt 120 bench 'EmbeddingGather' 50x GPUCC_BENCH_BACKENDS=webgpu
	timeout 60 python3 bench/torch_gather.py 50257 768 4096 >"$OUT/torch_gather.json" 2>>"$OUT/visit.log"
	log "torch_gather.py: exit $?"
}
suite_scatter() {
	tests scatter.txt 180 gpucc 'TestScatterBackends/webgpu|TestScatterAtLoopBudget/webgpu|TestEmbeddingStepBackends/webgpu|TestScatterLinear' -test.short
	warm
	benches bench_scatter.txt 120 bench 'BenchmarkScatter$' 20x GPUCC_BENCH_BACKENDS=webgpu
}
suite_typed() {
	tests typed.txt 240 gpucc 'TestTypedBackends/webgpu|TestTypedExecutable/webgpu|TestTypedWideReductions|TestTypedLarge/webgpu' -test.short
	tests typed_onnx.txt 120 onnx 'TestTransformersOnWebGPU'
}
suite_userbench() {
	warm
	local m
	for m in mlp digits transformer; do
		timeout 300 $BIN/gpucc bench --backends cpu,native,webgpu --cold-runs 3 --warm-budget 3s --max-ops 200000000 \
			-o "$OUT/userbench/$m" onnx/testdata/models/$m.onnx >"$OUT/userbench_$m.json" 2>>"$OUT/visit.log"
		log "gpucc bench $m.onnx: exit $?"
	done
}
suite_transformers() {
	timeout 240 python3 onnx/testdata/transformers/export.py "$OUT/transformers" >"$OUT/transformers.txt" 2>&1
	log "transformers export.py: exit $? ($(ls "$OUT/transformers" 2>/dev/null | wc -l) files)"
	timeout 240 python3 onnx/testdata/transformers/export_kv.py "$OUT/transformers" >"$OUT/transformers_kv.txt" 2>&1
	log "transformers export_kv.py: exit $?"
}
suite_decode() {
	mkdir -p /tmp/decode
	timeout 240 python3 bench/torch_decode.py /tmp/decode >"$OUT/torch_decode.json" 2>"$OUT/torch_decode.log"
	log "torch_decode.py: exit $? ($(ls -s /tmp/decode 2>/dev/null | tr '\n' ' '))"
	[ -s "$OUT/torch_decode.json" ] || cp /tmp/decode/torch_decode.json "$OUT/" 2>/dev/null # what it had when its time ran out
	warm
	local p=34,32,204,127,151,153,182,7 m b
	for m in onnx/testdata/transformers/gpt2kv.onnx onnx/testdata/transformers/gpt2kv_grow.onnx onnx/testdata/transformers/gpt2kv_f16.onnx /tmp/decode/gpt2small_kv.onnx; do
		for b in webgpu native; do
			[ -f "$m" ] || continue
			[ $b = native ] && [ "${m#/tmp}" != "$m" ] && continue # the small model on webgpu only: 10 minutes a command
			timeout 180 $BIN/gpucc generate --backend $b --json --prompt $p --tokens 64 --max-len 128 "$m" \
				>"$OUT/decode_$(basename "$m" .onnx)_$b.json" 2>>"$OUT/visit.log"
			log "gpucc generate $(basename "$m") on $b: exit $? $(grep -o '"cache":"[a-z]*"\|"prefillMs":[0-9.]*\|"decodeMs":[0-9.]*\|"dispatchMs":[0-9.]*\|"dispatchClock":"[a-z-]*"\|"compileMs":[0-9.]*' "$OUT/decode_$(basename "$m" .onnx)_$b.json" | tr '\n' ' ')"
		done
	done
	# the growing caches written by a scatter into the donated past, in place (GPUCC_KV_WRITE=scatter,
	# DecoderOptions.ScatterCache): the rows' bytes a step, against a submission and a wait per island;
	# and a typed run's steps queued with one wait (webgpu.TypedQueue, the default since 2026-12-05) or waiting a step
	# at a time (GPUCC_TYPED_QUEUE=off: "wait"), each alone and both
	local v
	for m in onnx/testdata/transformers/gpt2kv_grow.onnx /tmp/decode/gpt2small_kv.onnx; do
		[ -f "$m" ] || continue
		for v in wait scatter queue scatter_queue; do
			env $(case $v in *scatter*) echo GPUCC_KV_WRITE=scatter ;; esac) GPUCC_TYPED_QUEUE=$(case $v in *queue) echo on ;; *) echo off ;; esac) \
				timeout 180 $BIN/gpucc generate --backend webgpu --json --prompt $p --tokens 64 --max-len 128 "$m" \
				>"$OUT/decode_$(basename "$m" .onnx)_webgpu_$v.json" 2>>"$OUT/visit.log"
			log "gpucc generate $(basename "$m") on webgpu, $v: exit $? $(grep -o '"decodeMs":[0-9.]*\|"dispatchMs":[0-9.]*\|"stepKernels":[0-9]*\|"stepBytesWritten":[0-9]*' "$OUT/decode_$(basename "$m" .onnx)_webgpu_$v.json" | tr '\n' ' ')"
		done
	done
	# the step's kernels on webgpu (--explain), for GPT-2 small's growing cache rewritten to 128 rows
	[ -f /tmp/decode/gpt2small_kv.onnx ] &&
		log "gpucc generate --explain gpt2small_kv on webgpu: $(timeout 60 $BIN/gpucc generate --backend webgpu --explain --prompt $p --tokens 2 --max-len 128 /tmp/decode/gpt2small_kv.onnx 2>&1 | grep '^step:')"
	# gpt2kv_hf: the same step in optimum's attention_mask convention (its tokens and logits are
	# gpt2kv's), alone and as a left-padded batch of 4 prompts (lengths 8, 3, 5, 8): the batch's
	# per-step time beside the single prompt's (added time: at most 30 s, two compiles)
	local hf=onnx/testdata/transformers/gpt2kv_hf.onnx
	timeout 15 $BIN/gpucc generate --backend webgpu --json --prompt $p --tokens 64 --max-len 128 $hf \
		>"$OUT/decode_gpt2kv_hf_webgpu.json" 2>>"$OUT/visit.log"
	log "gpucc generate gpt2kv_hf on webgpu: exit $? $(grep -o '"tokens":\[[0-9,]*\]\|"decodeMs":[0-9.]*\|"dispatchMs":[0-9.]*\|"compileMs":[0-9.]*' "$OUT/decode_gpt2kv_hf_webgpu.json" | tr '\n' ' ')"
	timeout 15 $BIN/gpucc generate --backend webgpu --json --prefill --prompt "$p;10,11,12;20,21,22,23,24;$p" --tokens 64 --max-len 128 $hf \
		>"$OUT/decode_gpt2kv_hf_batch4_webgpu.json" 2>>"$OUT/visit.log"
	log "gpucc generate gpt2kv_hf, a batch of 4 on webgpu: exit $? $(grep -o '"decodeMs":[0-9.]*\|"dispatchMs":[0-9.]*\|"compileMs":[0-9.]*' "$OUT/decode_gpt2kv_hf_batch4_webgpu.json" | head -3 | tr '\n' ' ')"
	python3 - "$OUT" >"$OUT/decode_summary.json" 2>>"$OUT/visit.log" <<'PY'
import json, os, sys
o = sys.argv[1]
t = json.load(open(os.path.join(o, "torch_decode.json")))
r = {}
for cfg, m in (("fixture", "gpt2kv"), ("fixture", "gpt2kv_grow"), ("fixture", "gpt2kv_f16"), ("small", "gpt2small_kv")):
    for b in ("webgpu", "native", "webgpu_wait", "webgpu_scatter", "webgpu_queue", "webgpu_scatter_queue"):
        if b.startswith("webgpu_") and m not in ("gpt2kv_grow", "gpt2small_kv"):
            continue
        try:
            g = json.load(open(os.path.join(o, "decode_%s_%s.json" % (m, b))))
            row = {k: g.get(k) for k in ("cache", "compileMs", "prefillMs", "decodeMs", "dispatchMs", "dispatchClock", "stepKernels", "stepBytesWritten")}
            for peer in ("hf_eager", "hf_sdpa", "step"):
                p = t[cfg].get(peer, {})
                if "token_ms" in p:
                    row[peer + "_token_ms"] = p["token_ms"]
                    row["ratio_vs_" + peer] = g["decodeMs"] / p["token_ms"]
                    row["same_tokens_as_" + peer] = g["tokens"] == p["tokens"]
            r["%s/%s" % (m, b)] = row
        except Exception as e:
            r["%s/%s" % (m, b)] = {"error": repr(e)[:300]}
print(json.dumps(r, indent=1))
PY
	log "decode summary: $(tr -d ' \n' <"$OUT/decode_summary.json" | head -c 1500)"
	# What a one-row tile would gain for decoding's matrix-vector products (GPT-2 small's c_attn, c_fc,
	# mlp c_proj and lm_head): the tuner's default tile beside the best, into a table of its own (not read above)
	timeout -s INT 100 $BIN/gpucc bench --tune --tune-shapes 1x768x2304,1x768x3072,1x3072x768,1x768x50257 --tune-budget 6s \
		--tune-reps 5 --tune-table "$OUT/decode_gemv_table.json" >"$OUT/decode_gemv.json" 2>>"$OUT/visit.log"
	log "decode GEMV tiles: exit $?"
}

[ $# -gt 0 ] || { sed -n '2,40p' "$0"; exit 2; }
date -u >"$OUT/date.txt"; nvidia-smi -L >>"$OUT/date.txt" 2>&1
$BIN/gpucc info >"$OUT/info.json" 2>>"$OUT/visit.log"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv -lms 250 >"$OUT/clocks.csv" 2>/dev/null &
smi=$!
for s in "$@"; do
	log "suite $s"
	if declare -F "suite_$s" >/dev/null; then "suite_$s"; else log "no suite $s"; fi
	tar -cJf "$R/visit.tar.xz" -C "$OUT" .
done
kill $smi 2>/dev/null
log done
