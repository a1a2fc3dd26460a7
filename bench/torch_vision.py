# Exports torchvision's ResNet-18, MobileNet v2, EfficientNet-B0 and ViT-B/16-class tiny ViT (random
# weights: the device machine has no network) to ONNX at batch 1, opset 17, into DIR, and times
# PyTorch eager on each (kernel time per synchronized call, after a warm-up). NAMES, when given,
# picks some of them (resnet18 alone exports in seconds).
#   python3 bench/torch_vision.py DIR [NAMES...]
import json, os, sys, time
import torch, torchvision
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
models = {
    "resnet18": lambda: torchvision.models.resnet18(),
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(),
    "vit_tiny": lambda: torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3,
                                                            hidden_dim=192, mlp_dim=768),
}
res = {"torch": torch.__version__, "torchvision": torchvision.__version__}
for name, make in models.items():
    if sys.argv[2:] and name not in sys.argv[2:]:
        continue
    m = make()
    m.eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        path = os.path.join(out, name + ".onnx")
        for kw in [dict(dynamo=False), dict(dynamo=True)]:
            try:
                torch.onnx.export(m, (x,), path, input_names=["x"], output_names=["y"], opset_version=17, **kw)
                import onnx
                onnx.save(onnx.load(path), path, save_as_external_data=False)
                if os.path.exists(path + ".data"):
                    os.remove(path + ".data")
                res.setdefault("export", {})[name] = str(kw)
                break
            except Exception as e:
                res.setdefault("export_errors", {}).setdefault(name, []).append("%s: %s" % (kw, str(e)[:300]))
        if torch.cuda.is_available():
            mc, xc = m.cuda(), x.cuda()
            for _ in range(20):
                mc(xc)
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(100):
                mc(xc)
            torch.cuda.synchronize()
            res[name] = {"eager_ms": (time.perf_counter() - t) * 10}
    print(name, res.get(name), flush=True)
print(json.dumps(res))
