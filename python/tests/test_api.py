"""The authoring API on cpu-python: the seed's example, submit's contract,
shapes and errors with gpucc's codes, and the wire form."""

import io
import os
import threading
import time
import unittest
from contextlib import redirect_stdout

import support  # noqa: F401  (puts the module on the path)

import gpucc
from gpucc import GPUCCError, Graph, ir


def run(g, **outputs):
    return g.run(timeout=120, **outputs)["outputs"]


class SeedTest(unittest.TestCase):
    def test_seed_example_as_written(self):
        """The seed's main.py, the module's name aside: [0, 60, 120] on cpu-python."""
        out = io.StringIO()
        with redirect_stdout(out):
            def show(result):
                print(result["backend"], result["outputs"]["values"]["data"])

            g = Graph(backend="cpu-python")
            a = g.tensor([-2, 3, 4])
            b = g.tensor([10, 20, 30])
            p = g.submit(show, values=(a * b).relu())
            p.wait(60)
        self.assertEqual(out.getvalue(), "cpu-python [0, 60, 120]\n")

    def test_seed_wire_form(self):
        """What leaves the module is the seed's document."""
        g = Graph(backend="cpu-python")
        a = g.tensor([-2, 3, 4])
        b = g.tensor([10, 20, 30])
        self.assertEqual(g.program(values=(a * b).relu()), {"version": 1, "nodes": [
            {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
            {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
            {"id": 2, "op": "mul", "a": 0, "b": 1},
            {"id": 3, "op": "relu", "a": 2}], "outputs": [{"name": "values", "id": 3}]})

    def test_no_host_means_cpu_python(self):
        old = {k: os.environ.pop(k, None) for k in ("GPUCC_URL", "GPUCC_BACKEND", "GPUCC_TOKEN")}
        try:
            self.assertEqual(Graph().transport.name, "cpu-python")
            os.environ["GPUCC_BACKEND"] = "webgpu"  # a GPU backend with no host: refused, never downgraded
            g = Graph()
            with self.assertRaises(GPUCCError) as e:
                g.run(timeout=30, y=g.tensor([1.0]).relu())
            self.assertEqual(e.exception.code, "backend_unavailable")
        finally:
            for k, v in old.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


class SubmitTest(unittest.TestCase):
    def test_returns_at_once_and_delivers_in_order(self):
        g = Graph(backend="cpu-python")
        x = g.tensor([[float((i * 7 + j) % 5) for j in range(64)] for i in range(64)])
        slow = x @ x @ x  # about 0.3 s of pure Python
        got, lock = [], threading.Lock()
        t0 = time.perf_counter()
        p1 = g.submit(lambda r: got.append(("slow", threading.current_thread().name)), y=slow)
        p2 = g.submit(lambda r: got.append(("fast", r["outputs"]["y"]["data"])), y=g.tensor([2.0]) * 3)
        self.assertLess(time.perf_counter() - t0, 1.0, "submit must return before the graph runs")
        self.assertFalse(p2.done())
        p2.wait(120)
        self.assertTrue(p1.done())
        self.assertEqual(got[0][0], "slow")
        self.assertEqual(got[1], ("fast", [6.0]))
        self.assertNotEqual(got[0][1], threading.current_thread().name)

    def test_on_error_gets_the_code(self):
        g = Graph(backend="cpu-python")
        errs = []
        big = g.tensor([3e38, 1.0]) * 10.0  # overflows float32: an output that is not finite
        g.submit(lambda r: errs.append("called"), on_error=errs.append, y=big).wait(60)
        self.assertEqual(len(errs), 1)
        self.assertIsInstance(errs[0], GPUCCError)
        self.assertEqual(errs[0].code, "non_finite_output")
        with self.assertRaises(GPUCCError) as e:
            g.run(timeout=60, y=big)
        self.assertEqual(e.exception.code, "non_finite_output")

    def test_limits_are_checked_before_anything_runs(self):
        g = Graph(backend="cpu-python")
        with self.assertRaises(GPUCCError) as e:
            g.run(timeout=60, y=g.full((1025, 1024), 1.0))
        self.assertEqual((e.exception.code, e.exception.field), ("limit_exceeded", "shape"))
        x = g.tensor([1.0])
        with self.assertRaises(GPUCCError) as e:
            g.run(timeout=60, **{"o%d" % k: x + k for k in range(17)})
        self.assertEqual(e.exception.code, "limit_exceeded")
        m = g.full((1024, 1024), 1.0)
        with self.assertRaises(GPUCCError) as e:  # 2·1024³ operations, over 100 million
            g.run(timeout=60, y=m @ m)
        self.assertEqual(e.exception.code, "limit_exceeded")

    def test_callback_exception_does_not_stop_the_queue(self):
        g = Graph(backend="cpu-python")
        got = []

        def boom(r):
            raise RuntimeError("a bug in the callback")
        import contextlib
        with contextlib.redirect_stderr(io.StringIO()):
            g.submit(boom, y=g.tensor([1.0]))
            g.submit(got.append, y=g.tensor([2.0])).wait(60)
        self.assertEqual(got[0]["outputs"]["y"]["data"], [2.0])

    def test_waiting_inside_a_callback_is_refused(self):
        g = Graph(backend="cpu-python")
        seen = []

        def cb(r):
            try:
                g.submit(y=g.tensor([1.0])).result(5)
            except RuntimeError as e:
                seen.append(str(e))
        g.submit(cb, y=g.tensor([1.0])).wait(60)
        self.assertEqual(len(seen), 1)
        self.assertIn("callback", seen[0])


class OpsTest(unittest.TestCase):
    def setUp(self):
        self.g = Graph(backend="cpu-python")

    def test_shape_errors_have_codes(self):
        g = self.g
        with self.assertRaises(GPUCCError) as e:
            g.tensor([1.0, 2.0]) + g.tensor([1.0, 2.0, 3.0])
        self.assertEqual((e.exception.code, e.exception.field), ("invalid_graph", "b"))
        with self.assertRaises(GPUCCError) as e:
            g.tensor([[1.0, 2.0]]) @ g.tensor([[1.0, 2.0]])
        self.assertEqual(e.exception.code, "invalid_graph")
        with self.assertRaises(GPUCCError) as e:
            g.tensor([1.0]).life()
        self.assertEqual(e.exception.field, "a")
        with self.assertRaises(GPUCCError) as e:
            g.tensor([float("nan")])
        self.assertEqual(e.exception.code, "invalid_input")
        with self.assertRaises(GPUCCError) as e:
            g.tensor([1e39])
        self.assertEqual(e.exception.code, "invalid_input")

    def test_broadcast_and_reductions(self):
        g = self.g
        x = g.tensor([[1, 2, 3], [4, 5, 6]])
        b = g.tensor([10, 20, 30])
        out = run(g, y=x + b, s=x.sum(axis=1), k=x.sum(axis=0, keepdims=True), m=x.max(), mean=x.mean(axis=-1),
                  t=x.T, p=x.transpose(1, 0), c=b - x, r=2 - b, q=1 / g.tensor([4.0]))
        self.assertEqual(out["y"], {"shape": [2, 3], "data": [11, 22, 33, 14, 25, 36]})
        self.assertEqual(out["s"], {"shape": [2], "data": [6, 15]})
        self.assertEqual(out["k"], {"shape": [1, 3], "data": [5, 7, 9]})
        self.assertEqual(out["m"], {"shape": [], "data": [6]})
        self.assertEqual(out["mean"], {"shape": [2], "data": [2, 5]})
        self.assertEqual(out["t"]["data"], [1, 4, 2, 5, 3, 6])
        self.assertEqual(out["p"]["data"], [1, 4, 2, 5, 3, 6])
        self.assertEqual(out["c"]["data"], [9, 18, 27, 6, 15, 24])
        self.assertEqual(out["r"]["data"], [-8, -18, -28])
        self.assertEqual(out["q"]["data"], [0.25])
        doc = g.program(y=x + b)
        self.assertEqual([n["op"] for n in doc["nodes"]], ["input", "input", "broadcast", "add"])

    def test_life_masks_and_table_ops(self):
        g = self.g
        glider = g.tensor([[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
        x = g.tensor([-1.5, -0.0, 0.5, 2.0])
        out = run(g, life=glider.life(), pos=x.positive(), relu=x.relu(), mask=g.mask(x, g.tensor([1, 2, 3, 4])),
                  floor=x.floor(), round=x.round(), sqrt=x.relu().sqrt(), exp=x.exp(), mx=x.maximum(0.0),
                  gt=x > 0, conv=g.tensor([[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]]).conv2d(
                      g.tensor([[[[1, 1], [1, 1]]]]), strides=(2, 2), pads=(0, 0, 1, 1)))
        self.assertEqual(out["life"]["data"], [0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])
        self.assertEqual(out["pos"]["data"], [0, 0, 1, 1])
        self.assertEqual(out["relu"]["data"], [0, 0, 0.5, 2])
        self.assertEqual([gpucc.f32.bits(v) for v in out["mask"]["data"]], [0x80000000, 0x80000000, 0x40400000, 0x40800000])
        self.assertEqual(out["floor"]["data"], [-2, -0.0, 0, 2])
        self.assertEqual(out["round"]["data"], [-2, -0.0, 0, 2])
        self.assertEqual(out["sqrt"]["data"][3], gpucc.f32.f32(2 ** 0.5))
        self.assertEqual(out["exp"]["data"][1], 1)
        self.assertEqual(out["mx"]["data"], [0, 0, 0.5, 2])
        self.assertEqual(out["gt"]["data"], [0, 0, 1, 1])
        self.assertEqual(out["conv"], {"shape": [1, 1, 2, 2], "data": [12, 9, 15, 9]})  # docs/protocol.md's example


class DecodeTest(unittest.TestCase):
    """cpu-python refuses what gpucc refuses, with its codes."""

    def refused(self, doc, code, field=None):
        with self.assertRaises(GPUCCError) as e:
            ir.decode(doc)
        self.assertEqual(e.exception.code, code, e.exception)
        if field:
            self.assertEqual(e.exception.field, field, e.exception)

    def test_refusals(self):
        ok = {"id": 0, "op": "input", "shape": [2], "data": [1, 2]}
        self.refused({"version": 2, "nodes": [ok], "outputs": []}, "invalid_graph", "version")
        self.refused({"version": 1, "nodes": [ok, {"id": 1, "op": "nope", "a": 0}], "outputs": []}, "invalid_graph", "op")
        self.refused({"version": 1, "nodes": [ok, {"id": 1, "op": "relu", "a": 1}], "outputs": []}, "invalid_graph", "a")
        self.refused({"version": 1, "nodes": [ok, {"id": 1, "op": "add", "a": 0, "b": 5}], "outputs": []}, "invalid_graph", "b")
        self.refused({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [2], "data": [1]}], "outputs": []}, "invalid_graph", "data")
        self.refused('{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":[1e39]}],"outputs":[]}', "invalid_graph", "data")
        self.refused({"version": 1, "nodes": [ok, {"id": 1, "op": "sum", "a": 0, "axes": [1]}], "outputs": []}, "invalid_graph", "axes")
        self.refused({"version": 1, "nodes": [dict(ok, id=i) for i in range(513)], "outputs": []}, "limit_exceeded", "nodes")
        self.refused({"version": 1, "nodes": [ok], "outputs": [], "extra": 1}, "invalid_graph")


if __name__ == "__main__":
    unittest.main()
