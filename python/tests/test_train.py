"""Training: compile(step, training=True) and the port of grad.Step give
gpucc train's losses and parameters bit for bit, on cpu-python and through
gpucc serve, for an MLP written in Python, the repository's PyTorch
fixture and a graph through every differentiable op."""

import os
import random
import unittest

from support import SHORT, Serve, bits_of, gpucc as run_gpucc, need_bin, same_bits

import gpucc
from gpucc import GPUCCError, Graph, Parameter, cpuref, grad, ir
from gpucc.transport import result_floats

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def mlp(seed=1):
    r = random.Random(seed)
    X = [[r.uniform(-1, 1) for _ in range(4)] for _ in range(8)]
    Y = [[r.uniform(-1, 1) for _ in range(2)] for _ in range(8)]
    params = [Parameter([[r.gauss(0, 0.5) for _ in range(16)] for _ in range(4)], name="w1"),
              Parameter([0.0] * 16, name="b1"),
              Parameter([[r.gauss(0, 0.3) for _ in range(2)] for _ in range(16)], name="w2"),
              Parameter([0.0, 0.0], name="b2")]
    return X, Y, params


def loss_fn(x, y, w1, b1, w2, b2):
    h = (x @ w1 + b1).relu()
    d = h @ w2 + b2 - y
    return (d * d).mean()


def gpucc_train(doc, steps, lr, backend="cpu"):
    rc, out = run_gpucc("train", "--backend", backend, "--steps", str(steps), "--lr", repr(lr), "-",
                        stdin=ir.dumps(doc).encode())
    if rc != 0:
        raise AssertionError("gpucc train: %r" % out)
    losses = [ir.F.parse(v.text) for v in out["losses"]]
    params = {k: bits_of(result_floats({"outputs": {k: v}})["outputs"][k]["data"]) for k, v in out["params"].items()}
    return bits_of(losses), params


def python_train(nodes, outputs, steps, lr, loss="loss"):
    """Steps of grad.step evaluated by cpu-python, the parameters written back."""
    nodes = [ir.Node(n.op, n.args, n.shape, n.scalar, n.data, n.attrs, n.name, n.param) for n in nodes]
    losses = []
    for _ in range(steps):
        snodes, souts = grad.step(nodes, outputs, loss, lr)
        vals = cpuref.evaluate(snodes)
        byname = dict(souts)
        losses.append(vals[byname[loss]][0])
        for n in nodes:
            if n.op == "input" and n.param:
                n.data = list(vals[byname[n.name]])
    return bits_of(losses), {n.name: bits_of(n.data) for n in nodes if n.op == "input" and n.param}


class CompileTest(unittest.TestCase):
    def test_forward(self):
        model = gpucc.compile(lambda x, w: (x @ w).relu(), backend="cpu-python")
        got = []
        p = model([[1, -2], [3, 4]], [[1, 0], [0, 1]]).submit(got.append)
        p.wait(60)
        self.assertEqual(got[0].shape, (2, 2))
        self.assertEqual(got[0].tolist(), [[1, 0], [3, 4]])
        pair = gpucc.compile(lambda x: (x.sum(), x.max()), backend="cpu-python")([1, 5, 2]).result(60)
        self.assertEqual([a.item() for a in pair], [8, 5])

    def test_training_refusals(self):
        step = gpucc.compile(lambda x, w: (x @ w), training=True, backend="cpu-python")
        with self.assertRaises(GPUCCError) as e:
            step([[1.0]], Parameter([[1.0]], name="w")).result(60)
        self.assertEqual((e.exception.code, e.exception.field), ("invalid_graph", "loss"))
        step = gpucc.compile(lambda x, w: (x @ w).life().sum(), training=True, backend="cpu-python")
        with self.assertRaises(GPUCCError) as e:
            step([[1.0, 0.0], [0.0, 1.0]], Parameter([[1.0, 0.0], [0.0, 1.0]], name="w")).result(60)
        self.assertEqual((e.exception.code, e.exception.field), ("invalid_graph", "op"))


@need_bin
class TrainTest(unittest.TestCase):
    STEPS = 5

    def test_mlp_matches_gpucc_train(self):
        X, Y, params = mlp()
        train = gpucc.compile(loss_fn, training=True, lr=0.1, backend="cpu-python")
        doc = train.program(X, Y, *params)
        want_losses, want_params = gpucc_train(doc, self.STEPS, 0.1)
        losses = [train(X, Y, *params).result(120) for _ in range(self.STEPS)]
        self.assertEqual(bits_of(losses), want_losses)
        for p in params:
            self.assertEqual(bits_of(p.data), want_params[p.name], p.name)
        self.assertLess(losses[-1], losses[0])

    def test_mlp_through_serve(self):
        serve = Serve()
        try:
            backends = [b for b in ("cpu", "wasm", "native") if b in serve.backends()]
            X, Y, params0 = mlp()
            want_losses, want_params = gpucc_train(gpucc.compile(loss_fn, training=True, lr=0.1).program(X, Y, *params0), self.STEPS, 0.1)
            for backend in backends:
                X, Y, params = mlp()
                train = gpucc.compile(loss_fn, training=True, lr=0.1, url=serve.url, token=serve.token, backend=backend, timeout=300)
                pend = [train(X, Y, *params).submit() for _ in range(self.STEPS)]  # queued at once, run in order
                losses = [p.result(600) for p in pend]
                self.assertEqual(bits_of(losses), want_losses, backend)
                for p in params:
                    self.assertEqual(bits_of(p.data), want_params[p.name], "%s %s" % (backend, p.name))
        finally:
            serve.close()

    def test_pytorch_fixture(self):
        path = os.path.join(ROOT, "testdata", "fixtures", "mlp_train_public.graph.json")
        with open(path) as f:
            nodes, outputs = ir.decode(f.read())
        with open(path) as f:
            doc = ir.loads(f.read())
        self.assertEqual(python_train(nodes, outputs, self.STEPS, 0.1), gpucc_train(doc, self.STEPS, 0.1))

    def test_every_differentiable_op(self):
        r = random.Random(7)
        g = Graph(backend="cpu-python")

        def rnd(*s, lo=-1.0, hi=1.0):
            n = 1
            for d in s:
                n *= d
            return [r.uniform(lo, hi) for _ in range(n)]
        x = g.tensor(rnd(2, 2, 5, 5), shape=(2, 2, 5, 5))
        w = g.param(rnd(4, 1, 3, 3), "conv_w", shape=(4, 1, 3, 3))
        cb = g.param(rnd(4, 1, 1), "conv_b", shape=(4, 1, 1))
        c = (x.conv2d(w, strides=(2, 1), pads=(1, 1, 1, 0), group=2) + cb).tanh()        # [2,4,3,4]
        p = c.maxpool2d((2, 2), strides=(1, 2), pads=(0, 0, 1, 0))                          # [2,4,3,2]
        f = p.permute(0, 2, 1, 3).reshape(2, 24)
        v = g.param(rnd(24, 6), "v", shape=(24, 6))
        h = f @ v                                                                           # [2,6]
        a = g.param(rnd(6, lo=0.5, hi=2.0), "a", shape=(6,))
        s = (h.sigmoid() * a + h.erf()).exp()                                               # > 0
        t = s.log() / (s.sqrt() + 1.0) + s.rsqrt() * 0.5
        u = t.maximum(h).minimum(t * 2.0) - h.max(axis=1, keepdims=True)
        m = g.mask(h, u) + (1 - h.positive()).mask(u * 0.25)
        b3 = g.param(rnd(3, 2, 2), "b3", shape=(3, 2, 2))
        bm = m.reshape(1, 2, 6).transpose() @ m.reshape(1, 2, 6)                            # [1,6,6]
        q = (bm.reshape(6, 6)[:] if False else bm).sum(axis=0) @ g.tensor(rnd(6, 2), shape=(6, 2))
        loss = (q.reshape(1, 6, 2) @ b3.transpose()).sum() * 0.01 + (u * u).mean(axis=-1).sum()
        doc = g.program(loss=loss)
        nodes, outputs = ir.decode(doc)
        steps = 2 if SHORT else 3
        got, want = python_train(nodes, outputs, steps, 0.05), gpucc_train(doc, steps, 0.05)
        self.assertEqual(got[0], want[0], "losses")
        for k in want[1]:
            self.assertTrue(same_bits(got[1][k], want[1][k]), k)
        ops = {n.op for n in nodes}
        for op in ("conv2d", "maxpool2d", "permute", "reshape", "tanh", "sigmoid", "erf", "exp", "log", "sqrt",
                   "rsqrt", "div", "maximum", "minimum", "max", "mask", "transpose", "matmul", "broadcast", "sum",
                   "positive", "neg"):
            self.assertIn(op, ops)


if __name__ == "__main__":
    unittest.main()
