#!/usr/bin/env python3
"""Times numpy float32 on the graphs runtime.BenchmarkBackends runs:
relu(a*b+c) over 1M (2^20) elements, softmax over the rows of a
[1024,1024] (BenchmarkNN/softmax) and a 512x512x512 matmul.

Run single-threaded, as bench/RESULTS.md records:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \
        /usr/bin/python3 bench/numpy_bench.py
"""
import os
import time

import numpy as np


def best_ms(fn, repeat=20):
    """Returns the fastest of repeat calls, in milliseconds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    print("numpy", np.__version__, "OPENBLAS_NUM_THREADS=%s" % os.environ.get("OPENBLAS_NUM_THREADS"))
    try:
        from threadpoolctl import threadpool_info
        for info in threadpool_info():
            print("threadpool:", info)
    except ImportError:
        np.show_config()
    rng = np.random.default_rng(1)
    n = 1 << 20
    a, b, c = (rng.uniform(-3, 3, n).astype(np.float32) for _ in range(3))
    out, tmp = np.empty_like(a), np.empty_like(a)

    def chain():
        np.multiply(a, b, out=tmp)
        np.add(tmp, c, out=tmp)
        np.maximum(tmp, np.float32(0), out=out)

    print("relu(a*b+c)/1M: %.3f ms (in-place ufuncs, no allocation)" % best_ms(chain))
    print("relu(a*b+c)/1M: %.3f ms (plain expression)" % best_ms(lambda: np.maximum(a * b + c, np.float32(0))))
    s = rng.uniform(-1, 1, (1024, 1024)).astype(np.float32)

    def softmax():
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    print("softmax/1024x1024: %.3f ms (over rows, max subtracted)" % best_ms(softmax))
    m = 512
    x = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    y = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    ms = best_ms(lambda: x @ y)
    print("matmul/512: %.3f ms (%.1f GFLOP/s)" % (ms, 2 * m**3 / ms / 1e6))


if __name__ == "__main__":
    main()
