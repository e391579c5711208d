#!/usr/bin/python3
"""Single-op cases for onnx-core's Conv/ConvTranspose, pools, normalizations, Resize, activations and RNN/GRU/LSTM,
and chains the host's passes fuse (fusion_cases.py).

Writes, for every case, into cases/:
  <case>.onnx              a one-node model (opset given per case)
  <case>.in.<name>.npy     its inputs (float32, seeded)
  <case>.ref.npy           the expected output, computed here in float64 with plain numpy (no onnxruntime)

  /usr/bin/python3 make_cases.py                 # (re)generate cases/ (deterministic)
  /usr/bin/python3 make_cases.py --check OPHOST  # run every case through `OPHOST run` and compare
  /usr/bin/python3 make_cases.py --check OPHOST --only conv   # only the cases whose name contains "conv"

Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

import fusion_cases

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
RTOL, ATOL = 1e-4, 1e-5


# ----------------------------------------------------------------------------------------------------------
# float64 references
# ----------------------------------------------------------------------------------------------------------

def conv_ref(x, w, b, strides, pads, dilations, group):
    """Convolution in x's and w's type (float64 here; int64 for make_quant_cases.py's exact integer sums), padding
    with zeros."""
    n, c, *sp = x.shape
    oc, icg, *k = w.shape
    nd = len(sp)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[nd + i]) for i in range(nd)])
    out_sp = [(sp[i] + pads[i] + pads[nd + i] - ((k[i] - 1) * dilations[i] + 1)) // strides[i] + 1 for i in range(nd)]
    y = np.zeros([n, oc] + out_sp, dtype=np.result_type(x.dtype, w.dtype))
    ocg = oc // group
    for g in range(group):
        xg = xp[:, g * icg:(g + 1) * icg]
        wg = w[g * ocg:(g + 1) * ocg]
        for kidx in np.ndindex(*k):
            sl = tuple(slice(kidx[i] * dilations[i], kidx[i] * dilations[i] + (out_sp[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(nd))
            patch = xg[(slice(None), slice(None)) + sl]  # n, icg, out...
            y[:, g * ocg:(g + 1) * ocg] += np.einsum("ni...,oi->no...", patch, wg[(slice(None), slice(None)) + kidx])
    if b is not None:
        y += b.reshape([1, oc] + [1] * nd)
    return y


def conv_transpose_ref(x, w, b, strides, pads, dilations, group, output_padding):
    n, c, *sp = x.shape
    _, ocg, *k = w.shape
    nd = len(sp)
    oc = ocg * group
    full = [strides[i] * (sp[i] - 1) + output_padding[i] + (k[i] - 1) * dilations[i] + 1 for i in range(nd)]
    y = np.zeros([n, oc] + full)
    icg = c // group
    for g in range(group):
        for kidx in np.ndindex(*k):
            contrib = np.einsum("ni...,io->no...", x[:, g * icg:(g + 1) * icg], w[g * icg:(g + 1) * icg][(slice(None), slice(None)) + kidx])
            sl = tuple(slice(kidx[i] * dilations[i], kidx[i] * dilations[i] + (sp[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(nd))
            y[(slice(None), slice(g * ocg, (g + 1) * ocg)) + sl] += contrib
    y = y[(slice(None), slice(None)) + tuple(slice(pads[i], full[i] - pads[nd + i]) for i in range(nd))]
    if b is not None:
        y += b.reshape([1, oc] + [1] * nd)
    return y


def pool_ref(x, kind, k, strides, pads, dilations, ceil_mode, count_include_pad):
    n, c, *sp = x.shape
    nd = len(sp)
    out = []
    for i in range(nd):
        span = sp[i] + pads[i] + pads[nd + i] - ((k[i] - 1) * dilations[i] + 1)
        o = (math.ceil(span / strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= sp[i] + pads[i]:
            o -= 1
        out.append(o)
    y = np.zeros([n, c] + out)
    for oidx in np.ndindex(*out):
        vals, cnt_pad = [], 1
        starts = [oidx[i] * strides[i] - pads[i] for i in range(nd)]
        for kidx in np.ndindex(*k):
            pos = [starts[i] + kidx[i] * dilations[i] for i in range(nd)]
            if all(0 <= pos[i] < sp[i] for i in range(nd)):
                vals.append(x[(slice(None), slice(None)) + tuple(pos)])
        if kind == "max":
            y[(slice(None), slice(None)) + oidx] = np.max(vals, axis=0)
        else:
            if count_include_pad:
                cnt_pad = 1
                for i in range(nd):
                    hi = min(starts[i] + (k[i] - 1) * dilations[i] + 1, sp[i] + pads[nd + i])
                    cnt_pad *= -(-(hi - starts[i]) // dilations[i])
                y[(slice(None), slice(None)) + oidx] = np.sum(vals, axis=0) / cnt_pad
            else:
                y[(slice(None), slice(None)) + oidx] = np.mean(vals, axis=0)
    return y


def resize_coord(ctm, x, scale, lin, lout):
    if ctm == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if lout > 1 else 0.0
    if ctm == "align_corners":
        return 0.0 if lout == 1 else x * (lin - 1) / (lout - 1)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if ctm == "half_pixel_symmetric":
        adj = lout / (scale * lin)
        return lin / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    raise ValueError(ctm)


def resize_ref(x, out_shape, scales, mode, ctm, nearest_mode):
    y = x.astype(np.float64)
    for ax in range(x.ndim):
        lin, lout, s = x.shape[ax], out_shape[ax], scales[ax]
        if lin == lout and s == 1.0:
            continue  # an axis that is not resized is copied (ONNX Runtime; the literal formula could shift it)
        cols = []
        for o in range(lout):
            v = resize_coord(ctm, o, s, lin, lout)
            if mode == "nearest":
                if nearest_mode == "floor":
                    i = math.floor(v)
                elif nearest_mode == "ceil":
                    i = math.ceil(v)
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


# ----------------------------------------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------------------------------------

def model(op, inputs, out_shape, attrs, opset, initializers=()):
    """inputs: list of (name, array); the ones named in initializers become constants of the graph."""
    ins, inits = [], []
    for name, arr in inputs:
        if name in initializers:
            inits.append(helper.make_tensor(name, TensorProto.FLOAT if arr.dtype == np.float32 else TensorProto.INT64,
                                            arr.shape, arr.flatten().tolist()))
        elif name:
            ins.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, arr.shape))
    node = helper.make_node(op, [n for n, _ in inputs], ["y"], **attrs)
    g = helper.make_graph([node], op.lower(), ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx_core make_cases")
    m.ir_version = 7
    return m


def cases():
    rng = np.random.default_rng(1234)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    out = []

    def add(name, op, inputs, ref, attrs, opset=13, inits=("W", "B", "scale", "bias", "mean", "var", "roi", "scales", "sizes")):
        out.append((name, model(op, inputs, list(ref.shape), attrs, opset, inits), inputs, ref, inits))

    # Conv: groups / strides / pads / dilations / 1-d / 3-d / auto_pad / no bias / non-constant weights.
    for name, xs, ws, kw, bias in [
        ("conv_1x1", (1, 8, 7, 9), (16, 8, 1, 1), {}, True),
        ("conv_3x3_pad", (2, 4, 9, 8), (6, 4, 3, 3), dict(pads=[1, 1, 1, 1]), True),
        ("conv_3x3_s2_asym_pad", (1, 3, 11, 10), (5, 3, 3, 3), dict(strides=[2, 2], pads=[1, 0, 2, 1]), False),
        ("conv_dilated", (1, 4, 12, 12), (4, 4, 3, 3), dict(dilations=[2, 3], pads=[2, 3, 2, 3]), True),
        ("conv_groups2", (1, 8, 6, 6), (6, 4, 3, 3), dict(group=2, pads=[1, 1, 1, 1]), True),
        ("conv_depthwise_5x5_s2", (1, 32, 13, 13), (32, 1, 5, 5), dict(group=32, strides=[2, 2], pads=[2, 2, 2, 2]), True),
        ("conv_depthwise_3x3", (1, 16, 10, 10), (16, 1, 3, 3), dict(group=16, pads=[1, 1, 1, 1]), True),
        ("conv_1d", (2, 3, 17), (4, 3, 5), dict(strides=[3], pads=[2, 1]), True),
        ("conv_3d", (1, 2, 5, 6, 4), (3, 2, 3, 3, 2), dict(pads=[1, 1, 0, 1, 1, 1]), True),
    ]:
        x, w = f32(*xs), f32(*ws)
        b = f32(ws[0]) if bias else None
        nd = len(xs) - 2
        ref = conv_ref(x.astype(np.float64), w.astype(np.float64), None if b is None else b.astype(np.float64),
                       kw.get("strides", [1] * nd), kw.get("pads", [0] * 2 * nd), kw.get("dilations", [1] * nd), kw.get("group", 1))
        ins = [("X", x), ("W", w)] + ([("B", b)] if bias else [])
        add(name, "Conv", ins, ref, kw)
    # auto_pad SAME_UPPER / SAME_LOWER (stride 2, odd total padding) and weights as a graph input.
    x, w, b = f32(1, 3, 10, 9), f32(4, 3, 4, 4), f32(4)
    # H: 10 -> 5, total padding 2 (1 + 1); W: 9 -> 5, total padding 3 (UPPER: 1 + 2, LOWER: 2 + 1)
    for ap, pads in [("SAME_UPPER", [1, 1, 1, 2]), ("SAME_LOWER", [1, 2, 1, 1])]:
        ref = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), [2, 2], pads, [1, 1], 1)
        add("conv_auto_pad_" + ap.lower(), "Conv", [("X", x), ("W", w), ("B", b)], ref, dict(auto_pad=ap, strides=[2, 2]))
    x, w = f32(1, 4, 6, 6), f32(5, 4, 3, 3)
    add("conv_runtime_weights", "Conv", [("X", x), ("Wr", w)], conv_ref(x.astype(np.float64), w.astype(np.float64), None, [1, 1], [0] * 4, [1, 1], 1), {})

    # Layout paths chosen by shape (conv.cpp), own random stream so the cases above keep their data:
    # a 12-channel depthwise conv runs blocked with the channels zero-padded to the ISA's block; a 1x1 on 7x7
    # pixels runs a oneDNN primitive with reorders instead of the NCHW sgemm path (sgemm_shape_ok).
    rng2 = np.random.default_rng(4321)
    for name, xs, ws, kw in [
        ("conv_depthwise_3x3_c12", (1, 12, 9, 9), (12, 1, 3, 3), dict(group=12, pads=[1, 1, 1, 1])),
        ("conv_1x1_7x7", (1, 20, 7, 7), (36, 20, 1, 1), {}),
    ]:
        x, w, b = (rng2.standard_normal(s).astype(np.float32) for s in (xs, ws, (ws[0],)))
        ref = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), [1, 1],
                       kw.get("pads", [0] * 4), [1, 1], kw.get("group", 1))
        add(name, "Conv", [("X", x), ("W", w), ("B", b)], ref, kw)

    # Winograd F(4x4, 3x3) (outputs of 24x24 and up, conv.cpp try_winograd; AVX-512) on a batch of 2, plain X and Y;
    # conv_winograd_chain covers F(2x2, 3x3). He-initialised weights keep outputs near 1 (see that case).
    x = rng2.standard_normal((2, 16, 26, 26)).astype(np.float32)
    w = (rng2.standard_normal((32, 16, 3, 3)) * np.sqrt(2.0 / 144)).astype(np.float32)
    b = (rng2.standard_normal(32) * 0.1).astype(np.float32)
    add("conv_winograd_4x3_batch2", "Conv", [("X", x), ("W", w), ("B", b)],
        conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), [1, 1], [1, 1, 1, 1], [1, 1], 1),
        dict(pads=[1, 1, 1, 1]))

    # Transpose as a batch of 2-D transposes (common.hpp strided_copy -> simd_math::transpose32, 4 x 4 vector
    # blocks): NCHW -> NHWC and back with sides that are not multiples of 4 or of the 16 x 64 tiles, and a batch.
    rng3 = np.random.default_rng(2468)
    for name, xs, perm in [("transpose_nchw_nhwc_odd", (2, 19, 5, 7), [0, 2, 3, 1]),
                           ("transpose_nhwc_nchw_odd", (1, 6, 9, 70), [0, 3, 1, 2]),
                           ("transpose_2d_tiles", (37, 133), [1, 0])]:
        x = rng3.standard_normal(xs).astype(np.float32)
        add(name, "Transpose", [("X", x)], x.transpose(perm).astype(np.float64), dict(perm=perm))

    # ConvTranspose
    for name, xs, ws, kw in [
        ("convtranspose_2x2_s2", (1, 24, 5, 6), (24, 8, 2, 2), dict(strides=[2, 2])),
        ("convtranspose_3x3_pads_outpad", (1, 4, 5, 5), (4, 3, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])),
        ("convtranspose_groups_dil", (2, 4, 4, 5), (4, 2, 3, 2), dict(group=2, dilations=[2, 1], pads=[0, 1, 1, 0])),
    ]:
        x, w, b = f32(*xs), f32(*ws), f32(ws[1] * kw.get("group", 1))
        ref = conv_transpose_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), kw.get("strides", [1, 1]),
                                 kw.get("pads", [0] * 4), kw.get("dilations", [1, 1]), kw.get("group", 1), kw.get("output_padding", [0, 0]))
        add(name, "ConvTranspose", [("X", x), ("W", w), ("B", b)], ref, kw)

    # Pools
    x = f32(2, 3, 9, 10)
    add("globalaveragepool", "GlobalAveragePool", [("X", x)], x.astype(np.float64).mean(axis=(2, 3), keepdims=True), {})
    add("globalmaxpool", "GlobalMaxPool", [("X", x)], x.astype(np.float64).max(axis=(2, 3), keepdims=True), {})
    for name, kind, kw, opset in [
        ("maxpool_3x3_s2_pad", "max", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 12),
        ("maxpool_ceil_dil", "max", dict(kernel_shape=[2, 3], strides=[2, 2], dilations=[2, 1], ceil_mode=1), 12),
        ("averagepool_excl_pad", "avg", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 11),
        ("averagepool_incl_pad_ceil", "avg", dict(kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1], count_include_pad=1, ceil_mode=1), 11),
    ]:
        ref = pool_ref(x.astype(np.float64), kind, kw["kernel_shape"], kw.get("strides", [1, 1]), kw.get("pads", [0] * 4),
                       kw.get("dilations", [1, 1]), kw.get("ceil_mode", 0), kw.get("count_include_pad", 0))
        add(name, "MaxPool" if kind == "max" else "AveragePool", [("X", x)], ref, kw, opset)

    # BatchNormalization (opsets 9 and 15), InstanceNormalization, LayerNormalization
    x = f32(2, 5, 4, 3)
    sc, bi, mu = f32(5), f32(5), f32(5)
    var = (rng.random(5) + 0.5).astype(np.float32)
    ref = ((x.astype(np.float64) - mu.reshape(1, 5, 1, 1)) / np.sqrt(var.astype(np.float64).reshape(1, 5, 1, 1) + 1e-3)
           * sc.reshape(1, 5, 1, 1) + bi.reshape(1, 5, 1, 1))
    for opset in (9, 15):
        add("batchnorm_opset%d" % opset, "BatchNormalization", [("X", x), ("scale", sc), ("bias", bi), ("mean", mu), ("var", var)], ref,
            dict(epsilon=1e-3), opset)
    xd = x.astype(np.float64)
    m_, v_ = xd.mean(axis=(2, 3), keepdims=True), xd.var(axis=(2, 3), keepdims=True)
    add("instancenorm", "InstanceNormalization", [("X", x), ("scale", sc), ("bias", bi)],
        (xd - m_) / np.sqrt(v_ + 1e-5) * sc.reshape(1, 5, 1, 1) + bi.reshape(1, 5, 1, 1), {})
    s2, b2 = f32(4, 3), f32(4, 3)
    m_, v_ = xd.mean(axis=(2, 3), keepdims=True), xd.var(axis=(2, 3), keepdims=True)
    add("layernorm_axis2", "LayerNormalization", [("X", x), ("scale", s2), ("bias", b2)], (xd - m_) / np.sqrt(v_ + 1e-5) * s2 + b2,
        dict(axis=2), 17)

    # Activations
    x = f32(3, 4, 5) * 4
    xd = x.astype(np.float64)
    add("hardsigmoid", "HardSigmoid", [("X", x)], np.clip(xd * 0.16666670143604279 + 0.5, 0, 1), dict(alpha=0.16666670143604279), 6)
    add("hardsigmoid_default", "HardSigmoid", [("X", x)], np.clip(xd * 0.2 + 0.5, 0, 1), {}, 6)
    add("hardswish", "HardSwish", [("X", x)], xd * np.clip(xd / 6 + 0.5, 0, 1), {}, 14)
    add("elu", "Elu", [("X", x)], np.where(xd < 0, 0.7 * np.expm1(xd), xd), dict(alpha=0.7), 6)
    add("softplus", "Softplus", [("X", x)], np.log1p(np.exp(xd)), {}, 1)

    # Resize: nearest (every nearest_mode) and linear, several coordinate_transformation_modes, opsets 10-19.
    x = f32(1, 2, 5, 7)
    def resize_case(name, opset, scales=None, sizes=None, **attrs):
        mode = attrs.get("mode", "nearest")
        ctm = attrs.get("coordinate_transformation_mode", "half_pixel" if opset >= 11 else "asymmetric")
        nm = attrs.get("nearest_mode", "round_prefer_floor" if opset >= 11 else "floor")
        if sizes is not None:
            out_shape = list(sizes)
            sc_ = [sizes[i] / x.shape[i] for i in range(4)]
        else:
            out_shape = [int(math.floor(x.shape[i] * np.float32(scales[i]))) for i in range(4)]
            sc_ = [float(np.float32(s)) for s in scales]
        ref = resize_ref(x, out_shape, sc_, mode, ctm, nm)
        if opset == 10:
            ins = [("X", x), ("scales", np.array(scales, np.float32))]
        else:
            ins = [("X", x), ("roi", np.zeros(0, np.float32))]
            ins.append(("scales", np.array(scales if scales is not None else [], np.float32)))
            if sizes is not None:
                ins.append(("sizes", np.array(sizes, np.int64)))
        add(name, "Resize", ins, ref, attrs, opset)

    resize_case("resize10_nearest_up2", 10, scales=[1, 1, 2, 2], mode="nearest")
    resize_case("resize10_linear_up", 10, scales=[1, 1, 2, 1.5], mode="linear")
    resize_case("resize11_nearest_asym_floor", 11, scales=[1, 1, 2, 2], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    resize_case("resize11_nearest_tf_half_pixel_ceil", 11, scales=[1, 1, 3, 2], mode="nearest",
                coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="ceil")
    resize_case("resize13_nearest_half_pixel_rpf", 13, scales=[1, 1, 1.6, 0.6], mode="nearest")
    resize_case("resize13_nearest_align_corners_rpc", 13, sizes=[1, 2, 9, 4], mode="nearest",
                coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil")
    resize_case("resize13_linear_half_pixel", 13, scales=[1, 1, 2, 0.5], mode="linear")
    resize_case("resize13_linear_align_corners", 13, sizes=[1, 2, 8, 11], mode="linear", coordinate_transformation_mode="align_corners")
    resize_case("resize13_linear_pytorch_half_pixel", 13, sizes=[1, 2, 1, 10], mode="linear",
                coordinate_transformation_mode="pytorch_half_pixel")
    resize_case("resize19_linear_half_pixel_symmetric", 19, scales=[1, 1, 1.5, 0.75], mode="linear",
                coordinate_transformation_mode="half_pixel_symmetric")
    # The last-two-axes fast paths (resize.cpp: nearest_planes, bilinear_planes): PP-OCRv4's integer upsamples
    # (rows copied, each element replicated 4 and 8 times), linear with input rows skipped, and a resized channel
    # axis, which takes the general loop.
    resize_case("resize11_nearest_asym_floor_up4x8", 11, scales=[1, 1, 4, 8], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    resize_case("resize13_linear_rows_skipped", 13, scales=[1, 1, 0.4, 3], mode="linear")
    resize_case("resize13_nearest_channels", 13, scales=[1, 2, 2, 1], mode="nearest")
    resize_case("resize13_linear_channels", 13, scales=[1, 1.5, 1, 2], mode="linear")
    # Negative axes in opsets whose spec allows only [0, rank): accepted as ONNX Runtime does (PaddleOCR rec at
    # opset 9 has ReduceMean axes=[-1]); onnx-core logs each at debug level.
    x = f32(2, 3, 4)
    add("lenient_reducemean9_neg_axis", "ReduceMean", [("X", x)], x.astype(np.float64).mean(axis=-1, keepdims=True),
        dict(axes=[-1]), 9)
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    add("lenient_softmax9_neg_axis", "Softmax", [("X", x)], e / e.sum(axis=-1, keepdims=True), dict(axis=-1), 9)
    add("lenient_flatten9_neg_axis", "Flatten", [("X", x)], x.astype(np.float64).reshape(6, 4), dict(axis=-1), 9)
    # Pad, row by row: every mode, negative pads (crops) in constant mode, on a 3-D tensor.
    x = f32(3, 4, 5)
    for mode, pads in [("constant", [0, 1, 2, 0, 2, 3]), ("constant", [1, -1, 0, 0, 2, -2]),
                       ("reflect", [2, 0, 1, 1, 0, 2]), ("edge", [0, 1, 2, 0, 2, 3])]:
        sl = tuple(slice(max(0, -pads[i]), x.shape[i] - max(0, -pads[i + 3])) for i in range(3))
        ref = np.pad(x.astype(np.float64)[sl], [(max(0, pads[i]), max(0, pads[i + 3])) for i in range(3)], mode=mode)
        name = "pad_%s_%s" % (mode, "_".join(str(p).replace("-", "m") for p in pads))
        add(name, "Pad", [("X", x), ("pads", np.array(pads, dtype=np.int64))], ref, dict(mode=mode), 13, ("pads",))

    # Conv + HardSwish written out (x * Clip(x + 3, 0, 6) / 6) + a scalar affine, at opset 11 as PaddlePaddle
    # exports it: the host fuses the chain into one FusedConv (HardSwish and linear post-ops).
    x = f32(1, 8, 9, 9)
    w = f32(8, 8, 1, 1)
    b = f32(8)
    c = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), [1, 1], [0, 0, 0, 0], [1, 1], 1)
    hs = c * np.clip(c + 3, 0, 6) / 6
    ref = hs * 0.75 + 0.125
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"]),
             helper.make_node("Add", ["c", "three"], ["a"]),
             helper.make_node("Clip", ["a", "zero", "six"], ["k"]),
             helper.make_node("Mul", ["c", "k"], ["m"]),
             helper.make_node("Div", ["m", "six"], ["h"]),
             helper.make_node("Mul", ["h", "s"], ["p"]),
             helper.make_node("Add", ["p", "t"], ["y"])]
    consts = [helper.make_tensor("W", TensorProto.FLOAT, w.shape, w.flatten().tolist()),
              helper.make_tensor("B", TensorProto.FLOAT, b.shape, b.flatten().tolist())]
    for name, v in [("three", 3.0), ("zero", 0.0), ("six", 6.0), ("s", 0.75), ("t", 0.125)]:
        consts.append(helper.make_tensor(name, TensorProto.FLOAT, [], [v]))
    g = helper.make_graph(nodes, "conv_hardswish_chain", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref.shape))], initializer=consts)
    mh = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)], producer_name="onnx_core make_cases")
    mh.ir_version = 7
    out.append(("fused_conv_hardswish_chain_opset11", mh, [("X", x)], ref, ("W", "B")))
    out.append(nchwc_chain_case())
    out.append(winograd_chain_case())
    out.append(blocked_x_plain_y_case())
    out.extend(se_block_case(c, hw) for c, hw in ((24, 5), (32, 7)))
    out.append(conv_dilated_wide_pad_clamp_case())
    out.extend(rnn_cases())
    out.extend(fusion_cases.cases(conv_ref))
    out.extend(avgpool_blocked_cases())
    out.append(winograd_host_case())
    out.append(winograd_1d_case())
    out.extend(reduce_rows_cases())
    return out


# ----------------------------------------------------------------------------------------------------------
# RNN / GRU / LSTM: hidden size 37 (whole vectors of 16 and of 8 floats plus 5 units, a K of 37 for the recurrent
# product's masked tail), 5 steps, batch 2, float64 references of the ONNX formulas
# ----------------------------------------------------------------------------------------------------------

ACT = {"Sigmoid": lambda v: 1 / (1 + np.exp(-v)), "Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0),
       "HardSigmoid": lambda v: np.clip(0.2 * v + 0.5, 0, 1)}


def rnn_ref(cell, x, w, r, b, h0, c0=None, p=None, direction="forward", acts=None, clip=None, lbr=0,
            input_forget=0):
    """Y [S, D, B, H] in float64; x [S, B, I], layout 0."""
    S, B, _ = x.shape
    D, GH, H = r.shape
    acts = [ACT[a] for a in acts]
    per = len(acts) // D
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    y = np.zeros((S, D, B, H))
    for d in range(D):
        f = acts[d * per:(d + 1) * per]
        wb, rb = b[d, :GH], b[d, GH:]
        h = h0[d].copy()
        c = c0[d].copy() if c0 is not None else None
        steps = range(S - 1, -1, -1) if direction == "reverse" or d == 1 else range(S)
        for t in steps:
            gx = x[t] @ w[d].T + wb
            if cell == "RNN":
                h = f[0](cl(gx + h @ r[d].T + rb))
            elif cell == "GRU":
                gh = h @ r[d].T + rb
                z = f[0](cl(gx[:, :H] + gh[:, :H]))
                rr = f[0](cl(gx[:, H:2 * H] + gh[:, H:2 * H]))
                if lbr:
                    hh = f[1](cl(gx[:, 2 * H:] + rr * gh[:, 2 * H:]))
                else:
                    hh = f[1](cl(gx[:, 2 * H:] + (rr * h) @ r[d, 2 * H:].T + rb[2 * H:]))
                h = (1 - z) * hh + z * h
            else:
                g = gx + h @ r[d].T + rb
                pi, po, pf = (p[d, :H], p[d, H:2 * H], p[d, 2 * H:]) if p is not None else (0, 0, 0)
                i = f[0](cl(g[:, :H] + pi * c))
                fg = 1 - i if input_forget else f[0](cl(g[:, 2 * H:3 * H] + pf * c))
                c = fg * c + i * f[1](cl(g[:, 3 * H:]))
                o = f[0](cl(g[:, H:2 * H] + po * c))
                h = o * f[2](c)
            y[t, d] = h
    return y


def rnn_cases():
    rng = np.random.default_rng(4321)
    f32 = lambda *s, k=1.0: (rng.standard_normal(s) * k).astype(np.float32)
    S, B, I, H = 5, 2, 11, 37
    out = []
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
    for name, cell, kw in [
        ("rnn_lstm_h37", "LSTM", {}),
        ("rnn_lstm_h37_peep_clip_bidir", "LSTM", dict(direction="bidirectional", clip=0.6, peep=True)),
        ("rnn_lstm_h37_input_forget_reverse", "LSTM", dict(direction="reverse", input_forget=1)),
        ("rnn_lstm_h37_bidir_mixed_acts", "LSTM", dict(direction="bidirectional",
                                                       acts=["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Tanh", "Relu"])),
        ("rnn_gru_h37_bidir_clip", "GRU", dict(direction="bidirectional", clip=0.8)),
        ("rnn_gru_h37_lbr", "GRU", dict(linear_before_reset=1)),
        ("rnn_simple_h37_bidir", "RNN", dict(direction="bidirectional")),
        ("rnn_gru_h37_bidir_mixed_acts", "GRU", dict(direction="bidirectional",
                                                     acts=["HardSigmoid", "Tanh", "Sigmoid", "Relu"])),
    ]:
        D = 2 if kw.get("direction") == "bidirectional" else 1
        G = gates[cell]
        x, w, r = f32(S, B, I), f32(D, G * H, I, k=0.3), f32(D, G * H, H, k=0.2)
        b, h0 = f32(D, 2 * G * H, k=0.3), f32(D, B, H, k=0.5)
        c0 = f32(D, B, H, k=0.5) if cell == "LSTM" else None
        p = f32(D, 3 * H, k=0.3) if kw.get("peep") else None
        acts = kw.get("acts", defaults[cell] * D)
        f64 = lambda a: None if a is None else a.astype(np.float64)
        ref = rnn_ref(cell, f64(x), f64(w), f64(r), f64(b), f64(h0), f64(c0), f64(p), kw.get("direction", "forward"),
                      acts, kw.get("clip"), kw.get("linear_before_reset", 0), kw.get("input_forget", 0))
        ins = [("X", x), ("W", w), ("R", r), ("B", b), ("", None), ("initial_h", h0)]
        if cell == "LSTM":
            ins += [("initial_c", c0)] + ([("P", p)] if p is not None else [])
        attrs = dict(hidden_size=H, activations=acts)
        for k in ("direction", "clip", "linear_before_reset", "input_forget"):
            if k in kw:
                attrs[k] = kw[k]
        inits = ("W", "R", "B", "initial_h", "initial_c", "P")
        out.append((name, model(cell, ins, list(ref.shape), attrs, 14, inits), [i for i in ins if i[0]], ref, inits))
    return out


def conv_dilated_wide_pad_clamp_case():
    """A 3x3 convolution with dilation 5 and padding 5 (M-LSD's decoder; padding wider than the kernel, which
    oneDNN's jit:avx2 kernel takes only with X padded beforehand), then LeakyRelu and a lower and upper bound
    written as Max/Min with scalars (TensorFlow exports; the host folds them into the FusedConv's bounds)."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((1, 16, 20, 20)) * 0.5).astype(np.float32)
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32)
    b = (rng.standard_normal(16) * 0.1).astype(np.float32)
    c = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), [1, 1], [5, 5, 5, 5], [5, 5], 1)
    ref = np.minimum(np.maximum(np.where(c < 0, 0.2 * c, c), -0.4), 1.5)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"], dilations=[5, 5], pads=[5, 5, 5, 5], kernel_shape=[3, 3]),
             helper.make_node("LeakyRelu", ["c"], ["l"], alpha=0.2),
             helper.make_node("Max", ["l", "lo"], ["m"]),
             helper.make_node("Min", ["hi", "m"], ["y"])]
    consts = [helper.make_tensor("W", TensorProto.FLOAT, w.shape, w.flatten().tolist()),
              helper.make_tensor("B", TensorProto.FLOAT, b.shape, b.flatten().tolist()),
              helper.make_tensor("lo", TensorProto.FLOAT, [1, 1, 1, 1], [-0.4]),
              helper.make_tensor("hi", TensorProto.FLOAT, [], [1.5])]
    g = helper.make_graph(nodes, "conv_dilated_wide_pad_clamp", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref.shape))], initializer=consts)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="onnx_core make_cases")
    m.ir_version = 7
    return ("conv_dilated_wide_pad_clamp", m, [("X", x)], ref, ("W", "B", "lo", "hi"))


def graph_case(name, nodes, x, ref, consts, extra=()):
    """A one-input (X), one-output (y) opset-13 graph case: `consts` (name -> float32 array) become
    initializers, `extra` holds further initializer TensorProtos. Returns what cases() lists."""
    inits = [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v.flatten().tolist()) for k, v in consts.items()]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref.shape))],
                          initializer=inits + list(extra))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="onnx_core make_cases")
    m.ir_version = 7
    return (name, m, [("X", x)], ref, tuple(consts))


def nchwc_chain_case():
    """Convolutions the host keeps channel-blocked between them (nchwc-layout) with a residual Add + Relu fused
    into the Conv (conv-add-fusion): plain input -> blocked, depthwise and pointwise on blocked values, MaxPool
    reading a plain copy, 24 -> 32 channels (8- and 16-channel blocks on AVX-512), a Conv reading a plain value
    with a blocked Z, a scalar Mul on a blocked value, and a 12-channel output (never blocked)."""
    rng = np.random.default_rng(7)
    def r(*s):
        return (rng.standard_normal(s) * 0.3).astype(np.float32)
    x = r(1, 3, 16, 16)
    w = {"W0": r(24, 3, 3, 3), "B0": r(24), "Wd": r(24, 1, 3, 3), "Wp": r(24, 24, 1, 1), "Bp": r(24),
         "W2": r(32, 24, 3, 3), "W3": r(32, 24, 1, 1), "W4": r(12, 32, 1, 1)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    relu = lambda v: np.maximum(v, 0)
    r0 = relu(conv_ref(x.astype(np.float64), d["W0"], d["B0"], [1, 1], [1, 1, 1, 1], [1, 1], 1))
    d1 = conv_ref(r0, d["Wd"], np.zeros(24), [1, 1], [1, 1, 1, 1], [1, 1], 24)
    r1 = relu(r0 + conv_ref(d1, d["Wp"], d["Bp"], [1, 1], [0, 0, 0, 0], [1, 1], 1))
    m1 = r1.reshape(1, 24, 8, 2, 8, 2).max(axis=(3, 5))
    c2 = conv_ref(r1, d["W2"], np.zeros(32), [2, 2], [1, 1, 1, 1], [1, 1], 1)
    s2 = c2 + conv_ref(m1, d["W3"], np.zeros(32), [1, 1], [0, 0, 0, 0], [1, 1], 1)
    ref = conv_ref(s2 * 0.5, d["W4"], np.zeros(12), [1, 1], [0, 0, 0, 0], [1, 1], 1)
    nodes = [helper.make_node("Conv", ["X", "W0", "B0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "Wd"], ["d1"], group=24, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["d1", "Wp", "Bp"], ["p1"]),
             helper.make_node("Add", ["r0", "p1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["m1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["r1", "W2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["m1", "W3"], ["e2"]),
             helper.make_node("Add", ["c2", "e2"], ["s2"]),
             helper.make_node("Mul", ["s2", "half"], ["h"]),
             helper.make_node("Conv", ["h", "W4"], ["y"])]
    return graph_case("nchwc_conv_chain", nodes, x, ref, w, [helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])])


def winograd_chain_case():
    """3x3 stride-1 convolutions with outputs of 13x13 to 23x23, which onnx-core runs as Winograd F(2x2, 3x3) where
    oneDNN has it (AVX-512; conv.cpp try_winograd): a plain X reordered in, blocked values between the convs, a
    residual Add + Relu fused into the second one (sum post-op on a blocked Z), and an unpadded 3x3 (18 -> 16).
    He-initialised weights keep values near 1, so the check's absolute bound (1e-5) sees Winograd's rounding
    (about 1e-6 of the output's range) on near-zero elements too."""
    rng = np.random.default_rng(11)
    def he(*s):
        return (rng.standard_normal(s) * np.sqrt(2.0 / (s[1] * s[2] * s[3]))).astype(np.float32)
    x = rng.standard_normal((1, 16, 18, 18)).astype(np.float32)
    w = {"W1": he(32, 16, 3, 3), "B1": (rng.standard_normal(32) * 0.1).astype(np.float32), "W2": he(32, 32, 3, 3),
         "B2": (rng.standard_normal(32) * 0.1).astype(np.float32), "W3": he(16, 32, 3, 3)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    relu = lambda v: np.maximum(v, 0)
    pad1 = [1, 1, 1, 1]
    r1 = relu(conv_ref(x.astype(np.float64), d["W1"], d["B1"], [1, 1], pad1, [1, 1], 1))
    r2 = relu(r1 + conv_ref(r1, d["W2"], d["B2"], [1, 1], pad1, [1, 1], 1))
    ref = conv_ref(r2, d["W3"], np.zeros(16), [1, 1], [0, 0, 0, 0], [1, 1], 1)
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=pad1),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], pads=pad1),
             helper.make_node("Add", ["r1", "c2"], ["a2"]),
             helper.make_node("Relu", ["a2"], ["r2"]),
             helper.make_node("Conv", ["r2", "W3"], ["y"])]
    return graph_case("conv_winograd_chain", nodes, x, ref, w)


def blocked_x_plain_y_case():
    """A pointwise Conv whose X the host keeps channel-blocked (the output of a 3x3 Conv + Relu, 16 channels) and
    whose Y cannot be blocked (20 channels), with no more input than output channels: onnx-core reorders X to
    plain and runs the NCHW sgemm path (conv.cpp, "X reordered from blocked"), Relu after it."""
    rng = np.random.default_rng(12)
    def r(*s):
        return (rng.standard_normal(s) * 0.3).astype(np.float32)
    x = r(1, 8, 10, 10)
    w = {"W1": r(16, 8, 3, 3), "B1": r(16), "W2": r(20, 16, 1, 1), "B2": r(20)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    relu = lambda v: np.maximum(v, 0)
    r1 = relu(conv_ref(x.astype(np.float64), d["W1"], d["B1"], [1, 1], [1, 1, 1, 1], [1, 1], 1))
    ref = relu(conv_ref(r1, d["W2"], d["B2"], [1, 1], [0, 0, 0, 0], [1, 1], 1))
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"]),
             helper.make_node("Relu", ["c2"], ["y"])]
    return graph_case("conv_blocked_x_plain_y", nodes, x, ref, w)


def se_block_case(c, hw):
    """A squeeze-and-excitation block on a channel-blocked value (the host's nchwc-layout pass writes
    BlockedGlobalAveragePool and BlockedMul): depthwise 3x3 -> GAP -> 1x1 + Relu -> 1x1 -> Sigmoid -> Mul -> 1x1.
    24 channels are 8-channel blocks on every ISA, 32 are 16-channel blocks on AVX-512: with 16-float vectors an
    8-channel block's odd pixel count (5x5) leaves a scalar tail in the Highway loops (simd_math channel blocks)."""
    rng = np.random.default_rng(13 + c)
    def r(*s):
        return (rng.standard_normal(s) * 0.3).astype(np.float32)
    x = r(1, c, hw, hw)
    w = {"Wd": r(c, 1, 3, 3), "Wr": r(8, c, 1, 1), "Br": r(8), "We": r(c, 8, 1, 1), "Be": r(c), "Wy": r(c, c, 1, 1)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    dw = conv_ref(x.astype(np.float64), d["Wd"], np.zeros(c), [1, 1], [1, 1, 1, 1], [1, 1], c)
    g = dw.mean(axis=(2, 3), keepdims=True)
    e = conv_ref(np.maximum(conv_ref(g, d["Wr"], d["Br"], [1, 1], [0] * 4, [1, 1], 1), 0), d["We"], d["Be"], [1, 1],
                 [0] * 4, [1, 1], 1)
    ref = conv_ref(dw * (1 / (1 + np.exp(-e))), d["Wy"], np.zeros(c), [1, 1], [0] * 4, [1, 1], 1)
    nodes = [helper.make_node("Conv", ["X", "Wd"], ["d"], group=c, pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["d"], ["g"]),
             helper.make_node("Conv", ["g", "Wr", "Br"], ["rc"]),
             helper.make_node("Relu", ["rc"], ["rr"]),
             helper.make_node("Conv", ["rr", "We", "Be"], ["e"]),
             helper.make_node("Sigmoid", ["e"], ["s"]),
             helper.make_node("Mul", ["d", "s"], ["m"]),
             helper.make_node("Conv", ["m", "Wy"], ["y"])]
    return graph_case("se_block_c%d_%dx%d" % (c, hw, hw), nodes, x, ref, w)


def avgpool_blocked_cases():
    """AveragePool on channel-blocked values (nchwc-layout writes com.ophost::BlockedAveragePool; 16 channels: 8-
    and 16-channel blocks). pad_fold: PyTorch's avg_pool2d export, Pad + AveragePool: an all-zero Pad (removed by
    pad-conv-folding) before a 2x2/2 pool, and a Pad of 1 before a 3x3/2 pool (folded into its pads with
    count_include_pad=1), summed, then a 1x1 Conv. ceil_excl: a 3x3/2 pool with pads 1, ceil_mode=1 and
    count_include_pad=0, whose last window reaches past the end padding (divides by its valid inputs)."""
    rng = np.random.default_rng(14)
    def r(*s):
        return (rng.standard_normal(s) * 0.3).astype(np.float32)
    x = r(1, 8, 10, 10)
    w = {"W1": r(16, 8, 3, 3), "B1": r(16), "W2": r(16, 16, 1, 1)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    c1 = np.maximum(conv_ref(x.astype(np.float64), d["W1"], d["B1"], [1, 1], [1, 1, 1, 1], [1, 1], 1), 0)
    pads0 = helper.make_tensor("pads0", TensorProto.INT64, [8], [0] * 8)
    pads1 = helper.make_tensor("pads1", TensorProto.INT64, [8], [0, 0, 1, 1, 0, 0, 1, 1])
    head = [helper.make_node("Conv", ["X", "W1", "B1"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["c1"])]
    a0 = pool_ref(c1, "avg", [2, 2], [2, 2], [0] * 4, [1, 1], 0, 0)
    a1 = pool_ref(np.pad(c1, ((0, 0), (0, 0), (1, 1), (1, 1))), "avg", [3, 3], [2, 2], [0] * 4, [1, 1], 0, 0)
    fold = graph_case("avgpool_blocked_pad_fold", head + [
        helper.make_node("Pad", ["c1", "pads0"], ["p0"]),
        helper.make_node("AveragePool", ["p0"], ["a0"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Pad", ["c1", "pads1"], ["p1"]),
        helper.make_node("AveragePool", ["p1"], ["a1"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Add", ["a0", "a1"], ["s"]),
        helper.make_node("Conv", ["s", "W2"], ["y"])],
        x, conv_ref(a0 + a1, d["W2"], np.zeros(16), [1, 1], [0] * 4, [1, 1], 1), w, (pads0, pads1))
    a2 = pool_ref(c1, "avg", [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 1, 0)
    ceil = graph_case("avgpool_blocked_ceil_excl", head + [
        helper.make_node("AveragePool", ["c1"], ["a2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         ceil_mode=1, count_include_pad=0),
        helper.make_node("Conv", ["a2", "W2"], ["y"])],
        x, conv_ref(a2, d["W2"], np.zeros(16), [1, 1], [0] * 4, [1, 1], 1), w)
    return [fold, ceil]


def winograd_host_case():
    """3x3 stride-1 convolutions on 8-channel blocks that onnx-core runs as its own Winograd F(4x4, 3x3) below
    AVX-512 (winograd.hpp; oneDNN's Winograd elsewhere or the direct kernels): batch 2, asymmetric pads (top 1,
    left 0, bottom 2, right 1) so that the last tiles of a column and of a row are partial (12 x 8 outputs from
    11 x 9), 16 -> 24 channels with LeakyRelu, then 24 -> 24 with a residual Z, Clip(0, 6) and a scale of 0.5 fused
    (the output transform's epilogue), then a 1x1 to 8 channels. He-initialised weights, as in
    conv_winograd_chain."""
    rng = np.random.default_rng(15)
    def he(*s):
        return (rng.standard_normal(s) * np.sqrt(2.0 / (s[1] * s[2] * s[3]))).astype(np.float32)
    x = rng.standard_normal((2, 8, 11, 9)).astype(np.float32)
    w = {"W0": he(16, 8, 3, 3), "W1": he(24, 16, 3, 3), "B1": (rng.standard_normal(24) * 0.1).astype(np.float32),
         "W2": he(24, 24, 3, 3), "W3": he(8, 24, 1, 1)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    pad1 = [1, 1, 1, 1]
    c0 = np.maximum(conv_ref(x.astype(np.float64), d["W0"], np.zeros(16), [1, 1], pad1, [1, 1], 1), 0)
    c1 = conv_ref(c0, d["W1"], d["B1"], [1, 1], [1, 0, 2, 1], [1, 1], 1)
    l1 = np.where(c1 > 0, c1, 0.1 * c1)
    c2 = np.clip(l1 + conv_ref(l1, d["W2"], np.zeros(24), [1, 1], pad1, [1, 1], 1), 0, 6) * 0.5
    ref = conv_ref(c2, d["W3"], np.zeros(8), [1, 1], [0] * 4, [1, 1], 1)
    half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
    lo = helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0])
    hi = helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0])
    nodes = [helper.make_node("Conv", ["X", "W0"], ["c0"], pads=pad1),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "W1", "B1"], ["c1"], pads=[1, 0, 2, 1]),
             helper.make_node("LeakyRelu", ["c1"], ["l1"], alpha=0.1),
             helper.make_node("Conv", ["l1", "W2"], ["c2"], pads=pad1),
             helper.make_node("Add", ["c2", "l1"], ["a2"]),
             helper.make_node("Clip", ["a2", "lo", "hi"], ["k2"]),
             helper.make_node("Mul", ["k2", "half"], ["m2"]),
             helper.make_node("Conv", ["m2", "W3"], ["y"])]
    return graph_case("conv_winograd_host", nodes, x, ref, w, (half, lo, hi))


def winograd_1d_case():
    """3x1 and 1x3 stride-1 convolutions on 8-channel blocks, which onnx-core runs as its own Winograd F(4, 3)
    along the 3-tap side below AVX-512 (winograd.hpp, Taps::k3x1 / k1x3): batch 2; a 3x1 16 -> 24 with top 1 and
    bottom 2 padding (14 output rows from 13: the last tile of each column partial) and LeakyRelu; a 1x3 24 -> 24
    with a residual Z, Clip(0, 6) and a scale of 0.5; a 1x3 with right padding only (9 output columns from 10:
    4 + 4 + 1); a 3x1 padded on its 1-tap side too (not transformed: the direct kernel); then a 1x1 to 8 channels.
    He-initialised weights."""
    rng = np.random.default_rng(16)
    def he(*s):
        return (rng.standard_normal(s) * np.sqrt(2.0 / (s[1] * s[2] * s[3]))).astype(np.float32)
    x = rng.standard_normal((2, 8, 13, 10)).astype(np.float32)
    w = {"W0": he(16, 8, 3, 3), "W1": he(24, 16, 3, 1), "B1": (rng.standard_normal(24) * 0.1).astype(np.float32),
         "W2": he(24, 24, 1, 3), "W3": he(24, 24, 1, 3), "W4": he(16, 24, 3, 1), "W5": he(8, 16, 1, 1)}
    d = {k: v.astype(np.float64) for k, v in w.items()}
    one = [1, 1]
    c0 = np.maximum(conv_ref(x.astype(np.float64), d["W0"], np.zeros(16), one, [1, 1, 1, 1], one, 1), 0)
    c1 = conv_ref(c0, d["W1"], d["B1"], one, [1, 0, 2, 0], one, 1)
    l1 = np.where(c1 > 0, c1, 0.1 * c1)
    m2 = np.clip(l1 + conv_ref(l1, d["W2"], np.zeros(24), one, [0, 1, 0, 1], one, 1), 0, 6) * 0.5
    c3 = conv_ref(m2, d["W3"], np.zeros(24), one, [0, 0, 0, 1], one, 1)
    c4 = conv_ref(c3, d["W4"], np.zeros(16), one, [1, 1, 1, 1], one, 1)
    ref = conv_ref(c4, d["W5"], np.zeros(8), one, [0] * 4, one, 1)
    half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
    lo = helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0])
    hi = helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0])
    nodes = [helper.make_node("Conv", ["X", "W0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "W1", "B1"], ["c1"], pads=[1, 0, 2, 0]),
             helper.make_node("LeakyRelu", ["c1"], ["l1"], alpha=0.1),
             helper.make_node("Conv", ["l1", "W2"], ["c2"], pads=[0, 1, 0, 1]),
             helper.make_node("Add", ["c2", "l1"], ["a2"]),
             helper.make_node("Clip", ["a2", "lo", "hi"], ["k2"]),
             helper.make_node("Mul", ["k2", "half"], ["m2"]),
             helper.make_node("Conv", ["m2", "W3"], ["c3"], pads=[0, 0, 0, 1]),
             helper.make_node("Conv", ["c3", "W4"], ["c4"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c4", "W5"], ["y"])]
    return graph_case("conv_winograd_1d", nodes, x, ref, w, (half, lo, hi))


def reduce_rows_cases():
    """ReduceMean whose reduced axes are trailing and contiguous, which onnx-core sums as rows (reduce.cpp): over
    H and W (21 values a row, not a multiple of its 4 partial sums), over a trailing block with a size-1 kept
    axis between reduced ones, and over every axis; float64 numpy references."""
    rng = np.random.default_rng(18)
    out = []
    for name, shape, axes, keep in [("reduce_mean_rows_hw", (2, 5, 3, 7), [2, 3], 0),
                                    ("reduce_mean_rows_size1_kept", (2, 1, 3), [0, 2], 1),
                                    ("reduce_mean_rows_all", (3, 4, 5), [0, 1, 2], 0)]:
        x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
        ref = x.astype(np.float64).mean(axis=tuple(axes), keepdims=bool(keep))
        nodes = [helper.make_node("ReduceMean", ["X"], ["y"], axes=axes, keepdims=keep)]
        out.append(graph_case(name, nodes, x, ref, {}))
    return out


def write():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    for name, m, inputs, ref, inits in cases():
        onnx.save(m, os.path.join(OUT, name + ".onnx"))
        for n, arr in inputs:
            if n not in inits:
                np.save(os.path.join(OUT, "%s.in.%s.npy" % (name, n)), arr)
        np.save(os.path.join(OUT, name + ".ref.npy"), ref.astype(np.float32))
    print("wrote", len(os.listdir(OUT)), "files to", OUT)


def check(ophost, only=None):
    names = sorted(f[:-5] for f in os.listdir(OUT) if f.endswith(".onnx") and (not only or only in f))
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            ins = ["--input=%s=%s" % (f.split(".in.")[1][:-4], os.path.join(OUT, f)) for f in sorted(os.listdir(OUT))
                   if f.startswith(name + ".in.")]
            od = os.path.join(tmp, name)
            r = subprocess.run([ophost, "run", os.path.join(OUT, name + ".onnx"), *ins, "--threads", "1", "--output-dir", od],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL %-40s ophost: %s" % (name, (r.stderr or r.stdout).strip().splitlines()[-1:]))
                bad += 1
                continue
            got = np.load(os.path.join(od, "y.npy")).astype(np.float64)
            ref = np.load(os.path.join(OUT, name + ".ref.npy")).astype(np.float64)
            if got.shape != ref.shape:
                print("FAIL %-40s shape %s, expected %s" % (name, got.shape, ref.shape))
                bad += 1
                continue
            err = float(np.abs(got - ref).max()) if ref.size else 0.0
            ok = np.allclose(got, ref, rtol=RTOL, atol=ATOL)
            bad += not ok
            print("%s %-40s max abs err %.3g" % ("ok  " if ok else "FAIL", name, err))
    print("%d of %d cases failed" % (bad, len(names)))
    return 1 if bad else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="OPHOST", help="run the cases through OPHOST and compare with the references")
    ap.add_argument("--only", metavar="TEXT", help="with --check: only the cases whose name contains TEXT")
    a = ap.parse_args()
    sys.exit(check(a.check, a.only) if a.check else write())
