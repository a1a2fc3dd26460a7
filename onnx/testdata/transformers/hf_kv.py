# Derives gpt2kv_hf.onnx from gpt2kv_grow.onnx (grow_kv.py): the same GPT-2 step, weights and
# cache, with the inputs and outputs of optimum's and transformers.js's decoder exports:
#
#   input_ids int64 [batch, sequence_length],
#   attention_mask int64 [batch, past_sequence_length + sequence_length] (1: a token, 0: padding),
#   position_ids int64 [batch, sequence_length],
#   past_key_values.N.key / .value float32 [batch, heads, past_sequence_length, head_dim]
#   -> logits [batch, sequence_length, vocab],
#      present.N.key / .value = Concat(past, this step's rows, axis 2)
#
# The position embedding is looked up at position_ids (grow_kv's `position` input is gone), the
# fixed reshapes to [1, 1, ...] take the batch and sequence from Shape(input_ids), and each layer's
# scores add transformers' additive padding mask, computed once as _prepare_4d_attention_mask does,
# (1.0 - float(attention_mask[:, None, None, :])) * finfo(float32).min, plus a causal part built
# from the shapes (Range over the keys and over past .. past + seq; finfo.min past the diagonal), so
# a step of several tokens (a prefill) is causal too. gpucc's Decoder feeds attention_mask,
# position_ids and the cache's write row from the step's position (generate_hf.go); its tokens and
# logits are gpt2kv's.
#
# It also writes gpt2kv_hf_pastpos.onnx, a variant a static cache cannot bind: no position_ids
# input, the positions computed from the cache's length (arange(past_len, past_len + seq), as
# GPT-2 exports without position_ids do). Its weights but the position embedding are ConstantOfShape
# fills (it only has to load and be refused), so it is small.
#
# And gpt2kv_hf_mask4d.onnx, another variant refused by name: attention_mask the caller's 4-D float
# additive mask [batch, 1, seq, past_len + seq] (as some exports take it), its weights fills.
#
# And gpt2kv_hf_merged.onnx, optimum's merged form of gpt2kv_hf (below).
#
#   python3 hf_kv.py            (onnx 1.12 or later; Debian's python3-onnx)
import copy, os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

here = os.path.dirname(os.path.abspath(__file__))
src = onnx.load(os.path.join(here, "gpt2kv_grow.onnx"))


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def _mask2d():  # transformers' _prepare_4d_attention_mask
    return [
        const("/hf/axes12", np.array([1, 2], np.int64)),
        helper.make_node("Unsqueeze", ["attention_mask", "/hf/axes12"], ["/hf/mask4"]),
        helper.make_node("Cast", ["/hf/mask4"], ["/hf/maskf"], to=TensorProto.FLOAT),
        const("/hf/onef", np.array(1.0, np.float32)),
        helper.make_node("Sub", ["/hf/onef", "/hf/maskf"], ["/hf/inv"]),
        const("/hf/min", np.array(np.finfo(np.float32).min, np.float32)),
        helper.make_node("Mul", ["/hf/inv", "/hf/min"], ["/hf/padding"]),
        # the causal part, from the shapes as transformers builds it: query i (at past + i) sees
        # the keys j <= past + i; finfo.min elsewhere (all keys at one token a step)
        helper.make_node("Shape", ["attention_mask"], ["/hf/ms"]),
        const("/hf/c1", np.array([1], np.int64)), const("/hf/c2", np.array([2], np.int64)),
        const("/hf/c0", np.array([0], np.int64)),
        helper.make_node("Slice", ["/hf/ms", "/hf/c1", "/hf/c2"], ["/hf/T1"]),
        helper.make_node("Slice", ["/hf/bs", "/hf/c1", "/hf/c2"], ["/hf/S1"]),
        helper.make_node("Sub", ["/hf/T1", "/hf/S1"], ["/hf/P1"]),
        helper.make_node("Add", ["/hf/P1", "/hf/S1"], ["/hf/E1"]),
        helper.make_node("Squeeze", ["/hf/T1", "/hf/c0"], ["/hf/T"]),
        helper.make_node("Squeeze", ["/hf/P1", "/hf/c0"], ["/hf/P"]),
        helper.make_node("Squeeze", ["/hf/E1", "/hf/c0"], ["/hf/E"]),
        const("/hf/i0", np.array(0, np.int64)), const("/hf/i1", np.array(1, np.int64)),
        helper.make_node("Range", ["/hf/i0", "/hf/T", "/hf/i1"], ["/hf/keys"]),
        helper.make_node("Range", ["/hf/P", "/hf/E", "/hf/i1"], ["/hf/queries"]),
        helper.make_node("Unsqueeze", ["/hf/queries", "/hf/c1"], ["/hf/qcol"]),
        helper.make_node("LessOrEqual", ["/hf/keys", "/hf/qcol"], ["/hf/allowed"]),
        const("/hf/zerof", np.array(0.0, np.float32)),
        helper.make_node("Where", ["/hf/allowed", "/hf/zerof", "/hf/min"], ["/hf/causal"]),
        helper.make_node("Add", ["/hf/padding", "/hf/causal"], ["/hf/additive"]),
    ]


def build(pastpos, mask4d=False):
    m = copy.deepcopy(src)
    g = m.graph
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in g.node if n.op_type == "Constant"}
    head = [helper.make_node("Shape", ["input_ids"], ["/hf/bs"])]
    if pastpos:  # position_ids = arange(past_len, past_len + seq)[None, :]
        head += [
            const("/hf/two", np.array([2], np.int64)), const("/hf/three", np.array([3], np.int64)),
            const("/hf/one", np.array([1], np.int64)), const("/hf/zero", np.array([0], np.int64)),
            helper.make_node("Shape", ["past_key_values.0.key"], ["/hf/pshape"]),
            helper.make_node("Slice", ["/hf/pshape", "/hf/two", "/hf/three"], ["/hf/past_len1"]),
            helper.make_node("Slice", ["/hf/bs", "/hf/one", "/hf/two"], ["/hf/seq1"]),
            helper.make_node("Add", ["/hf/past_len1", "/hf/seq1"], ["/hf/end1"]),
            helper.make_node("Squeeze", ["/hf/past_len1", "/hf/zero"], ["/hf/past_len"]),
            helper.make_node("Squeeze", ["/hf/end1", "/hf/zero"], ["/hf/end"]),
            const("/hf/step", np.array(1, np.int64)),
            helper.make_node("Range", ["/hf/past_len", "/hf/end", "/hf/step"], ["/hf/range"]),
            helper.make_node("Unsqueeze", ["/hf/range", "/hf/zero"], ["position_ids"]),
        ]
    if mask4d:  # the caller's 4-D additive mask, added to the scores as it is
        head += [helper.make_node("Identity", ["attention_mask"], ["/hf/additive"])]
    else:
        head += _mask2d()
    nodes, rename = list(head), {}
    for n in g.node:
        if n.op_type == "Constant" and consts[n.output[0]].ndim == 1 and consts[n.output[0]].size >= 3 \
                and list(consts[n.output[0]][:2]) == [1, 1]:  # [1, 1, rest...] -> Concat(Shape(input_ids), rest)
            rest = n.output[0] + "_rest"
            nodes.append(const(rest, consts[n.output[0]][2:]))
            nodes.append(helper.make_node("Concat", ["/hf/bs", rest], [n.output[0]], axis=0))
        elif n.op_type == "Gather" and n.input[1] == "position":
            nodes.append(helper.make_node("Gather", [n.input[0], "position_ids"], [n.output[0]], name=n.name))
        elif n.op_type == "Unsqueeze" and n.input[0] == "/wpe/Gather_output_0":
            rename[n.output[0]] = n.input[0]
        elif n.op_type == "Div" and n.output[0].startswith("/Div"):  # scores / sqrt(d) + mask
            n.output[0], out = n.output[0] + "_scaled", n.output[0]
            nodes += [n, helper.make_node("Add", [n.output[0], "/hf/additive"], [out], name=n.name + "_mask")]
        else:
            nodes.append(n)
    for n in nodes:
        for i, x in enumerate(n.input):
            n.input[i] = rename.get(x, x)
    del g.node[:]
    g.node.extend(nodes)
    past = "past_sequence_length"

    def dims(vi, ds):
        t = vi.type.tensor_type
        del t.shape.dim[:]
        for d in ds:
            t.shape.dim.add()
            if isinstance(d, str):
                t.shape.dim[-1].dim_param = d
            else:
                t.shape.dim[-1].dim_value = d

    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence_length"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT if mask4d else TensorProto.INT64,
                                         ["batch", 1, "sequence_length", past + " + sequence_length"] if mask4d else ["batch", past + " + sequence_length"])]
    if not pastpos:
        ins.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "sequence_length"]))
    for vi in g.input:
        if vi.name.startswith("past_key_values."):
            dims(vi, ["batch", 4, past, 16])
            ins.append(vi)
    del g.input[:]
    g.input.extend(ins)
    for vi in g.output:
        if vi.name == "logits":
            dims(vi, ["batch", "sequence_length", 256])
        else:
            dims(vi, ["batch", 4, past + " + sequence_length", 16])
    if pastpos or mask4d:  # weights as fills but wpe (the positions must tell the lengths apart)
        fills, kept = [], [t for t in g.initializer if t.name == "m.transformer.wpe.weight" and pastpos]
        for t in g.initializer:
            if t in kept:
                continue
            a = numpy_helper.to_array(t)
            fills.append(helper.make_node("ConstantOfShape", [t.name + "_shape"], [t.name],
                                          value=numpy_helper.from_array(np.array([0.01], np.float32))))
            fills.insert(-1, const(t.name + "_shape", np.array(a.shape, np.int64)))
        del g.initializer[:]
        g.initializer.extend(kept)
        nodes = fills + list(g.node)
        del g.node[:]
        g.node.extend(nodes)
    onnx.checker.check_model(m)
    name = "gpt2kv_hf_pastpos.onnx" if pastpos else "gpt2kv_hf_mask4d.onnx" if mask4d else "gpt2kv_hf.onnx"
    onnx.save(m, os.path.join(here, name))
    print(name, len(g.node), "nodes,", os.path.getsize(os.path.join(here, name)), "bytes")


build(False)
build(True)
build(False, mask4d=True)


# gpt2kv_hf_merged.onnx: gpt2kv_hf as optimum merges a decoder (decoder_model_merged.onnx, which
# transformers.js loads): an input use_cache_branch (bool [1]) and one If whose then branch is the
# step with a cache and whose else branch the step without (here a copy of the same step, its
# names suffixed: only the branch with a cache is taken).
m = onnx.load(os.path.join(here, "gpt2kv_hf.onnx"))
g = m.graph
outs = [o.name for o in g.output]


def branch(suffix):
    nodes = copy.deepcopy(list(g.node))
    produced = {o for n in nodes for o in n.output}
    for n in nodes:
        for i, x in enumerate(n.input):
            n.input[i] = x + suffix if x in produced else x
        for i, x in enumerate(n.output):
            n.output[i] = x + suffix
        if n.name:
            n.name += suffix
    return helper.make_graph(nodes, "step" + suffix, [], [helper.make_tensor_value_info(o + suffix, TensorProto.FLOAT, None) for o in outs])


iff = helper.make_node("If", ["use_cache_branch"], outs, name="optimum::if", then_branch=branch("_past"), else_branch=branch("_nopast"))
del g.node[:]
g.node.extend([iff])
g.input.append(helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]))
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "gpt2kv_hf_merged.onnx"))
print("gpt2kv_hf_merged.onnx", os.path.getsize(os.path.join(here, "gpt2kv_hf_merged.onnx")), "bytes")
