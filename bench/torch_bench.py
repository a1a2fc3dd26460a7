#!/usr/bin/env python3
"""PyTorch's figures for gpucc's side-by-side workloads, printed as JSON
(the schema of bench.Torch): relu(a*b+c) over 64M floats, a 4096^3 float32
matmul with TF32 off, 256 MiB pageable upload and readback, and the
per-launch cost of a tiny kernel. Kernel times use CUDA events.

    python3 bench/torch_bench.py [--n 67108864] [--matmul 4096] [--bytes 268435456] > torch.json
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64 << 20)
    ap.add_argument("--matmul", type=int, default=4096)
    ap.add_argument("--bytes", type=int, default=256 << 20)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    try:
        import torch
        import gpuwarm  # bench/gpuwarm.py: the clock warmed before each timing
    except ImportError as e:
        json.dump({"error": "torch is not importable: %s" % e}, sys.stdout)
        print()
        return 0
    if not torch.cuda.is_available():
        json.dump({"error": "torch has no CUDA device", "torch": torch.__version__}, sys.stdout)
        print()
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")

    def timed(fn, reps):
        gpuwarm.warm(torch)
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / reps

    a, b, c = (torch.rand(args.n, device=dev) * 2 - 1 for _ in range(3))
    relu_ms = timed(lambda: torch.relu(a * b + c), args.reps)
    del a, b, c

    x = torch.rand(args.matmul, args.matmul, device=dev)
    y = torch.rand(args.matmul, args.matmul, device=dev)
    mm_ms = timed(lambda: x @ y, args.reps)
    del x, y

    # Pageable host memory, as gpucc's Go slices are.
    host = torch.rand(args.bytes // 4)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.reps):
        d = host.to(dev)
    torch.cuda.synchronize()
    up_s = (time.perf_counter() - t0) / args.reps
    t0 = time.perf_counter()
    for _ in range(args.reps):
        back = d.cpu()
    down_s = (time.perf_counter() - t0) / args.reps
    del d, back

    # Tiny kernel: launch and wait, like one gpucc run's dispatch.
    t = torch.rand(64, device=dev)
    torch.relu(t)
    torch.cuda.synchronize()
    reps = 1000
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.relu(t)
        torch.cuda.synchronize()
    tiny_us = (time.perf_counter() - t0) / reps * 1e6

    json.dump({
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "relu_mul_add_n": args.n,
        "relu_mul_add_ms": relu_ms,
        "matmul_n": args.matmul,
        "matmul_ms": mm_ms,
        "matmul_tflops": 2 * args.matmul ** 3 / (mm_ms / 1e3) / 1e12,
        "upload_bytes": args.bytes,
        "upload_gbps": args.bytes / up_s / 1e9,
        "readback_gbps": args.bytes / down_s / 1e9,
        "tiny_dispatch_us": tiny_us,
    }, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
