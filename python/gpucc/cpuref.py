"""cpu-python: gpucc's reference (package cpuref) in pure Python.

evaluate computes every node of a decoded graph with cpuref's rules (its
package doc is the spec): every intermediate rounds to float32, nothing is
fused, matmul and convolutions keep one accumulator per output from +0 in
the defined order, and reductions combine each output's leaves (row-major
over the reduced axes) by the contiguous pairwise tree padded to a power
of two with the reduction's identity (-0 for sum, -Inf for max).
"""

import math

from . import f32 as F
from .ir import (ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, conv2d_geometry, conv_transpose2d_geometry,
                 pool2d_geometry, size)
from .errors import GPUCCError
from .resize import resize_taps

_add, _mul = F.add, F.mul


def evaluate(nodes):
    """The value of every node (a flat row-major list of floats), by id."""
    vals = []
    for n in nodes:
        vals.append(_node(nodes, n, vals))
    return vals


def run(nodes, outputs):
    """Evaluates and returns {name: (shape, data)}; an output that is not
    finite is non_finite_output, as every gpucc backend reports it."""
    vals = evaluate(nodes)
    out = {}
    for name, i in outputs:
        data = vals[i]
        for v in data:
            if math.isinf(v) or math.isnan(v):
                raise GPUCCError("non_finite_output", "output %r is not finite (%r)" % (name, v))
        out[name] = (nodes[i].shape, list(data))
    return out


def _node(nodes, n, vals):
    op = n.op
    a = vals[n.args[0]] if n.args else None
    if op == "input":
        return n.data
    if op == "full":
        return [n.scalar] * size(n.shape)
    if op.endswith("_scalar"):
        f, s = F.BINARY[op[:-7]], n.scalar
        return [f(x, s) for x in a]
    if op in ELEMENTWISE_BINARY:
        f = F.BINARY[op]
        return [f(x, y) for x, y in zip(a, vals[n.args[1]])]
    if op in ELEMENTWISE_UNARY:
        f = F.UNARY[op]
        return [f(x) for x in a]
    arg = nodes[n.args[0]].shape if n.args else ()
    if op == "sum" or op == "max":
        return reduce(op, a, arg, n.shape)
    if op == "transpose":
        return transpose_last(a, arg)
    if op == "matmul":
        return batch_matmul(a, vals[n.args[1]], arg, nodes[n.args[1]].shape)
    if op == "life":
        return life(a, n.shape[0], n.shape[1])
    if op == "broadcast":
        return broadcast(a, arg, n.shape)
    if op == "reshape":
        return a
    if op == "permute":
        return [a[j] for j in permute_sources(arg, n.attrs["perm"])]
    if op == "conv2d":
        return conv2d(a, vals[n.args[1]], conv2d_geometry(arg, nodes[n.args[1]].shape, n.attrs))
    if op == "conv_transpose2d":
        return conv_transpose2d(a, vals[n.args[1]], conv_transpose2d_geometry(arg, nodes[n.args[1]].shape, n.attrs))
    if op == "maxpool2d":
        return maxpool2d(a, pool2d_geometry(arg, n.attrs))
    if op == "maxpool2d_grad":
        return maxpool2d_grad(a, vals[n.args[1]], pool2d_geometry(arg, n.attrs))
    if op == "resize2d":
        return resize2d(a, arg, n.attrs)
    if op == "pad":
        return pad(a, arg, n.shape, n.attrs)
    raise GPUCCError("internal", "cpu-python: unknown op %s" % op)


def row_major(shape):
    st, k = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        st[d] = k
        k *= shape[d]
    return st


def transpose_last(a, s):
    rows, cols = s[-2], s[-1]
    out = []
    for z in range(0, len(a), rows * cols):
        m = a[z:z + rows * cols]
        out.extend(m[r * cols + c] for c in range(cols) for r in range(rows))
    return out


def broadcast(x, frm, to):
    n = size(to)
    off = len(to) - len(frm)
    out = [0.0] * n
    for i in range(n):
        at, rest, inner = 0, i, 1
        for d in range(len(to) - 1, off - 1, -1):
            c = rest % to[d]
            rest //= to[d]
            if frm[d - off] != 1:
                at += c * inner
            inner *= frm[d - off]
        out[i] = x[at]
    return out


def matmul(a, b, m, k, n):
    out = [0.0] * (m * n)
    for i in range(m):
        row = a[i * k:(i + 1) * k]
        for j in range(n):
            acc = 0.0
            for p, av in enumerate(row):
                acc = _add(acc, _mul(av, b[p * n + j]))
            out[i * n + j] = acc
    return out


def batch_matmul(a, b, sa, sb):
    m, k, n = sa[-2], sa[-1], sb[-1]
    from .ir import broadcast_shape
    batch = broadcast_shape(sa[:-2], sb[:-2])
    if not batch:
        return matmul(a, b, m, k, n)
    wa, wb = batch + (m, k), batch + (k, n)
    if tuple(sa) != wa:
        a = broadcast(a, sa, wa)
    if tuple(sb) != wb:
        b = broadcast(b, sb, wb)
    out = []
    for z in range(size(batch)):
        out.extend(matmul(a[z * m * k:(z + 1) * m * k], b[z * k * n:(z + 1) * k * n], m, k, n))
    return out


def _reduction_of(arg, keep):
    """gpucc's ReductionOf: outputs, leaves and the kept and reduced
    (size, stride) dimensions, merged where contiguous, outermost first."""
    whole = size(keep) == 1
    outputs, leaves = size(keep), size(arg) // size(keep)
    stride = 1
    kept, reduced = [], []
    for d in range(len(arg) - 1, -1, -1):
        n = arg[d]
        if n > 1:
            dims = reduced if whole or keep[d] == 1 else kept
            if dims and dims[-1][0] * dims[-1][1] == stride:
                dims[-1] = (dims[-1][0] * n, dims[-1][1])
            else:
                dims.append((n, stride))
        stride *= n
    kept.reverse()
    reduced.reverse()
    return outputs, leaves, kept, reduced


def _offset(dims, v):
    off = 0
    for sz, st in reversed(dims):
        off += v % sz * st
        v //= sz
    return off


IDENTITY = {"sum": F.NEG_ZERO, "max": -math.inf}
COMBINE = {"sum": F.add, "max": F.maximum}


def tree(op, leaves):
    """The contiguous pairwise tree of op's combine over a power-of-two
    count of leaves, level by level."""
    comb = COMBINE[op]
    buf = list(leaves)
    width = 1
    while width < len(buf):
        for i in range(0, len(buf), 2 * width):
            buf[i] = comb(buf[i], buf[i + width])
        width *= 2
    return buf[0]


def reduce(op, x, arg, keep):
    outputs, leaves, kept, reduced = _reduction_of(tuple(arg), tuple(keep))
    p = 1
    while p < leaves:
        p *= 2
    pad = IDENTITY[op]
    out = []
    for o in range(outputs):
        base = _offset(kept, o)
        lv = [x[base + _offset(reduced, r)] for r in range(leaves)]
        lv.extend([pad] * (p - leaves))
        out.append(tree(op, lv))
    return out


def life(x, h, w):
    out = [0.0] * (h * w)
    for r in range(h):
        for c in range(w):
            live = 0
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    if dr == 0 and dc == 0:
                        continue
                    if x[((r + dr + h) % h) * w + (c + dc + w) % w] > 0:
                        live += 1
            if live == 3 or (live == 2 and x[r * w + c] > 0):
                out[r * w + c] = 1.0
    return out


def permute_sources(s, perm):
    st = row_major(s)
    pst = [st[p] for p in perm]
    out = [s[p] for p in perm]
    src = [0] * size(out)
    pos = [0] * len(out)
    for i in range(len(src)):
        src[i] = sum(p * t for p, t in zip(pos, pst))
        for k in range(len(pos) - 1, -1, -1):
            pos[k] += 1
            if pos[k] < out[k]:
                break
            pos[k] = 0
    return src


def conv2d(x, w, c):
    N, C, H, W, M = c["N"], c["C"], c["H"], c["W"], c["M"]
    KH, KW, CG, MG = c["KH"], c["KW"], c["CG"], c["MG"]
    SH, SW, DH, DW, PT, PL = c["SH"], c["SW"], c["DH"], c["DW"], c["PT"], c["PL"]
    out = []
    for n in range(N):
        for m in range(M):
            c0 = m // MG * CG
            for oh in range(c["OH"]):
                for ow in range(c["OW"]):
                    acc = 0.0
                    for ci in range(CG):
                        xb = (n * C + c0 + ci) * H * W
                        wb = (m * CG + ci) * KH * KW
                        for kh in range(KH):
                            ih = oh * SH - PT + kh * DH
                            for kw in range(KW):
                                iw = ow * SW - PL + kw * DW
                                xv = x[xb + ih * W + iw] if 0 <= ih < H and 0 <= iw < W else 0.0
                                acc = _add(acc, _mul(xv, w[wb + kh * KW + kw]))
                    out.append(acc)
    return out


def conv_transpose2d(x, w, c):
    N, C, H, W, M = c["N"], c["C"], c["H"], c["W"], c["M"]
    KH, KW, CG, MG = c["KH"], c["KW"], c["CG"], c["MG"]
    SH, SW, DH, DW, PT, PL = c["SH"], c["SW"], c["DH"], c["DW"], c["PT"], c["PL"]
    out = []
    for n in range(N):
        for m in range(M):
            c0, mm = m // MG * CG, m % MG
            for oh in range(c["OH"]):
                for ow in range(c["OW"]):
                    acc = 0.0
                    for ci in range(CG):
                        xb = (n * C + c0 + ci) * H * W
                        wb = ((c0 + ci) * MG + mm) * KH * KW
                        for kh in range(KH):
                            th = oh + PT - kh * DH
                            if th < 0 or th % SH != 0 or th // SH >= H:
                                continue
                            for kw in range(KW):
                                tw = ow + PL - kw * DW
                                if tw < 0 or tw % SW != 0 or tw // SW >= W:
                                    continue
                                acc = _add(acc, _mul(x[xb + th // SH * W + tw // SW], w[wb + kh * KW + kw]))
                    out.append(acc)
    return out


def maxpool2d(x, c):
    H, W = c["H"], c["W"]
    out = []
    for nc in range(c["N"] * c["C"]):
        xb = nc * H * W
        for oh in range(c["OH"]):
            for ow in range(c["OW"]):
                acc = -math.inf
                for kh in range(c["KH"]):
                    ih = oh * c["SH"] - c["PT"] + kh * c["DH"]
                    for kw in range(c["KW"]):
                        iw = ow * c["SW"] - c["PL"] + kw * c["DW"]
                        if 0 <= ih < H and 0 <= iw < W:
                            acc = F.maximum(acc, x[xb + ih * W + iw])
                out.append(acc)
    return out


def maxpool2d_grad(x, g, c):
    H, W = c["H"], c["W"]
    dx = [0.0] * len(x)
    at = 0
    for nc in range(c["N"] * c["C"]):
        xb = nc * H * W
        for oh in range(c["OH"]):
            for ow in range(c["OW"]):
                acc, sel = -math.inf, -1
                for kh in range(c["KH"]):
                    ih = oh * c["SH"] - c["PT"] + kh * c["DH"]
                    for kw in range(c["KW"]):
                        iw = ow * c["SW"] - c["PL"] + kw * c["DW"]
                        if 0 <= ih < H and 0 <= iw < W:
                            m = F.maximum(acc, x[xb + ih * W + iw])
                            if sel < 0 or F.bits(m) != F.bits(acc):
                                sel = xb + ih * W + iw
                            acc = m
                if sel >= 0:
                    dx[sel] = _add(dx[sel], g[at])
                at += 1
    return dx


def resize2d(x, s, a):
    N, C, H, W = s
    OH, OW = a["sizes"]
    mode, coord, near = a["mode"][0], a["coordinate_mode"][0], a["nearest_mode"][0]
    rows = resize_taps(H, OH, a["scale_bits"][0], mode, coord, near)
    cols = resize_taps(W, OW, a["scale_bits"][1], mode, coord, near)
    out = []
    for nc in range(N * C):
        xb = nc * H * W

        def row(h, ow):
            if cols.w0 is None:
                return x[xb + h * W + cols.i0[ow]]
            return _add(_mul(cols.w0[ow], x[xb + h * W + cols.i0[ow]]), _mul(cols.w1[ow], x[xb + h * W + cols.i1[ow]]))
        for oh in range(OH):
            for ow in range(OW):
                if rows.w0 is None:
                    out.append(row(rows.i0[oh], ow))
                else:
                    out.append(_add(_mul(rows.w0[oh], row(rows.i0[oh], ow)), _mul(rows.w1[oh], row(rows.i1[oh], ow))))
    return out


def _pad_src(n, begin, mode, o):
    """ir.Pad.Src: the index of x along an axis of n elements that output
    index o copies, or -1 for the constant."""
    i = o - begin
    if mode == 0:
        return i if 0 <= i < n else -1
    if mode == 2:
        return min(max(i, 0), n - 1)
    if mode == 3:
        return ((i % n) + n) % n
    if n == 1:
        return 0
    per = 2 * (n - 1)
    j = ((i % per) + per) % per
    return per - j if j >= n else j


def pad(x, s, out, a):
    """numpy's pad (constant, reflect, edge, wrap): a copy, every value one
    of x's or the constant, unchanged."""
    pads, mode, vb = a["pads"], a["mode"][0], a["value_bits"]
    value = F.from_bits(vb[0] << 16 | vb[1])
    r = len(out)
    src = [[_pad_src(s[d], pads[d], mode, o) for o in range(out[d])] for d in range(r)]
    stride = row_major(s)
    res = []
    for i in range(size(out)):
        off, rem = 0, i
        for d in range(r - 1, -1, -1):
            j = src[d][rem % out[d]]
            rem //= out[d]
            if j < 0:
                off = -1
                break
            off += j * stride[d]
        res.append(value if off < 0 else x[off])
    return res
