# Exports the text-transformer fixtures of issues 32 and 33 with PyTorch on the GPU machine
# (bench/device.sh's `transformers` suite runs it; nothing here needs a GPU):
#
#   gpt2     Hugging Face GPT2LMHeadModel built from a config (2 blocks, d 64, 4 heads, vocab 256,
#            eager attention, random weights, no download): input_ids and attention_mask (all ones)
#            int64 [1, seq] -> logits
#   bert     Hugging Face BertModel from a config (2 layers, d 64, 4 heads, vocab 256): input_ids and
#            attention_mask int64 [1, seq] -> last_hidden_state
#   decoder  a hand-written GPT-style decoder (2 blocks) whose causal mask is masked_fill(-inf)
#
# Each is exported once with a dynamic sequence length (opset 17, the TorchScript exporter, then
# dynamo if that fails). For every sequence length in LENGTHS it writes NAME.SEQ.ids.npy (and
# NAME.SEQ.mask.npy for gpt2, all ones, and bert, the last quarter padded), NAME.SEQ.ref.npy (PyTorch in float64, stored
# as float32: a 1e-5 relative comparison loses nothing to that rounding), and, where onnxruntime
# is installed, NAME.SEQ.ort.npy (ONNX Runtime's float32 outputs). info.json says the versions, the
# export used and the ops.
#
#   python3 export.py OUTDIR
import json, os, sys, importlib
import numpy as np
import torch, torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
LENGTHS = [1, 7, 64, 512]
VOCAB, D, HEADS, LAYERS, POS = 256, 64, 4, 2, 512
info = {"torch": torch.__version__}
for m in ["transformers", "onnx", "onnxruntime", "numpy"]:
    try:
        info[m] = importlib.import_module(m).__version__
    except Exception as e:
        info[m] = "missing: %s" % e
print(info, flush=True)


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.qkv, s.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.fc, s.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=-1)
        q, k, v = [z.view(b, t, HEADS, D // HEADS).transpose(1, 2) for z in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) / float(np.sqrt(D // HEADS))
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, D)
        x = x + s.proj(y)
        return x + s.out(torch.nn.functional.gelu(s.fc(s.ln2(x))))


class Decoder(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok, s.pos = nn.Embedding(VOCAB, D), nn.Embedding(POS, D)
        s.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        s.ln, s.head = nn.LayerNorm(D), nn.Linear(D, VOCAB, bias=False)

    def forward(s, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = s.tok(ids) + s.pos(pos)
        for b in s.blocks:
            x = b(x)
        return s.head(s.ln(x))


def hf(name):
    import transformers as T
    if name == "gpt2":
        cfg = T.GPT2Config(n_layer=LAYERS, n_embd=D, n_head=HEADS, vocab_size=VOCAB, n_positions=POS,
                           resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, use_cache=False)
        cfg._attn_implementation = "eager"
        return T.GPT2LMHeadModel(cfg)
    cfg = T.BertConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                       intermediate_size=4 * D, max_position_embeddings=POS, hidden_dropout_prob=0,
                       attention_probs_dropout_prob=0)
    cfg._attn_implementation = "eager"
    return T.BertModel(cfg, add_pooling_layer=False)


class Wrap(nn.Module):  # plain tensors in and out, whatever the model returns
    def __init__(s, m, key):
        super().__init__(); s.m, s.key = m, key

    def forward(s, input_ids, attention_mask=None):
        if s.key is None:
            return s.m(input_ids)
        return s.m(input_ids, attention_mask=attention_mask, return_dict=True)[s.key]


def inputs(name, seq, rng):
    ids = rng.integers(0, VOCAB, size=(1, seq), dtype=np.int64)
    if name == "decoder":
        return [("input_ids", ids)]
    # GPT-2 gets an all-ones mask: without one, transformers 5 looks for packed sequences in the
    # positions (aten::diff, which the TorchScript exporter refuses).
    mask = np.ones((1, seq), dtype=np.int64)
    if name == "bert":
        mask[:, seq - seq // 4:] = 0
    return [("input_ids", ids), ("attention_mask", mask)]


def export(name, m, args, names, out_name):
    path = os.path.join(out, name + ".onnx")
    dyn = {n: {1: "seq"} for n in names}
    dyn[out_name] = {1: "seq"}
    errs = []
    for kw in [dict(dynamo=False), dict(dynamo=True)]:
        try:
            torch.onnx.export(m, tuple(args), path, input_names=names, output_names=[out_name],
                              dynamic_axes=dyn, opset_version=17, **kw)
            import onnx as ox
            mo = ox.load(path)
            ox.save(mo, path, save_as_external_data=False)
            if os.path.exists(path + ".data"):
                os.remove(path + ".data")
            return {"export": str(kw), "errors": errs, "ops": sorted(set(n.op_type for n in mo.graph.node)),
                    "nodes": len(mo.graph.node), "bytes": os.path.getsize(path)}
        except Exception as e:
            errs.append("%s: %s" % (kw, str(e)[:600]))
    return {"export": None, "errors": errs}


torch.manual_seed(0)
for name in ["decoder", "gpt2", "bert"]:
    r = {}
    try:
        if name == "decoder":
            m, key, out_name = Decoder(), None, "logits"
        else:
            m = hf(name)
            key, out_name = ("logits", "logits") if name == "gpt2" else ("last_hidden_state", "last_hidden_state")
        m.eval()
        w = Wrap(m, key).eval()
        rng = np.random.default_rng(7)
        feeds = {seq: inputs(name, seq, rng) for seq in LENGTHS}
        with torch.no_grad():
            r.update(export(name, w, [torch.from_numpy(a) for _, a in feeds[7]], [n for n, _ in feeds[7]], out_name))
            w64 = Wrap(m.double(), key)
            for seq, feed in feeds.items():
                for n, a in feed:
                    np.save(os.path.join(out, "%s.%d.%s.npy" % (name, seq, "ids" if n == "input_ids" else "mask")), a)
                y = w64(*[torch.from_numpy(a) for _, a in feed])
                np.save(os.path.join(out, "%s.%d.ref.npy" % (name, seq)), y.numpy().astype(np.float32))
            m.float()
        if r.get("export"):
            try:
                import onnxruntime as ort
                s = ort.InferenceSession(os.path.join(out, name + ".onnx"), providers=["CPUExecutionProvider"])
                errs = {}
                for seq, feed in feeds.items():
                    y = s.run(None, dict(feed))[0]
                    np.save(os.path.join(out, "%s.%d.ort.npy" % (name, seq)), y)
                    ref = np.load(os.path.join(out, "%s.%d.ref.npy" % (name, seq))).astype(np.float64)
                    errs[seq] = float(np.max(np.abs(y - ref) / np.maximum(np.abs(ref), 1e-3)))
                r["ort_max_rel_vs_float64"] = errs
            except Exception as e:
                r["ort"] = str(e)[:400]
    except Exception as e:
        r["error"] = str(e)[:800]
    info[name] = r
    print(name, json.dumps(r)[:1500], flush=True)
json.dump(info, open(os.path.join(out, "info.json"), "w"), indent=1)
