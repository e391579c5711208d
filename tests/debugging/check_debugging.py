#!/usr/bin/python3
"""Tests of `ophost run --dump`, `ophost diff` and `ophost run --debug-kernels` (tests/debugging/CMakeLists.txt).

Usage: check_debugging.py OPHOST PACKS WORK EXAMPLES CASE

The test model (a deliberately wrong custom op in the middle, a Conv that gets fused after it):
    x [1,3,8,8] -> Conv(4,3x3,pad 1) c1 -> Relu r1 -> dbg::scale_wrong s -> Conv(4,3x3,pad 1) c2 -> Relu y
`dbg::scale_wrong` should compute 2x (dbg::scale does) but adds 0.25 to every 5th element. The float64
reference of every value is computed here with numpy and written as WORK/CASE/ref/<value>.npy.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPHOST, PACKS, WORK, EXAMPLES, CASE = sys.argv[1:6]
WORK = os.path.join(WORK, CASE)
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
PLUGIN = "--plugin-path " + PACKS


def run(args, expect_rc):
    p = subprocess.run([OPHOST] + args, capture_output=True, text=True, timeout=240)
    out = p.stdout + p.stderr
    print("$ ophost " + " ".join(args) + "\n" + out)
    if p.returncode != expect_rc:
        sys.exit(f"FAIL: exit status {p.returncode}, expected {expect_rc}")
    return out


def conv(x, w, b):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out + b[None, :, None, None]


def chain_model(op):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w1 = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(4) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(4) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(op, ["r1"], ["s"], name="custom", domain="dbg"),
        helper.make_node("Conv", ["s", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["y"], name="relu2"),
    ]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("dbg", 1)])
    m.ir_version = 8
    path = os.path.join(WORK, "chain_" + op + ".onnx")
    onnx.save(m, path)
    np.save(os.path.join(WORK, "x.npy"), x)
    # float64 reference of every value, with the op's intended semantics (2x)
    ref = {"x": x.astype(np.float64)}
    ref["c1"] = conv(ref["x"], w1.astype(np.float64), b1.astype(np.float64))
    ref["r1"] = np.maximum(ref["c1"], 0)
    ref["s"] = 2 * ref["r1"]
    ref["c2"] = conv(ref["s"], w2.astype(np.float64), b2.astype(np.float64))
    ref["y"] = np.maximum(ref["c2"], 0)
    os.makedirs(os.path.join(WORK, "ref"))
    for k, v in ref.items():
        np.save(os.path.join(WORK, "ref", k + ".npy"), v)
    return path


def one_op_model(op, with_relu_after=False):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_in"),
             helper.make_node(op, ["r"], ["t" if with_relu_after else "y"], name="custom", domain="dbg")]
    if with_relu_after:
        nodes.append(helper.make_node("Relu", ["t"], ["y"], name="relu_out"))
    g = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("dbg", 1)])
    m.ir_version = 8
    path = os.path.join(WORK, op + ".onnx")
    onnx.save(m, path)
    return path


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


if CASE == "dump":
    model = chain_model("scale")
    d = os.path.join(WORK, "dump")
    run(["run", model, "--plugin-path", PACKS, "--input", "x=" + os.path.join(WORK, "x.npy"), "--dump", d], 0)
    idx = json.load(open(os.path.join(d, "index.json")))
    check(idx["complete"] is True, "index.json complete")
    names = [v["name"] for v in idx["values"]]
    check(names[0] == "x", "graph input dumped first: %s" % names)
    check("s" in names and "y" in names and "r1" in names, "values: %s" % names)
    s = next(v for v in idx["values"] if v["name"] == "s")
    check(s["op"] == "dbg::scale" and s["pack"] == "dbgops" and s["node"] == "custom" and s["shape"] == [1, 4, 8, 8]
          and s["dtype"] == "float32" and s["device"] == "cpu", "entry of s: %s" % s)
    check(any(n.get("created_by") == "conv-activation-fusion" for n in idx["nodes"]), "fused node named its pass")
    for v in idx["values"]:
        check(os.path.exists(os.path.join(d, v["file"])), "file of " + v["name"])
    y = np.load(os.path.join(d, "y.npy"))
    check(y.shape == (1, 4, 8, 8) and y.dtype == np.float32, "y.npy")
elif CASE == "wrong_op":
    model = chain_model("scale_wrong")
    out = run(["diff", model, "--reference", os.path.join(WORK, "ref"), "--a", PLUGIN, "--input",
               "x=" + os.path.join(WORK, "x.npy"), "--json", os.path.join(WORK, "diff.json")], 1)
    check("first divergence: node 1 'custom' (dbg::scale_wrong) from pack 'dbgops'" in out, "culprit named")
    j = json.load(open(os.path.join(WORK, "diff.json")))
    check(j["culprit"]["node"] == "custom" and j["diverged"], "json culprit")
    flagged = [r["node"] for r in j["values"] if r.get("flagged")]
    check(flagged == ["custom"], "only the wrong op is flagged: %s" % flagged)
    check("c1" in j["only_in_b"] and "c2" in j["only_in_b"], "fused-away values listed: %s" % j["only_in_b"])
    # the same at opt-level 0 (no fusion): still the custom node
    out = run(["diff", model, "--reference", os.path.join(WORK, "ref"), "--a", PLUGIN + " --opt-level 0", "--input",
               "x=" + os.path.join(WORK, "x.npy")], 1)
    check("first divergence: node 2 'custom'" in out, "culprit at opt-level 0")
elif CASE == "right_op":
    model = chain_model("scale")
    out = run(["diff", model, "--reference", os.path.join(WORK, "ref"), "--a", PLUGIN, "--input",
               "x=" + os.path.join(WORK, "x.npy")], 0)
    check("no divergence" in out, "no divergence")
elif CASE == "opt_levels":
    model = chain_model("scale_wrong")
    out = run(["diff", model, "--a", PLUGIN + " --opt-level 0", "--b", PLUGIN + " --opt-level 3", "--input",
               "x=" + os.path.join(WORK, "x.npy"), "--dump-dir", os.path.join(WORK, "dumps")], 0)
    check("no divergence" in out and "not comparable" in out, "fusion: no divergence, fused values not comparable")
    # two dump folders directly
    run(["diff", os.path.join(WORK, "dumps", "a"), os.path.join(WORK, "dumps", "b")], 0)
elif CASE == "examples_opt_levels":
    models = sorted(glob.glob(os.path.join(EXAMPLES, "*.onnx")))
    check(models, "example models in " + EXAMPLES)
    for m in models:
        stem = os.path.basename(m)[:-5]
        inputs = []
        for f in sorted(glob.glob(os.path.join(EXAMPLES, stem + ".input.*.npy"))):
            inputs += ["--input", os.path.basename(f)[len(stem) + 7:-4] + "=" + f]
        out = run(["diff", m, "--a", "--opt-level 0", "--b", "--opt-level 3"] + (inputs or ["--random"]), 0)
        check("no divergence" in out, m)
elif CASE == "unwritten":
    model = one_op_model("short_write")
    out = run(["run", model, "--plugin-path", PACKS, "--random", "--debug-kernels"], 1)
    check("debug-kernels:" in out and "node 'custom' (dbg::short_write" in out and "from pack 'dbgops'" in out and
          "output 'y' (float32 [2,5]) has 3 of 10 elements never written, first at index 7 [1,2]" in out,
          "unwritten elements reported")
    run(["run", model, "--plugin-path", PACKS, "--random"], 0)  # without the mode: nothing checked
elif CASE == "scribble":
    model = one_op_model("scribble")
    out = run(["run", model, "--plugin-path", PACKS, "--random", "--debug-kernels"], 1)
    check("node 'custom' (dbg::scribble" in out and "wrote into input 0 'r' (float32 [2,5]): 1 of 10 elements "
          "changed, first at index 9 [1,4]" in out, "input write reported")
elif CASE == "inplace_ok":
    model = one_op_model("add_one", with_relu_after=True)
    out = run(["inspect", model, "--plugin-path", PACKS, "--memory"], 0)
    out = run(["run", model, "--plugin-path", PACKS, "--random", "--debug-kernels"], 0)
    model = one_op_model("scale")
    run(["run", model, "--plugin-path", PACKS, "--random", "--debug-kernels"], 0)
elif CASE == "past_end":
    model = one_op_model("past_end", with_relu_after=True)  # its output 't' is an arena buffer
    out = run(["run", model, "--plugin-path", PACKS, "--random", "--debug-kernels"], 1)
    check("node 'custom' (dbg::past_end" in out and "wrote past the end of output 't' (float32 [2,5], 40 bytes): "
          "4 of the 1024 guard bytes after it changed, from byte 0 to 3 past the end (element 10 and on)" in out,
          "write past the end reported")
else:
    sys.exit("unknown case " + CASE)
print("PASS " + CASE)
