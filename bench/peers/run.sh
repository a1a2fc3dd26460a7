#!/bin/bash
# Runs the peer benchmarks interleaved: ROUNDS rounds, each running every
# system once (the best of RUNS calls per workload), the order rotated by
# one system every round, so that a burst of load from the machine's other
# users falls on different systems; then summarize.py prints the best of
# every round per cell, the load, and checks that every system computed
# the same outputs.
#
#   bench/peers/run.sh [ROUNDS] [RUNS] [REGEXP]  > log; bench/peers/summarize.py log
#
# GPUCC_PEERS_BACKENDS (default native,wasm) are gpucc's backends, each a
# system; GPUCC_PEERS_THREADS=1,2 runs native once per thread count
# (GPUCC_THREADS), as systems gpucc-native-1t and gpucc-native-2t; GPUCC_PEERS_SYSTEMS (default all) narrows the peers, a regexp on
# their names (numpy-1t ort-node-1t ort-node-2t ort-web-1t tfjs-wasm-1t).
# GPUCC_PEER_MODELS is a directory with more exported models (the
# transformer). Needs node_modules here: make peers-deps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
rounds=${1:-3}
runs=${2:-15}
only=${3:-}
if [ ! -d node_modules ]; then
	echo "bench/peers/node_modules is absent: run make peers-deps (npm ci here)" >&2
	exit 1
fi
/usr/bin/python3 make_onnx.py >&2
bin=$(mktemp -d)/bench.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd .. && go test -c -o "$bin" .)

systems=()
for be in $(echo "${GPUCC_PEERS_BACKENDS:-native,wasm}" | tr , ' '); do
	gpucc="cd .. && GPUCC_PEERS=$be GPUCC_PEERS_RUNS=$runs GPUCC_PEERS_ONLY='$only' $bin -test.run '^TestPeers\$' -test.timeout 60m | grep -E '^(peer|skip)'"
	if [ "$be" = native ] && [ -n "${GPUCC_PEERS_THREADS:-}" ]; then
		# The native backend at each thread count (GPUCC_THREADS), a system each.
		for n in $(echo "$GPUCC_PEERS_THREADS" | tr , ' '); do
			systems+=("gpucc-native-${n}t|export GPUCC_THREADS=$n GPUCC_PEERS_SUFFIX=-${n}t; $gpucc")
		done
		continue
	fi
	systems+=("gpucc-$be|$gpucc")
done
systems+=(
	"numpy-1t|OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 numpy_peers.py $runs '$only'"
	"ort-node-1t|node peers.mjs ort-node 1 $runs '$only'"
	"ort-node-2t|node peers.mjs ort-node $(nproc) $runs '$only'"
	"ort-web-1t|node peers.mjs ort-web 1 $runs '$only'"
	"tfjs-wasm-1t|node peers.mjs tfjs $runs '$only'"
)
keep=${GPUCC_PEERS_SYSTEMS:-}
n=${#systems[@]}
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(git -C .. rev-parse --short HEAD) $(nproc) cores; node $(node --version); rounds $rounds, runs $runs, only '$only'"
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < n; i++)); do
		entry=${systems[$(((i + r) % n))]}
		name=${entry%%|*}
		cmd=${entry#*|}
		if [ -n "$keep" ] && ! [[ $name =~ $keep ]] && ! [[ $name == gpucc-* ]]; then
			continue
		fi
		echo "# round $((r + 1)) $name start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
		bash -c "$cmd" || echo "# $name failed: exit $?"
	done
done
echo "# end $(date -u '+%H:%M:%S') load $(cut -d' ' -f1-3 /proc/loadavg)"
