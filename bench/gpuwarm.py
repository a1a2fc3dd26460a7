"""Clock warming for the PyTorch peers (imported by bench/torch_*.py).

The GPU's clock falls to 345 MHz after about 3 s idle, and a Python script
idles it while it imports torch or builds its inputs. Timing a few dozen
calls right after that times the clock's ramp with them: on 2026-12-05
(H100) torch_attn.py's eager attention at 2048 keys gave 0.153 ms in a
visit where nvidia-smi showed 345 MHz up to the moment it started, against
0.0955 in an earlier one. warm() keeps the GPU busy for `seconds` first, as
gpucc's side does (device.sh's warm, and its benchmarks' own iterations).
"""
import time


def warm(torch, seconds=0.5):
    a = torch.rand(2048, 2048, device='cuda')
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(8):
            a = a @ a
            a = a / a.abs().max()  # stay finite
        torch.cuda.synchronize()
