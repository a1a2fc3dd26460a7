#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes mlp.onnx (the path given), the small MLP the CLI tests import:
x[N,3] -> Gemm(W1[3,4], b1) -> Relu -> MatMul(W2[4,2]) -> Add(b2) -> Softmax,
opset 13, with the batch dimension N dynamic (or 2, given a second
argument "static"). Given "loss", it writes the training fixture instead:
loss = ReduceSumSquare(Gemm(x[2,3], W1, b1)), a scalar. Made with onnx.helper, so
it is what the ONNX tooling writes (initializers in raw_data)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

w1 = np.array([[0.5, -1, 0.25, 2], [-0.75, 1.5, 0.125, -0.5], [1, 0.3, -0.2, 0.6]], np.float32)
b1 = np.array([0.1, -0.2, 0.3, 0], np.float32)
w2 = np.array([[1, -1], [0.5, 0.25], [-0.5, 2], [0.75, -0.125]], np.float32)
b2 = np.array([0.01, -0.02], np.float32)
nodes = [
    helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], name="fc1"),
    helper.make_node("Relu", ["h"], ["r"], name="act"),
    helper.make_node("MatMul", ["r", "W2"], ["m"], name="fc2"),
    helper.make_node("Add", ["m", "b2"], ["z"], name="bias"),
    helper.make_node("Softmax", ["z"], ["probs"], name="softmax", axis=-1),
]
inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "b1"), (w2, "W2"), (b2, "b2"))]
if sys.argv[2:] == ["loss"]:
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], name="fc1"),
        helper.make_node("ReduceSumSquare", ["h"], ["loss"], name="loss", keepdims=0),
    ]
    g = helper.make_graph(nodes, "mlp_loss", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits[:2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gpucc-test")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, sys.argv[1])
    sys.exit(0)
batch = 2 if sys.argv[2:] == ["static"] else "N"
g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
                      [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, 2])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gpucc-test")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
