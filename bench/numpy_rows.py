#!/usr/bin/env python3
"""Times numpy float32 softmax, log-softmax and layernorm over the rows of
[R, C] (default 1024 x 1024), the workloads of BenchmarkNN (issue 21's
row-resident kernels), as the fastest of 20 calls in ms, printed as JSON.

Run single-threaded beside the wasm and native figures:
    OPENBLAS_NUM_THREADS=1 python3 bench/numpy_rows.py 1024 1024
"""
import json
import sys
import time

import numpy as np


def best_ms(fn, repeat=20):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def log_softmax(x):
    s = x - x.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def layernorm(x):
    c = x - x.mean(axis=1, keepdims=True)
    return c * (1 / np.sqrt((c * c).mean(axis=1, keepdims=True) + np.float32(1e-5)))


def main():
    r, c = (int(v) for v in sys.argv[1:3]) if len(sys.argv) > 2 else (1024, 1024)
    x = (np.random.default_rng(21).random((r, c), dtype=np.float32) * 2 - 1).astype(np.float32)
    out = {"numpy": np.__version__, "shape": [r, c]}
    for name, fn in [("softmax", softmax), ("logsoftmax", log_softmax), ("layernorm", layernorm)]:
        assert fn(x).dtype == np.float32
        out[name + "_ms"] = best_ms(lambda: fn(x))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
