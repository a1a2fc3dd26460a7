#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes causal.onnx, a GPT-2-style masked attention made with onnx.helper
(opset 17), and its input and numpy's outputs beside it:

  q, k, v = x·Wq, x·Wk, x·Wv                      x [1, T, D], T = 6, D = 8
  s = (q · kᵀ) / √D
  y     = Softmax(Where(causal, -inf, s)) · v     masked_fill(mask, -inf)
  p_pad = Softmax(Where(causal | key 0, -inf, s)) row 0 masked entirely

causal is True above the diagonal. Where with a -Inf constant is what
torch.onnx.export writes for masked_fill(mask, float("-inf")). The outputs
follow ONNX 1.12's reference Softmax (onnx/backend/test/case/node/
softmax.py: exp(x - max) / sum), in float32 and in float64: the masked
entries are exact zeros, and the fully masked row 0 of p_pad is NaN
(-inf - -inf), as PyTorch gives too.

Run from this directory: /usr/bin/python3 make.py"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T, D = 6, 8
rng = np.random.default_rng(33)
x = rng.standard_normal((1, T, D)).astype(np.float32)
wq, wk, wv = (rng.standard_normal((D, D)).astype(np.float32) * 0.5 for _ in range(3))
causal = np.triu(np.ones((T, T), bool), 1)
pad = causal | (np.arange(T)[None, :] == 0)

nodes = [
    helper.make_node("MatMul", ["x", "Wq"], ["q"], name="q"),
    helper.make_node("MatMul", ["x", "Wk"], ["k"], name="k"),
    helper.make_node("MatMul", ["x", "Wv"], ["v"], name="v"),
    helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
    helper.make_node("Div", ["qk", "scale"], ["s"], name="scale"),
    helper.make_node("Where", ["causal", "ninf", "s"], ["sm"], name="masked_fill"),
    helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
    helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
    helper.make_node("Where", ["pad", "ninf", "s"], ["sp"], name="masked_fill_pad"),
    helper.make_node("Softmax", ["sp"], ["p_pad"], name="softmax_pad", axis=-1),
]
inits = [numpy_helper.from_array(a, n) for a, n in (
    (wq, "Wq"), (wk, "Wk"), (wv, "Wv"), (np.array(np.sqrt(D), np.float32), "scale"),
    (np.array(-np.inf, np.float32), "ninf"), (causal, "causal"), (pad, "pad"))]
g = helper.make_graph(nodes, "causal", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, D])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, T, D]),
                       helper.make_tensor_value_info("p_pad", TensorProto.FLOAT, [1, T, T])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="gpucc-test")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, "causal.onnx")


def softmax(a):  # ONNX 1.12's reference
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def model(dt):
    xs, q_, k_, v_ = (a.astype(dt) for a in (x, wq, wk, wv))
    q, k, v = xs @ q_, xs @ k_, xs @ v_
    s = (q @ k.transpose(0, 2, 1)) / dt(np.sqrt(np.float32(D)))
    with np.errstate(invalid="ignore"):
        y = softmax(np.where(causal, dt(-np.inf), s)) @ v
        p_pad = softmax(np.where(pad, dt(-np.inf), s))
    return np.concatenate([y.ravel(), p_pad.ravel()])


x.tofile("causal.input.bin")
model(np.float32).tofile("causal.output32.bin")
model(np.float64).tofile("causal.output64.bin")
