#!/usr/bin/env python3
"""Writes the tutorial pack's models, their inputs and float64 numpy references (and pad_rows_x.npy, a sample
for `ophost pack check` named in samples.json).

Usage: python3 examples/pack-tutorial/make_models.py [output_dir]   (default: the folder of this script)

model.onnx (every shape known at load: a static memory plan; poly runs in place over t):
  t = tut::repeat_rows(x, times=2)                     x: float32 [4, 6] -> t: [8, 6]
  p = tut::poly(t, coefficients=[0.5, -1, 0.25])       p = 0.5 - t + 0.25 t^2
  values, indices = tut::row_argmax(p)                 float32 [8], int64 [8]
  padded = tut::pad_rows(x, rows)                      rows: an int64 initializer, 5 -> float32 [5, 6]

dynamic.onnx (shapes known only while running):
  pos = tut::positive(x)                               float32 [number of elements above 0]
  cut = tut::pad_rows(x, rows)                         rows: an int64 scalar graph input (2 in the sample)

Uses only `onnx` and `numpy` (Debian 12: python3-onnx, python3-numpy).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
COEFFS = [0.5, -1.0, 0.25]


def save_model(nodes, name, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, producer_name="ophost examples/pack-tutorial/make_models.py",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("tut", 1)])
    model.ir_version = 8
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def pad_rows(x, rows):
    y = np.zeros((rows,) + x.shape[1:], dtype=x.dtype)
    keep = min(rows, x.shape[0])
    y[:keep] = x[:keep]
    return y


def save(name, array):
    np.save(os.path.join(OUT, name), array)


def main():
    x = (3.0 * np.sin(np.arange(24) * 0.7)).astype(np.float32).reshape(4, 6)
    x64 = x.astype(np.float64)
    f32 = TensorProto.FLOAT

    save_model([helper.make_node("repeat_rows", ["x"], ["t"], name="repeat", domain="tut", times=2),
                helper.make_node("poly", ["t"], ["p"], name="poly", domain="tut", coefficients=COEFFS),
                helper.make_node("row_argmax", ["p"], ["values", "indices"], name="argmax", domain="tut"),
                helper.make_node("pad_rows", ["x", "rows"], ["padded"], name="pad", domain="tut")],
               "model",
               [helper.make_tensor_value_info("x", f32, [4, 6])],
               [helper.make_tensor_value_info("values", f32, [8]),
                helper.make_tensor_value_info("indices", TensorProto.INT64, [8]),
                helper.make_tensor_value_info("padded", f32, [5, 6])],
               [numpy_helper.from_array(np.array(5, dtype=np.int64), "rows")])
    t = np.tile(x64, (2, 1))
    p = COEFFS[0] + COEFFS[1] * t + COEFFS[2] * t * t
    save("model.input.x.npy", x)
    save("model.output.values.npy", p.max(axis=1).astype(np.float32))
    save("model.output.indices.npy", p.argmax(axis=1).astype(np.int64))
    save("model.output.padded.npy", pad_rows(x, 5))

    save_model([helper.make_node("positive", ["x"], ["pos"], name="positive", domain="tut"),
                helper.make_node("pad_rows", ["x", "rows"], ["cut"], name="cut", domain="tut")],
               "dynamic",
               [helper.make_tensor_value_info("x", f32, [4, 6]),
                helper.make_tensor_value_info("rows", TensorProto.INT64, [])],
               [helper.make_tensor_value_info("pos", f32, ["n"]),
                helper.make_tensor_value_info("cut", f32, ["rows", 6])])
    save("dynamic.input.rows.npy", np.array(2, dtype=np.int64))
    save("dynamic.output.pos.npy", x[x > 0])
    save("dynamic.output.cut.npy", pad_rows(x, 2))

    save("pad_rows_x.npy", np.arange(12, dtype=np.float32).reshape(2, 6) / 4)
    print("wrote model.onnx, dynamic.onnx, their inputs and references, pad_rows_x.npy in", OUT)


if __name__ == "__main__":
    main()
