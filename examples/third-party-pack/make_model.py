#!/usr/bin/env python3
"""Writes model.onnx for the acme example pack, its input and its float64 numpy reference.

Usage: python3 examples/third-party-pack/make_model.py [output_dir]   (default: the folder of this script)

  a = acme::swish(x)             (beta: default 1.0)
  b = acme::swish(x, beta=2.0)
  y = Add(a, b)                  (standard ONNX, served by onnx-core)

Uses only `onnx` and `numpy` (Debian 12: python3-onnx, python3-numpy). onnx.checker is not called: it
does not know the custom domain.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def swish(x, beta=1.0):  # float64 reference of acme::swish
    return x / (1.0 + np.exp(-beta * x))


def main():
    nodes = [
        helper.make_node("swish", ["x"], ["a"], name="swish_default", domain="acme"),
        helper.make_node("swish", ["x"], ["b"], name="swish_beta2", domain="acme", beta=2.0),
        helper.make_node("Add", ["a", "b"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "acme_swish",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    model = helper.make_model(graph, producer_name="ophost examples/third-party-pack/make_model.py",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme", 1)])
    model.ir_version = 8
    onnx.save(model, os.path.join(OUT, "model.onnx"))

    x = (3.0 * np.sin(np.arange(16) * 0.9)).astype(np.float32).reshape(2, 8)
    x64 = x.astype(np.float64)
    y = swish(x64) + swish(x64, 2.0)
    np.save(os.path.join(OUT, "model.input.x.npy"), x)
    np.save(os.path.join(OUT, "model.output.y.npy"), y.astype(np.float32))
    print("wrote model.onnx, model.input.x.npy, model.output.y.npy in", OUT)


if __name__ == "__main__":
    main()
