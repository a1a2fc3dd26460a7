"""resize2d's taps and weights: gpucc's ir.ResizeTaps, computed in float64
as ONNX 1.12's reference does, each weight rounded once to float32."""

import math

from .f32 import f32, from_bits


class Axis:
    __slots__ = ("i0", "i1", "w0", "w1")


def resize_taps(n_in, n_out, scale_bits, mode, coord, near):
    scale = n_out / n_in
    if scale_bits:
        scale = from_bits(scale_bits)
    width = scale * n_in
    a = Axis()
    a.i0, a.i1 = [0] * n_out, [0] * n_out
    if n_in == 1:
        mode = 0
    a.w0 = a.w1 = None
    if mode == 1:
        a.w0, a.w1 = [0.0] * n_out, [0.0] * n_out

    def clamp(i):
        return min(max(i, 0), n_in - 1)
    for o in range(n_out):
        x = float(o)
        if coord == 1:
            src = x / scale
        elif coord == 2:
            src = 0.0 if width == 1 else x * (n_in - 1) / (width - 1)
        elif coord == 3:
            src = -0.5 if width == 1 else (x + 0.5) / scale - 0.5
        elif coord == 4:
            src = (x + 0.5) / scale
        else:
            src = (x + 0.5) / scale - 0.5
        lo = math.floor(src)
        ratio = src - lo
        i0 = int(lo)
        if ratio == 0:
            ratio, i0 = 1.0, i0 - 1
        first = False
        if near == 0:
            first = ratio <= 0.5
        elif near == 1:
            first = ratio < 0.5
        elif near == 2:
            first = ratio != 1
        a.i0[o], a.i1[o] = clamp(i0), clamp(i0 + 1)
        if mode == 1:
            a.w0[o], a.w1[o] = f32(1 - ratio), f32(ratio)
        elif not first:
            a.i0[o] = a.i1[o]
    return a
