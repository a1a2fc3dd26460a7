"""cpu-python refuses what gpucc refuses, with the same code and field: a
set of broken and over-limit documents through ir.decode and gpucc run."""

import copy
import json
import unittest

from support import gpucc as run_gpucc, need_bin

from gpucc import GPUCCError, cpuref, ir

SEED = {"version": 1, "nodes": [
    {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
    {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
    {"id": 2, "op": "mul", "a": 0, "b": 1},
    {"id": 3, "op": "relu", "a": 2}], "outputs": [{"name": "values", "id": 3}]}
X4 = {"id": 0, "op": "input", "shape": [1, 2, 4, 4], "data": [1] * 32}
W4 = {"id": 1, "op": "input", "shape": [2, 2, 3, 3], "data": [1] * 36}


def mutate(f):
    d = copy.deepcopy(SEED)
    f(d)
    return d


def graph(nodes, outputs=None):
    return {"version": 1, "nodes": nodes, "outputs": outputs if outputs is not None else [{"name": "y", "id": len(nodes) - 1}]}


CASES = {
    "version 2": mutate(lambda d: d.update(version=2)),
    "no version": mutate(lambda d: d.pop("version")),
    "extra key": mutate(lambda d: d.update(extra=1)),
    "wrong id": mutate(lambda d: d["nodes"][2].update(id=5)),
    "unknown op": mutate(lambda d: d["nodes"][3].update(op="softmax")),
    "forward ref": mutate(lambda d: d["nodes"][2].update(b=3)),
    "missing b": mutate(lambda d: d["nodes"][2].pop("b")),
    "b and scalar": mutate(lambda d: d["nodes"][2].update(scalar=2)),
    "scalar on relu": mutate(lambda d: d["nodes"][3].update(scalar=2)),
    "shape on mul": mutate(lambda d: d["nodes"][2].update(shape=[3])),
    "short data": mutate(lambda d: d["nodes"][0].update(data=[1, 2])),
    "string data": mutate(lambda d: d["nodes"][0].update(data=[1, "2", 3])),
    "huge data": mutate(lambda d: d["nodes"][0].update(data=[1, 1e39, 3])),
    "name on mul": mutate(lambda d: d["nodes"][2].update(name="m")),
    "param without name": mutate(lambda d: d["nodes"][0].update(param=True)),
    "duplicate names": mutate(lambda d: (d["nodes"][0].update(name="x"), d["nodes"][1].update(name="x"))),
    "default name taken": mutate(lambda d: d["nodes"][0].update(name="input1")),
    "axes on relu": mutate(lambda d: d["nodes"][3].update(axes=[0])),
    "zero dim": mutate(lambda d: d["nodes"][0].update(shape=[0], data=[])),
    "rank 9": graph([{"id": 0, "op": "full", "shape": [1] * 9, "value": 1}]),
    "axis out of range": graph([{"id": 0, "op": "full", "shape": [2, 3], "value": 1}, {"id": 1, "op": "sum", "a": 0, "axes": [2]}]),
    "axis twice": graph([{"id": 0, "op": "full", "shape": [2, 3], "value": 1}, {"id": 1, "op": "max", "a": 0, "axes": [1, -1]}]),
    "no broadcast": graph([{"id": 0, "op": "full", "shape": [2, 3], "value": 1}, {"id": 1, "op": "full", "shape": [2], "value": 1},
                           {"id": 2, "op": "add", "a": 0, "b": 1}]),
    "matmul inner": graph([{"id": 0, "op": "full", "shape": [2, 3], "value": 1}, {"id": 1, "op": "full", "shape": [2, 3], "value": 1},
                           {"id": 2, "op": "matmul", "a": 0, "b": 1}]),
    "life 1-D": graph([{"id": 0, "op": "full", "shape": [4], "value": 1}, {"id": 1, "op": "life", "a": 0}]),
    "transpose rank 1": graph([{"id": 0, "op": "full", "shape": [4], "value": 1}, {"id": 1, "op": "transpose", "a": 0}]),
    "reshape count": graph([{"id": 0, "op": "full", "shape": [4], "value": 1}, {"id": 1, "op": "reshape", "a": 0, "shape": [3]}]),
    "broadcast target": graph([{"id": 0, "op": "full", "shape": [4], "value": 1}, {"id": 1, "op": "broadcast", "a": 0, "shape": [3, 2]}]),
    "conv stride 0": graph([X4, W4, {"id": 2, "op": "conv2d", "a": 0, "b": 1, "strides": [0, 1]}]),
    "conv group": graph([X4, W4, {"id": 2, "op": "conv2d", "a": 0, "b": 1, "group": 3}]),
    "conv pads length": graph([X4, W4, {"id": 2, "op": "conv2d", "a": 0, "b": 1, "pads": [1, 1, 1]}]),
    "strides on add": mutate(lambda d: d["nodes"][2].update(strides=[1, 1])),
    "perm": graph([{"id": 0, "op": "full", "shape": [2, 3], "value": 1}, {"id": 1, "op": "permute", "a": 0, "perm": [0, 0]}]),
    "pool pads": graph([X4, {"id": 1, "op": "maxpool2d", "a": 0, "kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}]),
    "resize mode": graph([X4, {"id": 1, "op": "resize2d", "a": 0, "sizes": [3, 3], "mode": 2}]),
    "output name missing": mutate(lambda d: d["outputs"][0].pop("name")),
    "output id": mutate(lambda d: d["outputs"][0].update(id=9)),
    "outputs over 16": mutate(lambda d: d.update(outputs=[{"name": "o%d" % k, "id": 3} for k in range(17)])),
    "nodes over 512": graph([{"id": i, "op": "full", "shape": [1], "value": 1} for i in range(513)]),
    "elements over 2^20": graph([{"id": 0, "op": "full", "shape": [1025, 1024], "value": 1}]),
    "storage over 32 MiB": graph([{"id": i, "op": "full", "shape": [1024, 1024], "value": 1} for i in range(9)]),
    "operations over 10^8": graph([{"id": 0, "op": "full", "shape": [512, 512], "value": 1},
                                   {"id": 1, "op": "matmul", "a": 0, "b": 0}]),
}


@need_bin
class RefusalsTest(unittest.TestCase):
    def test_same_code_and_field_as_gpucc(self):
        for name, doc in CASES.items():
            with self.subTest(case=name):
                rc, out = run_gpucc("run", "--backend", "cpu", "-", stdin=json.dumps(doc).encode())
                self.assertNotEqual(rc, 0, "gpucc ran %s" % name)
                want = out["error"]
                try:
                    nodes, outputs = ir.decode(json.dumps(doc))
                    cpuref.run(nodes, outputs)
                except GPUCCError as e:
                    got = e
                else:
                    self.fail("cpu-python ran %s; gpucc: %s" % (name, want))
                self.assertEqual(got.code, want["code"], "%s: %s / gpucc: %s" % (name, got, want["message"]))
                if want.get("field"):
                    self.assertEqual(got.field, want["field"], "%s: %s / gpucc: %s" % (name, got, want["message"]))


if __name__ == "__main__":
    unittest.main()
