"""The graph IR the module builds and evaluates, and protocol v1 on the wire.

Nodes are gpucc's IR nodes (ir.Node): in topological order, each an op of
gpucc's op table with its arguments, its shape and, per op, a scalar, data
or integer attributes. A binary elementwise op's operands have its shape
(a broadcast is its own node) and a reduction's shape is its keepdims
target ([] for the whole tensor), exactly as gpucc's Decode lowers the
wire form. So a graph this module writes decodes in gpucc to the same
nodes, and one it reads (decode) is the graph gpucc evaluates.
"""

import json
import math

from . import f32 as F
from .errors import GPUCCError

# Host limits: gpucc's defaults (ir.DefaultLimits).
DEFAULT_LIMITS = {"max_nodes": 512, "max_elements": 1 << 20, "max_storage_bytes": 32 << 20,
                  "max_ops": 100_000_000, "max_outputs": 16}

MAX_RANK = 8
MAX_MATMUL_RANK = 4

# Per-element cost of each elementwise op: its expression's operations
# with every call inlined (ir.weighted), as gpucc estimates them.
_WEIGHTS = {"add": 1, "sub": 1, "mul": 1, "relu": 1, "positive": 1, "div": 266, "maximum": 15,
            "minimum": 15, "neg": 3, "exp": 63, "log": 71, "tanh": 354, "sqrt": 341, "rsqrt": 607,
            "sigmoid": 333, "greater": 1, "greater_equal": 1, "equal": 1, "mask": 1, "floor": 16,
            "ceil": 22, "round": 24, "erf": 87}

ELEMENTWISE_BINARY = tuple(F.BINARY)
ELEMENTWISE_UNARY = tuple(F.UNARY)
REDUCTIONS = ("sum", "max")
SCALAR_FORMS = F.SCALAR_FORMS

# Integer attributes per op, in the table's order: (name, length (0: a
# list), default or None when required).
_CONV = [("strides", 2, [1, 1]), ("pads", 4, [0, 0, 0, 0]), ("dilations", 2, [1, 1]), ("group", 1, [1])]
_POOL = [("kernel_shape", 2, None), ("strides", 2, [1, 1]), ("pads", 4, [0, 0, 0, 0]), ("dilations", 2, [1, 1])]
ATTRS = {
    "conv2d": _CONV,
    "conv_transpose2d": _CONV + [("output_padding", 2, [0, 0])],
    "maxpool2d": _POOL,
    "maxpool2d_grad": _POOL,
    "permute": [("perm", 0, None)],
    "pad": [("pads", 0, None), ("mode", 1, [0]), ("value_bits", 2, [0, 0])],
    "resize2d": [("sizes", 2, None), ("mode", 1, [0]), ("coordinate_mode", 1, [0]),
                 ("nearest_mode", 1, [0]), ("scale_bits", 2, [0, 0])],
}
_ATTR_NAMES = {name for specs in ATTRS.values() for name, _, _ in specs}

# Ops by number of tensor arguments.
_ARGS = {"input": 0, "full": 0, "transpose": 1, "matmul": 2, "sum": 1, "max": 1, "life": 1,
         "broadcast": 1, "reshape": 1, "permute": 1, "conv2d": 2, "conv_transpose2d": 2,
         "maxpool2d": 1, "maxpool2d_grad": 2, "resize2d": 1, "pad": 1}
for _op in ELEMENTWISE_BINARY:
    _ARGS[_op] = 2
for _op in ELEMENTWISE_UNARY:
    _ARGS[_op] = 1
WIRE_OPS = tuple(_ARGS)


def nargs(op):
    """The number of tensor arguments of IR op (a scalar form takes one)."""
    if op.endswith("_scalar"):
        return 1
    return _ARGS[op]


def size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class Node:
    """One IR node (gpucc's ir.Node)."""

    __slots__ = ("op", "args", "shape", "scalar", "data", "attrs", "name", "param")

    def __init__(self, op, args=(), shape=(), scalar=0.0, data=None, attrs=None, name=None, param=False):
        self.op = op
        self.args = list(args)
        self.shape = tuple(shape)
        self.scalar = scalar
        self.data = data
        self.attrs = attrs
        self.name = name
        self.param = param

    def attr(self, name):
        return self.attrs[name]


def bad(node, field, msg, code="invalid_graph"):
    return GPUCCError(code, msg, node=node, field=field)


def broadcast_shape(a, b):
    """numpy's broadcast of shapes a and b, or None."""
    if len(a) < len(b):
        a, b = b, a
    out = list(a)
    off = len(a) - len(b)
    for d, n in enumerate(b):
        m = out[d + off]
        if m == 1:
            out[d + off] = n
        elif n != 1 and n != m:
            return None
    return tuple(out)


def broadcasts_to(s, t):
    if len(s) > len(t):
        return False
    off = len(t) - len(s)
    return all(n == 1 or n == t[d + off] for d, n in enumerate(s))


def reduce_target(node, arg, axes, keepdims):
    """gpucc's ReduceTarget: the IR (keepdims) target and the wire result
    shape of a reduction over axes (None: every axis)."""
    r = len(arg)
    reduced = [axes is None] * r
    for a in axes or ():
        d = a + r if a < 0 else a
        if d < 0 or d >= r:
            raise bad(node, "axes", "axis %d is out of range for a tensor of rank %d" % (a, r))
        if reduced[d]:
            raise bad(node, "axes", "axis %d appears twice" % a)
        reduced[d] = True
    if all(reduced) and not keepdims:
        return (), ()
    target = tuple(1 if reduced[d] else n for d, n in enumerate(arg))
    result = target if keepdims else tuple(n for d, n in enumerate(arg) if not reduced[d])
    return target, result


def conv2d_geometry(x, w, a):
    c = dict(N=x[0], C=x[1], H=x[2], W=x[3], M=w[0], KH=w[2], KW=w[3], G=a["group"][0],
             SH=a["strides"][0], SW=a["strides"][1], DH=a["dilations"][0], DW=a["dilations"][1],
             PT=a["pads"][0], PL=a["pads"][1], PB=a["pads"][2], PR=a["pads"][3])
    c["CG"], c["MG"] = c["C"] // c["G"], c["M"] // c["G"]
    c["OH"] = (c["H"] + c["PT"] + c["PB"] - (c["KH"] - 1) * c["DH"] - 1) // c["SH"] + 1
    c["OW"] = (c["W"] + c["PL"] + c["PR"] - (c["KW"] - 1) * c["DW"] - 1) // c["SW"] + 1
    return c


def conv_transpose2d_geometry(x, w, a):
    c = dict(N=x[0], C=x[1], H=x[2], W=x[3], KH=w[2], KW=w[3], G=a["group"][0],
             SH=a["strides"][0], SW=a["strides"][1], DH=a["dilations"][0], DW=a["dilations"][1],
             PT=a["pads"][0], PL=a["pads"][1], PB=a["pads"][2], PR=a["pads"][3],
             OPH=a["output_padding"][0], OPW=a["output_padding"][1])
    c["CG"], c["MG"] = c["C"] // c["G"], w[1]
    c["M"] = c["MG"] * c["G"]
    c["OH"] = c["SH"] * (c["H"] - 1) + c["OPH"] + (c["KH"] - 1) * c["DH"] + 1 - c["PT"] - c["PB"]
    c["OW"] = c["SW"] * (c["W"] - 1) + c["OPW"] + (c["KW"] - 1) * c["DW"] + 1 - c["PL"] - c["PR"]
    return c


def pool2d_geometry(x, a):
    c = dict(N=x[0], C=x[1], H=x[2], W=x[3], KH=a["kernel_shape"][0], KW=a["kernel_shape"][1],
             SH=a["strides"][0], SW=a["strides"][1], DH=a["dilations"][0], DW=a["dilations"][1],
             PT=a["pads"][0], PL=a["pads"][1], PB=a["pads"][2], PR=a["pads"][3])
    c["OH"] = (c["H"] + c["PT"] + c["PB"] - (c["KH"] - 1) * c["DH"] - 1) // c["SH"] + 1
    c["OW"] = (c["W"] + c["PL"] + c["PR"] - (c["KW"] - 1) * c["DW"] - 1) // c["SW"] + 1
    return c


def pack_attrs(node, op, given):
    """op's attributes from the names given, defaults filled in; a name op
    does not declare, a wrong length or a missing required one is refused."""
    specs = ATTRS.get(op, [])
    known = {name for name, _, _ in specs}
    for name in given:
        if name not in known:
            raise bad(node, name, "attribute %s is not one of %s's" % (name, op))
    out = {}
    for name, n, default in specs:
        v = given.get(name)
        if v is None:
            if default is None:
                raise bad(node, name, "missing, op %s needs it" % op)
            v = default
        if isinstance(v, int) and not isinstance(v, bool):
            v = [v]
        v = list(v)
        if any(not isinstance(x, int) or isinstance(x, bool) or abs(x) > (1 << 31) - 1 for x in v):
            raise bad(node, name, "%s values must be integers within ±2^31-1, got %r" % (name, v))
        if n and len(v) != n:
            raise bad(node, name, "%s needs %d values, got %d" % (name, n, len(v)))
        out[name] = v
    return out


def infer_shape(node, op, args, attrs):
    """The result shape of op over argument shapes args (gpucc's shape rules)."""
    if op in ELEMENTWISE_BINARY or op in ELEMENTWISE_UNARY or op.endswith("_scalar"):
        for s in args[1:]:
            if s != args[0]:
                raise bad(node, "b", "%s needs equal shapes, got %s and %s" % (op, list(args[0]), list(s)))
        return args[0]
    if op == "transpose":
        a = args[0]
        if len(a) < 2 or len(a) > MAX_MATMUL_RANK:
            raise bad(node, "a", "transpose needs a tensor of rank 2 to %d, got shape %s" % (MAX_MATMUL_RANK, list(a)))
        return a[:-2] + (a[-1], a[-2])
    if op == "matmul":
        a, b = args
        if len(a) < 2 or len(b) < 2 or len(a) > MAX_MATMUL_RANK or len(b) > MAX_MATMUL_RANK:
            raise bad(node, "a", "matmul needs tensors of rank 2 to %d, got %s and %s" % (MAX_MATMUL_RANK, list(a), list(b)))
        if a[-1] != b[-2]:
            raise bad(node, "b", "matmul inner dimensions differ: %s × %s" % (list(a), list(b)))
        batch = broadcast_shape(a[:-2], b[:-2])
        if batch is None:
            raise bad(node, "b", "matmul batch dimensions of %s and %s do not broadcast" % (list(a), list(b)))
        return batch + (a[-2], b[-1])
    if op == "life":
        if len(args[0]) != 2:
            raise bad(node, "a", "life needs a 2-D grid, got shape %s" % list(args[0]))
        return args[0]
    if op == "permute":
        perm, s = attrs["perm"], args[0]
        if len(perm) != len(s) or sorted(perm) != list(range(len(s))):
            raise bad(node, "perm", "perm %s is not a permutation of 0..%d" % (perm, len(s) - 1))
        return tuple(s[p] for p in perm)
    if op == "conv2d":
        x, w = args
        if len(x) != 4 or len(w) != 4:
            raise bad(node, "a", "conv2d needs x [N,C,H,W] and w [M,C/group,kH,kW], got %s and %s" % (list(x), list(w)))
        for name in ("strides", "dilations"):
            if any(v < 1 for v in attrs[name]):
                raise bad(node, name, "conv2d %s must be ≥ 1, got %s" % (name, attrs[name]))
        if any(v < 0 or v > 1 << 20 for v in attrs["pads"]):
            raise bad(node, "pads", "conv2d pads must be 0 to 2^20, got %s" % attrs["pads"])
        g = attrs["group"][0]
        if g < 1 or x[1] % g or w[0] % g:
            raise bad(node, "group", "conv2d group %d must be ≥ 1 and divide the input's %d and the output's %d channels" % (g, x[1], w[0]))
        if w[1] * g != x[1]:
            raise bad(node, "b", "conv2d weight %s has %d input channels per group; x %s with group %d has %d" % (list(w), w[1], list(x), g, x[1] // g))
        c = conv2d_geometry(x, w, attrs)
        if (c["KH"] - 1) * c["DH"] + 1 > c["H"] + c["PT"] + c["PB"] or (c["KW"] - 1) * c["DW"] + 1 > c["W"] + c["PL"] + c["PR"]:
            raise bad(node, "b", "conv2d kernel is larger than the padded input")
        return (c["N"], c["M"], c["OH"], c["OW"])
    if op == "conv_transpose2d":
        x, w = args
        if len(x) != 4 or len(w) != 4:
            raise bad(node, "a", "conv_transpose2d needs x [N,C,H,W] and w [C,M/group,kH,kW], got %s and %s" % (list(x), list(w)))
        for name in ("strides", "dilations"):
            if any(v < 1 or v > 1 << 20 for v in attrs[name]):
                raise bad(node, name, "conv_transpose2d %s must be 1 to 2^20, got %s" % (name, attrs[name]))
        for name in ("pads", "output_padding"):
            if any(v < 0 or v > 1 << 20 for v in attrs[name]):
                raise bad(node, name, "conv_transpose2d %s must be 0 to 2^20, got %s" % (name, attrs[name]))
        g = attrs["group"][0]
        if g < 1 or x[1] % g:
            raise bad(node, "group", "conv_transpose2d group %d must be ≥ 1 and divide the input's %d channels" % (g, x[1]))
        if w[0] != x[1]:
            raise bad(node, "b", "conv_transpose2d weight %s must have x's %d input channels first" % (list(w), x[1]))
        c = conv_transpose2d_geometry(x, w, attrs)
        if c["OH"] < 1 or c["OW"] < 1:
            raise bad(node, "pads", "conv_transpose2d output %dx%d is empty" % (c["OH"], c["OW"]))
        return (c["N"], c["M"], c["OH"], c["OW"])
    if op in ("maxpool2d", "maxpool2d_grad"):
        x = args[0]
        if len(x) != 4:
            raise bad(node, "a", "%s needs x [N,C,H,W], got %s" % (op, list(x)))
        for name in ("kernel_shape", "strides", "dilations"):
            if any(v < 1 for v in attrs[name]):
                raise bad(node, name, "maxpool2d %s must be ≥ 1, got %s" % (name, attrs[name]))
        k, d, p = attrs["kernel_shape"], attrs["dilations"], attrs["pads"]
        ext = [(k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1] * 2
        if any(v < 0 or v >= ext[j] for j, v in enumerate(p)):
            raise bad(node, "pads", "maxpool2d pads %s: each must be ≥ 0 and below the dilated window" % p)
        c = pool2d_geometry(x, attrs)
        if ext[0] > c["H"] + c["PT"] + c["PB"] or ext[1] > c["W"] + c["PL"] + c["PR"]:
            raise bad(node, "kernel_shape", "maxpool2d window is larger than the padded input")
        out = (c["N"], c["C"], c["OH"], c["OW"])
        if op == "maxpool2d":
            return out
        if args[1] != out:
            raise bad(node, "b", "maxpool2d_grad of x %s needs the gradient of maxpool2d's output %s, got %s" % (list(x), list(out), list(args[1])))
        return x
    if op == "pad":
        x, pads = args[0], attrs["pads"]
        if len(x) < 1 or len(x) > 4:
            raise bad(node, "a", "pad takes x of rank 1 to 4, got %s" % list(x))
        if len(pads) != 2 * len(x):
            raise bad(node, "pads", "pad of x %s needs %d pads (before each axis, then after each), got %s" % (list(x), 2 * len(x), pads))
        for k, n in enumerate(x):  # a negative pad crops, leaving at least one element
            b, e = pads[k], pads[len(x) + k]
            if -b >= n or -e >= n or n + b + e < 1:
                raise bad(node, "pads", "pads %s crop axis %d of x %s to nothing (or past its other end)" % (pads, k, list(x)))
        if not 0 <= attrs["mode"][0] <= 3:
            raise bad(node, "mode", "pad mode must be 0 (constant), 1 (reflect), 2 (edge) or 3 (wrap)")
        if any(h < 0 or h > 0xFFFF for h in attrs["value_bits"]):
            raise bad(node, "value_bits", "pad value_bits must be two 16-bit halves")
        return tuple(d + pads[k] + pads[len(x) + k] for k, d in enumerate(x))
    if op == "resize2d":
        x = args[0]
        if len(x) != 4:
            raise bad(node, "a", "resize2d needs x [N,C,H,W], got %s" % list(x))
        if any(v < 1 or v > 1 << 14 for v in attrs["sizes"]):
            raise bad(node, "sizes", "resize2d sizes must be 1 to 16384, got %s" % attrs["sizes"])
        if attrs["mode"][0] not in (0, 1):
            raise bad(node, "mode", "resize2d mode must be 0 (nearest) or 1 (linear)")
        if not 0 <= attrs["coordinate_mode"][0] <= 4:
            raise bad(node, "coordinate_mode", "resize2d coordinate_mode must be 0 to 4")
        if not 0 <= attrs["nearest_mode"][0] <= 3:
            raise bad(node, "nearest_mode", "resize2d nearest_mode must be 0 to 3")
        for b in attrs["scale_bits"]:
            if b < 0 or b >= 0x7F800000 or (b != 0 and b < 0x00800000):
                raise bad(node, "scale_bits", "resize2d scale_bits must be 0 or the bits of a positive normal float32")
        s = attrs["sizes"]
        return (x[0], x[1], s[0], s[1])
    raise bad(node, "op", "op %s takes a target shape" % op)


def check_target(node, op, arg, target):
    """The target shape of a broadcast, reshape or reduction."""
    if op == "broadcast" and not broadcasts_to(arg, target):
        raise bad(node, "shape", "broadcast of %s to %s: each dimension must equal the target's or be 1" % (list(arg), list(target)))
    if op == "reshape" and size(arg) != size(target):
        raise bad(node, "shape", "reshape of %s (%d elements) to %s (%d elements)" % (list(arg), size(arg), list(target), size(target)))
    if op in REDUCTIONS and target != () and (len(target) != len(arg) or any(t != a and t != 1 for t, a in zip(target, arg))):
        raise bad(node, "shape", "%s of %s to %s: the target must be [] or the argument's shape with 1 at each reduced axis" % (op, list(arg), list(target)))


def estimate_ops(nodes, n):
    """gpucc's EstimateOps for node n."""
    op, out = n.op, size(n.shape)
    base = op[:-7] if op.endswith("_scalar") else op
    if base in _WEIGHTS:
        return _WEIGHTS[base] * out
    args = [nodes[a].shape for a in n.args]
    if op == "matmul":
        return 2 * out * args[0][-1]
    if op in REDUCTIONS:
        return size(args[0])
    if op == "life":
        return 9 * out
    if op == "conv2d":
        return 2 * out * args[1][1] * args[1][2] * args[1][3]
    if op == "conv_transpose2d":
        cg = args[0][1] // max(out and n.shape[1] // args[1][1], 1)
        return 2 * out * cg * args[1][2] * args[1][3]
    if op == "maxpool2d":
        k = n.attrs["kernel_shape"]
        return out * k[0] * k[1]
    if op == "maxpool2d_grad":
        k = n.attrs["kernel_shape"]
        return out * (k[0] * k[1]) ** 2
    if op == "resize2d":
        return 7 * out if n.attrs["mode"][0] == 1 else out
    return out


def validate(nodes, outputs, limits=None):
    """Checks the host limits a graph must meet (gpucc's defaults unless
    limits says otherwise): nodes, elements, storage, operations, outputs."""
    lim = dict(DEFAULT_LIMITS, **(limits or {}))
    if len(outputs) > lim["max_outputs"]:
        raise bad(-1, "outputs", "%d outputs exceed the limit of %d" % (len(outputs), lim["max_outputs"]), "limit_exceeded")
    storage = ops = 0
    for i, n in enumerate(nodes):
        if size(n.shape) > lim["max_elements"]:
            raise bad(i, "shape", "shape %s exceeds the limit of %d elements per tensor" % (list(n.shape), lim["max_elements"]), "limit_exceeded")
        storage += 4 * size(n.shape)
        if storage > lim["max_storage_bytes"]:
            raise bad(i, "shape", "summed storage reaches %d bytes, over the limit of %d" % (storage, lim["max_storage_bytes"]), "limit_exceeded")
        ops += estimate_ops(nodes, n)
        if ops > lim["max_ops"]:
            raise bad(i, "op", "estimated operations reach %d, over the limit of %d" % (ops, lim["max_ops"]), "limit_exceeded")


# ---- the wire: protocol v1 JSON ----

def _wire_number(v):
    """A float32 as JSON: an integer when it is one (as gpucc writes them), else repr."""
    if v == int(v) and abs(v) < 1e16:
        return int(v) if not (v == 0 and math.copysign(1, v) < 0) else -0.0
    return v


def encode(nodes, outputs):
    """The protocol v1 document of IR nodes and outputs [(name, id)]: one
    wire node per IR node, attributes written in full, reductions as axes
    with keepdims (or none for the whole tensor), so that gpucc decodes it
    to these nodes."""
    wire = []
    for i, n in enumerate(nodes):
        op = n.op
        w = {"id": i}
        if op.endswith("_scalar"):
            w["op"] = op[:-7]
            w["a"] = n.args[0]
            w["scalar"] = _wire_number(n.scalar)
        else:
            w["op"] = op
            for k, a in enumerate(n.args):
                w["ab"[k]] = a
        if op == "input":
            w["shape"] = list(n.shape)
            w["data"] = [_wire_number(v) for v in n.data]
            if n.name is not None:
                w["name"] = n.name
            if n.param:
                w["param"] = True
        elif op == "full":
            w["shape"] = list(n.shape)
            w["value"] = _wire_number(n.scalar)
        elif op in ("broadcast", "reshape"):
            w["shape"] = list(n.shape)
        elif op in REDUCTIONS:
            if n.shape != ():  # the keepdims target: every axis of size 1 in it
                w["axes"] = [d for d, t in enumerate(n.shape) if t == 1]
                w["keepdims"] = True
        if n.attrs:
            for name, n_vals, _ in ATTRS[op]:
                v = n.attrs[name]
                w[name] = v[0] if n_vals == 1 else list(v)
        wire.append(w)
    return {"version": 1, "nodes": wire, "outputs": [{"name": name, "id": i} for name, i in outputs]}


def dumps(doc):
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)


_NODE_FIELDS = {"id", "op", "a", "b", "shape", "data", "value", "scalar", "name", "param", "axes", "keepdims"}


def _number_hook(text):
    v = F.parse(text)
    return _Num(text, v)


class _Num(float):
    """A JSON number with its float32 value (None when it overflows)."""

    def __new__(cls, text, v):
        o = float.__new__(cls, float(text))
        o.text, o.f32 = text, v
        return o


def loads(text):
    """Parses a protocol v1 document: numbers keep their text, so each rounds
    once to float32 as gpucc's decoder rounds it."""
    return json.loads(text, parse_float=_number_hook, parse_int=lambda s: _Int(s))


class _Int(int):
    def __new__(cls, text):
        o = int.__new__(cls, text)
        o.text = text
        return o


def _f32_of(i, field, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise bad(i, field, "expected a number, got %r" % (v,))
    if isinstance(v, _Num):
        r = v.f32
    elif isinstance(v, _Int):
        r = F.parse(v.text)
    else:
        r = F.f32(float(v))
        if math.isnan(r):
            r = None
    if r is None or math.isinf(r):
        raise bad(i, field, "%r is not a finite float32" % (v,))
    return r


def _int_of(i, field, v):
    if isinstance(v, bool) or not isinstance(v, int) or isinstance(v, _Num):
        raise bad(i, field, "expected an integer, got %r" % (v,))
    return int(v)


def default_input_name(i):
    return "input%d" % i


def decode(doc, limits=None):
    """The IR nodes and outputs of a protocol v1 document (a dict from loads,
    or JSON text), lowered as gpucc's Decode lowers it: a broadcasting binary
    op gets a broadcast node per operand, a reduction without keepdims a
    reshape after it. Errors are GPUCCError with gpucc's codes, naming the
    wire node and field."""
    if isinstance(doc, (str, bytes)):
        try:
            doc = loads(doc)
        except ValueError as e:
            raise bad(-1, "", "malformed JSON: %s" % e)
    lim = dict(DEFAULT_LIMITS, **(limits or {}))
    if not isinstance(doc, dict):
        raise bad(-1, "", "a graph is a JSON object")
    for k in doc:
        if k not in ("version", "nodes", "outputs"):
            raise bad(-1, "", "unknown field %r" % k)
    if doc.get("version") != 1 or isinstance(doc.get("version"), bool):
        raise bad(-1, "version", "unsupported or missing version; this host speaks version 1")
    wires = doc.get("nodes")
    outs = doc.get("outputs")
    if not isinstance(wires, list) or not isinstance(outs, list):
        raise bad(-1, "nodes", "nodes and outputs must be arrays")
    if len(wires) > lim["max_nodes"]:
        raise bad(-1, "nodes", "more than %d nodes exceed the limit of %d" % (lim["max_nodes"], lim["max_nodes"]), "limit_exceeded")
    if len(outs) > lim["max_outputs"]:
        raise bad(-1, "outputs", "more than %d outputs exceed the limit of %d" % (lim["max_outputs"], lim["max_outputs"]), "limit_exceeded")
    nodes, ids, names = [], [], {}
    for i, w in enumerate(wires):
        if not isinstance(w, dict):
            raise bad(i, "", "a node is a JSON object")
        for k in w:
            if k not in _NODE_FIELDS and k not in _ATTR_NAMES:
                raise bad(i, "", "unknown field %r" % k)
        if w.get("id") != i or isinstance(w.get("id"), bool):
            raise bad(i, "id", "id %r at position %d; ids must run 0..n-1 in order" % (w.get("id"), i))
        op = w.get("op")
        if op not in _ARGS:
            raise bad(i, "op", "unknown op %r" % (op,))
        if "scalar" in w and op in SCALAR_FORMS:
            if "b" in w:
                raise bad(i, "scalar", "%s takes either b or scalar, not both" % op)
            irop = op + "_scalar"
        else:
            irop = op
        n_args = nargs(irop)
        red = op in REDUCTIONS
        if ("axes" in w or "keepdims" in w) and not red:
            raise bad(i, "axes" if "axes" in w else "keepdims", "not allowed for op %s; only sum and max reduce over axes" % op)
        allowed = {"a": n_args >= 1, "b": n_args == 2, "shape": op in ("input", "full", "broadcast", "reshape"),
                   "data": op == "input", "value": op == "full", "scalar": irop.endswith("_scalar")}
        for f in ("a", "b", "shape", "data", "value", "scalar"):
            if f in w and not allowed[f]:
                raise bad(i, f, "not allowed for op %s" % op)
            if f not in w and allowed[f]:
                if f == "b" and op in SCALAR_FORMS:
                    raise bad(i, "b", "%s needs b (a tensor) or scalar (a number)" % op)
                raise bad(i, f, "missing, op %s needs it" % op)
        if ("name" in w or "param" in w) and op != "input":
            raise bad(i, "name" if "name" in w else "param", "not allowed for op %s; only inputs are named" % op)
        given = {k: w[k] for k in w if k in _ATTR_NAMES}
        attrs = None
        if op in ATTRS or given:
            for k, v in given.items():
                vs = v if isinstance(v, list) else [v]
                for x in vs:
                    _int_of(i, k, x)
            attrs = pack_attrs(i, op, {k: (v if isinstance(v, list) else [v]) for k, v in given.items()})
            for name, n_vals, _ in ATTRS[op]:
                if name in given and (n_vals == 1) == isinstance(given[name], list):
                    raise bad(i, name, "%s takes %s" % (name, "an integer" if n_vals == 1 else "a list"))
        name = None
        if op == "input":
            if "name" in w:
                name = w["name"]
                if not isinstance(name, str) or not 1 <= len(name.encode()) <= 256:
                    raise bad(i, "name", "name must be 1 to 256 bytes long")
                if name in names:
                    raise bad(i, "name", "duplicate input name %r (also node %d)" % (name, names[name]))
                names[name] = i
            else:
                dn = default_input_name(i)
                if dn in names:
                    raise bad(i, "name", "this unnamed input's default name %s is node %d's name" % (dn, names[dn]))
                names[dn] = i
                if len(nodes) != i:
                    name = dn
        param = False
        if "param" in w:
            if not isinstance(w["param"], bool):
                raise bad(i, "param", "expected a boolean")
            if w["param"] and "name" not in w:
                raise bad(i, "param", "a parameter needs a name: its update is returned under it")
            param = w["param"]
        args = []
        for k, f in enumerate("ab"[:n_args]):
            ref = _int_of(i, f, w[f])
            if ref < 0 or ref >= i:
                raise bad(i, f, "reference %d must point to an earlier node (0..%d)" % (ref, i - 1))
            args.append(ids[ref])
        squeeze = None
        if red:
            axes = w.get("axes")
            keep = w.get("keepdims", False)
            if axes is not None:
                if not isinstance(axes, list):
                    raise bad(i, "axes", "expected an array")
                axes = [_int_of(i, "axes", a) for a in axes]
            if not isinstance(keep, bool):
                raise bad(i, "keepdims", "expected a boolean")
            shape, result = reduce_target(i, nodes[args[0]].shape, axes, keep)
            if result != shape:
                squeeze = result
        elif "shape" in w:
            s = w["shape"]
            if not isinstance(s, list) or len(s) > MAX_RANK:
                raise bad(i, "shape", "a shape is an array of at most %d dimensions" % MAX_RANK)
            s = tuple(_int_of(i, "shape", d) for d in s)
            if any(d < 1 for d in s):
                raise bad(i, "shape", "zero-sized and negative dimensions are not supported")
            if size(s) > lim["max_elements"]:
                raise bad(i, "shape", "shape %s exceeds the limit of %d elements per tensor" % (list(s), lim["max_elements"]), "limit_exceeded")
            shape = s
            if n_args:
                check_target(i, op, nodes[args[0]].shape, shape)
        else:
            shapes = [nodes[a].shape for a in args]
            if op in ELEMENTWISE_BINARY and not irop.endswith("_scalar") and shapes[0] != shapes[1]:
                s = broadcast_shape(shapes[0], shapes[1])
                if s is None:
                    raise bad(i, "b", "%s of %s and %s: the shapes do not broadcast" % (op, list(shapes[0]), list(shapes[1])))
                shapes = [s, s]
            shape = infer_shape(i, irop, shapes, attrs)
            if size(shape) > lim["max_elements"]:
                raise bad(i, "shape", "result shape %s exceeds the limit of %d elements per tensor" % (list(shape), lim["max_elements"]), "limit_exceeded")
        n = Node(irop, args, shape, attrs=attrs, name=name, param=param)
        if op == "full":
            n.scalar = _f32_of(i, "value", w["value"])
        elif irop.endswith("_scalar"):
            n.scalar = _f32_of(i, "scalar", w["scalar"])
        if op == "input":
            data = w["data"]
            if not isinstance(data, list):
                raise bad(i, "data", "expected an array")
            if len(data) != size(shape):
                raise bad(i, "data", "has %d values, shape needs %d" % (len(data), size(shape)))
            n.data = [_f32_of(i, "data", v) for v in data]
        if squeeze is not None:
            nodes.append(n)
            n = Node("reshape", [len(nodes) - 1], squeeze)
        if irop in ELEMENTWISE_BINARY:
            for k, a in enumerate(n.args):
                if nodes[a].shape != n.shape:
                    nodes.append(Node("broadcast", [a], n.shape))
                    n.args[k] = len(nodes) - 1
        ids.append(len(nodes))
        nodes.append(n)
    outputs = []
    for k, o in enumerate(outs):
        if not isinstance(o, dict) or set(o) - {"name", "id"}:
            raise bad(-1, "outputs[%d]" % k, "an output is {\"name\", \"id\"}")
        if "name" not in o or not isinstance(o["name"], str) or not o["name"]:
            raise bad(-1, "outputs[%d].name" % k, "missing")
        ref = o.get("id")
        if not isinstance(ref, int) or isinstance(ref, bool) or ref < 0 or ref >= len(ids):
            raise bad(-1, "outputs[%d].id" % k, "output %r refers to node %r, graph has %d nodes" % (o["name"], ref, len(ids)))
        outputs.append((o["name"], ids[ref]))
    validate(nodes, outputs, limits)
    return nodes, outputs
