# The attribute sweep of issue 30: one small model per (op, attribute combination), written with
# python3-onnx (Debian's 1.12), with random float32 inputs; ort.mjs then runs each in ONNX Runtime for
# Node 1.30 and records the outputs. TestAttributeSweep (sweep_test.go) compares gpucc with them.
#   /usr/bin/python3 make.py && node ort.mjs   (ort.mjs needs onnxruntime-node: npm ci in bench/peers)
import itertools, json, os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as T

rng = np.random.default_rng(2026_12_04)
cases = []

def case(name, op, shape, attrs={}, consts=(), nin=1, shapes=None, opset=17, outs=1, otype=T.FLOAT, rnd=3, pos=False):
    """op on float32 inputs of shape (or shapes), with int64 constant inputs consts (name, values);
    the data rounded to rnd decimals (0 makes ties), made positive with pos."""
    shapes = shapes or [shape] * nin
    ins = [f"x{i}" for i in range(len(shapes))]
    inits, cin = [], []
    for k, (cname, vals) in enumerate(consts):
        if cname is None:
            cin.append("")
            continue
        arr = np.array(vals, dtype=np.int64)
        inits.append(h.make_tensor(cname, T.INT64, list(arr.shape), arr.flatten().tolist()))
        cin.append(cname)
    outs_names = [f"y{i}" for i in range(outs)]
    node = h.make_node(op, ins + cin, outs_names, **attrs)
    g = h.make_graph([node], name, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in zip(ins, shapes)],
                     [h.make_tensor_value_info(n, otype, None) for n in outs_names], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_operatorsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, f"{name}.onnx")
    data = {n: rng.standard_normal(s).astype(np.float32).round(rnd) for n, s in zip(ins, shapes)}
    data = {n: (np.abs(d) + np.float32(0.5) if pos else d).flatten().tolist() for n, d in data.items()}
    cases.append({"name": name, "inputs": {n: {"shape": list(s), "data": data[n]} for n, s in zip(ins, shapes)}})

for r, shape in [(2, [3, 4]), (3, [2, 3, 4])]:
    for axis in range(-r, r):
        for ex, rev in itertools.product([0, 1], [0, 1]):
            case(f"cumsum_r{r}_a{axis}_e{ex}_r{rev}", "CumSum", shape, {"exclusive": ex, "reverse": rev}, [("axis", axis)])
        case(f"softmax_r{r}_a{axis}", "Softmax", shape, {"axis": axis})
        case(f"logsoftmax_r{r}_a{axis}", "LogSoftmax", shape, {"axis": axis})
        case(f"flatten_r{r}_a{axis}", "Flatten", shape, {"axis": axis})
        case(f"argmax_r{r}_a{axis}", "ArgMax", shape, {"axis": axis, "keepdims": 0}, otype=T.INT64)
        case(f"concat_r{r}_a{axis}", "Concat", shape, {"axis": axis}, nin=2)
        case(f"layernorm_r{r}_a{axis}", "LayerNormalization", shape, {"axis": axis, "epsilon": 1e-3},
             shapes=[shape, shape[axis:]])
for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]:
    for axes in [[0], [1], [-1], [0, 2], [0, 1, 2]]:
        for kd in [0, 1]:
            tag = "_".join(str(a).replace("-", "m") for a in axes)
            if op == "ReduceSum":
                case(f"{op.lower()}_ax{tag}_k{kd}", op, [2, 3, 4], {"keepdims": kd}, [("axes", axes)], opset=13)
            else:
                case(f"{op.lower()}_ax{tag}_k{kd}", op, [2, 3, 4], {"keepdims": kd, "axes": axes}, opset=13)
for perm in itertools.permutations(range(3)):
    case("transpose_" + "".join(map(str, perm)), "Transpose", [2, 3, 4], {"perm": list(perm)})
for st, en, ax, sp in [([1], [3], [1], [1]), ([-1], [-4], [2], [-1]), ([0, 1], [2, 4], [0, 2], [1, 2]), ([3], [0], [2], [-2]),
                       ([0], [100], [1], [2]), ([-100], [100], [0], [1]), ([2], [1], [2], [1])]:
    case("slice_" + "_".join(map(str, st + en + ax + sp)).replace("-", "m"), "Slice", [2, 3, 4], {}, [("st", st), ("en", en), ("ax", ax), ("sp", sp)])
for axis, split in [(0, [1, 1]), (1, [1, 2]), (2, [1, 3]), (-1, [2, 2])]:
    case(f"split_a{axis}_{split[0]}{split[1]}".replace("-", "m"), "Split", [2, 3, 4], {"axis": axis}, [("s", split)], outs=2)
for mode in ["DCR", "CRD"]:
    case(f"depthtospace_{mode}", "DepthToSpace", [1, 8, 2, 3], {"blocksize": 2, "mode": mode})
case("spacetodepth", "SpaceToDepth", [1, 2, 4, 6], {"blocksize": 2})
for reps in [[1, 2, 1], [2, 1, 3], [3, 2, 2]]:
    case("tile_" + "".join(map(str, reps)), "Tile", [2, 3, 4], {}, [("r", reps)])
for shape in [[2, 1, 4], [3, 1, 1], [1, 3, 4]]:
    case("expand_" + "".join(map(str, shape)), "Expand", shape, {}, [("sh", [2, 3, 4] if shape[0] != 3 else [3, 3, 4])])
for mode in ["constant", "reflect", "edge"]:
    for pads in [[0, 1, 2, 0, 2, 1], [1, 0, 0, 1, 1, 1]]:
        case(f"pad_{mode}_" + "".join(map(str, pads)), "Pad", [2, 3, 4], {"mode": mode}, [("p", pads)], opset=13)
for ta, tb in itertools.product([0, 1], [0, 1]):
    for alpha, beta in [(1.0, 1.0), (0.5, 2.0)]:
        sa = [4, 3] if ta else [3, 4]
        sb = [5, 4] if tb else [4, 5]
        case(f"gemm_t{ta}{tb}_a{alpha}_b{beta}".replace(".", "p"), "Gemm", None, {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta},
             shapes=[sa, sb, [5]])
for op, attrs in [("LeakyRelu", {"alpha": 0.3}), ("Elu", {"alpha": 0.7}), ("HardSigmoid", {"alpha": 0.4, "beta": 0.3}),
                  ("Selu", {"alpha": 1.5, "gamma": 0.9}), ("Celu", {"alpha": 0.6}), ("ThresholdedRelu", {"alpha": 0.2}),
                  ("Shrink", {"bias": 0.1, "lambd": 0.4}), ("Softsign", {}), ("Softplus", {}), ("HardSwish", {})]:
    case("act_" + op.lower(), op, [3, 4], attrs)
for upper, k in itertools.product([0, 1], [-1, 0, 2]):
    case(f"trilu_u{upper}_k{k}".replace("-", "m"), "Trilu", [3, 4], {"upper": upper}, [("k", k)] if k else [])
for axis in [0, 1, -1]:
    case(f"gather_a{axis}".replace("-", "m"), "Gather", [3, 4], {"axis": axis}, [("i", [[0, -1], [2, 1]] if axis != 1 else [[0, -1], [3, 1]])])
for d in ["forward", "reverse", "bidirectional"]:
    nd = 2 if d == "bidirectional" else 1
    for op, g in [("LSTM", 4), ("GRU", 3), ("RNN", 1)]:
        case(f"{op.lower()}_{d}", op, None, {"hidden_size": 3, "direction": d},
             shapes=[[2, 2, 3], [nd, g * 3, 3], [nd, g * 3, 3], [nd, 2 * g * 3]], outs=2)
# The ops with attributes the first table left out (issue 30 item 5, part two).
for op in ["ArgMax", "ArgMin"]:
    for axis, kd, last in itertools.product([0, -1], [0, 1], [0, 1]):
        case(f"{op.lower()}_ties_a{axis}_k{kd}_l{last}".replace("-", "m"), op, [3, 4], {"axis": axis, "keepdims": kd, "select_last_index": last},
             otype=T.INT64, rnd=0)
for axis in [0, 1, -1]:
    case(f"hardmax_a{axis}".replace("-", "m"), "Hardmax", [3, 4], {"axis": axis}, opset=13, rnd=0)
for lo, hi in [(-0.5, 0.5), (0.0, 10.0), (-10.0, -0.2)]:
    case(f"clip6_{lo}_{hi}".replace("-", "m").replace(".", "p"), "Clip", [3, 4], {"min": lo, "max": hi}, opset=6)
for eps in [1e-5, 0.5]:
    case(f"instancenorm_e{eps}".replace("-", "m").replace(".", "p"), "InstanceNormalization", None, {"epsilon": eps}, shapes=[[2, 3, 4], [3], [3]])
    case(f"batchnorm_e{eps}".replace("-", "m").replace(".", "p"), "BatchNormalization", None, {"epsilon": eps, "momentum": 0.7},
         shapes=[[2, 3, 2, 2], [3], [3], [3], [3]], pos=True)
for axes in [[0, 2, 3], [1], [2, 3], [0, 1, 2, 3]]:
    case("mvn_" + "".join(map(str, axes)), "MeanVarianceNormalization", [2, 3, 2, 2], {"axes": axes})
case("mod_fmod", "Mod", [3, 4], {"fmod": 1}, nin=2)
for axis in [0, 1, -1]:
    case(f"gatherelements_a{axis}".replace("-", "m"), "GatherElements", [3, 4], {"axis": axis},
         [("i", [[0, 2, 1, 0], [2, 2, 0, 1]] if axis == 0 else [[0, 3], [2, 1], [1, 1]])])
for axes in [[1], [0, 2, 3], [-1]]:
    for kd in [0, 1]:
        tag = "_".join(str(a).replace("-", "m") for a in axes) if len(axes) == 1 else "".join(map(str, axes))
        case(f"reducelogsum_ax{tag}_k{kd}", "ReduceLogSum", [2, 3, 2, 2], {"keepdims": kd, "axes": axes}, opset=13, pos=True)
for axes in [[1], [1, 3], [-1]]:
    case("squeeze_" + "".join(str(a).replace("-", "m") for a in axes), "Squeeze", [2, 1, 3, 1], {}, [("a", axes)], opset=13)
for axes in [[0], [1, 3], [-1], [0, -1]]:
    case("unsqueeze_" + "".join(str(a).replace("-", "m") for a in axes), "Unsqueeze", [2, 3], {}, [("a", axes)], opset=13)
for shape in [[0, -1], [4, 0, 2], [-1], [2, 0, 0]]:
    case("reshape_" + "_".join(map(str, shape)).replace("-", "m"), "Reshape", [2, 3, 4], {}, [("s", shape)], opset=14)
for start, end in [(0, 3), (1, 3), (-2, 10), (-10, -1), (2, 1)]:
    case(f"shape_{start}_{end}".replace("-", "m"), "Shape", [2, 3, 4], {"start": start, "end": end}, opset=15, otype=T.INT64)
for to, ot in [(T.INT32, T.INT32), (T.INT64, T.INT64), (T.BOOL, T.BOOL)]:
    case(f"cast_{to}", "Cast", [3, 4], {"to": to}, otype=ot, rnd=1)
for k in [-1, 0, 2]:
    case(f"eyelike_k{k}".replace("-", "m"), "EyeLike", [3, 4], {"k": k})
for g, cin in [(1, 2), (2, 1)]:
    for strides, pads, dil in [([1, 1], [0, 0, 0, 0], [1, 1]), ([2, 2], [1, 1, 1, 1], [1, 1]), ([1, 2], [1, 0, 2, 1], [2, 2])]:
        tag = f"g{g}_s{''.join(map(str, strides))}_p{''.join(map(str, pads))}_d{''.join(map(str, dil))}"
        case("conv_" + tag, "Conv", None, {"group": g, "strides": strides, "pads": pads, "dilations": dil},
             shapes=[[1, 2, 6, 5], [4, cin, 3, 3], [4]])
    for ap in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
        case(f"conv_g{g}_{ap.lower()}", "Conv", None, {"group": g, "auto_pad": ap, "strides": [2, 2]}, shapes=[[1, 2, 6, 5], [4, cin, 3, 3], [4]])
for strides, pads, outpad, g in [([2, 2], [0, 0, 0, 0], [1, 1], 1), ([1, 1], [1, 1, 1, 1], [0, 0], 1), ([2, 1], [1, 0, 0, 1], [1, 0], 2)]:
    tag = f"s{''.join(map(str, strides))}_p{''.join(map(str, pads))}_o{''.join(map(str, outpad))}_g{g}"
    case("convtranspose_" + tag, "ConvTranspose", None, {"strides": strides, "pads": pads, "output_padding": outpad, "group": g},
         shapes=[[1, 2, 4, 3], [2, 6 // g, 3, 3], [6]])
for op in ["MaxPool", "AveragePool"]:
    for k, strides, pads, ceil in [([2, 2], [2, 2], [0, 0, 0, 0], 0), ([3, 3], [2, 2], [1, 1, 1, 1], 1), ([3, 2], [1, 2], [1, 0, 1, 1], 0),
                                   ([2, 2], [2, 2], [0, 0, 0, 0], 1)]:
        attrs = {"kernel_shape": k, "strides": strides, "pads": pads, "ceil_mode": ceil}
        tags = [("", {})] + ([("_cip", {"count_include_pad": 1})] if op == "AveragePool" else [("_dil", {"dilations": [2, 1]})])
        for tag, extra in tags:
            name = f"{op.lower()}_k{''.join(map(str, k))}_s{''.join(map(str, strides))}_p{''.join(map(str, pads))}_c{ceil}{tag}"
            case(name, op, [1, 2, 7, 6], {**attrs, **extra}, opset=12)
    for ap in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
        case(f"{op.lower()}_{ap.lower()}", op, [1, 2, 7, 6], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": ap}, opset=12)
case("globalaveragepool", "GlobalAveragePool", [2, 3, 4, 5])
case("globalmaxpool", "GlobalMaxPool", [2, 3, 4, 5])
for mode, ctm, nm in [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"), ("nearest", "align_corners", "ceil"),
                      ("nearest", "tf_half_pixel_for_nn", "round_prefer_ceil"), ("linear", "half_pixel", "floor"),
                      ("linear", "align_corners", "floor"), ("linear", "asymmetric", "floor"), ("linear", "pytorch_half_pixel", "floor")]:
    for sizes in [[1, 2, 6, 7], [1, 2, 2, 3]]:
        case(f"resize_{mode}_{ctm}_{nm}_{sizes[2]}{sizes[3]}", "Resize", [1, 2, 4, 5],
             {"mode": mode, "coordinate_transformation_mode": ctm, "nearest_mode": nm}, [(None, 0), (None, 0), ("sz", sizes)], opset=13)
for op in ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]:
    for red in ["none", "sum", "mean"]:
        for ii in [None, 2]:
            attrs = {"reduction": red}
            if ii is not None:
                attrs["ignore_index"] = ii
            case(f"{op[:3].lower()}loss_{red}_i{ii}", op, [3, 4], attrs, [("t", [2, 0, 3])], opset=13)
json.dump(cases, open("cases.json", "w"))
print(len(cases), "cases")
