# Builds a GPT-2-style decoding step with onnx.helper (no PyTorch): gpucc generate's convention
# (input_ids and position int64, past_key_values.N.key/.value in, logits and present.N.key/.value
# out, rows after position masked with -inf), its weights drawn from numpy's default_rng(0).
#
#   python3 mkstep.py OUT.onnx LAYERS D HEADS VOCAB POSITIONS [MAXLEN STD PROMPT STEPS]
#
# MAXLEN 0 (the default) leaves the cache length a dynamic dimension (max_len); another value fixes
# it in the model. With PROMPT and STEPS it also decodes greedily in float64 with numpy (the same
# graph, written out below) from the prompt 0, 1, …, PROMPT-1 and prints the ids as JSON.
#
#   static.onnx  python3 mkstep.py static.onnx 2 8 2 16 32 6 1.5 2 5   (a cache fixed at 6 rows; prints
#                [2, 8, 4, 2, 8], the top two logits at least 0.277 apart)
#   GPT-2 small's shape, ~650 MB, for size tests:  python3 mkstep.py small.onnx 12 768 12 50257 1024
import sys, math, json
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

L, D, H, V, P = [int(a) for a in sys.argv[2:7]]
MAXLEN = int(sys.argv[7]) if len(sys.argv) > 7 else 0
STD = float(sys.argv[8]) if len(sys.argv) > 8 else 0.02
DH = D // H
rng = np.random.default_rng(0)
inits, nodes, weights = [], [], {}


def W(name, *shape, const=None):
    a = np.full(shape, const, np.float32) if const is not None else (rng.standard_normal(shape, dtype=np.float32) * STD)
    inits.append(nh.from_array(a.astype(np.float32), name))
    weights[name] = a.astype(np.float64)
    return name


def C(name, arr):
    inits.append(nh.from_array(np.array(arr), name))
    return name


k = [0]


def N(op, ins, **attrs):
    k[0] += 1
    o = "t%d" % k[0]
    nodes.append(h.make_node(op, ins, [o], **attrs))
    return o


def LN(x, p):
    return N("LayerNormalization", [x, W(p + ".g", D, const=1.0), W(p + ".b", D, const=0.0)], axis=-1, epsilon=1e-5)


cache = [1, H, MAXLEN if MAXLEN else "max_len", DH]
wte, wpe = W("wte", V, D), W("wpe", P, D)
x = N("Add", [N("Gather", [wte, "input_ids"]), N("Gather", [wpe, "position"])])
T = N("Gather", [N("Shape", ["past_key_values.0.key"]), C("two", np.int64(2))])
slots = N("Range", [C("zero", np.int64(0)), T, C("one", np.int64(1))])
write = N("Reshape", [N("Equal", [slots, "position"]), C("wshape", np.array([1, 1, -1, 1], np.int64))])
hide = N("Reshape", [N("Greater", [slots, "position"]), C("hshape", np.array([1, 1, 1, -1], np.int64))])
ninf, half, onef = C("ninf", np.float32(-np.inf)), C("half", np.float32(0.5)), C("onef", np.float32(1.0))
c0, c1, three = C("c0", np.float32(math.sqrt(2 / math.pi))), C("c1", np.float32(0.044715)), C("three", np.float32(3.0))
scale = C("scale", np.float32(math.sqrt(DH)))
hs, ds = C("hs", np.array([1, 1, H, DH], np.int64)), C("ds", np.array([1, 1, D], np.int64))
split = C("split", np.array([D, D, D], np.int64))
ins = [h.make_tensor_value_info("input_ids", TP.INT64, [1, 1]), h.make_tensor_value_info("position", TP.INT64, [1])]
presents = []
for i in range(L):
    p = "h%d" % i
    a = N("Add", [N("MatMul", [LN(x, p + ".ln1"), W(p + ".attn.w", D, 3 * D)]), W(p + ".attn.b", 3 * D, const=0.0)])
    q, kk, v = [p + s for s in (".q", ".k", ".v")]
    nodes.append(h.make_node("Split", [a, split], [q, kk, v], axis=2))
    q, kk, v = [N("Transpose", [N("Reshape", [z, hs])], perm=[0, 2, 1, 3]) for z in (q, kk, v)]
    pk, pv = "past_key_values.%d.key" % i, "past_key_values.%d.value" % i
    ins += [h.make_tensor_value_info(n, TP.FLOAT, cache) for n in (pk, pv)]
    keys, values = N("Where", [write, kk, pk]), N("Where", [write, v, pv])
    att = N("Div", [N("MatMul", [q, N("Transpose", [keys], perm=[0, 1, 3, 2])]), scale])
    att = N("Softmax", [N("Where", [hide, ninf, att])], axis=-1)
    y = N("Reshape", [N("Transpose", [N("MatMul", [att, values])], perm=[0, 2, 1, 3]), ds])
    x = N("Add", [x, N("Add", [N("MatMul", [y, W(p + ".proj.w", D, D)]), W(p + ".proj.b", D, const=0.0)])])
    m = N("Add", [N("MatMul", [LN(x, p + ".ln2"), W(p + ".fc.w", D, 4 * D)]), W(p + ".fc.b", 4 * D, const=0.0)])
    g = N("Mul", [N("Mul", [half, m]), N("Add", [onef, N("Tanh", [N("Mul", [c0, N("Add", [m, N("Mul", [c1, N("Pow", [m, three])])])])])])])
    x = N("Add", [x, N("Add", [N("MatMul", [g, W(p + ".fc2.w", 4 * D, D)]), W(p + ".fc2.b", D, const=0.0)])])
    for src, n in ((keys, "present.%d.key" % i), (values, "present.%d.value" % i)):
        nodes.append(h.make_node("Identity", [src], [n]))
        presents.append(h.make_tensor_value_info(n, TP.FLOAT, cache))
inits.append(nh.from_array(nh.to_array(inits[0]).T.copy(), "wteT"))
nodes.append(h.make_node("MatMul", [LN(x, "lnf"), "wteT"], ["logits"]))
outs = [h.make_tensor_value_info("logits", TP.FLOAT, [1, 1, V])] + presents
model = h.make_model(h.make_graph(nodes, "step", ins, outs, inits), opset_imports=[h.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])

if len(sys.argv) > 10:  # greedy decoding in float64, the graph above in numpy
    PROMPT, STEPS = int(sys.argv[9]), int(sys.argv[10])
    Wt = weights
    ln = lambda z: (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
    rows = MAXLEN or PROMPT + STEPS - 1
    K = [np.zeros((H, rows, DH)) for _ in range(L)]
    Vv = [np.zeros((H, rows, DH)) for _ in range(L)]
    toks = list(range(PROMPT))
    for pos in range(PROMPT + STEPS - 1):
        z = Wt["wte"][toks[pos]] + Wt["wpe"][pos]
        for i in range(L):
            p = "h%d" % i
            q, kk, v = np.split(ln(z) @ Wt[p + ".attn.w"], 3)
            K[i][:, pos], Vv[i][:, pos] = kk.reshape(H, DH), v.reshape(H, DH)
            s = np.einsum("hd,htd->ht", q.reshape(H, DH), K[i]) / math.sqrt(DH)
            s[:, pos + 1:] = -np.inf
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            z = z + np.einsum("ht,htd->hd", s, Vv[i]).reshape(D) @ Wt[p + ".proj.w"]
            m = ln(z) @ Wt[p + ".fc.w"]
            m = 0.5 * m * (1 + np.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m ** 3)))
            z = z + m @ Wt[p + ".fc2.w"]
        logits = ln(z) @ Wt["wte"].T
        if pos + 1 >= len(toks):
            srt = np.sort(logits)
            toks.append(int(np.argmax(logits)))
            print("step %d: top two logits %.4f apart" % (pos, srt[-1] - srt[-2]), file=sys.stderr)
    print(json.dumps(toks[PROMPT:]))
