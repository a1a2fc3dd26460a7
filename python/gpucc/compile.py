"""A torch.compile-like subset.

    model = gpucc.compile(lambda x, w, b: (x @ w + b).relu())
    model(x, w, b).submit(print_result)        # records the forward pass, runs it

    w1 = gpucc.Parameter(init, name="w1")
    def loss_fn(x, y, w1):
        d = x @ w1 - y
        return (d * d).mean()
    train = gpucc.compile(loss_fn, training=True, lr=0.1)
    for _ in range(5):
        train(x, y, w1).submit(print)          # one SGD step; w1 is updated

compile(fn)(*args) calls fn once on Tensors of a fresh graph (Parameters
become named parameter inputs, arrays and nested lists inputs, numbers
stay numbers) and returns a Call: .submit(callback, on_error=None) runs it
and delivers an Array (or a tuple or dict of them, as fn returned), and
.result() waits for it. With training=True, fn returns the scalar loss (or
a dict with "loss"); each call runs one step of gpucc's SGD (grad.py: the
backward pass and p - lr·grad as ordinary graph nodes, gpucc's grad.Step),
delivers the loss as a float and writes each Parameter's new value. Steps
run in order: a call's graph is built when it runs, from the parameters
the steps before it wrote. Through gpucc serve the parameters travel with
every step (its API holds no state between requests). On the browser host
they stay resident: the first call opens a session (gpu.step, with the
forward graph), later calls send only the batch inputs that changed and
read the parameters back; a call whose graph's structure or parameters
differ from the session's opens a new one. There a step delivers its loss
only (the graph's other outputs are not read back).
"""

import numbers

from . import grad as _grad
from . import ir
from .errors import GPUCCError
from .graph import Graph, Tensor, _flatten, prune


class Array:
    """A float32 tensor on the CPU: shape and flat row-major data."""

    __slots__ = ("shape", "data")

    def __init__(self, data, shape=None):
        s, flat = _flatten(data) if shape is None else (tuple(shape), list(data))
        self.shape, self.data = tuple(s), [float(v) for v in flat]

    def tolist(self):
        def build(off, dims):
            if not dims:
                return self.data[off]
            step = ir.size(dims[1:])
            return [build(off + k * step, dims[1:]) for k in range(dims[0])]
        return build(0, self.shape)

    def item(self):
        if len(self.data) != 1:
            raise ValueError("item() of an array of %d elements" % len(self.data))
        return self.data[0]

    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.asarray(self.data, dtype=dtype or numpy.float32).reshape(self.shape)

    def __repr__(self):
        return "Array(%r, shape=%s)" % (self.tolist(), list(self.shape))

    def __eq__(self, other):
        return isinstance(other, Array) and self.shape == other.shape and self.data == other.data


class Parameter(Array):
    """A trainable tensor: a named parameter input of the graphs that use it;
    a training step writes its new value here."""

    __slots__ = ("name",)

    def __init__(self, data, name=None, shape=None):
        super().__init__(data, shape)
        self.name = name

    def __repr__(self):
        return "Parameter(%r, shape=%s, name=%r)" % (self.tolist(), list(self.shape), self.name)


def compile(fn=None, *, training=False, lr=0.01, loss="loss", url=None, token=None, backend=None, timeout=60.0):
    """Records fn's forward pass (or, with training=True, one SGD step at
    learning rate lr on its loss) as a gpucc graph; see the module doc."""
    def wrap(f):
        return Compiled(f, training, lr, loss, dict(url=url, token=token, backend=backend, timeout=timeout))
    return wrap(fn) if fn is not None else wrap


class Compiled:
    def __init__(self, fn, training, lr, loss, options):
        self.fn, self.training, self.lr, self.loss = fn, training, lr, loss
        self.options = options
        self.transport = Graph(**options).transport
        self.last_result = None
        self._session = None  # the browser host's training session: (id, structure, parameters sent)

    def __call__(self, *args, **kwargs):
        return Call(self, args, kwargs)

    def record(self, args, kwargs):
        """The forward graph of fn on args: (nodes, outputs, structure, params)."""
        g = Graph(transport=self.transport)
        params, seen = [], {}

        def lift(x):
            if isinstance(x, Parameter):
                if id(x) in seen:
                    return seen[id(x)]
                if x.name is None:
                    x.name = "param%d" % len(params)
                t = g.tensor(x.data, shape=x.shape, name=x.name, param=self.training)
                seen[id(x)] = t
                params.append(x)
                return t
            if isinstance(x, Array):
                return g.tensor(x.data, shape=x.shape)
            if isinstance(x, Tensor) or (isinstance(x, numbers.Number) and not isinstance(x, bool)):
                return x
            if isinstance(x, (list, tuple)) or hasattr(x, "shape"):
                return g.tensor(x)
            return x
        out = self.fn(*[lift(a) for a in args], **{k: lift(v) for k, v in kwargs.items()})
        if isinstance(out, Tensor):
            outs, structure = {"output": out}, "one"
        elif isinstance(out, (tuple, list)):
            outs, structure = {"output%d" % k: t for k, t in enumerate(out)}, len(out)
        elif isinstance(out, dict):
            outs, structure = dict(out), "dict"
        else:
            raise GPUCCError("invalid_graph", "the compiled function must return a Tensor, a tuple or a dict of them")
        if self.training:
            if structure == "one":
                outs, structure = {self.loss: out}, "loss"
            if self.loss not in outs:
                raise GPUCCError("invalid_graph", "a training step returns its loss (or a dict with %r)" % self.loss, field="loss")
        for name, t in outs.items():
            if not isinstance(t, Tensor) or t.graph is not g:
                raise GPUCCError("invalid_graph", "output %r is not a tensor of the recorded graph" % name)
        nodes, outputs = prune(g.nodes, [(name, t._id) for name, t in outs.items()])
        return nodes, outputs, structure, params

    def program(self, *args, **kwargs):
        """The protocol v1 document of the forward pass on args (with
        training, the graph gpucc train takes: parameters and the loss)."""
        nodes, outputs, _, _ = self.record(args, kwargs)
        return ir.encode(nodes, outputs)

    def step_program(self, *args, **kwargs):
        """The protocol v1 document of one training step on args."""
        nodes, outputs, _, _ = self.record(args, kwargs)
        return ir.encode(*_grad.step(nodes, outputs, self.loss, self.lr))

    def _make(self, args, kwargs, state):
        """The document of one call (the forward pass, or a training step
        from the parameters' current values); state keeps what post needs."""
        nodes, outputs, structure, params = self.record(args, kwargs)
        if self.training:
            nodes, outputs = _grad.step(nodes, outputs, self.loss, self.lr)
        state.update(outputs=outputs, structure=structure, params=params)
        return ir.encode(nodes, outputs)

    def _post(self, res, state):
        """The value a call delivers; a training step writes its parameters."""
        self.last_result = res  # backend, timings, … of the latest call
        got, structure, params = res["outputs"], state["structure"], state["params"]
        if self.training:
            for p in params:
                p.data = list(got[p.name]["data"])
            if structure == "loss":
                return got[self.loss]["data"][0]
            names = {p.name for p in params}
            return {name: (got[name]["data"][0] if name == self.loss else Array(got[name]["data"], got[name]["shape"]))
                    for name, _ in state["outputs"] if name not in names}
        arrays = {name: Array(o["data"], o["shape"]) for name, o in got.items()}
        if structure == "one":
            return arrays["output"]
        if structure == "dict":
            return arrays
        return tuple(arrays["output%d" % k] for k in range(structure))


    # ---- training with the parameters resident, on the browser host ----
    def _make_step(self, args, kwargs, state):
        """gpu.step's payload: the forward graph once (a new session), then
        only the batch inputs that changed; the parameters stay with the host."""
        nodes, outputs, structure, params = self.record(args, kwargs)
        doc = ir.encode(nodes, outputs)
        shape_only = [{k: v for k, v in n.items() if k != "data"} for n in doc["nodes"]]
        batch = {"input%d" % i: {"shape": list(n.shape), "data": n.data}
                 for i, n in enumerate(nodes) if n.op == "input" and not n.param and n.name is None}
        snapshot = {p.name: list(p.data) for p in params}
        state.update(outputs=outputs, structure=structure, params=params)
        s = self._session
        if s is None or s["structure"] != shape_only or s["params"] != snapshot:
            state["new"] = dict(structure=shape_only, batch=batch)
            return {"backend": self.transport.backend, "session": 0, "graph": doc, "loss": self.loss,
                    "lr": self.lr, "params": True}
        changed = {k: v for k, v in batch.items() if s["batch"].get(k) != v}
        state["batch"] = batch
        return {"backend": self.transport.backend, "session": s["id"], "inputs": changed, "params": True}

    def _post_step(self, value, state):
        self.last_result = value
        if "new" in state:
            self._session = dict(id=value["session"], **state["new"])
        else:
            self._session["batch"] = state["batch"]
        for p in state["params"]:
            p.data = list(value["params"][p.name]["data"])
        self._session["params"] = {p.name: list(p.data) for p in state["params"]}
        loss = value["loss"]
        loss = loss.cast("B").cast("f").tolist()[0] if isinstance(loss, memoryview) else ir.F.f32(float(loss))
        if state["structure"] == "loss":
            return loss
        return {self.loss: loss}


class Call:
    """A recorded call, pending until submitted."""

    def __init__(self, compiled, args, kwargs):
        self.compiled, self.args, self.kwargs = compiled, args, kwargs

    def submit(self, callback=None, on_error=None):
        """Runs the call and returns a Pending at once; callback gets the
        result later (on_error a GPUCCError)."""
        c, state = self.compiled, {}
        if c.training and getattr(c.transport, "name", "") == "host":
            return c.transport.request(lambda: c._make_step(self.args, self.kwargs, state),
                                       lambda v: c._post_step(v, state), callback, on_error, kind="gpu.step")
        return c.transport.request(lambda: c._make(self.args, self.kwargs, state), lambda r: c._post(r, state),
                                   callback, on_error)

    def result(self, timeout=None):
        return self.submit().result(timeout)
