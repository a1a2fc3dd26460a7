"""Authoring: Graph and Tensor, the seed's API.

    from gpucc import Graph

    def show(result):
        print(result["backend"], result["outputs"]["values"]["data"])

    g = Graph()
    a = g.tensor([-2, 3, 4])
    b = g.tensor([10, 20, 30])
    g.submit(show, values=(a * b).relu())   # [0, 60, 120]

Tensor operators append IR nodes to their graph (shapes checked as they
are added, with gpucc's codes); submit writes protocol v1 and hands it to
the graph's transport (transport.py), returning at once.
"""

import math
import numbers

from . import f32 as F
from . import ir
from .errors import GPUCCError
from .ir import Node, size


def _flatten(data):
    """(shape, flat values) of a number, a nested list or an array-like."""
    if hasattr(data, "tolist") and hasattr(data, "shape"):  # numpy, without importing it
        shape = tuple(int(d) for d in data.shape)
        flat = data.reshape(-1).tolist() if shape else [data.tolist()]
        return shape, flat
    if isinstance(data, numbers.Number) and not isinstance(data, bool):
        return (), [data]
    if not isinstance(data, (list, tuple)):
        raise GPUCCError("invalid_input", "tensor data must be a number or a nested list, got %s" % type(data).__name__)
    if len(data) == 0:
        raise GPUCCError("invalid_input", "tensor data is empty; zero-sized dimensions are not supported")
    parts = [_flatten(x) for x in data]
    inner = parts[0][0]
    if any(p[0] != inner for p in parts):
        raise GPUCCError("invalid_input", "tensor data is ragged: its rows have different shapes")
    return (len(data),) + inner, [v for p in parts for v in p[1]]


def _as_f32(v, what):
    r = F.f32(float(v))
    if math.isinf(r) or math.isnan(r):
        raise GPUCCError("invalid_input", "%s %r is not a finite float32" % (what, v))
    return r


class Graph:
    """A graph under construction and the transport that runs it.

    Graph(url=None, token=None, backend=None, timeout=60) picks the
    transport as the seed does: a gpucc serve at url (or $GPUCC_URL, with
    $GPUCC_TOKEN and $GPUCC_BACKEND), the browser host when running as a
    guest there, else cpu-python, the reference in pure Python.
    backend="cpu-python" always computes here."""

    def __init__(self, url=None, token=None, backend=None, timeout=60.0, transport=None):
        from .transport import choose
        self.nodes = []
        self.transport = transport or choose(url=url, token=token, backend=backend, timeout=timeout)

    # ---- leaves ----
    def tensor(self, data, shape=None, name=None, param=False):
        """An input of the given data (a number, nested lists or a numpy
        array; shape reshapes flat data). name: the input's name, needed
        for a parameter (param=True) that training updates."""
        s, flat = _flatten(data)
        if shape is not None:
            shape = tuple(int(d) for d in shape)
            if size(shape) != len(flat):
                raise GPUCCError("invalid_input", "shape %s needs %d values, got %d" % (list(shape), size(shape), len(flat)))
            s = shape
        if any(d < 1 for d in s):
            raise GPUCCError("invalid_input", "zero-sized dimensions are not supported")
        if param and not name:
            raise GPUCCError("invalid_graph", "a parameter needs a name: its update is returned under it", field="param")
        if name is not None:
            for n in self.nodes:
                if n.op == "input" and n.name == name:
                    raise GPUCCError("invalid_graph", "duplicate input name %r" % name, field="name")
        data = [_as_f32(v, "value") for v in flat]
        return self._add(Node("input", (), s, data=data, name=name, param=param))

    input = tensor

    def param(self, data, name, shape=None):
        """A named trainable parameter: tensor(data, name=name, param=True)."""
        return self.tensor(data, shape=shape, name=name, param=True)

    def full(self, shape, value):
        """A tensor of shape with every element value."""
        if isinstance(shape, int):
            shape = (shape,)
        return self._add(Node("full", (), tuple(shape), scalar=_as_f32(value, "value")))

    def mask(self, c, b):
        """mask(c, b): b where c > 0, else -0 (where(c, x, y) is
        mask(c, x) + mask(1 - c, y), bit for bit)."""
        return c.mask(b)

    # ---- building ----
    def _add(self, node):
        self.nodes.append(node)
        return Tensor(self, len(self.nodes) - 1)

    def _apply(self, op, args, attrs=None, scalar=None, target=None):
        """Appends op over tensors args (after broadcast nodes for a binary
        elementwise op, as gpucc's decoder lowers one), checking shapes."""
        i = len(self.nodes)
        ids = [t._id for t in args]
        shapes = [self.nodes[a].shape for a in ids]
        if scalar is not None:
            op = op + "_scalar"
        elif op in ir.ELEMENTWISE_BINARY and shapes[0] != shapes[1]:
            s = ir.broadcast_shape(shapes[0], shapes[1])
            if s is None:
                raise GPUCCError("invalid_graph", "%s of %s and %s: the shapes do not broadcast" % (op, list(shapes[0]), list(shapes[1])), field="b")
            for k, a in enumerate(ids):
                if self.nodes[a].shape != s:
                    self.nodes.append(Node("broadcast", [a], s))
                    ids[k] = len(self.nodes) - 1
            shapes = [s, s]
        if target is not None:
            ir.check_target(i, op, shapes[0], tuple(target))
            shape = tuple(target)
        else:
            if attrs is not None or op in ir.ATTRS:
                attrs = ir.pack_attrs(i, op, attrs or {})
            shape = ir.infer_shape(i, op, shapes, attrs)
        n = Node(op, ids, shape, attrs=attrs)
        if scalar is not None:
            n.scalar = _as_f32(scalar, "scalar")
        return self._add(n)

    def _tensor(self, x, like):
        """x as a tensor of this graph: a Tensor, or data (a number becomes a
        full of like's shape only where the caller asks)."""
        if isinstance(x, Tensor):
            if x.graph is not self:
                raise GPUCCError("invalid_graph", "a tensor of another graph")
            return x
        return self.tensor(x)

    # ---- running ----
    def program(self, **outputs):
        """The protocol v1 document computing outputs (name=tensor): the
        nodes they depend on, in order."""
        if not outputs:
            raise GPUCCError("invalid_graph", "submit needs at least one output (name=tensor)", field="outputs")
        for name, t in outputs.items():
            if not isinstance(t, Tensor) or t.graph is not self:
                raise GPUCCError("invalid_graph", "output %r is not a tensor of this graph" % name, field="outputs")
        nodes, outs = prune(self.nodes, [(name, t._id) for name, t in outputs.items()])
        return ir.encode(nodes, outs)

    def submit(self, callback=None, on_error=None, **outputs):
        """Runs the graph's outputs (name=tensor) and returns at once, a
        Pending. Later, callback(result) gets the result: {"backend",
        "outputs": {name: {"shape", "data"}}, "timings", ...}, as gpucc run
        prints it; on failure on_error(GPUCCError) (without one, the error
        is printed on stderr). Callbacks run in submission order."""
        try:
            doc = self.program(**outputs)
        except GPUCCError as e:  # delivered like any other failure, in order
            def fail(err=e):
                raise err
            return self.transport.request(fail, lambda r: r, callback, on_error)
        return self.transport.submit(doc, callback, on_error)

    def run(self, timeout=None, **outputs):
        """submit, then wait: the result, or GPUCCError raised."""
        return self.submit(**outputs).result(timeout)


def prune(nodes, outputs):
    """The nodes that outputs depend on, renumbered in order, and the outputs."""
    need = set()
    stack = [i for _, i in outputs]
    while stack:
        i = stack.pop()
        if i not in need:
            need.add(i)
            stack.extend(nodes[i].args)
    keep = sorted(need)
    new = {old: k for k, old in enumerate(keep)}
    out = []
    for old in keep:
        n = nodes[old]
        out.append(Node(n.op, [new[a] for a in n.args], n.shape, n.scalar, n.data, n.attrs, n.name, n.param))
    return out, [(name, new[i]) for name, i in outputs]


def _scalar(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


class Tensor:
    """A node of a Graph. Operators add nodes: + - * / @, unary -, and
    methods for the rest of gpucc's op table."""

    __slots__ = ("graph", "_id")
    __array_priority__ = 1000  # numpy defers to our operators

    def __init__(self, graph, i):
        self.graph = graph
        self._id = i

    @property
    def shape(self):
        return self.graph.nodes[self._id].shape

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return "Tensor(%s, shape=%s)" % (self.graph.nodes[self._id].op, list(self.shape))

    def _bin(self, op, other):
        if _scalar(other) and op in ir.SCALAR_FORMS:
            return self.graph._apply(op, [self], scalar=other)
        if _scalar(other):
            other = self.graph.full(self.shape, other)
        return self.graph._apply(op, [self, self.graph._tensor(other, self)])

    def _rbin(self, op, other):
        if _scalar(other):
            other = self.graph.full(self.shape, other)
        return self.graph._apply(op, [self.graph._tensor(other, self), self])

    # arithmetic
    def __add__(self, o):
        return self._bin("add", o)

    def __radd__(self, o):  # addition commutes bit for bit
        return self._bin("add", o) if _scalar(o) else self._rbin("add", o)

    def __sub__(self, o):
        return self._bin("sub", o)

    def __rsub__(self, o):
        if _scalar(o):  # s - x is -x + s exactly (IEEE: x - y = x + (-y))
            return self.neg()._bin("add", o)
        return self._rbin("sub", o)

    def __mul__(self, o):
        return self._bin("mul", o)

    def __rmul__(self, o):
        return self._bin("mul", o) if _scalar(o) else self._rbin("mul", o)

    def __truediv__(self, o):
        return self._bin("div", o)

    def __rtruediv__(self, o):
        return self._rbin("div", o)

    def __matmul__(self, o):
        return self.graph._apply("matmul", [self, self.graph._tensor(o, self)])

    def __rmatmul__(self, o):
        return self.graph._apply("matmul", [self.graph._tensor(o, self), self])

    def __neg__(self):
        return self.neg()

    def __pos__(self):
        return self

    def __gt__(self, o):
        return self.greater(o)

    def __ge__(self, o):
        return self.greater_equal(o)

    def __lt__(self, o):
        return self._rbin("greater", o)

    def __le__(self, o):
        return self._rbin("greater_equal", o)

    def maximum(self, o):
        return self._bin("maximum", o)

    def minimum(self, o):
        return self._bin("minimum", o)

    def greater(self, o):
        return self._bin("greater", o)

    def greater_equal(self, o):
        return self._bin("greater_equal", o)

    def equal(self, o):
        return self._bin("equal", o)

    def mask(self, b):
        """b where self > 0, else -0."""
        return self._bin("mask", b)

    def matmul(self, o):
        return self @ o

    # unary
    def _un(self, op):
        return self.graph._apply(op, [self])

    def relu(self):
        return self._un("relu")

    def positive(self):
        """1 where self > 0, else 0: the seed's positive mask."""
        return self._un("positive")

    def neg(self):
        return self._un("neg")

    def exp(self):
        return self._un("exp")

    def log(self):
        return self._un("log")

    def tanh(self):
        return self._un("tanh")

    def sqrt(self):
        return self._un("sqrt")

    def rsqrt(self):
        return self._un("rsqrt")

    def sigmoid(self):
        return self._un("sigmoid")

    def erf(self):
        return self._un("erf")

    def floor(self):
        return self._un("floor")

    def ceil(self):
        return self._un("ceil")

    def round(self):
        return self._un("round")

    def life(self):
        """One toroidal Game of Life step of a 2-D grid (alive: > 0)."""
        return self._un("life")

    # views
    def transpose(self, *perm):
        """With no arguments the last two axes swapped (the seed's
        transpose); with a permutation, numpy's transpose (permute)."""
        if not perm:
            return self._un("transpose")
        if len(perm) == 1 and isinstance(perm[0], (list, tuple)):
            perm = perm[0]
        return self.permute(*perm)

    @property
    def T(self):
        return self.transpose()

    def permute(self, *perm):
        if len(perm) == 1 and isinstance(perm[0], (list, tuple)):
            perm = perm[0]
        return self.graph._apply("permute", [self], attrs={"perm": list(perm)})

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        shape = list(shape)
        if shape.count(-1) == 1:
            rest = size([d for d in shape if d != -1])
            shape[shape.index(-1)] = size(self.shape) // rest if rest else 0
        if tuple(shape) == self.shape:
            return self
        return self.graph._apply("reshape", [self], target=shape)

    def broadcast_to(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        if tuple(shape) == self.shape:
            return self
        return self.graph._apply("broadcast", [self], target=shape)

    # reductions
    def _reduce(self, op, axis, keepdims):
        i = len(self.graph.nodes)
        if isinstance(axis, int):
            axis = [axis]
        target, result = ir.reduce_target(i, self.shape, None if axis is None else list(axis), keepdims)
        t = self.graph._apply(op, [self], target=target)
        if result != target:
            t = self.graph._apply("reshape", [t], target=result)
        return t

    def sum(self, axis=None, keepdims=False):
        """The pairwise sum over axis (an int, a list, None: every axis)."""
        return self._reduce("sum", axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return self._reduce("max", axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        """sum divided by the count of elements summed (div, correctly rounded)."""
        n = size(self.shape) // size(self.sum(axis, keepdims=True).shape)
        return self.sum(axis, keepdims) / float(n)

    # convolution and pooling (NCHW)
    def conv2d(self, w, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
        return self.graph._apply("conv2d", [self, self.graph._tensor(w, self)], attrs={
            "strides": list(strides), "pads": list(pads), "dilations": list(dilations), "group": [group]})

    def conv_transpose2d(self, w, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1, output_padding=(0, 0)):
        return self.graph._apply("conv_transpose2d", [self, self.graph._tensor(w, self)], attrs={
            "strides": list(strides), "pads": list(pads), "dilations": list(dilations), "group": [group],
            "output_padding": list(output_padding)})

    def maxpool2d(self, kernel_shape, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1)):
        return self.graph._apply("maxpool2d", [self], attrs={
            "kernel_shape": list(kernel_shape), "strides": list(strides), "pads": list(pads), "dilations": list(dilations)})

    def pad(self, pads, mode=0, value=0.0):
        """numpy's pad: pads [before each axis..., after each axis...], mode
        0 constant (value), 1 reflect, 2 edge, 3 wrap; rank 1 to 4."""
        b = F.bits(_as_f32(value, "value"))
        return self.graph._apply("pad", [self], attrs={"pads": list(pads), "mode": [mode],
                                                       "value_bits": [b >> 16, b & 0xFFFF]})

    def resize2d(self, sizes, mode=0, coordinate_mode=0, nearest_mode=0, scale_bits=(0, 0)):
        return self.graph._apply("resize2d", [self], attrs={
            "sizes": list(sizes), "mode": [mode], "coordinate_mode": [coordinate_mode],
            "nearest_mode": [nearest_mode], "scale_bits": list(scale_bits)})
