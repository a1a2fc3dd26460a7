# Writes gqa_kv.onnx: a one-layer decoder step with grouped-query attention (4 query heads over 2
# key/value heads, head_dim 4) and a cache that grows a row a step, as optimum exports Llama-style
# decoders: present.0.key / .value = Concat(past, this step's row, axis 2), each repeated to the
# query heads by transformers' repeat_kv (Unsqueeze, Expand, Reshape) before the attention. Inputs
# input_ids int64 [1, 1], position int64 [1], past_key_values.0.key / .value float32
# [1, 2, past_len, 4]; outputs logits [1, 1, 32] and the presents. Weights are seeded random
# (numpy's PCG64, seed 33), 0.5 scale. gpucc's static-cache rewrite reads each shared head in place
# (ir.GroupAttention); its steps are the grown model's, each length, bit for bit (cpuref).
#
#   python3 gqa_kv.py            (onnx 1.12 or later; Debian's python3-onnx)
import os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

here = os.path.dirname(os.path.abspath(__file__))
V, D, H, KV, HD, NPOS = 32, 16, 4, 2, 4, 64
rng = np.random.default_rng(33)


def w(*s):
    return (rng.standard_normal(s) * 0.5).astype(np.float32)


inits = {"wte": w(V, D), "wpe": w(NPOS, D), "wq": w(D, H * HD), "wk": w(D, KV * HD), "wv": w(D, KV * HD), "wo": w(H * HD, D), "lm": w(D, V),
         "two": np.array(2.0, np.float32), "ax0": np.array([0], np.int64), "ax2": np.array([2], np.int64),
         "qshape": np.array([1, 1, H, HD], np.int64), "kvshape": np.array([1, 1, KV, HD], np.int64),
         "rep": np.array([1, KV, H // KV, 1, HD], np.int64), "yshape": np.array([1, 1, H * HD], np.int64)}
n = helper.make_node
nodes = [
    n("Gather", ["wte", "input_ids"], ["tok"]),  # [1, 1, D]
    n("Gather", ["wpe", "position"], ["pos"]),  # [1, D]
    n("Unsqueeze", ["pos", "ax0"], ["pos3"]),
    n("Add", ["tok", "pos3"], ["x"]),
    n("MatMul", ["x", "wq"], ["q0"]), n("Reshape", ["q0", "qshape"], ["q1"]), n("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
]
for kv in ("key", "value"):
    wname = {"key": "wk", "value": "wv"}[kv]
    nodes += [n("MatMul", ["x", wname], [kv + "0"]), n("Reshape", [kv + "0", "kvshape"], [kv + "1"]), n("Transpose", [kv + "1"], [kv + "row"], perm=[0, 2, 1, 3]),
              n("Concat", ["past_key_values.0." + kv, kv + "row"], ["present.0." + kv], axis=2),
              # repeat_kv: [1, KV, T, HD] -> [1, KV, 1, T, HD] -> expand -> [1, H, T, HD]
              n("Unsqueeze", ["present.0." + kv, "ax2"], [kv + "u"]),
              n("Shape", ["present.0." + kv], [kv + "shape"]),
              n("Gather", [kv + "shape", "ax2"], [kv + "T"], axis=0),
              n("Concat", ["rep_head", kv + "T", "rep_tail"], [kv + "exp"], axis=0),
              n("Expand", [kv + "u", kv + "exp"], [kv + "x"]),
              n("Concat", ["heads_head", kv + "T", "rep_tail"], [kv + "merge"], axis=0),
              n("Reshape", [kv + "x", kv + "merge"], [kv + "r"])]
inits.update({"rep_head": np.array([1, KV, H // KV], np.int64), "rep_tail": np.array([HD], np.int64), "heads_head": np.array([1, H], np.int64)})
del inits["rep"]
nodes += [
    n("Transpose", ["keyr"], ["kt"], perm=[0, 1, 3, 2]),
    n("MatMul", ["q", "kt"], ["s"]), n("Div", ["s", "two"], ["ss"]),
    n("Softmax", ["ss"], ["p"], axis=-1),
    n("MatMul", ["p", "valuer"], ["y0"]), n("Transpose", ["y0"], ["y1"], perm=[0, 2, 1, 3]), n("Reshape", ["y1", "yshape"], ["y"]),
    n("MatMul", ["y", "wo"], ["o"]), n("Add", ["x", "o"], ["h"]), n("MatMul", ["h", "lm"], ["logits"]),
]
cache = lambda name, t: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, KV, t, HD])
g = helper.make_graph(nodes, "gqa_kv",
                      [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 1]), helper.make_tensor_value_info("position", TensorProto.INT64, [1]),
                       cache("past_key_values.0.key", "past_len"), cache("past_key_values.0.value", "past_len")],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1, V]), cache("present.0.key", "past_len + 1"), cache("present.0.value", "past_len + 1")],
                      [numpy_helper.from_array(v, k) for k, v in inits.items()])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "gqa_kv.onnx"))
print(len(nodes), "nodes,", os.path.getsize(os.path.join(here, "gqa_kv.onnx")), "bytes")
