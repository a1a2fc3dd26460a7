#!/usr/bin/env python3
"""The peer of issue 32's embedding gather (bench/gather_bench_test.go, BenchmarkEmbeddingGather):
N int64 ids into a [V, D] float32 table with torch.nn.functional.embedding, beside a copy of the
gathered bytes (x * 1 over [N, D]), kernel times in ms from CUDA events, each call synchronized.

Prints JSON. Usage: python3 bench/torch_gather.py V D N
"""
import json, sys
import torch
import gpuwarm  # bench/gpuwarm.py: the clock warmed before each timing
import torch.nn.functional as F

V, D, N = (int(a) for a in sys.argv[1:4])
dev = torch.device('cuda')


def timed(fn, reps=200, warm=20):
    return gpuwarm.timed(torch, fn, reps, warm)


g = torch.Generator(device='cpu').manual_seed(32)
table = (torch.rand(V, D, generator=g) * 2 - 1).to(dev)
ids = torch.randint(0, V, (N,), generator=g).to(dev)
x = table[:N].clone()
res = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'V': V, 'D': D, 'N': N,
       'embedding_ms': timed(lambda: F.embedding(ids, table)),
       'copy_ms': timed(lambda: x * 1)}
print(json.dumps(res))
