#!/usr/bin/python3
"""Writes the hostile-model corpus (tests/hostile/corpus/*.onnx, each with a .expect file holding a piece of the
error message it must give). Run with Debian's python3 (python3-onnx): /usr/bin/python3 make_corpus.py.
Fuzzer finds are added to the same folder by hand (their .expect may be absent: then any clean result passes).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def save(name, model, expect):
    path = os.path.join(OUT, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(OUT, name + ".expect"), "w") as f:
        f.write(expect + "\n")


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="hostile")
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64_init(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def no_data_init(name, elem, dims):
    t = TensorProto()
    t.name = name
    t.data_type = elem
    t.dims.extend(dims)
    return t


def main():
    os.makedirs(OUT, exist_ok=True)
    ident = [helper.make_node("Identity", ["x"], ["y"], name="id")]
    # Initializers: declared size over the 4 GiB cap / overflowing int64, without the bytes to back them.
    save("init_over_cap", model(ident + [helper.make_node("Identity", ["w"], ["z"], name="idw")],
                                [f32("x", [1])], [f32("y", [1]), f32("z", None)],
                                [no_data_init("w", TensorProto.FLOAT, [1 << 30, 2])]),
         "over the tensor size limit")
    save("init_dims_overflow", model(ident + [helper.make_node("Identity", ["w"], ["z"], name="idw")],
                                     [f32("x", [1])], [f32("y", [1]), f32("z", None)],
                                     [no_data_init("w", TensorProto.FLOAT, [1 << 40, 1 << 40])]),
         "more elements than fit in int64")
    save("string_count_huge", model(ident + [helper.make_node("Identity", ["w"], ["z"], name="idw")],
                                    [f32("x", [1])], [f32("y", [1]), helper.make_tensor_value_info("z", TensorProto.STRING, None)],
                                    [no_data_init("w", TensorProto.STRING, [1 << 40])]),
         "tensor 'w'")
    save("init_rank_40", model(ident + [helper.make_node("Identity", ["w"], ["z"], name="idw")],
                               [f32("x", [1])], [f32("y", [1]), f32("z", None)],
                               [no_data_init("w", TensorProto.FLOAT, [1] * 40)]),
         "at most 16 dimensions")
    # A graph input of rank 100 (the C ABI holds 16 dims).
    save("input_rank_100", model(ident, [f32("x", [1] * 100)], [f32("y", None)]), "at most 16 dimensions")
    # Shapes inferred from constant inputs that are over the cap, or overflow.
    save("expand_over_cap", model([helper.make_node("Expand", ["x", "s"], ["y"], name="expand")],
                                  [f32("x", [1])], [f32("y", None)], [i64_init("s", [65536, 65536])]),
         "over the tensor size limit")
    save("expand_overflow", model([helper.make_node("Expand", ["x", "s"], ["y"], name="expand")],
                                  [f32("x", [1])], [f32("y", None)],
                                  [i64_init("s", [1 << 40, 1 << 40, 1 << 40])]),
         "expand")
    save("constantofshape_over_cap", model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos"),
                                            helper.make_node("Identity", ["x"], ["z"], name="id")],
                                           [f32("x", [1])], [f32("y", None), f32("z", [1])],
                                           [i64_init("s", [1 << 20, 1 << 20])]),
         "over the tensor size limit")
    save("constantofshape_overflow", model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos"),
                                            helper.make_node("Identity", ["x"], ["z"], name="id")],
                                           [f32("x", [1])], [f32("y", None), f32("z", [1])],
                                           [i64_init("s", [1 << 62, 1 << 62, 4])]),
         "cos")
    save("tile_over_cap", model([helper.make_node("Tile", ["x", "r"], ["y"], name="tile")],
                                [f32("x", [1024])], [f32("y", None)], [i64_init("r", [1 << 21])]),
         "over the tensor size limit")
    save("reshape_overflow", model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")],
                                   [f32("x", [4])], [f32("y", None)], [i64_init("s", [1 << 62, 4])]),
         "reshape")
    # Constant folding beyond its budget: 32 ConstantOfShape of 8 MiB each (every one under the per-node cap,
    # 256 MiB together, over the default 64 MiB + initializers); refused from the inferred shapes, before any of
    # them is computed.
    cos = [helper.make_node("ConstantOfShape", ["s"], ["c%d" % i], name="cos%d" % i) for i in range(32)]
    save("fold_over_budget", model(cos + [helper.make_node("Identity", ["x"], ["z"], name="id")],
                                   [f32("x", [1])], [f32("c%d" % i, None) for i in range(32)] + [f32("z", [1])],
                                   [i64_init("s", [2048, 1024])]),
         "constant folding would create 64 MiB in 8 nodes, and node 'cos8' (ConstantOfShape) would add 8 MiB")
    # Subgraphs nested 50 deep (If inside If inside ...): refused while parsing or by the depth cap.
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="leaf")], "leaf", [], [f32("y", [1])])
    inner = leaf
    for depth in range(50):
        node = helper.make_node("If", ["c"], ["y"], name="if%d" % depth, then_branch=inner, else_branch=leaf)
        inner = helper.make_graph([node], "g%d" % depth, [], [f32("y", [1])])
    save("nested_if_50", model(list(inner.node), [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                                  f32("x", [1])], [f32("y", [1])]),
         "nested")
    # Types nested 3000 deep (sequence of sequence of ...): protobuf's recursion limit refuses it. Built as raw
    # bytes (TypeProto.sequence_type = 4, TypeProto.Sequence.elem_type = 1).
    def varint(n):
        out = b""
        while True:
            b = n & 0x7F
            n >>= 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, [1]).SerializeToString()
    for _ in range(3000):
        seq = b"\x0a" + varint(len(t)) + t          # Sequence.elem_type
        t = b"\x22" + varint(len(seq)) + seq        # TypeProto.sequence_type
    vi = b"\x0a\x01x" + b"\x12" + varint(len(t)) + t  # ValueInfoProto name=1, type=2
    m = model(ident, [f32("x", [1])], [f32("y", None)])
    del m.graph.input[:]
    body = m.SerializeToString()
    graph_field = helper.make_graph(ident, "g", [], [f32("y", None)]).SerializeToString() + b"\x5a" + varint(len(vi)) + vi
    mp = onnx.ModelProto()
    mp.CopyFrom(m)
    mp.ClearField("graph")
    data = mp.SerializeToString() + b"\x3a" + varint(len(graph_field)) + graph_field  # ModelProto.graph = 7
    with open(os.path.join(OUT, "deep_type_nesting.onnx"), "wb") as f:
        f.write(data)
    with open(os.path.join(OUT, "deep_type_nesting.expect"), "w") as f:
        f.write("nested deeper than\n")
    # External data escaping the model's folder.
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], [0, 0, 0, 0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../../../../../etc/passwd"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    save("external_escape", model(ident + [helper.make_node("Identity", ["w"], ["z"], name="idw")],
                                  [f32("x", [1])], [f32("y", [1]), f32("z", [4])], [w]),
         "escapes the model's folder")
    w2 = TensorProto()
    w2.CopyFrom(w)
    del w2.external_data[:]
    for k, v in (("location", "/etc/passwd"), ("length", "16")):
        e = w2.external_data.add()
        e.key, e.value = k, v
    save("external_absolute", model(ident + [helper.make_node("Identity", ["w"], ["z"], name="idw")],
                                    [f32("x", [1])], [f32("y", [1]), f32("z", [4])], [w2]),
         "is an absolute path")
    # Integer attributes that divide or index (issue: DepthToSpace blocksize=0 was SIGFPE at load; GatherND
    # batch_dims=INT32_MIN a SIGSEGV, found by tests/hostile/attr_sweep.py).
    for op, bs in (("DepthToSpace", 0), ("DepthToSpace", -3), ("SpaceToDepth", 0)):
        save("%s_blocksize_%s" % (op.lower(), str(bs).replace("-", "m")),
             model([helper.make_node(op, ["x"], ["y"], name="d2s", blocksize=bs)], [f32("x", [1, 4, 2, 2])],
                   [f32("y", None)]),
             "blocksize must be positive")
    save("gathernd_batch_dims_negative",
         model([helper.make_node("GatherND", ["x", "i"], ["y"], name="g", batch_dims=-(1 << 31))],
               [f32("x", [2, 3, 4]), helper.make_tensor_value_info("i", TensorProto.INT64, [2, 1])], [f32("y", None)]),
         "batch_dims")
    save("split_num_outputs_0",
         model([helper.make_node("Split", ["x"], ["y"], name="split", num_outputs=0)], [f32("x", [4])],
               [f32("y", None)], opset=18),
         "num_outputs must be >= 1")
    # Not protobuf at all, and a truncated model.
    with open(os.path.join(OUT, "garbage.onnx"), "wb") as f:
        f.write(b"\xff" * 64 + b"ONNX" * 8)
    with open(os.path.join(OUT, "garbage.expect"), "w") as f:
        f.write("not an ONNX model\n")


if __name__ == "__main__":
    sys.exit(main())
