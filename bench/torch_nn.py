#!/usr/bin/env python3
"""The peers for issue 10's reductions and composites, on the GPU gpucc runs on, in the same run.

Prints JSON: per workload, PyTorch eager and torch.compile (Inductor/Triton) kernel times in ms,
float32 with TF32 off. The shapes are those of bench/nn_bench_test.go (BenchmarkNN):
  rowsum   sum over axis 1 of [R, C]
  colsum   sum over axis 0 of [R, C]
  rowmax   max over axis 1 of [R, C]
  softmax  softmax over axis 1 of [R, C]
  logsoftmax log_softmax over axis 1 of [R, C]
  layernorm (x - mean) * rsqrt(var + 1e-5) over axis 1 of [R, C], no affine
  attention softmax(Q K^T / sqrt(d)) V then layernorm, [S, d]
  exp, tanh, sigmoid, gelu (tanh form) elementwise over [R, C]

Usage: python3 bench/torch_nn.py R C S D
"""
import json, os, sys, time
import torch
import gpuwarm  # bench/gpuwarm.py: the clock warmed before each timing

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device('cuda')
R, C, S, D = (int(v) for v in sys.argv[1:5])


def timed(fn, reps=50, warm=5):
    gpuwarm.warm(torch)
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


def layernorm(x):
    m = x.mean(dim=-1, keepdim=True)
    v = ((x - m) ** 2).mean(dim=-1, keepdim=True)
    return (x - m) * torch.rsqrt(v + 1e-5)


def attention(q, k, v):
    s = (q @ k.T) / (q.shape[1] ** 0.5)
    return layernorm(torch.softmax(s, dim=-1) @ v)


g = torch.Generator(device='cpu').manual_seed(10)
x = (torch.rand(R, C, generator=g) * 2 - 1).to(dev)
q, k, v = ((torch.rand(S, D, generator=g) * 2 - 1).to(dev) for _ in range(3))
work = {
    'rowsum': (lambda x: x.sum(dim=1), (x,)),
    'colsum': (lambda x: x.sum(dim=0), (x,)),
    'rowmax': (lambda x: x.amax(dim=1), (x,)),
    'softmax': (lambda x: torch.softmax(x, dim=1), (x,)),
    'logsoftmax': (lambda x: torch.log_softmax(x, dim=1), (x,)),
    'layernorm': (layernorm, (x,)),
    'attention': (attention, (q, k, v)),
    'exp': (torch.exp, (x,)),
    'tanh': (torch.tanh, (x,)),
    'sigmoid': (torch.sigmoid, (x,)),
    'gelu': (lambda x: torch.nn.functional.gelu(x, approximate='tanh'), (x,)),
}
# TORCH_NN_ONLY=softmax,tanh picks workloads; TORCH_NN_EAGER=1 leaves torch.compile out (a short visit).
if os.environ.get('TORCH_NN_ONLY'):
    work = {k: w for k, w in work.items() if k in os.environ['TORCH_NN_ONLY'].split(',')}
res = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__,
       'shape': [R, C], 'attention': [S, D], 'bytes': 4 * R * C}
for name, (fn, args) in work.items():
    r = {'eager_ms': timed(lambda: fn(*args))}
    if os.environ.get('TORCH_NN_EAGER'):
        res[name] = r
        continue
    try:
        cf = torch.compile(fn)
        t0 = time.perf_counter()
        cf(*args)
        torch.cuda.synchronize()
        r['compile_first_s'] = time.perf_counter() - t0
        r['compiled_ms'] = timed(lambda: cf(*args))
    except Exception as e:  # report, do not hide
        r['compile_error'] = repr(e)[:300]
    res[name] = r
print(json.dumps(res, indent=1))
