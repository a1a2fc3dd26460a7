# Derives gpt2kv_bias.onnx from gpt2kv_grow.onnx (grow_kv.py): the same GPT-2 step, weights and
# growing cache, with each layer's scores masked as transformers' GPT-2 (eager attention, the
# export of transformers up to 4.x) writes it:
#
#   causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
#   attn_weights = torch.where(causal_mask, attn_weights, torch.finfo(attn_weights.dtype).min)
#
# self.bias is a bool buffer [1, 1, n_positions, n_positions], the lower triangle (here one
# initializer, h.0.attn.bias, that both layers take through an Identity as the exporter dedups
# them; n_positions 512, the position embedding's rows), sliced by Shape/Gather/Sub/Unsqueeze/Slice
# as torch.onnx writes it, then Where(causal_mask, scores, finfo(float32).min) before the Softmax.
# At one token a step (query_length 1) the slice is row past_len of the triangle: all true, so the
# Where keeps the scores and the tokens and logits are gpt2kv's.
#
#   python3 bias_kv.py            (onnx 1.12 or later; Debian's python3-onnx)
import os
import numpy as np
import onnx
from onnx import helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
m = onnx.load(os.path.join(here, "gpt2kv_grow.onnx"))
g = m.graph
npos = 512


def const(name, arr):
    return helper.make_node("Constant", [], [name], name=name.replace("_output_0", ""), value=numpy_helper.from_array(np.asarray(arr), name))


g.initializer.append(numpy_helper.from_array(np.tril(np.ones((npos, npos), bool)).reshape(1, 1, npos, npos), "m.transformer.h.0.attn.bias"))
nodes, layer = [], 0
for n in g.node:
    if n.op_type != "Softmax":
        nodes.append(n)
        continue
    # n.input[0] is the scaled scores; the MatMul before the Div has the query and the key.
    scores = n.input[0]
    div = next(x for x in nodes if x.output[0] == scores)
    mm = next(x for x in nodes if x.output[0] == div.input[0])
    q, kt = mm.input
    p = "/h.%d/attn" % layer
    bias = "m.transformer.h.0.attn.bias"
    if layer > 0:
        bias = "m.transformer.h.%d.attn.bias" % layer
        nodes.append(helper.make_node("Identity", ["m.transformer.h.0.attn.bias"], [bias]))
    nodes += [
        helper.make_node("Shape", [q], [p + "/Shape_output_0"]),
        const(p + "/Constant_output_0", np.array(-2, np.int64)),
        helper.make_node("Gather", [p + "/Shape_output_0", p + "/Constant_output_0"], [p + "/Gather_output_0"], axis=0),
        helper.make_node("Shape", [kt], [p + "/Shape_1_output_0"]),
        const(p + "/Constant_1_output_0", np.array(-1, np.int64)),
        helper.make_node("Gather", [p + "/Shape_1_output_0", p + "/Constant_1_output_0"], [p + "/Gather_1_output_0"], axis=0),
        helper.make_node("Sub", [p + "/Gather_1_output_0", p + "/Gather_output_0"], [p + "/Sub_output_0"]),
        const(p + "/Constant_2_output_0", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", [p + "/Sub_output_0", p + "/Constant_2_output_0"], [p + "/Unsqueeze_output_0"]),
        helper.make_node("Unsqueeze", [p + "/Gather_1_output_0", p + "/Constant_2_output_0"], [p + "/Unsqueeze_1_output_0"]),
        const(p + "/Constant_3_output_0", np.array([2], np.int64)),
        const(p + "/Constant_4_output_0", np.array([1], np.int64)),
        helper.make_node("Slice", [bias, p + "/Unsqueeze_output_0", p + "/Unsqueeze_1_output_0", p + "/Constant_3_output_0", p + "/Constant_4_output_0"], [p + "/Slice_output_0"]),
        const(p + "/Constant_5_output_0", np.array([3], np.int64)),
        helper.make_node("Slice", [p + "/Slice_output_0", p + "/Constant_2_output_0", p + "/Unsqueeze_1_output_0", p + "/Constant_5_output_0", p + "/Constant_4_output_0"], [p + "/Slice_1_output_0"]),
        const(p + "/Constant_6_output_0", np.array(np.finfo(np.float32).min, np.float32)),
        helper.make_node("Where", [p + "/Slice_1_output_0", scores, p + "/Constant_6_output_0"], [p + "/Where_output_0"]),
    ]
    n.input[0] = p + "/Where_output_0"
    nodes.append(n)
    layer += 1
assert layer == 2
del g.node[:]
g.node.extend(nodes)
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "gpt2kv_bias.onnx"))
print(len(g.node), "nodes,", os.path.getsize(os.path.join(here, "gpt2kv_bias.onnx")), "bytes")
