#!/usr/bin/python3
"""Single-op cases for the onnx-core ops whose ONNX schema changed in opsets 18 to 21 (what current exporters write).

Covers Reduce* 18 (axes as an input, empty axes with noop_with_empty_axes 0/1, keepdims, negative axes), Split 18
(num_outputs), Pad 18 (axes input) / 19 (wrap) / 21, Resize 18/19 (antialias=0, axes, keep_aspect_ratio_policy),
ScatterElements 18 (reduction), Cast/CastLike 19/21, Equal 19, Identity/Reshape/Shape/Size/Constant 19/21,
Squeeze/Unsqueeze/Flatten/Transpose 21, Gelu 20, LayerNormalization 17 (stash_type 1), DFT 20 and a few more.

Writes, for every case, into opset18/:
  <case>.onnx              a one-node model with the opset given per case
  <case>.in.<name>.npy     its graph inputs (seeded; float32 unless the case is about another type)
  <case>.ref.<out>.npy     each expected output, computed here in float64 (or the exact integer/bool type) with numpy

  /usr/bin/python3 make_opset18_cases.py                 # (re)generate opset18/ (deterministic)
  /usr/bin/python3 make_opset18_cases.py --check OPHOST  # run every case through `OPHOST run` and compare
        [--opt-level N]                                   # ... at that graph optimisation level

`--check` also reads `OPHOST plugins -v` and prints, per case, the opset range of the CPU kernel that serves it.
Cases in KNOWN_GAPS are what onnx-core does not support yet (an opset it does not register, a type a newer opset
added): they are printed as `gap` with the reason and not counted as failures while ophost still fails with the
expected error; once such a case runs, it is checked like any other (and the entry should be removed).

The models are written with ONNX 1.12's helper; onnx.checker and shape inference are not run (they reject opsets
newer than 17). Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, mapping, numpy_helper
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "opset18")
RTOL, ATOL = 1e-4, 1e-5

# case name -> (text ophost's error must contain, why): what onnx-core does not support yet. A known gap is
# printed as `gap` and not counted while ophost still fails with that text; any other outcome is checked as usual.
KNOWN_GAPS = {
    "dft20_axis_input": ("no loaded pack provides",
                         "onnx-core registers DFT [17-19] only; DFT-20 moved axis (and dft_length) to inputs"),
}


# ----------------------------------------------------------------------------------------------------------
# float64 references
# ----------------------------------------------------------------------------------------------------------

def reduce_ref(kind, x, axes, keepdims, noop):
    x = x.astype(np.float64)
    if axes is not None and len(axes) == 0:
        axes = None
    if axes is None and noop:
        # ReduceX-18 as published (ONNX 1.12 .. 1.19): "the input tensor will not be reduced, and the output
        # tensor would be equivalent to input tensor" - also for L1/L2/LogSum/LogSumExp/SumSquare.
        return x
    ax = None if axes is None else tuple(a % x.ndim for a in axes)
    kd = bool(keepdims)
    f = {
        "ReduceSum": lambda: np.sum(x, axis=ax, keepdims=kd),
        "ReduceMean": lambda: np.mean(x, axis=ax, keepdims=kd),
        "ReduceMax": lambda: np.max(x, axis=ax, keepdims=kd),
        "ReduceMin": lambda: np.min(x, axis=ax, keepdims=kd),
        "ReduceProd": lambda: np.prod(x, axis=ax, keepdims=kd),
        "ReduceL1": lambda: np.sum(np.abs(x), axis=ax, keepdims=kd),
        "ReduceL2": lambda: np.sqrt(np.sum(x * x, axis=ax, keepdims=kd)),
        "ReduceLogSum": lambda: np.log(np.sum(x, axis=ax, keepdims=kd)),
        "ReduceLogSumExp": lambda: np.log(np.sum(np.exp(x), axis=ax, keepdims=kd)),
        "ReduceSumSquare": lambda: np.sum(x * x, axis=ax, keepdims=kd),
    }[kind]
    return np.asarray(f())


def resize_ref(x, out_shape, scales, mode, ctm, nearest_mode="round_prefer_floor"):
    """Per-axis separable nearest/linear resize (same formulas as make_cases.py)."""
    y = x.astype(np.float64)
    for ax in range(x.ndim):
        lin, lout, s = x.shape[ax], out_shape[ax], scales[ax]
        if lin == lout and s == 1.0:
            continue
        cols = []
        for o in range(lout):
            if ctm == "half_pixel":
                v = (o + 0.5) / s - 0.5
            elif ctm == "asymmetric":
                v = o / s
            elif ctm == "align_corners":
                v = 0.0 if lout == 1 else o * (lin - 1) / (lout - 1)
            elif ctm == "half_pixel_symmetric":
                adj = lout / (s * lin)
                v = lin / 2 * (1 - adj) + (o + 0.5) / s - 0.5
            else:
                raise ValueError(ctm)
            if mode == "nearest":
                if nearest_mode == "floor":
                    i = math.floor(v)
                elif nearest_mode == "round_prefer_floor":
                    i = math.floor(v) if v == math.floor(v) + 0.5 else int(math.floor(v + 0.5))
                else:
                    i = int(math.floor(v + 0.5))
                i = min(max(i, 0), lin - 1)
                cols.append(np.take(y, [i], axis=ax))
            else:
                v = min(max(v, 0.0), lin - 1)
                i0 = int(v)
                i1 = min(i0 + 1, lin - 1)
                d = v - i0
                cols.append(np.take(y, [i0], axis=ax) * (1 - d) + np.take(y, [i1], axis=ax) * d)
        y = np.concatenate(cols, axis=ax)
    return y


def scatter_elements_ref(data, indices, updates, axis, reduction):
    out = data.astype(np.float64).copy()
    axis %= data.ndim
    for idx in np.ndindex(*indices.shape):
        t = list(idx)
        t[axis] = int(indices[idx]) % data.shape[axis]
        t = tuple(t)
        u = float(updates[idx])
        if reduction == "none":
            out[t] = u
        elif reduction == "add":
            out[t] += u
        elif reduction == "mul":
            out[t] *= u
        elif reduction == "max":
            out[t] = max(out[t], u)
        elif reduction == "min":
            out[t] = min(out[t], u)
    return out


def scatter_nd_ref(data, indices, updates, reduction):
    out = data.astype(np.float64).copy()
    for idx in np.ndindex(*indices.shape[:-1]):
        t = tuple(int(v) for v in indices[idx])
        u = updates[idx].astype(np.float64)
        if reduction == "max":
            out[t] = np.maximum(out[t], u)
        elif reduction == "min":
            out[t] = np.minimum(out[t], u)
    return out


def erf(v):
    return np.vectorize(math.erf)(v)


# ----------------------------------------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------------------------------------

def tensor_type(dtype):
    return mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


class Case:
    def __init__(self, name, op, opset, inputs, outputs, attrs):
        """inputs: list of (name, array or None, is_initializer); "" names an omitted optional input.
        outputs: list of (name, reference array); the reference is compared in float64 (exactly for ints/bools)."""
        self.name, self.op, self.opset = name, op, opset
        self.inputs, self.outputs, self.attrs = inputs, outputs, attrs

    def model(self):
        ins, inits = [], []
        for n, arr, init in self.inputs:
            if not n:
                continue
            if init:
                inits.append(numpy_helper.from_array(arr, n))
            else:
                ins.append(helper.make_tensor_value_info(n, tensor_type(arr.dtype), arr.shape))
        # Float references are computed in float64; the output is declared with the type the op produces: the
        # float type of its float inputs (Cast and CastLike produce the type they are asked for, as given).
        float_in = [arr.dtype for n, arr, _ in self.inputs if n and arr is not None and arr.dtype.kind == "f"]
        def declared(r):
            if r.dtype == np.float64 and float_in and self.op not in ("Cast", "CastLike"):
                return float_in[0]
            return r.dtype
        outs = [helper.make_tensor_value_info(n, tensor_type(declared(r)), r.shape) for n, r in self.outputs]
        node = helper.make_node(self.op, [n for n, _, _ in self.inputs], [n for n, _ in self.outputs], **self.attrs)
        g = helper.make_graph([node], self.name, ins, outs, initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="onnx_core make_opset18_cases")
        m.ir_version = 8  # the newest ONNX 1.12 writes; opset 21 would say 10, ophost does not care
        return m


def cases():
    rng = np.random.default_rng(18)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    i64 = lambda *v: np.array(v, dtype=np.int64)
    out = []

    def add(name, op, opset, inputs, outputs, attrs=None):
        out.append(Case(name, op, opset, inputs, outputs, attrs or {}))

    # ---- Reduce* 18 (ReduceSum: 13): axes as an input --------------------------------------------------------
    x = f32(2, 3, 4)
    xpos = (np.abs(x) + 0.25).astype(np.float32)           # LogSum needs a positive sum
    xsmall = (0.5 + 0.5 * np.abs(x)).astype(np.float32)    # keeps ReduceProd over all 24 elements well scaled
    reduce_ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
    for op in reduce_ops:
        data = xpos if op == "ReduceLogSum" else xsmall if op == "ReduceProd" else x
        short = op[len("Reduce"):].lower()
        for tag, axes, keepdims, noop in [
            ("axis1_keep", [1], 1, 0),
            ("neg_axes_nokeep", [-1, 0], 0, 0),
            ("empty_axes_all_keep", [], 1, 0),        # empty axes, noop 0: reduce over every axis
            ("empty_axes_noop", [], 0, 1),            # empty axes, noop 1: pass-through
            ("no_axes_all_nokeep", None, 0, 0),       # axes input omitted: reduce over every axis
        ]:
            ins = [("data", data, False)]
            if axes is not None:
                ins.append(("axes", np.array(axes, np.int64), True))
            ref = reduce_ref(op, data, axes, keepdims, noop)
            add("reduce%s18_%s" % (short, tag), op, 18, ins, [("y", ref.astype(np.float32))],
                dict(keepdims=keepdims, noop_with_empty_axes=noop))
    # axes given at run time (a graph input, not a constant) and the axes input omitted with noop 1.
    for op in ("ReduceMean", "ReduceL2"):
        short = op[len("Reduce"):].lower()
        add("reduce%s18_runtime_axes" % short, op, 18, [("data", x, False), ("axes", i64(0, 2), False)],
            [("y", reduce_ref(op, x, [0, 2], 1, 0).astype(np.float32))], dict(keepdims=1))
    add("reducemax18_no_axes_noop", "ReduceMax", 18, [("data", x, False)], [("y", x)], dict(noop_with_empty_axes=1))
    # ReduceMax/ReduceMin 20 added bool; int64 and float through the same kernels.
    xi = rng.integers(-50, 50, size=(3, 5)).astype(np.int64)
    add("reducemax20_int64", "ReduceMax", 20, [("data", xi, False), ("axes", i64(1), True)],
        [("y", xi.max(axis=1, keepdims=True))])
    xbool = rng.random((3, 4)) > 0.6
    add("reducemax20_bool", "ReduceMax", 20, [("data", xbool, False), ("axes", i64(1), True)],
        [("y", xbool.any(axis=1))], dict(keepdims=0))
    add("reducemin20_bool", "ReduceMin", 20, [("data", xbool, False), ("axes", i64(0), True)],
        [("y", xbool.all(axis=0, keepdims=True))])
    add("reducemin20_float", "ReduceMin", 20, [("data", x, False), ("axes", i64(-2), True)],
        [("y", x.min(axis=1, keepdims=True))], dict(keepdims=1))

    # ---- Split 18: num_outputs ---------------------------------------------------------------------------
    xs = f32(2, 6, 7)
    add("split18_num_outputs_even", "Split", 18, [("x", xs, False)],
        [("y%d" % i, xs[:, 2 * i:2 * i + 2]) for i in range(3)], dict(axis=1, num_outputs=3))
    # 7 into 3: ceil(7/3) = 3 -> 3, 3, 1 (the last chunk smaller)
    add("split18_num_outputs_uneven", "Split", 18, [("x", xs, False)],
        [("y0", xs[..., 0:3]), ("y1", xs[..., 3:6]), ("y2", xs[..., 6:7])], dict(axis=-1, num_outputs=3))
    add("split18_num_outputs_uneven4", "Split", 18, [("x", xs, False)],
        [("y0", xs[..., 0:2]), ("y1", xs[..., 2:4]), ("y2", xs[..., 4:6]), ("y3", xs[..., 6:7])],
        dict(axis=2, num_outputs=4))
    add("split18_split_input", "Split", 18, [("x", xs, False), ("split", i64(1, 4, 2), True)],
        [("y0", xs[..., 0:1]), ("y1", xs[..., 1:5]), ("y2", xs[..., 5:7])], dict(axis=2))

    # ---- Pad 18 (axes input), 19 (wrap), 21 ----------------------------------------------------------------
    xp = f32(2, 3, 4, 5)
    def pad_np(a, axes, pads, mode, value=0.0):
        width = [(0, 0)] * a.ndim
        n = len(axes)
        for k, ax in enumerate(axes):
            width[ax % a.ndim] = (pads[k], pads[n + k])
        if mode == "constant":
            return np.pad(a, width, mode="constant", constant_values=value)
        return np.pad(a, width, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])
    for name, opset, mode, axes, pads in [
        ("pad18_constant_axes", 18, "constant", [1, 3], [1, 0, 2, 3]),
        ("pad18_constant_neg_axes", 18, "constant", [-1, -2], [2, 1, 0, 1]),
        ("pad18_reflect_axes", 18, "reflect", [2, 3], [2, 1, 3, 2]),
        ("pad18_edge_axes", 18, "edge", [-2], [2, 3]),
        ("pad19_wrap", 19, "wrap", [2, 3], [1, 2, 3, 4]),
        ("pad19_wrap_all_axes", 19, "wrap", [0, 1, 2, 3], [0, 1, 2, 1, 1, 0, 1, 2]),
        ("pad21_constant_axes", 21, "constant", [0, 2], [1, 1, 0, 2]),
        ("pad21_reflect", 21, "reflect", [3], [1, 3]),
    ]:
        ins = [("x", xp, False), ("pads", np.array(pads, np.int64), True)]
        if mode == "constant":
            ins.append(("value", np.array(1.5, np.float32), True))
        else:
            ins.append(("", None, False))
        ins.append(("axes", np.array(axes, np.int64), True))
        add(name, "Pad", opset, ins, [("y", pad_np(xp, axes, pads, mode, 1.5))], dict(mode=mode))
    # Pad 18 without axes (all axes), and a negative pad (crop) on one axis through axes.
    add("pad18_no_axes_edge", "Pad", 18, [("x", xp, False), ("pads", i64(0, 1, 0, 2, 1, 0, 1, 0), True)],
        [("y", np.pad(xp, [(0, 1), (1, 0), (0, 1), (2, 0)], mode="edge"))], dict(mode="edge"))
    add("pad18_crop_axes", "Pad", 18, [("x", xp, False), ("pads", i64(-1, 2), True), ("", None, False), ("axes", i64(3), True)],
        [("y", np.pad(xp[..., 1:], [(0, 0), (0, 0), (0, 0), (0, 2)]))], dict(mode="constant"))
    xpi = rng.integers(-9, 9, size=(3, 4)).astype(np.int64)
    add("pad21_int64_wrap", "Pad", 21, [("x", xpi, False), ("pads", i64(1, 2), True), ("", None, False), ("axes", i64(1), True)],
        [("y", np.pad(xpi, [(0, 0), (1, 2)], mode="wrap"))], dict(mode="wrap"))

    # ---- Resize 18/19: antialias 0, axes, keep_aspect_ratio_policy ----------------------------------------
    xr = f32(1, 2, 6, 8)
    empty_f = np.zeros(0, np.float32)
    def resize(name, opset, out_shape, scales, ins_scales=None, ins_sizes=None, **attrs):
        mode = attrs.get("mode", "nearest")
        ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
        ins = [("x", xr, False), ("", None, False)]
        if ins_sizes is not None:
            ins += [("", None, False), ("sizes", np.array(ins_sizes, np.int64), True)]
        else:
            ins += [("scales", np.array(ins_scales, np.float32), True)]
        ref = resize_ref(xr, out_shape, scales, mode, ctm, attrs.get("nearest_mode", "round_prefer_floor"))
        add(name, "Resize", opset, ins, [("y", ref)], attrs)
    resize("resize18_linear_antialias0", 18, [1, 2, 12, 4], [1, 1, 2.0, 0.5], ins_scales=[1, 1, 2, 0.5],
           mode="linear", antialias=0)
    resize("resize18_nearest_axes_scales", 18, [1, 2, 9, 4], [1, 1, 1.5, 0.5], ins_scales=[1.5, 0.5],
           mode="nearest", axes=[2, 3])
    resize("resize18_linear_axes_neg_sizes", 18, [1, 2, 6, 12], [1, 1, 1.0, 1.5], ins_sizes=[12],
           mode="linear", axes=[-1])
    # keep_aspect_ratio_policy with sizes (6, 8) -> requested (9, 16): scales 1.5 and 2.
    # not_larger: scale = min = 1.5 on both -> (9, 12); not_smaller: scale = max = 2 -> (12, 16).
    resize("resize18_not_larger_axes", 18, [1, 2, 9, 12], [1, 1, 1.5, 1.5], ins_sizes=[9, 16],
           mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    # Without axes the policy takes every axis into account: N and C ask for scale 1, so min = 1 (no resize).
    resize("resize18_not_larger_all_axes", 18, [1, 2, 6, 8], [1, 1, 1.0, 1.0], ins_sizes=[1, 2, 9, 16],
           mode="linear", keep_aspect_ratio_policy="not_larger")
    resize("resize18_not_smaller_axes", 18, [1, 2, 12, 16], [1, 1, 2.0, 2.0], ins_sizes=[9, 16],
           mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_smaller")
    resize("resize18_stretch_asymmetric", 18, [1, 2, 3, 10], [1, 1, 0.5, 1.25], ins_sizes=[1, 2, 3, 10],
           mode="linear", coordinate_transformation_mode="asymmetric", keep_aspect_ratio_policy="stretch")
    resize("resize19_nearest_half_pixel_symmetric_axes", 19, [1, 2, 6, 10], [1, 1, 1.0, 1.25], ins_scales=[1.25],
           mode="nearest", axes=[3], coordinate_transformation_mode="half_pixel_symmetric", antialias=0)
    resize("resize19_linear_not_larger_align", 19, [1, 2, 3, 4], [1, 1, 0.5, 0.5], ins_sizes=[4, 4],
           mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger",
           coordinate_transformation_mode="align_corners")

    # ---- ScatterElements 18 / ScatterND 18: reduction --------------------------------------------------------
    d = f32(4, 5)
    idx = np.array([[0, 1, 0, 3, 1], [2, 0, 0, -1, 1], [3, 1, 2, 3, 3]], np.int64)   # repeats on purpose
    upd = f32(3, 5)
    for red in ("none", "add", "mul", "max", "min"):
        if red == "none":
            ii = np.array([[0, 1, 2, 3, 0], [1, 2, 3, 0, 1]], np.int64)   # no duplicates for "none"
            uu = upd[:2]
        else:
            ii, uu = idx, upd
        add("scatterelements18_%s" % red, "ScatterElements", 18,
            [("data", d, False), ("indices", ii, False), ("updates", uu, False)],
            [("y", scatter_elements_ref(d, ii, uu, 0, red))], dict(axis=0, reduction=red))
    idx1 = np.array([[1, 4, 4], [0, 2, 0], [3, 0, 2], [2, 3, 4]], np.int64)
    add("scatterelements18_add_axis1_neg", "ScatterElements", 18,
        [("data", d, False), ("indices", idx1, False), ("updates", f32(4, 3), False)], [], dict(axis=-1, reduction="add"))
    c = out[-1]
    c.outputs = [("y", scatter_elements_ref(d, idx1, c.inputs[2][1], 1, "add"))]
    ind = np.array([[1], [3], [1]], np.int64)
    u = f32(3, 5)
    for red in ("max", "min"):
        add("scatternd18_%s" % red, "ScatterND", 18, [("data", d, False), ("indices", ind, False), ("updates", u, False)],
            [("y", scatter_nd_ref(d, ind, u, red))], dict(reduction=red))

    # ---- Cast / CastLike 19 and 21 -------------------------------------------------------------------------
    xc = (f32(3, 4) * 3).astype(np.float32)
    xc[0, :3] = [0.0, -0.0, 2.5]
    xb = xc > 0
    xi32 = rng.integers(-1000, 1000, size=(3, 4)).astype(np.int32)
    cast_pairs = [
        ("f32_i64", xc, np.int64), ("f32_f16", xc, np.float16), ("f32_f64", xc, np.float64),
        ("f32_bool", xc, np.bool_), ("bool_f32", xb, np.float32), ("i64_f32", xi.astype(np.int64), np.float32),
        ("i32_f32", xi32, np.float32), ("f32_i32", xc, np.int32), ("f16_f32", xc.astype(np.float16), np.float32),
        ("f32_u8", np.abs(xc), np.uint8), ("i64_i32", xi, np.int32),
    ]
    for opset in (19, 21):
        for tag, src, dst in cast_pairs:
            ref = src.astype(dst)  # float -> int truncates toward zero, as ONNX and C++ do
            add("cast%d_%s" % (opset, tag), "Cast", opset, [("x", src, False)], [("y", ref)],
                dict(to=tensor_type(dst)))
            if tag in ("f32_i64", "i64_f32", "f32_f16", "bool_f32"):
                add("castlike%d_%s" % (opset, tag), "CastLike", opset,
                    [("x", src, False), ("like", np.zeros(1, dst), True)], [("y", ref)])
        # saturate (19+) only changes float8 targets; set on a float16 cast it must be accepted and ignored
        add("cast%d_f32_f16_saturate" % opset, "Cast", opset, [("x", xc, False)], [("y", xc.astype(np.float16))],
            dict(to=TensorProto.FLOAT16, saturate=1))

    # ---- Equal 19 --------------------------------------------------------------------------------------------
    a = rng.integers(0, 3, size=(2, 3, 4)).astype(np.float32)
    b = rng.integers(0, 3, size=(3, 1)).astype(np.float32)
    add("equal19_float_broadcast", "Equal", 19, [("a", a, False), ("b", b, False)], [("y", a == b)])
    add("equal19_int64", "Equal", 19, [("a", a.astype(np.int64), False), ("b", b.astype(np.int64).reshape(3, 1), False)],
        [("y", a.astype(np.int64) == b.astype(np.int64))])
    ba, bb = a > 0, b > 1
    add("equal19_bool", "Equal", 19, [("a", ba, False), ("b", bb, False)], [("y", ba == bb)])

    # ---- Identity / Reshape / Shape / Size / Constant 19 and 21 --------------------------------------------
    xq = f32(2, 3, 4)
    for opset in (19, 21):
        add("identity%d_float" % opset, "Identity", opset, [("x", xq, False)], [("y", xq)])
        add("identity%d_int64" % opset, "Identity", opset, [("x", xi, False)], [("y", xi)])
        add("reshape%d_zero_copy_infer" % opset, "Reshape", opset, [("x", xq, False), ("shape", i64(0, -1, 2), True)],
            [("y", xq.reshape(2, 6, 2))])
        add("reshape%d_allowzero" % opset, "Reshape", opset, [("x", xq, False), ("shape", i64(4, 3, 2), True)],
            [("y", xq.reshape(4, 3, 2))], dict(allowzero=1))
        add("reshape%d_runtime_shape" % opset, "Reshape", opset, [("x", xq, False), ("shape", i64(3, -1), False)],
            [("y", xq.reshape(3, 8))])
        for tag, attrs, sl in [("all", {}, slice(None)), ("start1", dict(start=1), slice(1, None)),
                               ("neg_start_end", dict(start=-2, end=-1), slice(-2, -1)),
                               ("end_clamped", dict(start=0, end=10), slice(0, 10)),
                               ("start_clamped", dict(start=-10, end=2), slice(-10, 2))]:
            add("shape%d_%s" % (opset, tag), "Shape", opset, [("x", xq, False)],
                [("y", np.array(xq.shape[sl], np.int64))], attrs)
        add("size%d" % opset, "Size", opset, [("x", xq, False)], [("y", np.array(xq.size, np.int64))])
        cv = f32(2, 3)
        add("constant%d_value" % opset, "Constant", opset, [], [("y", cv)], dict(value=numpy_helper.from_array(cv, "v")))
        add("constant%d_value_float" % opset, "Constant", opset, [], [("y", np.array(2.5, np.float32))], dict(value_float=2.5))
        add("constant%d_value_ints" % opset, "Constant", opset, [], [("y", i64(3, -1, 7))], dict(value_ints=[3, -1, 7]))
        cvi = np.array([[1, 2], [3, 4]], np.int64)
        add("constant%d_value_int64_tensor" % opset, "Constant", opset, [], [("y", cvi)],
            dict(value=numpy_helper.from_array(cvi, "v")))
        cos_opset = 20 if opset == 19 else 21  # ConstantOfShape changed in 20 and 21
        add("constantofshape%d" % cos_opset, "ConstantOfShape", cos_opset, [("shape", i64(2, 3), False)],
            [("y", np.full((2, 3), 0.5, np.float32))], dict(value=numpy_helper.from_array(np.array([0.5], np.float32), "v")))

    # ---- Squeeze / Unsqueeze / Flatten / Transpose 21 ------------------------------------------------------
    xz = f32(3, 1, 4, 1)
    add("squeeze21_axes", "Squeeze", 21, [("x", xz, False), ("axes", i64(-1), True)], [("y", xz.reshape(3, 1, 4))])
    add("squeeze21_all", "Squeeze", 21, [("x", xz, False)], [("y", xz.reshape(3, 4))])
    add("unsqueeze21_axes", "Unsqueeze", 21, [("x", xq, False), ("axes", i64(0, -1), True)], [("y", xq.reshape(1, 2, 3, 4, 1))])
    add("unsqueeze21_int64", "Unsqueeze", 21, [("x", xi, False), ("axes", i64(1), True)], [("y", xi.reshape(3, 1, 5))])
    add("flatten21_axis0", "Flatten", 21, [("x", xq, False)], [("y", xq.reshape(1, 24))], dict(axis=0))
    add("flatten21_neg_axis", "Flatten", 21, [("x", xq, False)], [("y", xq.reshape(6, 4))], dict(axis=-1))
    add("transpose21_perm", "Transpose", 21, [("x", xq, False)], [("y", xq.transpose(2, 0, 1))], dict(perm=[2, 0, 1]))
    add("transpose21_default", "Transpose", 21, [("x", xi, False)], [("y", xi.T.copy())])

    # ---- Gelu 20 ---------------------------------------------------------------------------------------------
    xg = (f32(3, 7) * 3).astype(np.float32)
    xd = xg.astype(np.float64)
    add("gelu20_none", "Gelu", 20, [("x", xg, False)], [("y", 0.5 * xd * (1 + erf(xd / math.sqrt(2))))])
    add("gelu20_none_explicit", "Gelu", 20, [("x", xg, False)], [("y", 0.5 * xd * (1 + erf(xd / math.sqrt(2))))],
        dict(approximate="none"))
    add("gelu20_tanh", "Gelu", 20, [("x", xg, False)],
        [("y", 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3))))], dict(approximate="tanh"))

    # ---- LayerNormalization 17, stash_type 1, with the optional Mean / InvStdDev outputs --------------------
    xl = f32(2, 3, 5)
    sc, bi = f32(5), f32(5)
    xd = xl.astype(np.float64)
    m_, v_ = xd.mean(axis=-1, keepdims=True), xd.var(axis=-1, keepdims=True)
    inv = 1 / np.sqrt(v_ + 1e-5)
    add("layernorm17_stash1_outputs", "LayerNormalization", 17, [("x", xl, False), ("scale", sc, True), ("bias", bi, True)],
        [("y", (xd - m_) * inv * sc + bi), ("mean", m_), ("inv_std_dev", inv)], dict(stash_type=1, axis=-1))
    sc2 = f32(3, 5)
    m2, v2 = xd.mean(axis=(1, 2), keepdims=True), xd.var(axis=(1, 2), keepdims=True)
    add("layernorm17_stash1_axis1_nobias", "LayerNormalization", 17, [("x", xl, False), ("scale", sc2, True)],
        [("y", (xd - m2) / np.sqrt(v2 + 1e-3) * sc2)], dict(stash_type=1, axis=1, epsilon=1e-3))

    # ---- AveragePool 19: dilations ---------------------------------------------------------------------------
    xa = f32(1, 2, 7, 7)
    xad = xa.astype(np.float64)
    # kernel 2x2, dilation 2, stride 1, no pads: y[i,j] = mean of x[i, j], x[i, j+2], x[i+2, j], x[i+2, j+2]
    ya = (xad[:, :, 0:5, 0:5] + xad[:, :, 0:5, 2:7] + xad[:, :, 2:7, 0:5] + xad[:, :, 2:7, 2:7]) / 4
    add("averagepool19_dilations", "AveragePool", 19, [("x", xa, False)], [("y", ya)], dict(kernel_shape=[2, 2], dilations=[2, 2]))

    # ---- DFT 20: axis (and dft_length) became inputs -----------------------------------------------------------
    xf = f32(2, 8, 1)
    spec = np.fft.fft(xf[..., 0].astype(np.float64), axis=1)
    add("dft20_axis_input", "DFT", 20, [("x", xf, False), ("", None, False), ("axis", np.array(1, np.int64), True)],
        [("y", np.stack([spec.real, spec.imag], axis=-1))])
    return out


def write():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    all_cases = cases()
    names = [c.name for c in all_cases]
    assert len(set(names)) == len(names), "duplicate case names"
    for c in all_cases:
        onnx.save(c.model(), os.path.join(OUT, c.name + ".onnx"))
        for n, arr, init in c.inputs:
            if n and not init:
                np.save(os.path.join(OUT, "%s.in.%s.npy" % (c.name, n)), arr)
        for n, ref in c.outputs:
            if ref.dtype.kind == "f" and ref.dtype != np.float16:
                ref = ref.astype(np.float64)  # float references are stored in float64
            np.save(os.path.join(OUT, "%s.ref.%s.npy" % (c.name, n)), ref)
    print("wrote %d cases (%d files) to %s" % (len(all_cases), len(os.listdir(OUT)), OUT))
    return 0


def registered_ranges(ophost):
    """{op: [(since, until), ...]} of the ai.onnx kernels on cpu, from `ophost plugins -v`."""
    r = subprocess.run([ophost, "plugins", "-v"], capture_output=True, text=True)
    ranges = {}
    for m in re.finditer(r"op\s+ai\.onnx::(\w+) \[(\d+)(?:-(\d+)|\+)\] on cpu", r.stdout + r.stderr):
        ranges.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3)) if m.group(3) else None))
    return ranges


def range_text(lo, hi):
    return "[%d+]" % lo if hi is None else "[%d-%d]" % (lo, hi)


def check(ophost, extra=()):
    import onnx as _onnx
    names = sorted(f[:-5] for f in os.listdir(OUT) if f.endswith(".onnx"))
    ranges = registered_ranges(ophost)
    passed = failed = gaps = 0
    gap_lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            m = _onnx.load(os.path.join(OUT, name + ".onnx"))
            op, opset = m.graph.node[0].op_type, m.opset_import[0].version
            served = [range_text(lo, hi) for lo, hi in ranges.get(op, []) if lo <= opset and (hi is None or opset <= hi)]
            where = "%s-%d %s" % (op, opset, served[0] if served else "(none of %s)" % " ".join(
                range_text(lo, hi) for lo, hi in sorted(ranges.get(op, []))))
            ins = ["--input=%s=%s" % (f[len(name) + 4:-4], os.path.join(OUT, f)) for f in sorted(os.listdir(OUT))
                   if f.startswith(name + ".in.")]
            od = os.path.join(tmp, name)
            r = subprocess.run([ophost, "run", os.path.join(OUT, name + ".onnx"), *ins, "--output-dir", od,
                                "--log-level", "warn", *extra], capture_output=True, text=True)
            if r.returncode != 0:
                msg = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["(no output)"]
                if name in KNOWN_GAPS and KNOWN_GAPS[name][0] in (r.stderr + r.stdout):
                    gaps += 1
                    gap_lines.append("  %s: %s" % (name, KNOWN_GAPS[name][1]))
                    print("gap  %-46s %-34s %s" % (name, where, KNOWN_GAPS[name][1]))
                    continue
                print("FAIL %-46s %-34s ophost: %s" % (name, where, msg[0]))
                failed += 1
                continue
            errs, worst = [], 0.0
            for f in sorted(os.listdir(OUT)):
                if not f.startswith(name + ".ref."):
                    continue
                out_name = f[len(name) + 5:-4]
                ref = np.load(os.path.join(OUT, f))
                p = os.path.join(od, out_name + ".npy")
                if not os.path.exists(p):
                    errs.append("%s: no output written" % out_name)
                    continue
                got = np.load(p)
                if got.shape != ref.shape:
                    errs.append("%s: shape %s, expected %s" % (out_name, got.shape, ref.shape))
                    continue
                if got.dtype != ref.dtype and not (ref.dtype == np.float64 and got.dtype == np.float32):
                    errs.append("%s: dtype %s, expected %s" % (out_name, got.dtype, ref.dtype))
                    continue
                g64, r64 = got.astype(np.float64), ref.astype(np.float64)
                if ref.dtype.kind in "biu":
                    ok, err = bool(np.array_equal(got, ref)), float(np.abs(g64 - r64).max()) if ref.size else 0.0
                else:
                    tol = 1e-3 if ref.dtype == np.float16 else RTOL
                    ok = bool(np.allclose(g64, r64, rtol=tol, atol=ATOL))
                    err = float(np.abs(g64 - r64).max()) if ref.size else 0.0
                worst = max(worst, err)
                if not ok:
                    errs.append("%s: max abs err %.3g" % (out_name, err))
            if errs:
                failed += 1
                print("FAIL %-46s %-34s %s" % (name, where, "; ".join(errs)))
            else:
                passed += 1
                note = " (listed in KNOWN_GAPS but runs now: remove it)" if name in KNOWN_GAPS else ""
                print("ok   %-46s %-34s max abs err %.3g%s" % (name, where, worst, note))
    if gap_lines:
        print("%d known gap(s), not counted as failures:" % gaps)
        print("\n".join(gap_lines))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="OPHOST", help="run the cases through OPHOST and compare with the references")
    ap.add_argument("--opt-level", help="passed to `OPHOST run` (default: ophost's own)")
    a = ap.parse_args()
    sys.exit(check(a.check, ["--opt-level", a.opt_level] if a.opt_level else []) if a.check else write())
