#!/usr/bin/env python3
"""numpy's side of the peer benchmarks: the workloads of bench/peers_test.go
(TestPeers) that numpy can express, float32, the best of N calls in ms,
printed in TestPeers' line format (peer, system, workload, ms, the
output's weighted sum and absolute sum: checksum()).

Single-threaded, as bench/peers/run.sh runs it:
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peers/numpy_peers.py [runs] [regexp]

fill() is TestPeers' peerFill: the same inputs in every system, so that
summarize.py can check that every system computed the same function.
"""
import re
import sys
import time

import numpy as np

SEEDS = {"a": 1, "b": 2, "c": 3, "x": 4, "y": 5, "w": 6, "bias": 7,
         "w1": 8, "b1": 9, "w2": 10, "b2": 11, "target": 12}


def fill(name, n):
    """Element i is (k - 32768)/32768·scale, k = (40503·i + 9973·seed) mod 65536."""
    k = (np.arange(n, dtype=np.int64) * 40503 + 9973 * SEEDS[name]) % 65536
    scale = 1 / 16 if name in ("w", "w1", "w2") else 1
    return ((k - 32768) / 32768 * scale).astype(np.float32)


def file_name(workload):
    """The .onnx file name of a workload in bench/peers/models."""
    return re.sub(r"[^A-Za-z0-9-]+", "_", workload)


def checksum(y):
    """TestPeers' peerChecksum: Σ y[i]·(2654435761·i mod 2³²)/2³², Σ |y[i]|."""
    y = np.asarray(y, dtype=np.float64).ravel()
    h = (np.arange(y.size, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(1 << 32)
    return float((y * (h.astype(np.float64) / 2**32)).sum()), float(np.abs(y).sum())


def best_ms(fn, repeat):
    out = fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3, out


def workloads():
    a, b, c = fill("a", 1 << 20), fill("b", 1 << 20), fill("c", 1 << 20)
    x1, y1 = fill("x", 1 << 20), fill("y", 1 << 20)
    x = fill("x", 1 << 20).reshape(1024, 1024)
    m5 = fill("a", 512 * 512).reshape(512, 512), fill("b", 512 * 512).reshape(512, 512)
    m10 = fill("a", 1 << 20).reshape(1024, 1024), fill("b", 1 << 20).reshape(1024, 1024)
    xi = fill("x", 256 * 784).reshape(256, 784)
    p = {"w1": fill("w1", 784 * 256).reshape(784, 256), "b1": fill("b1", 256).reshape(1, 256),
         "w2": fill("w2", 256 * 10).reshape(256, 10), "b2": fill("b2", 10).reshape(1, 10)}
    target = fill("target", 2560).reshape(256, 10)
    quarter, half, zero = np.float32(0.25), np.float32(0.5), np.float32(0)

    def chain16():
        v = x1
        for i in range(16):
            k = i % 6
            v = (np.maximum(v, zero), v * y1, v + quarter, v - y1, v * half, v + x1)[k]
        return v

    def softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm():
        d = x - x.mean(axis=1, keepdims=True)
        return d * (1 / np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(1e-5)))

    def mlp(q):
        return np.maximum(xi @ q["w1"] + q["b1"], zero) @ q["w2"] + q["b2"]

    step_params = {k: v.copy() for k, v in p.items()}
    lr = np.float32(0.01)

    def step():
        # One SGD step on sum((y - target)²)/256, the gradient by hand.
        q = step_params
        h0 = xi @ q["w1"] + q["b1"]
        h = np.maximum(h0, zero)
        d = h @ q["w2"] + q["b2"] - target
        loss = np.float32((d * d).sum() / np.float32(256))
        gy = d * np.float32(2 / 256)
        gh = (gy @ q["w2"].T) * (h0 > 0)
        grads = {"w2": h.T @ gy, "b2": gy.sum(axis=0, keepdims=True),
                 "w1": xi.T @ gh, "b1": gh.sum(axis=0, keepdims=True)}
        for k, g in grads.items():
            q[k] -= lr * g
        return np.array([loss])

    return [
        ("relu(a*b+c)/1M", lambda: np.maximum(a * b + c, zero)),
        ("chain16/1M", chain16),
        ("softmax/1024x1024", softmax),
        ("layernorm/1024x1024", layernorm),
        ("rowsum/1024x1024", lambda: x.sum(axis=1)),
        ("colsum/1024x1024", lambda: x.sum(axis=0)),
        ("rowmax/1024x1024", lambda: x.max(axis=1)),
        ("matmul/512", lambda: m5[0] @ m5[1]),
        ("matmul/1024", lambda: m10[0] @ m10[1]),
        ("mlp/256x784-256-10", lambda: mlp(p)),
        ("mlpstep/256x784-256-10", step),
    ]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    only = re.compile(sys.argv[2] if len(sys.argv) > 2 else "")
    for name, fn in workloads():
        if not only.search(name):
            continue
        ms, out = best_ms(fn, runs)
        wsum, asum = checksum(out)
        print("peer\tnumpy-1t\t%s\t%.4f\t%.9g\t%.9g" % (name, ms, wsum, asum), flush=True)


if __name__ == "__main__":
    main()
