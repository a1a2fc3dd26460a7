#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes dynseq.onnx: the causal attention of ../causal with its sequence
length symbolic (x [1, "seq", 8], dim_param "seq"), its mask cut from a
constant [16, 16] causal buffer by the run-time length, as GPT-2 exports
slice their registered "bias": Shape(x) -> Gather 1 -> the ends of a Slice
over both axes -> Where(mask, -inf, s) -> Softmax -> · v. Made with
onnx.helper (opset 17). Run from this directory: /usr/bin/python3 make.py"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX, D = 16, 8
rng = np.random.default_rng(33)
wq, wk, wv = (rng.standard_normal((D, D)).astype(np.float32) * 0.5 for _ in range(3))
bias = np.triu(np.ones((MAX, MAX), bool), 1)

nodes = [
    helper.make_node("Shape", ["x"], ["shape"], name="shape"),
    helper.make_node("Gather", ["shape", "one"], ["t"], name="seq_len", axis=0),
    helper.make_node("Unsqueeze", ["t", "zero_axis"], ["t1"], name="t1"),
    helper.make_node("Concat", ["t1", "t1"], ["ends"], name="ends", axis=0),
    helper.make_node("Slice", ["bias", "starts", "ends", "axes"], ["causal"], name="cut_mask"),
    helper.make_node("MatMul", ["x", "Wq"], ["q"], name="q"),
    helper.make_node("MatMul", ["x", "Wk"], ["k"], name="k"),
    helper.make_node("MatMul", ["x", "Wv"], ["v"], name="v"),
    helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
    helper.make_node("Div", ["qk", "scale"], ["s"], name="scale"),
    helper.make_node("Where", ["causal", "ninf", "s"], ["sm"], name="masked_fill"),
    helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
    helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
]
inits = [numpy_helper.from_array(a, n) for a, n in (
    (wq, "Wq"), (wk, "Wk"), (wv, "Wv"), (np.array(np.sqrt(D), np.float32), "scale"),
    (np.array(-np.inf, np.float32), "ninf"), (bias, "bias"), (np.array(1, np.int64), "one"),
    (np.array([0], np.int64), "zero_axis"), (np.array([0, 0], np.int64), "starts"),
    (np.array([0, 1], np.int64), "axes"))]
g = helper.make_graph(nodes, "dynseq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", D])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", D])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="gpucc-test")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, "dynseq.onnx")
