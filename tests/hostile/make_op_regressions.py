#!/usr/bin/python3
"""Writes the hand-made cases of tests/hostile/op-regressions (the op fuzz target saves its own finds there with
OPHOST_FUZZ_OP_SAVE): one-node models whose inputs have shapes the op's kernel once trusted, each with the
inputs as .npy and an `expect` file holding the error text.

    /usr/bin/python3 tests/hostile/make_op_regressions.py [OUT, default: tests/hostile/op-regressions]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def case(out, name, op, inputs, attrs, opset, expect):
    """inputs: list of (name, ndarray). Shapes are left unknown in the graph so the kernel sees them."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    vi = [helper.make_tensor_value_info(n, F if a.dtype == np.float32 else I64, None) for n, a in inputs]
    node = helper.make_node(op, [n for n, _ in inputs], ["y"], **attrs)
    g = helper.make_graph([node], name, vi, [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    for n, a in inputs:
        np.save(os.path.join(d, n + ".npy"), a)
    with open(os.path.join(d, "expect"), "w") as f:
        f.write(expect + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "op-regressions")
    z = np.zeros
    # indices longer than data on an axis other than `axis`: read (Gather) or written (Scatter) out of bounds.
    case(out, "gatherelements_indices_wider_than_data", "GatherElements",
         [("data", z((2, 2), np.float32)), ("indices", z((2, 5), np.int64))], {"axis": 0}, 13,
         "exceeds data shape")
    case(out, "scatterelements_indices_wider_than_data", "ScatterElements",
         [("data", z((2, 2), np.float32)), ("indices", z((2, 5), np.int64)), ("updates", z((2, 5), np.float32))],
         {"axis": 0}, 16, "exceeds data shape")
    # updates smaller than indices: read out of bounds.
    case(out, "scatterelements_updates_shape_mismatch", "ScatterElements",
         [("data", z((3, 3), np.float32)), ("indices", z((2, 3), np.int64)), ("updates", z((1, 3), np.float32))],
         {"axis": 0}, 16, "must equal the indices shape")


if __name__ == "__main__":
    main()
