"""Random graphs written with the authoring API: every op of the table on
random shapes, numpy broadcasting, scalar operands, reductions over random
axes, views, and values from ±0 and subnormals to overflow."""

import random

from gpucc import Graph

DIMS = (1, 2, 3, 5)
UNARY = ("relu", "positive", "neg", "exp", "log", "tanh", "sqrt", "rsqrt", "sigmoid", "erf", "floor", "ceil", "round")
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "greater", "greater_equal", "equal", "mask")


def value(r):
    k = r.randrange(10)
    if k == 0:
        return r.choice([0.0, -0.0, 1e-40, -3e-39, 3e38, -2e38, 1e30, 0.5, -1.5, 88.0])
    if k < 4:
        return r.randrange(-6, 7) / 2
    return r.uniform(-4, 4)


def shape(r, rank=None):
    rank = r.randrange(4) if rank is None else rank
    return tuple(r.choice(DIMS) for _ in range(rank))


def leaf(g, r, s):
    n = 1
    for d in s:
        n *= d
    return g.tensor([value(r) for _ in range(n)], shape=s)


def like(r, s):
    """A shape that broadcasts with s: some dimensions 1, some leading ones dropped."""
    t = [1 if r.random() < 0.3 else d for d in s]
    return tuple(t[r.randrange(len(t) + 1):]) if t and r.random() < 0.3 else tuple(t)


def graph(seed, backend="cpu-python", n_ops=10):
    r = random.Random(seed)
    g = Graph(backend=backend)
    ts = [leaf(g, r, shape(r)) for _ in range(r.randrange(1, 3))]
    for _ in range(n_ops):
        x = r.choice(ts)
        s = x.shape
        k = r.randrange(11)
        if k < 3:
            y = getattr(x, r.choice(UNARY))()
        elif k < 6:
            op = r.choice(BINARY)
            if op in ("add", "sub", "mul", "div", "maximum", "minimum") and r.random() < 0.3:
                y = getattr(x, "_bin")(op, value(r))
            else:
                o = leaf(g, r, like(r, s))
                y = o._bin(op, x) if r.random() < 0.5 else x._bin(op, o)
        elif k == 6 and s:
            axes = sorted(r.sample(range(len(s)), r.randrange(1, len(s) + 1)))
            if r.random() < 0.3:
                axes = None
            y = (x.sum if r.random() < 0.6 else x.max)(axes, keepdims=r.random() < 0.5)
        elif k == 7 and len(s) >= 2:
            y = x.T if r.random() < 0.5 else x.permute(*r.sample(range(len(s)), len(s)))
        elif k == 8 and 2 <= len(s) <= 4:
            y = x @ leaf(g, r, (s[-1], r.choice(DIMS)))
        elif k == 9 and len(s) == 2:
            y = x.life()
        elif k == 10:
            n = 1
            for d in s:
                n *= d
            y = x.reshape(n)
        else:
            y = getattr(x, r.choice(UNARY))()
        ts.append(y)
    outs = r.sample(ts[1:] or ts, min(len(ts) - 1 or 1, r.randrange(1, 4)))
    return g, {"o%d" % k: t for k, t in enumerate(outs)}
