#!/usr/bin/python3
"""Writes single-op elementwise models on large float32 tensors, for bandwidth benchmarks (DESIGN.md section 7).

    /usr/bin/python3 tools/bench/make_elementwise.py OUTDIR [N=16777216]

OUTDIR/relu6_scale_16m.onnx  y = myops::relu6_scale(x, scale=2, max_val=6)       x, y: [N]
OUTDIR/gelu_16m.onnx         y = myops::gelu(x)                                    x, y: [N]
OUTDIR/add_16m.onnx          y = Add(x, b)                                         x, b, y: [N]
OUTDIR/relu_16m.onnx         y = Relu(x)                                           x, y: [N]
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16 * 1024 * 1024
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, opsets):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(i, TensorProto.FLOAT, [n]) for i in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="ophost tools/bench")
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))


save("relu6_scale_16m", [helper.make_node("relu6_scale", ["x"], ["y"], domain="myops", scale=2.0, max_val=6.0)],
     ["x"], [("", 13), ("myops", 1)])
save("gelu_16m", [helper.make_node("gelu", ["x"], ["y"], domain="myops")], ["x"], [("", 13), ("myops", 1)])
save("add_16m", [helper.make_node("Add", ["x", "b"], ["y"])], ["x", "b"], [("", 13)])
save("relu_16m", [helper.make_node("Relu", ["x"], ["y"])], ["x"], [("", 13)])
print(f"wrote 4 models with {n} elements to {out}")
