#!/usr/bin/env bash
# The page's WebGPU compile of a model's kernels: gpucc build writes the
# model's WGSL at the shape given, and web's TestPipelineTime creates each
# distinct kernel as a compute pipeline in headless Chromium (SwiftShader
# here), one at a time, logging each one's ms (slowest first) and the sum.
#
#   bash bench/page_compile.sh MODEL.onnx x=1,3,48,160
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
model=$1 shape=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go run ./cmd/gpucc build "$model" -o "$out" --targets wgsl --input-shape "$shape" --quiet
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg) $(basename "$model") $shape"
GPUCC_PIPELINE_DIR=$out/kernels go test -count=1 -run 'TestPipelineTime$' -v -timeout 60m ./web | grep -o 'pipeline.*'
