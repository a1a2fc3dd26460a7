#!/usr/bin/env python3
"""Writes the ONNX models that ONNX Runtime runs for the peer benchmarks
(everything but the exported models of onnx/testdata/models) into
bench/peers/models/ (git-ignored), with Debian's python3-onnx:

    /usr/bin/python3 bench/peers/make_onnx.py

Each is the graph of the workload of the same name in bench/peers_test.go
(TestPeers). Inputs are graph inputs that the harness fills with peerFill's
formula on every run, except the convolutions' weight and bias, which are
initializers filled with the same formula (what an exported model has, and
what lets ORT pre-pack them).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_peers import fill, file_name  # noqa: E402

OPSET = 17


def model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=list(inits),
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gpucc-bench-peers")
    m.ir_version = 8
    # The outputs' shapes come from shape inference, which the checker's
    # full check then verifies.
    m = onnx.shape_inference.infer_shapes(m)
    for o in m.graph.output:
        for vi in m.graph.value_info:
            if vi.name == o.name:
                o.type.CopyFrom(vi.type)
    onnx.checker.check_model(m, full_check=True)
    return m


def const(name, arr):
    return helper.make_tensor(name, TensorProto.FLOAT, arr.shape, arr.astype(np.float32).ravel().tolist())


def ints(name, vals):
    return helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)


def n(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def models():
    out = {}
    sq = [("x", [1024, 1024])]
    m1 = [1 << 20]
    out["relu(a*b+c)/1M"] = model(
        "relu_abc",
        [n("Mul", ["a", "b"], ["ab"]), n("Add", ["ab", "c"], ["abc"]), n("Relu", ["abc"], ["y"])],
        [("a", m1), ("b", m1), ("c", m1)], ["y"])
    # chain16: bench.Chain's ops, relu, *y, +0.25, -y, *0.5, +x repeated.
    nodes, inits, v = [], [const("quarter", np.array([0.25])), const("half", np.array([0.5]))], "x"
    for i in range(16):
        o = "out" if i == 15 else "v%d" % i
        op = [("Relu", [v]), ("Mul", [v, "y"]), ("Add", [v, "quarter"]),
              ("Sub", [v, "y"]), ("Mul", [v, "half"]), ("Add", [v, "x"])][i % 6]
        nodes.append(n(op[0], op[1], [o]))
        v = o
    out["chain16/1M"] = model("chain16", nodes, [("x", m1), ("y", m1)], ["out"], inits)
    out["softmax/1024x1024"] = model("softmax", [n("Softmax", ["x"], ["y"], axis=1)], sq, ["y"])
    out["layernorm/1024x1024"] = model(
        "layernorm", [n("LayerNormalization", ["x", "scale", "shift"], ["y"], axis=1, epsilon=1e-5)], sq, ["y"],
        [const("scale", np.ones(1024)), const("shift", np.zeros(1024))])
    for name, op, axis in [("rowsum", "ReduceSum", 1), ("colsum", "ReduceSum", 0), ("rowmax", "ReduceMax", 1)]:
        if op == "ReduceSum":  # axes is an input from opset 13
            nodes, inits = [n(op, ["x", "axes"], ["y"], keepdims=0)], [ints("axes", [axis])]
        else:  # ReduceMax takes axes as an attribute until opset 18
            nodes, inits = [n(op, ["x"], ["y"], axes=[axis], keepdims=0)], []
        out["%s/1024x1024" % name] = model(name, nodes, sq, ["y"], inits)
    for k in (512, 1024):
        out["matmul/%d" % k] = model("matmul", [n("MatMul", ["a", "b"], ["y"])], [("a", [k, k]), ("b", [k, k])], ["y"])
    out["mlp/256x784-256-10"] = model(
        "mlp",
        [n("MatMul", ["x", "w1"], ["h0"]), n("Add", ["h0", "b1"], ["h1"]), n("Relu", ["h1"], ["h"]),
         n("MatMul", ["h", "w2"], ["z"]), n("Add", ["z", "b2"], ["y"])],
        [("x", [256, 784]), ("w1", [784, 256]), ("b1", [1, 256]), ("w2", [256, 10]), ("b2", [1, 10])], ["y"])
    for name, c, group in [("conv/resnet3x3-64", 64, 1), ("conv/depthwise3x3-256", 256, 256)]:
        w = fill("w", c * (c // group) * 9).reshape(c, c // group, 3, 3)
        b = fill("bias", c)
        out[name] = model(
            "conv",
            [n("Conv", ["x", "W", "B"], ["z"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group),
             n("Relu", ["z"], ["y"])],
            [("x", [1, c, 56, 56])], ["y"], [const("W", w), const("B", b)])
    out["conv/maxpool3x3s2-64"] = model(
        "maxpool", [n("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        [("x", [1, 64, 56, 56])], ["y"])
    return out


def main():
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
    os.makedirs(d, exist_ok=True)
    for name, m in models().items():
        onnx.save(m, os.path.join(d, file_name(name) + ".onnx"))
    print("wrote %d models to %s" % (len(models()), d))


if __name__ == "__main__":
    main()
