# Exports three small PyTorch models to ONNX, with inputs and float32/float64 outputs, and times them.
import json, os, sys, time, importlib
import torch, torch.nn as nn
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
info = {"torch": torch.__version__}
for m in ["onnx", "onnxscript", "onnxruntime", "sklearn", "numpy"]:
    try:
        info[m] = importlib.import_module(m).__version__
    except Exception as e:
        info[m] = "missing: %s" % e
print(info, flush=True)
torch.manual_seed(0)

class MLP(nn.Module):
    def __init__(s):
        super().__init__(); s.l1 = nn.Linear(256, 256); s.l2 = nn.Linear(256, 128); s.l3 = nn.Linear(128, 10)
    def forward(s, x):
        return s.l3(torch.relu(s.l2(torch.relu(s.l1(x)))))

class Digits(nn.Module):  # 8x8 digits, as sklearn's load_digits: 64 -> 32 -> 10, log-softmax
    def __init__(s):
        super().__init__(); s.l1 = nn.Linear(64, 32); s.l2 = nn.Linear(32, 10)
    def forward(s, x):
        return torch.log_softmax(s.l2(torch.tanh(s.l1(x))), dim=-1)

def block():
    return nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=256, dropout=0.0,
                                      activation="gelu", batch_first=True, norm_first=False)

models = {
    "mlp": (MLP(), (torch.randn(64, 256),)),
    "digits": (Digits(), (torch.rand(32, 64) * 16,)),
    "transformer": (block(), (torch.randn(1, 128, 256),)),
}
results = {"env": info}
for name, (m, args) in models.items():
    m.eval()
    r = {}
    with torch.no_grad():
        y32 = m(*args)
        y64 = m.double()(*[a.double() for a in args]); m.float()
    for k, t in [("input", args[0]), ("output32", y32), ("output64", y64)]:
        t.detach().cpu().numpy().tofile(os.path.join(out, "%s.%s.bin" % (name, k)))
        r[k] = {"shape": list(t.shape), "dtype": str(t.dtype)}
    for kw in [dict(dynamo=False), dict(dynamo=True), dict()]:
        try:
            torch.onnx.export(m, args, os.path.join(out, name + ".onnx"), input_names=["x"], output_names=["y"],
                              opset_version=17, **kw)
            r["export"] = "ok %s" % kw
            import onnx as ox
            mo = ox.load(os.path.join(out, name + ".onnx"))
            ox.save(mo, os.path.join(out, name + ".onnx"), save_as_external_data=False)
            if os.path.exists(os.path.join(out, name + ".onnx.data")): os.remove(os.path.join(out, name + ".onnx.data"))
            r["opset"] = [(o.domain, o.version) for o in mo.opset_import]
            r["ops"] = sorted(set(n.op_type for n in mo.graph.node))
            break
        except Exception as e:
            r.setdefault("export_errors", []).append("%s: %s" % (kw, str(e)[:400]))
    try:
        import onnxruntime as ort, numpy as np
        sess = ort.InferenceSession(os.path.join(out, name + ".onnx"), providers=["CPUExecutionProvider"])
        yo = sess.run(None, {"x": args[0].numpy()})[0]
        r["ort_max_abs_diff_vs_torch32"] = float(np.abs(yo - y32.numpy()).max())
    except Exception as e:
        r["ort_err"] = str(e)[:300]
    # timings on the GPU: eager and compile, CUDA events, synchronized per call, warm
    try:
        mc = m.cuda(); a = [x.cuda() for x in args]
        def t(f, n=200):
            for _ in range(20): f(*a)
            torch.cuda.synchronize(); best = 1e9
            for _ in range(n):
                s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
                s.record(); f(*a); e.record(); e.synchronize(); best = min(best, s.elapsed_time(e))
            return best
        with torch.no_grad():
            r["eager_ms"] = t(mc)
            try:
                r["compile_ms"] = t(torch.compile(mc))
            except Exception as e:
                r["compile_err"] = str(e)[:300]
        m.cpu()
    except Exception as e:
        r["time_err"] = str(e)[:300]
    results[name] = r
    print(name, r, flush=True)
json.dump(results, open(os.path.join(out, "manifest.json"), "w"), indent=1)
