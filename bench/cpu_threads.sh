#!/bin/bash
# Issue 24's native workloads beside the native peers, interleaved as
# bench/peers/run.sh does, with gpucc's native backend on one thread
# (GPUCC_THREADS=1) and on every core as two systems, so that both peer
# columns (ONNX Runtime for Node at 1 thread and at every core, numpy on
# one OpenBLAS thread) have a gpucc column with the same thread count.
#
#   bench/cpu_threads.sh [ROUNDS] [RUNS] [REGEXP] > log
#   /usr/bin/python3 bench/peers/summarize.py log
#
# Needs bench/peers/node_modules (make peers-deps).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/peers"
rounds=${1:-3}
runs=${2:-15}
only=${3:-'conv/(resnet|depthwise)|relu|softmax|layernorm|rowsum|colsum|rowmax|matmul|mlp/'}
if [ ! -d node_modules ]; then
	echo "bench/peers/node_modules is absent: run make peers-deps (npm ci there)" >&2
	exit 1
fi
/usr/bin/python3 make_onnx.py >&2
bin=$(mktemp -d)/bench.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd .. && go test -c -o "$bin" .)
cores=$(nproc)
gpucc() { # threads, system name
	echo "cd .. && GPUCC_THREADS=$1 GPUCC_PEERS=native GPUCC_PEERS_RUNS=$runs GPUCC_PEERS_ONLY='$only' $bin -test.run '^TestPeers\$' -test.timeout 60m | grep -E '^(peer|skip)' | sed 's/\tgpucc-native\t/\t$2\t/'"
}
systems=(
	"gpucc-native-1t|$(gpucc 1 gpucc-native-1t)"
	"gpucc-native-${cores}t|$(gpucc "$cores" "gpucc-native-${cores}t")"
	"numpy-1t|OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 numpy_peers.py $runs '$only'"
	"ort-node-1t|node peers.mjs ort-node 1 $runs '$only'"
	"ort-node-${cores}t|node peers.mjs ort-node $cores $runs '$only'"
)
n=${#systems[@]}
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(git -C .. rev-parse --short HEAD) $cores cores; node $(node --version); rounds $rounds, runs $runs, only '$only'"
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < n; i++)); do
		entry=${systems[$(((i + r) % n))]}
		name=${entry%%|*}
		echo "# round $((r + 1)) $name start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
		bash -c "${entry#*|}" || echo "# $name failed: exit $?"
	done
done
echo "# end $(date -u '+%H:%M:%S') load $(cut -d' ' -f1-3 /proc/loadavg)"
