# Derives gpt2kv_grow.onnx from gpt2kv.onnx (export_kv.py): the same GPT-2 step, weights and names,
# exported as optimum and transformers.js export decoders, with a cache that grows by one row a step:
#
#   input_ids int64 [1, 1], position int64 [1],
#   past_key_values.N.key / .value float32 [1, heads, past_len, head_dim]
#   -> logits [1, 1, vocab], present.N.key / .value = Concat(past, this step's row, axis 2)
#      [1, heads, past_len + 1, head_dim]
#
# Each layer's Where(slots == position, k, past) becomes Concat(past, k), and the -Inf mask of the
# rows after `position` (Where(slots > position, -inf, scores)) is dropped: every row of a grown cache
# is a past one. Nodes left unused are removed. gpucc's static-cache rewrite (generate_static.go)
# turns it back into a fixed-capacity cache; its tokens and logits are gpt2kv's.
#
#   python3 grow_kv.py            (onnx 1.12 or later; Debian's python3-onnx)
import os
import onnx
from onnx import helper

here = os.path.dirname(os.path.abspath(__file__))
m = onnx.load(os.path.join(here, "gpt2kv.onnx"))
g = m.graph
outs = {o.name for o in g.output}
nodes, rename = [], {}
for n in g.node:
    if n.op_type == "Where" and n.output[0] in outs:  # present = where(write, new, past)
        nodes.append(helper.make_node("Concat", [n.input[2], n.input[1]], [n.output[0]], name=n.name + "_concat", axis=2))
    elif n.op_type == "Where" and n.input[1].startswith("/Constant"):  # masked_fill(hide, -inf)
        rename[n.output[0]] = n.input[2]
    else:
        nodes.append(n)
for n in nodes:
    for i, x in enumerate(n.input):
        n.input[i] = rename.get(x, x)
live = set(outs)
keep = []
for n in reversed(nodes):
    if any(o in live for o in n.output):
        keep.append(n)
        live.update(x for x in n.input if x)
keep.reverse()
del g.node[:]
g.node.extend(keep)
for vi in list(g.input) + list(g.output):
    if vi.name.startswith("past_key_values.") or vi.name.startswith("present."):
        vi.type.tensor_type.shape.dim[2].dim_param = "past_len" if vi.name.startswith("past") else "past_len + 1"
used = {x for n in keep for x in n.input}
inits = [t for t in g.initializer if t.name in used]
del g.initializer[:]
g.initializer.extend(inits)
del g.value_info[:]
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "gpt2kv_grow.onnx"))
print(len(g.node), "nodes,", os.path.getsize(os.path.join(here, "gpt2kv_grow.onnx")), "bytes")
