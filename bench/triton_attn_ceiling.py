#!/usr/bin/env python3
"""A ceiling for issue 33's exact attention: the online order's shape (one head, q·kᵀ·scale, key blocks of 32, a
running maximum, exp, l and p·v) in fp32 on CUDA cores, written in Triton, with and without the fused multiply-add
(enable_fp_fusion). Not cpuref's bits (Triton's exp, tl.dot's own order): what a kernel of that shape can reach on
this GPU, beside gpucc's WGSL kernel (BenchmarkAttnTiles) and PyTorch eager in the same visit.

Prints JSON: per sequence length and variant, kernel ms from CUDA events, and the largest difference from eager's
output. Usage: python3 bench/triton_attn_ceiling.py D S [S ...]; bash bench/device.sh ceiling runs it.

Written on 2026-12-06 after the session's device time ran out; a variant that fails to compile is reported in the
JSON, not fatal. Whether enable_fp_fusion=False keeps tl.dot's products and sums apart is not taken on trust: each
variant's PTX is searched for fma.rn.f32 and the count is reported. The bcast variants form both products by
broadcasting and tl.sum (key blocks of 8), which no dot lowering can fuse: with fusion off, a true no-FMA kernel.
"""
import json, sys
import torch
import triton
import triton.language as tl
import gpuwarm  # bench/gpuwarm.py: the clock warmed before each timing, and timed

torch.backends.cuda.matmul.allow_tf32 = False


@triton.jit
def _attn(Q, K, V, O, S, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    rm = rows < S
    dc = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + dc[None, :], mask=rm[:, None], other=0.0)
    m = tl.full([BM], -3.4028234663852886e38, tl.float32)
    l = tl.zeros([BM], dtype=tl.float32)
    o = tl.zeros([BM, D], dtype=tl.float32)
    for kt in range(0, T, BN):
        keys = kt + tl.arange(0, BN)
        km = keys < T
        k = tl.load(K + keys[:, None] * D + dc[None, :], mask=km[:, None], other=0.0)
        v = tl.load(V + keys[:, None] * D + dc[None, :], mask=km[:, None], other=0.0)
        t = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        t = tl.where(km[None, :], t, float("-inf"))
        mn = tl.maximum(m, tl.max(t, 1))
        c = tl.exp(m - mn)
        p = tl.exp(t - mn[:, None])
        l = l * c + tl.sum(p, 1)
        o = o * c[:, None] + tl.dot(p, v, input_precision="ieee")
        m = mn
    tl.store(O + rows[:, None] * D + dc[None, :], o / l[:, None], mask=rm[:, None])


@triton.jit
def _attn_bcast(Q, K, V, O, S, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    rm = rows < S
    dc = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + dc[None, :], mask=rm[:, None], other=0.0)
    m = tl.full([BM], -3.4028234663852886e38, tl.float32)
    l = tl.zeros([BM], dtype=tl.float32)
    o = tl.zeros([BM, D], dtype=tl.float32)
    for kt in range(0, T, BN):
        keys = kt + tl.arange(0, BN)
        km = keys < T
        k = tl.load(K + keys[:, None] * D + dc[None, :], mask=km[:, None], other=0.0)
        v = tl.load(V + keys[:, None] * D + dc[None, :], mask=km[:, None], other=0.0)
        t = tl.sum(q[:, None, :] * k[None, :, :], 2) * scale
        t = tl.where(km[None, :], t, float("-inf"))
        mn = tl.maximum(m, tl.max(t, 1))
        c = tl.exp(m - mn)
        p = tl.exp(t - mn[:, None])
        l = l * c + tl.sum(p, 1)
        o = o * c[:, None] + tl.sum(p[:, :, None] * v[None, :, :], 1)
        m = mn
    tl.store(O + rows[:, None] * D + dc[None, :], o / l[:, None], mask=rm[:, None])


def fmas(compiled):
    """fma.rn.f32 instructions in a compiled kernel's PTX, or None where the launch did not return one."""
    try:
        return compiled.asm['ptx'].count('fma.rn.f32')
    except Exception:
        return None


D = int(sys.argv[1])
res = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'triton': triton.__version__, 'd': D}
for S in map(int, sys.argv[2:]):
    g = torch.Generator(device='cuda').manual_seed(S)
    q, k, v = (torch.randn(S, D, device='cuda', generator=g) for _ in range(3))
    scale = D ** -0.5
    eager = lambda: torch.softmax(q @ k.T * scale, dim=-1) @ v
    want = eager()
    r = {'eager_ms': gpuwarm.timed(torch, eager)}
    variants = [(f'{n}_bm{bm}', _attn, bm, 32, f) for n, f in (('fma', True), ('nofma', False)) for bm in (16, 32, 64)]
    variants += [(f'bcast_nofma_bm{bm}', _attn_bcast, bm, 8, False) for bm in (16, 32)]
    for key, kern, bm, bn, fused in variants:
        o = torch.empty_like(q)
        run = lambda: kern[(triton.cdiv(S, bm),)](q, k, v, o, S, S, scale, D=D, BM=bm, BN=bn, enable_fp_fusion=fused)
        try:
            r[f'{key}_fmas'] = fmas(run())
            torch.cuda.synchronize()
            r[f'{key}_ms'] = gpuwarm.timed(torch, run)
            r[f'{key}_maxdiff'] = (o - want).abs().max().item()
        except Exception as e:  # a variant that does not compile is reported, not fatal
            r[f'{key}_error'] = str(e)[:200]
    res[str(S)] = r
print(json.dumps(res, indent=1))
