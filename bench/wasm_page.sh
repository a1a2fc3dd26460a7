#!/usr/bin/env bash
# The page's wasm backend (gpucc's C kernels, built by the page's server,
# run in Chromium's own WebAssembly) beside ONNX Runtime Web's wasm backend,
# one thread each, in one headless Chromium page: web's TestWasmPageTime
# on the PP-OCRv4 detector (320²), recognizer (48×320) and Silero VAD's
# float16 export. Each line is one round: the least over its runs of ORT's
# session.run and of gpucc's upload + kernels + readback, in ms.
#
#   bash bench/wasm_page.sh
#   GPUCC_OCR_SIZE=640 bash bench/wasm_page.sh   # the detector at 640², the recognizer at 48×640
#
# GPUCC_ORT_WEB is the onnxruntime-web 1.30.0 package folder (default
# $NODE_PATH/onnxruntime-web, NODE_PATH defaulting to /work/ortnode/node_modules).
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
export GPUCC_ORT_WEB=${GPUCC_ORT_WEB:-${NODE_PATH:-/work/ortnode/node_modules}/onnxruntime-web}
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg) OCR size ${GPUCC_OCR_SIZE:-320}"
go test -count=1 -run 'TestWasmPageTime$' -v ./web | grep '^page-wasm'
