# Derives gpt2kv_f16.onnx from gpt2kv.onnx (export_kv.py): the same GPT-2 step, weights and static
# cache, with the cache kept in float16, as fp16 exports keep it: each past_key_values.N.key /
# .value is float16 [1, heads, max_len, head_dim], cast to float32 where the step reads it, and each
# present is the step's float32 present cast to float16 (rounded to nearest even once, at the
# write). Everything else computes in float32. gpucc's Decoder keeps the float16 cache as it is
# (DeviceTensors of float16 where the backend keeps them); its tokens and logits are the same bits
# on every backend, cpuref's.
#
#   python3 f16_kv.py            (onnx 1.12 or later; Debian's python3-onnx)
import os
import onnx
from onnx import helper, TensorProto

here = os.path.dirname(os.path.abspath(__file__))
m = onnx.load(os.path.join(here, "gpt2kv.onnx"))
g = m.graph
casts_in, casts_out = [], []
for vi in g.input:
    if vi.name.startswith("past_key_values."):
        vi.type.tensor_type.elem_type = TensorProto.FLOAT16
        casts_in.append(helper.make_node("Cast", [vi.name], [vi.name + "/f32"], name="/cast/" + vi.name, to=TensorProto.FLOAT))
        for n in g.node:
            for i, x in enumerate(n.input):
                if x == vi.name:
                    n.input[i] = vi.name + "/f32"
for vi in g.output:
    if vi.name.startswith("present."):
        vi.type.tensor_type.elem_type = TensorProto.FLOAT16
        for n in g.node:
            for i, x in enumerate(n.output):
                if x == vi.name:
                    n.output[i] = vi.name + "/f32"
            for i, x in enumerate(n.input):
                if x == vi.name:
                    n.input[i] = vi.name + "/f32"
        casts_out.append(helper.make_node("Cast", [vi.name + "/f32"], [vi.name], name="/cast/" + vi.name, to=TensorProto.FLOAT16))
nodes = casts_in + list(g.node) + casts_out
del g.node[:]
g.node.extend(nodes)
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "gpt2kv_f16.onnx"))
print(len(g.node), "nodes,", os.path.getsize(os.path.join(here, "gpt2kv_f16.onnx")), "bytes")
