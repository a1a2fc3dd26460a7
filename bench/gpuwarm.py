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


def timed(torch, fn, reps=100, warm_calls=10):
    """The mean kernel time of fn in ms from CUDA events, each call synchronized, after warm() and warm_calls calls
    (torch_attn.py, torch_gather.py, triton_attn_ceiling.py; torch_matmul.py and torch_nn.py time a run of calls)."""
    warm(torch)
    for _ in range(warm_calls):
        fn()
    torch.cuda.synchronize()
    total = 0.0
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        total += s.elapsed_time(e)
    return total / reps
