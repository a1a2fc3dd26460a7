# Writes the crafted models of issue 30 (an outside attack on 2026-12-04): each tiny, each once
# a crash, a hang or a memory blow-up of the importer. expect.json says what Load must answer.
#   python3 make.py   (python3-onnx)
import json
import onnx
from onnx import helper as h, TensorProto as T

def save(name, nodes, inits, inputs, outputs, expect, opset=17):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_operatorsetid("", opset)], producer_name="")
    m.ir_version = 8
    onnx.save(m, name + ".onnx")
    want[name + ".onnx"] = expect

def f32(name, shape):
    return h.make_tensor_value_info(name, T.FLOAT, shape)

def i64(name, vals, dims=None):
    return h.make_tensor(name, T.INT64, [len(vals)] if dims is None else dims, vals)

want = {}
# Split sizes whose sum wraps around to the axis length.
save("split_wrap", [h.make_node("Split", ["x", "s"], ["a", "b", "c", "d"], axis=0)],
     [i64("s", [2**62, 2**62, 2**62, 2**62 + 2])], [f32("x", [2])], [f32(n, None) for n in "abcd"], "invalid_graph")
# A Slice step of 2^63-7: (end-begin+step-1)/step overflows.
save("slice_step", [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
     [i64("st", [0]), i64("en", [10]), i64("ax", [0]), i64("sp", [2**63 - 7])], [f32("x", [10])], [f32("y", None)], "ok")
# DepthToSpace with blocksize 2^32: bs*bs wraps to 0.
save("depth_to_space_wrap", [h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2**32)],
     [], [f32("x", [1, 4, 1, 1])], [f32("y", None)], "invalid_graph")
save("space_to_depth_wrap", [h.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2**32)],
     [], [f32("x", [1, 1, 2, 2])], [f32("y", None)], "invalid_graph")
# Expand to [2^31-1, 2^31-1] then a Slice: 34 GB before any limit was checked.
save("expand_huge_slice", [h.make_node("Expand", ["x", "sh"], ["e"]), h.make_node("Slice", ["e", "st", "en"], ["y"])],
     [i64("sh", [2**31 - 1, 2**31 - 1]), i64("st", [0, 0]), i64("en", [1, 1])], [f32("x", [1, 1])], [f32("y", None)], "limit_exceeded")
# An Expand then a Slice at rank 3, run-time and constant.
save("expand_rank3_slice_rt", [h.make_node("Expand", ["x", "sh"], ["e"]), h.make_node("Slice", ["e", "st", "en", "ax"], ["y"])],
     [i64("sh", [2, 3, 4]), i64("st", [1]), i64("en", [3]), i64("ax", [1])], [f32("x", [1, 1, 1])], [f32("y", None)], "ok")
save("expand_rank3_slice", [h.make_node("Expand", ["c", "sh"], ["e"]), h.make_node("Slice", ["e", "st", "en", "ax"], ["y"])],
     [h.make_tensor("c", T.FLOAT, [1], [1.0]), i64("sh", [2, 3, 4]), i64("st", [1]), i64("en", [3]), i64("ax", [2])], [], [f32("y", None)], "ok")
# Tile of a [1024] by 2^20: the index table was allocated before the limit check.
save("tile_huge", [h.make_node("Tile", ["x", "r"], ["y"])],
     [i64("r", [2**20])], [f32("x", [1024])], [f32("y", None)], "limit_exceeded")
# Tile with repeats whose product wraps.
save("tile_wrap", [h.make_node("Tile", ["x", "r"], ["y"])],
     [i64("r", [2**32, 2**32])], [f32("x", [1, 1])], [f32("y", None)], "limit_exceeded")
# ConstantOfShape and Range of huge sizes, and a Reshape whose product wraps.
save("constant_of_shape_huge", [h.make_node("ConstantOfShape", ["sh"], ["y"])],
     [i64("sh", [2**31, 2**31, 4])], [], [f32("y", None)], "limit_exceeded")
save("constant_of_shape_big", [h.make_node("ConstantOfShape", ["sh"], ["y"])],
     [i64("sh", [2**20, 2**20])], [], [f32("y", None)], "limit_exceeded")
save("range_huge", [h.make_node("Range", ["a", "b", "d"], ["y"])],
     [h.make_tensor("a", T.INT64, [], [0]), h.make_tensor("b", T.INT64, [], [2**62]), h.make_tensor("d", T.INT64, [], [1])], [], [h.make_tensor_value_info("y", T.INT64, None)], "limit_exceeded")
save("reshape_wrap", [h.make_node("Reshape", ["x", "sh"], ["y"])],
     [i64("sh", [2**32, 2**32, 1])], [f32("x", [1])], [f32("y", None)], "invalid_graph")
# Concat of one [2^20] input 2,048 times: each run-time input's index table (the
# result's axis, 2^31) was made before any limit was checked.
save("concat_many", [h.make_node("Concat", ["x"] * 2048, ["y"], axis=0)],
     [], [f32("x", [2**20])], [f32("y", None)], "limit_exceeded")
# Split into num_outputs = 2^63-1 parts: ceil(d/parts) as (d+parts-1)/parts wrapped
# to -1, and the loop of sizes never ended (memory grew until killed).
save("split_num_outputs_wrap", [h.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2**63 - 1)],
     [], [f32("x", [2])], [f32("a", None), f32("b", None)], "invalid_graph", opset=18)
# Range's count in float64: 0 to 2^53+1 by 2^53 is 2 elements; float64 made it 1.
# Its Shape is the output (TestCraftedAnswers checks [2]).
save("range_count_exact", [h.make_node("Range", ["a", "b", "d"], ["r"]), h.make_node("Shape", ["r"], ["n"])],
     [h.make_tensor("a", T.INT64, [], [0]), h.make_tensor("b", T.INT64, [], [2**53 + 1]), h.make_tensor("d", T.INT64, [], [2**53])],
     [], [h.make_tensor_value_info("n", T.INT64, None)], "ok")
# Range over the whole int64 line, where limit - start overflows: 4 elements.
save("range_wrap", [h.make_node("Range", ["a", "b", "d"], ["r"]), h.make_node("Shape", ["r"], ["n"])],
     [h.make_tensor("a", T.INT64, [], [-2**63]), h.make_tensor("b", T.INT64, [], [2**63 - 1]), h.make_tensor("d", T.INT64, [], [2**62])],
     [], [h.make_tensor_value_info("n", T.INT64, None)], "ok")
# The wrong answer: an exclusive CumSum along axis 0 of [[1,2,3],[4,5,6],[7,8,9]]
# gave zeros (ORT: [0,0,0,1,2,3,5,7,9]; TestCraftedAnswers checks the bits).
save("cumsum_exclusive_axis0", [h.make_node("CumSum", ["x", "ax"], ["y"], exclusive=1)],
     [h.make_tensor("x", T.FLOAT, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]), h.make_tensor("ax", T.INT64, [], [0])],
     [], [f32("y", None)], "ok")
# Opsets past any ONNX release.
save("opset_1000", [h.make_node("Relu", ["x"], ["y"])], [], [f32("x", [2])], [f32("y", None)], "unsupported", opset=1000)
save("opset_2_40", [h.make_node("Relu", ["x"], ["y"])], [], [f32("x", [2])], [f32("y", None)], "unsupported", opset=2**40)
# The default domain imported twice, opset 1000 and 13: the last one was read.
g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "opset_twice", [f32("x", [2])], [f32("y", None)])
m = h.make_model(g, opset_imports=[h.make_operatorsetid("", 1000), h.make_operatorsetid("", 13)], producer_name="")
m.ir_version = 8
onnx.save(m, "opset_twice.onnx")
want["opset_twice.onnx"] = "invalid_graph"
json.dump(want, open("expect.json", "w"), indent=1, sort_keys=True)
