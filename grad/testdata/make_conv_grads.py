#!/usr/bin/env python3
"""Writes conv_grads.json: PyTorch autograd's float64 gradients of
convolutions and poolings, the reference grad's TestTorchConvGradients
checks gpucc's float32 gradients against.

Each case has float32 inputs drawn here (a seeded numpy generator, values
rounded to float32 so that both sides read the same numbers), an upstream
gradient "g" of the output's shape, and the float64 gradients of
sum(y * g) with respect to x (and w for a convolution), computed by
torch.autograd on the inputs widened to float64.

The lead runs it on the GPU machine (torch 2.11; CPU is enough):

    python3 grad/testdata/make_conv_grads.py > grad/testdata/conv_grads.json

and commits the output. With --numpy it computes the same gradients from
their definitions with numpy in float64 instead (no torch needed; the
loops below), which is conv_grads_numpy.json:

    python3 grad/testdata/make_conv_grads.py --numpy > grad/testdata/conv_grads_numpy.json
 The cases are fixed; the output is deterministic
for a given torch version (float64 sums may differ in the last bits
between versions, far below the test's bound).
"""
import json
import sys

import numpy as np

NUMPY = "--numpy" in sys.argv[1:]
if not NUMPY:
    import torch
    import torch.nn.functional as F

# Convolutions: x [N,C,H,W], w [M,C/group,KH,KW], strides, pads
# [top, left, bottom, right] (asymmetric pads through F.pad), dilations,
# group. They cover strides with remainders, pads beyond the kernel,
# dilations, groups and depthwise.
CONVS = [
    dict(name="3x3-pad1", x=[2, 3, 7, 6], w=[4, 3, 3, 3], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=1),
    dict(name="1x1", x=[1, 3, 4, 5], w=[2, 3, 1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1),
    dict(name="stride2-pad1", x=[2, 2, 8, 7], w=[3, 2, 3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1], group=1),
    dict(name="stride-remainder", x=[2, 1, 5, 6], w=[3, 1, 2, 2], strides=[2, 3], pads=[0, 0, 0, 0], dilations=[1, 1], group=1),
    dict(name="dilated-asymmetric", x=[1, 2, 9, 11], w=[3, 2, 3, 2], strides=[2, 3], pads=[1, 0, 2, 1], dilations=[2, 1], group=1),
    dict(name="groups", x=[2, 6, 5, 5], w=[4, 3, 2, 2], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=2),
    dict(name="depthwise", x=[1, 4, 6, 6], w=[4, 1, 3, 3], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=4),
    dict(name="depthwise-stride2", x=[2, 3, 7, 7], w=[6, 1, 3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1], group=3),
    dict(name="kernel-as-input", x=[1, 2, 5, 4], w=[3, 2, 5, 4], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1),
    dict(name="padding-beyond-kernel", x=[1, 1, 2, 2], w=[2, 1, 1, 1], strides=[1, 1], pads=[2, 1, 2, 3], dilations=[1, 1], group=1),
    dict(name="digits-cnn", x=[16, 1, 8, 8], w=[8, 1, 3, 3], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=1),
]

# Poolings: kind max (kernel, strides, symmetric pads [pH, pW] as torch
# takes them, dilations), avg (count_include_pad) and global (mean over H,
# W).
POOLS = [
    dict(name="max-2x2-stride2", kind="max", x=[2, 3, 6, 7], kernel=[2, 2], strides=[2, 2], pads=[0, 0], dilations=[1, 1]),
    dict(name="max-3x3-pad1", kind="max", x=[1, 2, 5, 5], kernel=[3, 3], strides=[1, 1], pads=[1, 1], dilations=[1, 1]),
    dict(name="max-overlap-stride", kind="max", x=[1, 2, 7, 9], kernel=[3, 2], strides=[2, 1], pads=[1, 1], dilations=[1, 1]),
    dict(name="max-dilated", kind="max", x=[1, 2, 7, 6], kernel=[2, 3], strides=[1, 2], pads=[1, 1], dilations=[3, 2]),
    dict(name="avg-include-pad", kind="avg", x=[1, 2, 5, 5], kernel=[3, 3], strides=[2, 2], pads=[1, 1], count_include_pad=True),
    dict(name="avg-exclude-pad", kind="avg", x=[2, 2, 6, 5], kernel=[3, 2], strides=[1, 2], pads=[1, 1], count_include_pad=False),
    dict(name="global", kind="global", x=[2, 3, 4, 5]),
]


def f32(rng, shape, scale):
    return (rng.standard_normal(int(np.prod(shape))) * scale).astype(np.float32)


def t64(a, shape):
    return torch.tensor(a.astype(np.float64).reshape(shape), requires_grad=True)


def values(a):
    return [float(v) for v in np.asarray(a).reshape(-1)]


def np_conv(c, x, w, g=None):
    """conv2d's output of x and w (float64), or with g the gradients
    (dx, dw) of sum(y * g), from the definition: each tap's product."""
    N, C, H, W = c["x"]
    M, CG, KH, KW = c["w"]
    (SH, SW), (PT, PL, PB, PR), (DH, DW), G = c["strides"], c["pads"], c["dilations"], c["group"]
    OH = (H + PT + PB - (KH - 1) * DH - 1) // SH + 1
    OW = (W + PL + PR - (KW - 1) * DW - 1) // SW + 1
    MG = M // G
    xp = np.zeros((N, C, H + PT + PB, W + PL + PR))
    xp[:, :, PT:PT + H, PL:PL + W] = x
    y = np.zeros((N, M, OH, OW))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for m in range(M):
        c0 = m // MG * CG
        for kh in range(KH):
            for kw in range(KW):
                rows = slice(kh * DH, kh * DH + (OH - 1) * SH + 1, SH)
                cols = slice(kw * DW, kw * DW + (OW - 1) * SW + 1, SW)
                patch = xp[:, c0:c0 + CG, rows, cols]  # [N, CG, OH, OW]
                if g is None:
                    y[:, m] += np.einsum("ncij,c->nij", patch, w[m, :, kh, kw])
                else:
                    dw[m, :, kh, kw] += np.einsum("ncij,nij->c", patch, g[:, m])
                    dxp[:, c0:c0 + CG, rows, cols] += np.einsum("nij,c->ncij", g[:, m], w[m, :, kh, kw])
    if g is None:
        return y
    return dxp[:, :, PT:PT + H, PL:PL + W], dw


def np_pool(p, x, g=None):
    """A pooling's output (float64), or with g the gradient of sum(y * g):
    max routes each window's g to its first maximum (PyTorch's rule)."""
    N, C, H, W = p["x"]
    if p["kind"] == "global":
        if g is None:
            return x.mean(axis=(2, 3), keepdims=True)
        return np.broadcast_to(g / (H * W), x.shape).copy()
    (KH, KW), (SH, SW), (PH, PW) = p["kernel"], p["strides"], p["pads"]
    DH, DW = p.get("dilations", [1, 1])
    OH = (H + 2 * PH - (KH - 1) * DH - 1) // SH + 1
    OW = (W + 2 * PW - (KW - 1) * DW - 1) // SW + 1
    y, dx = np.zeros((N, C, OH, OW)), np.zeros_like(x)
    for oh in range(OH):
        for ow in range(OW):
            taps = [(oh * SH - PH + kh * DH, ow * SW - PW + kw * DW) for kh in range(KH) for kw in range(KW)]
            inside = [(i, j) for i, j in taps if 0 <= i < H and 0 <= j < W]
            if p["kind"] == "max":
                vals = np.stack([x[:, :, i, j] for i, j in inside], axis=-1)  # [N, C, taps]
                first = vals.argmax(axis=-1)  # the first maximum
                y[:, :, oh, ow] = vals.max(axis=-1)
                if g is not None:
                    for t, (i, j) in enumerate(inside):
                        dx[:, :, i, j] += np.where(first == t, g[:, :, oh, ow], 0)
            else:
                count = KH * KW if p["count_include_pad"] else len(inside)
                for i, j in inside:
                    if g is None:
                        y[:, :, oh, ow] += x[:, :, i, j] / count
                    else:
                        dx[:, :, i, j] += g[:, :, oh, ow] / count
    return y if g is None else dx


def main():
    rng = np.random.default_rng(20261202)
    if NUMPY:
        return main_numpy(rng)
    out = {"torch": torch.__version__, "convs": [], "pools": []}
    for c in CONVS:
        x, w = f32(rng, c["x"], 1.0), f32(rng, c["w"], 0.5)
        xt, wt = t64(x, c["x"]), t64(w, c["w"])
        top, left, bottom, right = c["pads"]
        y = F.conv2d(F.pad(xt, (left, right, top, bottom)), wt, stride=c["strides"], dilation=c["dilations"], groups=c["group"])
        g = f32(rng, list(y.shape), 1.0)
        (y * torch.tensor(g.astype(np.float64).reshape(y.shape))).sum().backward()
        out["convs"].append(dict(c, y=list(y.shape), data=dict(x=values(x), w=values(w), g=values(g)),
                                 grads=dict(x=values(xt.grad.numpy()), w=values(wt.grad.numpy()))))
    for p in POOLS:
        x = f32(rng, p["x"], 1.0)
        xt = t64(x, p["x"])
        if p["kind"] == "max":
            y = F.max_pool2d(xt, p["kernel"], stride=p["strides"], padding=p["pads"], dilation=p["dilations"])
        elif p["kind"] == "avg":
            y = F.avg_pool2d(xt, p["kernel"], stride=p["strides"], padding=p["pads"], count_include_pad=p["count_include_pad"])
        else:
            y = xt.mean(dim=(2, 3), keepdim=True)
        g = f32(rng, list(y.shape), 1.0)
        (y * torch.tensor(g.astype(np.float64).reshape(y.shape))).sum().backward()
        out["pools"].append(dict(p, y=list(y.shape), data=dict(x=values(x), g=values(g)),
                                 grads=dict(x=values(xt.grad.numpy()))))
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


def main_numpy(rng):
    """main with np_conv and np_pool in place of torch: the same cases,
    the same inputs (the generator is drawn in the same order)."""
    out = {"torch": "numpy " + np.__version__ + " float64 (make_conv_grads.py --numpy)", "convs": [], "pools": []}
    for c in CONVS:
        x, w = f32(rng, c["x"], 1.0), f32(rng, c["w"], 0.5)
        x64, w64 = x.astype(np.float64).reshape(c["x"]), w.astype(np.float64).reshape(c["w"])
        y = np_conv(c, x64, w64)
        g = f32(rng, list(y.shape), 1.0)
        dx, dw = np_conv(c, x64, w64, g.astype(np.float64).reshape(y.shape))
        out["convs"].append(dict(c, y=list(y.shape), data=dict(x=values(x), w=values(w), g=values(g)),
                                 grads=dict(x=values(dx), w=values(dw))))
    for p in POOLS:
        x = f32(rng, p["x"], 1.0)
        x64 = x.astype(np.float64).reshape(p["x"])
        y = np_pool(p, x64)
        g = f32(rng, list(y.shape), 1.0)
        dx = np_pool(p, x64, g.astype(np.float64).reshape(y.shape))
        out["pools"].append(dict(p, y=list(y.shape), data=dict(x=values(x), g=values(g)), grads=dict(x=values(dx))))
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
