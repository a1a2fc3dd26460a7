#!/usr/bin/env python3
"""Times numpy float32 on issue 24's CPU workloads, the graphs of
bench/cpu_peers_test.go (TestCPUPeers), as the fastest of N calls in ms.

Run single-threaded, interleaved with TestCPUPeers, as bench/RESULTS.md
records:
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/numpy_cpu.py [runs]
"""
import sys
import time

import numpy as np


def best_ms(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    rng = np.random.default_rng(1)

    def u(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)

    a, b, c = u(1 << 20), u(1 << 20), u(1 << 20)
    x = u(1024, 1024)
    m5, n5 = u(512, 512), u(512, 512)
    m10, n10 = u(1024, 1024), u(1024, 1024)
    xi, w1, b1, w2, b2 = u(256, 784), u(784, 256), u(1, 256), u(256, 10), u(1, 10)

    def softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm():
        d = x - x.mean(axis=1, keepdims=True)
        return d * (1 / np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(1e-5)))

    work = [
        ("relu(a*b+c)/1M", lambda: np.maximum(a * b + c, np.float32(0))),
        ("softmax/1024x1024", softmax),
        ("layernorm/1024x1024", layernorm),
        ("rowsum/1024x1024", lambda: x.sum(axis=1)),
        ("colsum/1024x1024", lambda: x.sum(axis=0)),
        ("rowmax/1024x1024", lambda: x.max(axis=1)),
        ("matmul/512", lambda: m5 @ n5),
        ("matmul/1024", lambda: m10 @ n10),
        ("mlp/256x784-256-10", lambda: np.maximum(xi @ w1 + b1, np.float32(0)) @ w2 + b2),
    ]
    for name, fn in work:
        print("numpy %s %s %.3f ms" % (np.__version__, name, best_ms(fn, runs)))


if __name__ == "__main__":
    main()
