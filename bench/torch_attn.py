#!/usr/bin/env python3
"""The peers for issue 21's attention, softmax(Q K^T s) V over [S, D] float32 (TF32 off), in one run:
PyTorch eager as written, scaled_dot_product_attention, and torch.compile of the eager form.
The gpucc side is BenchmarkNN/attn (bench/nn_bench_test.go) at GPUCC_BENCH_NN=R,C,S,D.

Prints JSON: per sequence length, kernel times in ms from CUDA events, each call synchronized.
Usage: python3 bench/torch_attn.py D S [S ...]
"""
import json, os, sys
import torch
import gpuwarm  # bench/gpuwarm.py: the clock warmed before each timing
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device('cuda')
D = int(sys.argv[1])


def timed(fn, reps=100, warm=10):
    return gpuwarm.timed(torch, fn, reps, warm)


def attn(q, k, v):
    return torch.softmax(q @ k.T * (q.shape[1] ** -0.5), dim=-1) @ v


res = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'd': D}
g = torch.Generator(device='cpu').manual_seed(21)
for S in (int(s) for s in sys.argv[2:]):
    q, k, v = ((torch.rand(S, D, generator=g) * 2 - 1).to(dev) for _ in range(3))
    r = {'eager_ms': timed(lambda: attn(q, k, v)),
         'sdpa_ms': timed(lambda: F.scaled_dot_product_attention(q[None], k[None], v[None]))}
    if os.environ.get('TORCH_NN_EAGER'):  # a short visit: no torch.compile
        res[str(S)] = r
        continue
    try:
        cf = torch.compile(attn)
        cf(q, k, v)
        r['compiled_ms'] = timed(lambda: cf(q, k, v))
    except Exception as e:  # report, do not hide
        r['compile_error'] = repr(e)[:300]
    res[str(S)] = r
print(json.dumps(res, indent=1))
