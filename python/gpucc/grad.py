"""Reverse-mode differentiation and the SGD step: a port of gpucc's package
grad (grad.Step) and the op table's gradient rules (ir.OpInfo.Grad).

step builds the same graph as grad.Step, node for node in value: the loss's
gradient full([], 1); a reverse sweep over nodes by decreasing id; for each
node that depends on a parameter, its rule's contribution to each argument
that does, a before b; several contributions to one node summed in that
order, the first as is and each later one added with one add node; then
for every parameter p, in node order, p - lr·grad as sub(p, mul_scalar(grad, lr)).
So a step run on cpu-python, on gpucc serve or by gpucc train rounds the
same operations in the same order and gives the same bits.
"""

from . import ir
from .errors import GPUCCError
from .ir import Node

TWO_OVER_SQRT_PI = ir.F.from_bits(0x3F906EBB)  # float32(2/math.SqrtPi)


class _C:
    """A constant operand of a rule (ir.C)."""
    __slots__ = ("c",)

    def __init__(self, c):
        self.c = ir.F.f32(c)


_NO_GRAD = {"life": "life is not differentiable",
            "maxpool2d_grad": "maxpool2d_grad is a gradient; second derivatives of pooling are not rules",
            "conv_transpose2d": "conv_transpose2d's gradients (a conv2d of the output gradient, and of x with it) are not rules yet",
            "resize2d": "resize2d's gradient (the output gradient scattered back through the taps) is not a rule yet",
            "pad": "pad's gradient (the output gradient summed back onto the elements each border copies) is not a rule yet"}
_ZERO = {"positive", "greater", "greater_equal", "equal", "floor", "ceil", "round"}


class _Builder:
    def __init__(self, nodes):
        self.nodes = [Node(n.op, list(n.args), n.shape, n.scalar, n.data, n.attrs, n.name, n.param) for n in nodes]

    def shape(self, v):
        return () if isinstance(v, _C) else self.nodes[v].shape

    def node(self, op, target, scalar, *args, attrs=None):
        i = len(self.nodes)
        if op in ("full", "broadcast", "reshape", "sum", "max"):
            shape = tuple(target)
        else:
            try:
                shape = ir.infer_shape(i, op, [self.nodes[a].shape for a in args], attrs)
            except GPUCCError as e:
                raise GPUCCError("internal", "grad: %s" % e.message, node=i)
        self.nodes.append(Node(op, list(args), shape, scalar, attrs=attrs))
        return i

    def apply(self, op, target, *args):
        scalar = 0.0
        if len(args) == 2 and isinstance(args[1], _C) and op in ir.SCALAR_FORMS:
            op, scalar, args = op + "_scalar", args[1].c, args[:1]
        for a in args:
            if isinstance(a, _C):
                raise GPUCCError("internal", "grad: a rule used the constant %r where a tensor is needed" % a.c)
        return self.node(op, target, scalar, *args)

    def apply_attrs(self, op, attrs, *args):
        return self.node(op, None, 0.0, *args, attrs=attrs)

    def full(self, shape, v):
        return self.node("full", shape, ir.F.f32(v))


def _reshape(b, v, s):
    return v if b.shape(v) == tuple(s) else b.apply("reshape", s, v)


def _sum_to(b, g, s):
    out = b.shape(g)
    off = len(out) - len(s)
    t = tuple(1 if i < off or s[i - off] == 1 else d for i, d in enumerate(out))
    if t != out:
        g = b.apply("sum", t, g)
    return _reshape(b, g, s)


def _broadcast_back(b, v, s):
    t = b.shape(v)
    if t == tuple(s):
        return v
    lead = 0
    while lead < len(t) and t[lead] == 1:
        lead += 1
    rest = t[lead:]
    if len(rest) <= len(s) and tuple(s[len(s) - len(rest):]) == rest:
        return b.apply("broadcast", s, _reshape(b, v, rest))
    return b.apply("broadcast", s, v)


def _permute(b, v, *perm):
    return b.apply_attrs("permute", {"perm": list(perm)}, v)


def _conv_rest(c):
    rh = c["H"] + c["PT"] + c["PB"] - (c["KH"] - 1) * c["DH"] - 1 - (c["OH"] - 1) * c["SH"]
    rw = c["W"] + c["PL"] + c["PR"] - (c["KW"] - 1) * c["DW"] - 1 - (c["OW"] - 1) * c["SW"]
    return rh, rw


def _conv_attrs(**given):
    return ir.pack_attrs(-1, "conv2d", given)


def _conv2d_grad(b, n, k, g):
    x, w = n.args
    c = ir.conv2d_geometry(b.shape(x), b.shape(w), n.attrs)
    rh, rw = _conv_rest(c)
    if k == 0:
        attrs = ir.pack_attrs(-1, "conv_transpose2d", {
            "strides": [c["SH"], c["SW"]], "dilations": [c["DH"], c["DW"]],
            "pads": [c["PT"], c["PL"], c["PB"], c["PR"]], "group": [c["G"]], "output_padding": [rh, rw]})
        return b.apply_attrs("conv_transpose2d", attrs, g, w)
    N, G, CG, MG, H, W, M, OH, OW = c["N"], c["G"], c["CG"], c["MG"], c["H"], c["W"], c["M"], c["OH"], c["OW"]
    if G == 1:
        x = _permute(b, x, 1, 0, 2, 3)
        g = _permute(b, g, 1, 0, 2, 3)
    else:
        x = _reshape(b, _permute(b, _reshape(b, x, (N, G, CG, H, W)), 2, 1, 0, 3, 4), (CG, G * N, H, W))
        g = _reshape(b, _permute(b, _reshape(b, g, (N, G, MG, OH, OW)), 1, 2, 0, 3, 4), (M, N, OH, OW))
    pb, pr = max(c["PB"] - rh, 0), max(c["PR"] - rw, 0)
    r = b.apply_attrs("conv2d", _conv_attrs(strides=[c["DH"], c["DW"]], dilations=[c["SH"], c["SW"]],
                                            pads=[c["PT"], c["PL"], pb, pr], group=[G]), x, g)
    s = b.shape(r)
    if s[2] != c["KH"] or s[3] != c["KW"]:
        r = _crop_taps(b, r, c["KH"], c["KW"])
    return _permute(b, r, 1, 0, 2, 3)


def _crop_taps(b, v, kh, kw):
    s = b.shape(v)
    eh, ew = s[2] - kh + 1, s[3] - kw + 1
    one = b.full((1, 1, 1, 1), 1)
    e = b.apply_attrs("conv2d", _conv_attrs(pads=[0, 0, eh - 1, ew - 1]), one, one)
    out = b.apply_attrs("conv2d", _conv_attrs(), _reshape(b, v, (s[0] * s[1], 1, s[2], s[3])), e)
    return _reshape(b, out, (s[0], s[1], kh, kw))


def _rule(b, i, n, k, g):
    """The contribution of node i (n) to its argument k, or None."""
    op = n.op
    scalar_form = op.endswith("_scalar")
    base = op[:-7] if scalar_form else op
    arg = (lambda j: _C(n.scalar) if j >= len(n.args) else n.args[j])
    A = b.apply
    if base == "add":
        return g
    if base == "sub":
        return g if k == 0 else A("mul", None, g, _C(-1))
    if base == "mul":
        return A("mul", None, g, arg(1 - k))
    if base == "div":
        if k == 0:
            return A("div", None, g, arg(1))
        return A("neg", None, A("div", None, A("mul", None, g, i), arg(1)))
    if base in ("maximum", "minimum"):
        diff = A("sub", None, arg(0), arg(1))
        if base == "minimum":
            diff = A("neg", None, diff)
        ga = A("mul", None, g, A("positive", None, diff))
        return ga if k == 0 else A("sub", None, g, ga)
    if op == "relu":
        return A("mul", None, g, A("positive", None, arg(0)))
    if op in _ZERO:
        return None
    if op == "transpose":
        return A("transpose", None, g)
    if op == "matmul":
        if k == 0:
            return _sum_to(b, A("matmul", None, g, A("transpose", None, arg(1))), b.shape(arg(0)))
        return _sum_to(b, A("matmul", None, A("transpose", None, arg(0)), g), b.shape(arg(1)))
    if op == "sum":
        return _broadcast_back(b, g, b.shape(arg(0)))
    if op == "max":
        s = b.shape(arg(0))
        m = _broadcast_back(b, i, s)
        not_below = A("positive", None, A("sub", None, m, arg(0)))
        mask = A("add", None, A("neg", None, not_below), _C(1))
        ties = A("sum", b.shape(i), mask)
        share = A("div", None, g, ties)
        return A("mul", None, _broadcast_back(b, share, s), mask)
    if op == "neg":
        return A("neg", None, g)
    if op == "exp":
        return A("mul", None, g, i)
    if op == "log":
        return A("div", None, g, arg(0))
    if op == "tanh":
        sq = A("mul", None, i, i)
        return A("mul", None, g, A("add", None, A("neg", None, sq), _C(1)))
    if op == "sqrt":
        return A("div", None, A("mul", None, g, _C(0.5)), i)
    if op == "rsqrt":
        return A("mul", None, g, A("mul", None, A("div", None, i, arg(0)), _C(-0.5)))
    if op == "sigmoid":
        return A("mul", None, g, A("mul", None, i, A("add", None, A("neg", None, i), _C(1))))
    if op == "mask":
        return None if k == 0 else A("mask", None, arg(0), g)
    if op == "erf":
        e = A("exp", None, A("neg", None, A("mul", None, arg(0), arg(0))))
        return A("mul", None, g, A("mul", None, e, _C(TWO_OVER_SQRT_PI)))
    if op == "conv2d":
        return _conv2d_grad(b, n, k, g)
    if op == "maxpool2d":
        return b.apply_attrs("maxpool2d_grad", dict(n.attrs), arg(0), g)
    if op == "permute":
        perm = n.attrs["perm"]
        inv = [0] * len(perm)
        for j, p in enumerate(perm):
            inv[p] = j
        return b.apply_attrs("permute", {"perm": inv}, g)
    if op == "broadcast":
        return _sum_to(b, g, b.shape(arg(0)))
    if op == "reshape":
        return _reshape(b, g, b.shape(arg(0)))
    raise GPUCCError("internal", "grad: no rule for %s" % op)


def backward(nodes, loss):
    """nodes extended with the gradient of node loss; the gradient node of
    each parameter the loss depends on."""
    b = _Builder(nodes)
    dep = []
    for n in nodes:
        dep.append((n.op == "input" and n.param) or any(dep[a] for a in n.args))
    grad = {loss: b.full((), 1)}

    def accumulate(v, contrib):
        if v in grad:
            contrib = b.apply("add", None, grad[v], contrib)
        grad[v] = contrib
    for i in range(loss, -1, -1):
        if i not in grad or not dep[i]:
            continue
        n = nodes[i]
        base = n.op[:-7] if n.op.endswith("_scalar") else n.op
        if n.args and base in _NO_GRAD:
            raise GPUCCError("invalid_graph", "cannot differentiate %s: %s, and it lies between a parameter and the loss"
                             % (n.op, _NO_GRAD[base]), node=i, field="op")
        for k, a in enumerate(n.args):
            if dep[a]:
                c = _rule(b, i, b.nodes[i], k, grad[i])
                if c is not None:
                    accumulate(a, c)
    params = {i: grad[i] for i, n in enumerate(nodes) if n.op == "input" and n.param and i in grad}
    return b, params


def step(nodes, outputs, loss="loss", lr=0.01):
    """grad.Step: the nodes and outputs of one SGD step of the graph on the
    scalar output named loss with learning rate lr. Outputs: the loss, the
    graph's other outputs, then each parameter's update under its name."""
    lr = ir.F.f32(lr)
    if lr != lr or abs(lr) == float("inf"):
        raise GPUCCError("invalid_graph", "learning rate %r is not a finite float32" % lr, field="lr")
    ids = [i for name, i in outputs if name == loss]
    if not ids:
        raise GPUCCError("invalid_graph", "no output named %r" % loss, field="loss")
    loss_id = ids[0]
    if nodes[loss_id].shape != ():
        raise GPUCCError("invalid_graph", "loss %r has shape %s; it must be a scalar (shape [])" % (loss, list(nodes[loss_id].shape)), node=loss_id, field="loss")
    b, grads = backward(nodes, loss_id)
    outs = [(loss, loss_id)] + [(name, i) for name, i in outputs if name != loss]
    names = {name for name, _ in outs}
    for i, n in enumerate(nodes):
        if n.op == "input" and n.param:
            if n.name in names:
                raise GPUCCError("invalid_graph", "parameter %r has the name of an output; the step returns the update under it" % n.name, node=i, field="name")
            upd = i
            if i in grads:
                upd = b.node("sub", None, 0.0, i, b.node("mul_scalar", None, lr, grads[i]))
            outs.append((n.name, upd))
    return b.nodes, outs
