#!/usr/bin/python3
"""Writes the per-node overhead probe of DESIGN.md section 7: a chain of N Add nodes on a [1,16] float32 tensor.

    /usr/bin/python3 tools/bench/make_chain_add.py OUT.onnx [N=1000]

y0 = x; y(i+1) = Add(y(i), c) with c a [1,16] initializer; output y(N). Opset 13, ir_version 8.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
c = numpy_helper.from_array(np.full((1, 16), 0.001, dtype=np.float32), name="c")
nodes = []
prev = "x"
for i in range(n):
    name = "y" if i == n - 1 else f"t{i}"
    nodes.append(helper.make_node("Add", [prev, "c"], [name], name=f"add{i}"))
    prev = name
graph = helper.make_graph(nodes, f"chain_add_{n}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], [c])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ophost tools/bench")
model.ir_version = 8
onnx.save(model, out)
print(f"wrote {out}: {n} Add nodes on [1,16] float32")
