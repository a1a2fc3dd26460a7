"""The same graph gives the same bits everywhere: cpu-python, gpucc run
--backend cpu (the CLI) and gpucc serve over HTTP (cpu, and wasm where
Clang is), on random graphs written with the authoring API and on the
seed's example, which gives [0, 60, 120] through serve too."""

import io
import os
import unittest
from contextlib import redirect_stdout

from support import SHORT, Serve, bits_of, need_bin, run_cli, same_bits

import randgraph
from gpucc import GPUCCError, Graph
from gpucc.transport import HTTPTransport


def outcome(fn):
    """(outputs as bits, None) or (None, error code)."""
    try:
        res = fn()
    except GPUCCError as e:
        return None, e.code
    return {k: (o["shape"], bits_of(o["data"])) for k, o in res["outputs"].items()}, None


def cli(doc, backend="cpu"):
    res, err = run_cli(doc, backend)
    if err:
        return None, err["code"]
    return {k: (o["shape"], bits_of(o["data"])) for k, o in res["outputs"].items()}, None


def same(a, b):
    if a[1] or b[1]:
        return a[1] == b[1]
    return a[0].keys() == b[0].keys() and all(
        a[0][k][0] == b[0][k][0] and same_bits(a[0][k][1], b[0][k][1]) for k in a[0])


@need_bin
class HostsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.serve = Serve()
        cls.backends = cls.serve.backends()

    @classmethod
    def tearDownClass(cls):
        cls.serve.close()

    def http(self, backend):
        return HTTPTransport(self.serve.url, self.serve.token, backend, timeout=300)

    def test_random_graphs_everywhere(self):
        n = 24 if SHORT else 80
        codes = {}
        http_cpu = self.http("cpu")
        for seed in range(n):
            g, outs = randgraph.graph(seed)
            doc = g.program(**outs)
            with self.subTest(seed=seed):
                want = cli(doc)
                codes[want[1]] = codes.get(want[1], 0) + 1
                got = outcome(lambda: g.transport.execute(doc))
                self.assertTrue(same(got, want), "seed %d: cpu-python %r, gpucc run %r" % (seed, got, want))
                over = outcome(lambda: http_cpu.execute(doc))
                self.assertTrue(same(over, want), "seed %d: serve %r, gpucc run %r" % (seed, over, want))
                for b, every in (("wasm", 8), ("native", 16)):  # each compiles with Clang or cc: a few
                    if b in self.backends and seed % every == 0:
                        w = outcome(lambda: self.http(b).execute(doc))
                        self.assertTrue(same(w, want), "seed %d: serve %s %r, gpucc run %r" % (seed, b, w, want))
        self.assertGreater(codes.get(None, 0), n // 2, "most random graphs must give values, not errors: %r" % codes)

    def test_convolution_pooling_resize(self):
        """The NCHW ops, written with the module, on cpu-python, gpucc run and serve."""
        import random
        r = random.Random(5)
        g = Graph(backend="cpu-python")

        def t(*s):
            n = 1
            for d in s:
                n *= d
            return g.tensor([r.uniform(-2, 2) for _ in range(n)], shape=s)
        x = t(2, 4, 7, 6)
        outs = {
            "conv": x.conv2d(t(6, 2, 3, 2), strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2), group=2),
            "convT": x.conv_transpose2d(t(4, 3, 3, 3), strides=(2, 3), pads=(1, 1, 0, 2), output_padding=(1, 2)),
            "pool": x.maxpool2d((3, 2), strides=(2, 2), pads=(1, 0, 1, 1), dilations=(2, 1)),
            "nearest": x.resize2d((9, 4), mode=0, coordinate_mode=4, nearest_mode=1),
            "linear": x.resize2d((5, 11), mode=1, coordinate_mode=2),
            "half": x.resize2d((14, 3), mode=1, coordinate_mode=3),
        }
        doc = g.program(**outs)
        want = cli(doc)
        self.assertIsNone(want[1])
        self.assertTrue(same(outcome(lambda: g.transport.execute(doc)), want))
        self.assertTrue(same(outcome(lambda: self.http("cpu").execute(doc)), want))
        if "wasm" in self.backends:
            self.assertTrue(same(outcome(lambda: self.http("wasm").execute(doc)), want))

    def test_seed_example_through_serve(self):
        for backend in ["cpu"] + [b for b in ("wasm",) if b in self.backends]:
            out = io.StringIO()
            with redirect_stdout(out):
                def show(result):
                    print(result["backend"], result["outputs"]["values"]["data"])

                g = Graph(url=self.serve.url, token=self.serve.token, backend=backend)
                a = g.tensor([-2, 3, 4])
                b = g.tensor([10, 20, 30])
                g.submit(show, values=(a * b).relu()).wait(300)
            self.assertEqual(out.getvalue(), "%s [0, 60, 120]\n" % backend)

    def test_environment_chooses_the_server(self):
        old = {k: os.environ.get(k) for k in ("GPUCC_URL", "GPUCC_TOKEN", "GPUCC_BACKEND")}
        os.environ.update(GPUCC_URL=self.serve.url, GPUCC_TOKEN=self.serve.token, GPUCC_BACKEND="cpu")
        try:
            g = Graph()
            r = g.run(timeout=120, y=(g.tensor([-2, 3, 4]) * g.tensor([10, 20, 30])).relu())
            self.assertEqual((r["backend"], r["outputs"]["y"]["data"]), ("cpu", [0, 60, 120]))
            os.environ["GPUCC_TOKEN"] = "wrong"
            with self.assertRaises(GPUCCError) as e:
                h = Graph()
                h.run(timeout=120, y=h.tensor([1.0]))
            self.assertEqual(e.exception.code, "not_granted")
        finally:
            for k, v in old.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v

    def test_refusals_through_serve(self):
        g = Graph(url=self.serve.url, token=self.serve.token, backend="cpu")
        with self.assertRaises(GPUCCError) as e:
            g.run(timeout=120, y=g.tensor([3e38]) * 10.0)
        self.assertEqual(e.exception.code, "non_finite_output")
        with self.assertRaises(GPUCCError) as e:
            g.run(timeout=120, y=g.full((1025, 1024), 1.0))
        self.assertEqual(e.exception.code, "limit_exceeded")
        with self.assertRaises(GPUCCError) as e:
            h = Graph(url="http://127.0.0.1:9", backend="cpu")
            h.run(timeout=60, y=h.tensor([1.0]))
        self.assertEqual(e.exception.code, "backend_unavailable")


if __name__ == "__main__":
    unittest.main()
