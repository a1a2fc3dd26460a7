#!/usr/bin/env python3
"""The peer for issue 33 item 5's per-token latency: greedy decoding with Hugging Face's own KV cache
(GPT2LMHeadModel.generate, use_cache=True, do_sample=False) in PyTorch eager on CUDA, float32 with TF32
off, beside `gpucc generate` (bench/device.sh's decode suite runs both), for two configs:

  fixture  onnx/testdata/transformers/gpt2kv.onnx's model (2 blocks, d 64, 4 heads, vocab 256, seed 0,
           initializer 0.2: export_kv.py's weights, so the tokens must be the fixture's)
  small    GPT-2 small's shape (12 blocks, d 768, 12 heads, vocab 50257, 1024 positions), random
           weights (seed 0, GPT-2's initializer 0.02); its decoding step is exported here as
           OUTDIR/gpt2small_kv.onnx for gpucc generate, with export_kv.py's Step (a static cache of
           MAX_LEN rows, the same names)

Per config it times, after 2 warm-up runs, REPS runs of:
  hf_<attn>  generate() with HF's default (dynamic) cache, attention "eager" and "sdpa"; a streamer
             takes a timestamp as each token comes (generate copies each token to the host, which
             synchronizes): prefill_ms is the prompt's forward and the first token, token_ms the median
             gap between later tokens
  step       export_kv.py's Step module itself (the graph gpucc runs: one token against the static
             cache of MAX_LEN rows, masked), called per token with torch.cuda.synchronize() after each
and gives every figure as the median over the runs, with the generated tokens.

Usage: python3 bench/torch_decode.py OUTDIR [PROMPT_LEN STEPS MAX_LEN REPS]   (defaults 8 64 128 5)
Prints JSON.
"""
import json, math, os, statistics, sys, time
import numpy as np
import torch, torch.nn as nn
import transformers as T

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
PROMPT, STEPS, MAXLEN, REPS = [int(a) for a in sys.argv[2:6]] + [8, 64, 128, 5][len(sys.argv[2:6]):]
dev = torch.device("cuda")
# export_kv.py's prompt (numpy's default_rng(11), 8 ids below 256); valid ids in both vocabularies.
FIXTURE_PROMPT = [34, 32, 204, 127, 151, 153, 182, 7]
CONFIGS = {
    "fixture": dict(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=512, initializer_range=0.2),
    "small": dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024, initializer_range=0.02),
}


def gpt2(cfg, attn):
    c = T.GPT2Config(resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, **cfg)
    c._attn_implementation = attn
    torch.manual_seed(0)
    m = T.GPT2LMHeadModel(c).eval()
    m.generation_config.eos_token_id = None
    m.generation_config.pad_token_id = 0
    return m


class Step(nn.Module):
    """export_kv.py's Step, for any width: one token against a static cache."""

    def __init__(s, m):
        super().__init__()
        s.m = m
        s.d, s.h = m.config.n_embd, m.config.n_head

    def forward(s, input_ids, position, *past):
        tr, D, H = s.m.transformer, s.d, s.h
        t = past[0].shape[2]
        x = tr.wte(input_ids) + tr.wpe(position).unsqueeze(0)
        slots = torch.arange(t, device=input_ids.device)
        write = (slots == position).view(1, 1, t, 1)
        hide = (slots > position).view(1, 1, 1, t)
        presents = []
        for i, b in enumerate(tr.h):
            q, k, v = b.attn.c_attn(b.ln_1(x)).split(D, dim=2)
            q, k, v = [z.view(1, 1, H, D // H).transpose(1, 2) for z in (q, k, v)]
            keys = torch.where(write, k, past[2 * i])
            values = torch.where(write, v, past[2 * i + 1])
            att = (q @ keys.transpose(-1, -2)) / math.sqrt(D // H)
            att = att.masked_fill(hide, float("-inf")).softmax(dim=-1)
            y = (att @ values).transpose(1, 2).reshape(1, 1, D)
            x = x + b.attn.c_proj(y)
            x = x + b.mlp(b.ln_2(x))
            presents += [keys, values]
        return (s.m.lm_head(tr.ln_f(x)), *presents)


try:
    from transformers.generation.streamers import BaseStreamer
except Exception:  # an older layout: generate() only calls put and end
    BaseStreamer = object


class Clock(BaseStreamer):
    """A generate() streamer: a timestamp per put (the prompt first, then each token)."""

    def __init__(s):
        s.t, s.toks = [], []

    def put(s, v):
        s.t.append(time.perf_counter())
        s.toks.append(v.reshape(-1).tolist())

    def end(s):
        pass


def hf_run(m, prompt):
    ids = torch.tensor([prompt], device=dev)
    c = Clock()
    t0 = time.perf_counter()
    with torch.no_grad():
        y = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=STEPS, min_new_tokens=STEPS,
                       do_sample=False, use_cache=True, streamer=c)
    torch.cuda.synchronize()
    total = (time.perf_counter() - t0) * 1e3
    gaps = [(b - a) * 1e3 for a, b in zip(c.t[1:], c.t[2:])]
    return {"prefill_ms": (c.t[1] - t0) * 1e3, "token_ms": statistics.median(gaps), "total_ms": total,
            "tokens": y[0, len(prompt):].tolist()}


def step_run(step, prompt, n_layer, heads, dh):
    past = [torch.zeros(1, heads, MAXLEN, dh, device=dev) for _ in range(2 * n_layer)]
    toks, times = list(prompt), []
    with torch.no_grad():
        for p in range(len(prompt) + STEPS - 1):
            t0 = time.perf_counter()
            y, *past = step(torch.tensor([[toks[p]]], device=dev), torch.tensor([p], device=dev), *past)
            if p + 1 >= len(toks):
                toks.append(int(torch.argmax(y[0, 0])))
            else:
                torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    return {"prefill_ms": sum(times[:len(prompt)]), "token_ms": statistics.median(times[len(prompt):]),
            "total_ms": sum(times), "tokens": toks[len(prompt):]}


def timed(fn):
    for _ in range(2):
        fn()
    runs = [fn() for _ in range(REPS)]
    r = {k: statistics.median(x[k] for x in runs) for k in ("prefill_ms", "token_ms", "total_ms")}
    r["token_ms_min"] = min(x["token_ms"] for x in runs)
    r["token_ms_max"] = max(x["token_ms"] for x in runs)
    r["tokens"] = runs[-1]["tokens"]
    r["same_tokens_every_run"] = all(x["tokens"] == r["tokens"] for x in runs)
    return r


res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "transformers": T.__version__,
       "prompt": FIXTURE_PROMPT[:PROMPT], "steps": STEPS, "max_len": MAXLEN, "reps": REPS}
for name, cfg in CONFIGS.items():
    r = {"config": cfg}
    heads, dh = cfg["n_head"], cfg["n_embd"] // cfg["n_head"]
    prompt = FIXTURE_PROMPT[:PROMPT]
    if name == "small":  # first, so that gpucc has the model even if a timing runs out of time
        path = os.path.join(out, "gpt2small_kv.onnx")
        try:
            ins, outs = ["input_ids", "position"], ["logits"]
            for i in range(cfg["n_layer"]):
                for kv in ("key", "value"):
                    ins.append("past_key_values.%d.%s" % (i, kv))
                    outs.append("present.%d.%s" % (i, kv))
            step = Step(gpt2(cfg, "eager")).eval()  # on the CPU, as export_kv.py exports
            args = [torch.zeros(1, 1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)]
            args += [torch.zeros(1, heads, MAXLEN, dh) for _ in range(2 * cfg["n_layer"])]
            with torch.no_grad():
                torch.onnx.export(step, tuple(args), path, input_names=ins, output_names=outs,
                                  dynamic_axes={n: {2: "max_len"} for n in ins[2:] + outs[1:]},
                                  opset_version=17, dynamo=False)
            import onnx
            mo = onnx.load(path)
            onnx.save(mo, path, save_as_external_data=False)
            if os.path.exists(path + ".data"):
                os.remove(path + ".data")
            r["onnx"] = {"path": path, "bytes": os.path.getsize(path), "nodes": len(mo.graph.node)}
        except Exception as e:
            r["onnx"] = {"error": repr(e)[:600]}
    for attn in ("eager", "sdpa"):
        try:
            m = gpt2(cfg, attn).to(dev)
            r["hf_" + attn] = timed(lambda: hf_run(m, prompt))
        except Exception as e:  # report, do not hide
            r["hf_" + attn] = {"error": repr(e)[:400]}
    try:
        m = gpt2(cfg, "eager")
        step = Step(m.to(dev)).eval()
        r["step"] = timed(lambda: step_run(step, prompt, cfg["n_layer"], heads, dh))
    except Exception as e:
        r["step"] = {"error": repr(e)[:400]}
    if name == "fixture":
        want = [252, 221, 7, 7, 102, 211, 108, 77, 97, 17, 215, 112, 112, 229, 68, 139]  # gpt2kv.tokens.npy[8:24]
        for k in ("hf_eager", "hf_sdpa", "step"):
            if "tokens" in r[k] and PROMPT == 8:
                r[k]["fixture_tokens_first16"] = r[k]["tokens"][:16] == want
    res[name] = r
    with open(os.path.join(out, "torch_decode.json"), "w") as f:  # so far, in case the suite's timeout ends the script
        json.dump(res, f, indent=1)
    print(json.dumps({name: {k: {a: b for a, b in v.items() if a != "tokens"} if isinstance(v, dict) else v
                             for k, v in r.items()}}), file=sys.stderr, flush=True)
print(json.dumps(res, indent=1))
