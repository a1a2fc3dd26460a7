#!/usr/bin/env python3
"""cuBLAS fp32 (TF32 off) on the shapes `gpucc bench --tune` measures, 256 MiB transfers
(pageable and pinned, both ways) and a tiny kernel's launch + synchronize, in one run.
Usage: torch_matmul.py SHAPES (N or MxKxN[ta][tb], comma-separated). Prints JSON."""
import json, sys, time
import torch
import gpuwarm  # bench/gpuwarm.py: the clock warmed before each timing
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device('cuda')
res = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'matmul_tflops': {}}

def timed(fn, reps=20, warm=3):
    gpuwarm.warm(torch)
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / reps

for f in sys.argv[1].split(','):
    # MxKxN may end in ta, tb or tatb (tune.ParseShape): that operand is stored transposed and read through .t()
    ta, tb = 'ta' in f, f.endswith('tb')
    d = [int(x) for x in f.replace('ta', '').replace('tb', '').split('x')]
    m, k, n = (d * 3)[:3] if len(d) == 1 else d
    a = torch.rand(k, m, device=dev).t() if ta else torch.rand(m, k, device=dev)
    b = torch.rand(n, k, device=dev).t() if tb else torch.rand(k, n, device=dev)
    ms = timed(lambda: a @ b, reps=10 if m * k * n > 1 << 33 else 30)
    res['matmul_tflops'][f] = 2 * m * k * n / ms / 1e9
    del a, b

n = 64 << 20  # 256 MiB of float32
host, pinned, g = torch.rand(n), torch.rand(n).pin_memory(), torch.empty(n, device=dev)
for name, src in (('pageable', host), ('pinned', pinned)):
    res[f'upload_{name}_GBps'] = 4 * n / timed(lambda: g.copy_(src), reps=5) / 1e6
    res[f'readback_{name}_GBps'] = 4 * n / timed(lambda: src.copy_(g), reps=5) / 1e6
x = torch.rand(64, device=dev)
for _ in range(100): (x + 1); torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(1000): (x + 1); torch.cuda.synchronize()
res['tiny_launch_sync_us'] = (time.perf_counter() - t0) * 1e3
y = torch.empty(64)
t0 = time.perf_counter()
for _ in range(1000): y.copy_(x + 1)
res['tiny_launch_readback_us'] = (time.perf_counter() - t0) * 1e3
print(json.dumps(res))
