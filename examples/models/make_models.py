#!/usr/bin/env python3
"""Writes the small example models of examples/models/ with deterministic inputs and float64 numpy references.

Usage: python3 examples/models/make_models.py [output_dir]   (default: the folder of this script)

Uses only `onnx` and `numpy`. onnx.checker is deliberately not called: ONNX 1.12's checker rejects
ir_version 9, and ophost does not depend on it.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
PRODUCER = "ophost examples/models/make_models.py"


# ----- float64 references of the custom ops (must match plugins/myops) -----
def relu6_scale(x, scale=1.0, max_val=6.0):
    return np.clip(x * scale, 0.0, max_val)


def gelu(x):  # tanh approximation
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def save(name, graph, opsets, inputs, outputs, ir_version=8):
    model = helper.make_model(graph, producer_name=PRODUCER,
                              opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    model.ir_version = ir_version
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(OUT, f"{name}.input.{k}.npy"), v)
    for k, v in outputs.items():
        np.save(os.path.join(OUT, f"{name}.output.{k}.npy"), v.astype(np.float32))
    print(f"wrote {name}.onnx (ir {ir_version}, opsets {opsets}) + {len(inputs)} input(s), {len(outputs)} output(s)")


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# ----- mixed_small: Add -> myops.relu6_scale(scale=2) -> myops.gelu -> Mul -> Identity -> Relu -----
def mixed_small(name, ir_version):
    c_add = np.linspace(-1.0, 1.0, 8).astype(np.float32)               # [8], broadcast over [2,8]
    c_mul = (0.4 + np.cos(np.arange(16) * 0.9)).astype(np.float32).reshape(2, 8)  # [2,8]; mixed signs exercise Relu
    nodes = [
        helper.make_node("Add", ["x", "c_add"], ["a"], name="add"),
        helper.make_node("relu6_scale", ["a"], ["r"], name="relu6", domain="myops", scale=2.0),
        helper.make_node("gelu", ["r"], ["g"], name="gelu", domain="myops"),
        helper.make_node("Mul", ["g", "c_mul"], ["m"], name="mul"),
        helper.make_node("Identity", ["m"], ["i"], name="identity"),
        helper.make_node("Relu", ["i"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(nodes, name, [f32("x", [2, 8])], [f32("y", [2, 8])],
                              initializer=[numpy_helper.from_array(c_add, "c_add"),
                                           numpy_helper.from_array(c_mul, "c_mul")])
    x = (0.8 + 2.0 * np.sin(np.arange(16) * 0.7)).astype(np.float32).reshape(2, 8)
    x64 = x.astype(np.float64)
    y = np.maximum(gelu(relu6_scale(x64 + c_add, scale=2.0)) * c_mul, 0.0)
    save(name, graph, {"": 13, "myops": 1}, {"x": x}, {"y": y}, ir_version)


# ----- relu6_defaults: relu6_scale without attributes (scale=1.0, max_val=6.0 apply) -----
def relu6_defaults():
    node = helper.make_node("relu6_scale", ["x"], ["y"], name="relu6", domain="myops")
    graph = helper.make_graph([node], "relu6_defaults", [f32("x", [3, 4])], [f32("y", [3, 4])])
    x = np.linspace(-3.0, 9.0, 12).astype(np.float32).reshape(3, 4)
    save("relu6_defaults", graph, {"": 13, "myops": 1}, {"x": x}, {"y": relu6_scale(x.astype(np.float64))})


# ----- broadcast: Add/Sub/Mul/Div of [2,3,4] with [4], [3,1] and a scalar -----
def broadcast():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["add"], name="add"),   # [2,3,4] + [4]
        helper.make_node("Sub", ["a", "c"], ["sub"], name="sub"),   # [2,3,4] - [3,1]
        helper.make_node("Mul", ["a", "s"], ["mul"], name="mul"),   # [2,3,4] * []
        helper.make_node("Div", ["c", "a"], ["div"], name="div"),   # [3,1] / [2,3,4]
        helper.make_node("Div", ["a", "s"], ["div_s"], name="div_s"),  # [2,3,4] / []
    ]
    outs = ["add", "sub", "mul", "div", "div_s"]
    graph = helper.make_graph(nodes, "broadcast",
                              [f32("a", [2, 3, 4]), f32("b", [4]), f32("c", [3, 1]), f32("s", [])],
                              [f32(o, [2, 3, 4]) for o in outs])
    rng = np.random.default_rng(20240601)
    a = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32) * rng.choice([-1.0, 1.0], (2, 3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    c = rng.uniform(0.5, 1.5, (3, 1)).astype(np.float32)
    s = np.array(1.75, dtype=np.float32)
    a64, b64, c64, s64 = (v.astype(np.float64) for v in (a, b, c, s))
    save("broadcast", graph, {"": 14}, {"a": a, "b": b, "c": c, "s": s},
         {"add": a64 + b64, "sub": a64 - c64, "mul": a64 * s64, "div": c64 / a64, "div_s": a64 / s64})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    mixed_small("mixed_small", 8)
    mixed_small("mixed_ir9", 9)
    relu6_defaults()
    broadcast()
