"""PyTorch peers of BenchmarkConv (issue 23) on the GPU, in the same visit.

usage: python3 bench/torch_conv.py [BATCH] [--stages]

Prints one JSON object: per workload, cuDNN float32 (TF32 off) eager and
torch.compile kernel time in ms (CUDA events, best of 100 synchronized
calls after a warm-up), on random data. With --stages also ResNet's later
3x3 stages (BenchmarkConv's GPUCC_BENCH_CONV_STAGES): 128 channels at 28x28,
256 at 14x14, 512 at 7x7, + bias + relu.
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
args = [a for a in sys.argv[1:] if not a.startswith("--")]
n = int(args[0]) if args else 32
stages = "--stages" in sys.argv
dev = "cuda"


def best(f, reps=100):
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    t = 1e9
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        e.synchronize()
        t = min(t, s.elapsed_time(e))
    return t


out = {"batch": n, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
with torch.no_grad():
    x = torch.randn(n, 64, 56, 56, device=dev)
    w = torch.randn(64, 64, 3, 3, device=dev)
    b = torch.randn(64, device=dev)
    f = lambda: torch.relu(F.conv2d(x, w, b, padding=1))
    xd = torch.randn(n, 256, 56, 56, device=dev)
    wd = torch.randn(256, 1, 3, 3, device=dev)
    g = lambda: F.conv2d(xd, wd, padding=1, groups=256)
    p = lambda: F.max_pool2d(x, 3, stride=2, padding=1)
    for name, fn in [("resnet3x3-64", f), ("depthwise3x3-256", g), ("maxpool3x3s2-64", p)]:
        r = {"eager_ms": best(fn)}
        try:
            r["compile_ms"] = best(torch.compile(fn))
        except Exception as e:  # report, do not fail the visit
            r["compile_error"] = str(e)[:200]
        out[name] = r
    out["resnet3x3-64"]["gflop"] = 2 * n * 64 * 56 * 56 * 64 * 9 / 1e9
    for c, hw in ([(128, 28), (256, 14), (512, 7)] if stages else []):
        xs = torch.randn(n, c, hw, hw, device=dev)
        ws = torch.randn(c, c, 3, 3, device=dev)
        bs = torch.randn(c, device=dev)
        fs = lambda xs=xs, ws=ws, bs=bs: torch.relu(F.conv2d(xs, ws, bs, padding=1))
        r = {"eager_ms": best(fs), "gflop": 2 * n * c * hw * hw * c * 9 / 1e9}
        try:
            r["compile_ms"] = best(torch.compile(fs))
        except Exception as e:  # report, do not fail the visit
            r["compile_error"] = str(e)[:200]
        out["resnet3x3-%d-%d" % (c, hw)] = r
print(json.dumps(out, indent=1))
