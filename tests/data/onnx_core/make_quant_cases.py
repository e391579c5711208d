#!/usr/bin/python3
"""Cases for onnx-core's int8 ops (qconv.cpp: ConvInteger, QLinearConv; qmatmul.cpp: MatMulInteger,
QLinearMatMul; quantize.cpp / quant_simd.cpp: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) and for
the host's qdq-fusion pass (host/passes/qdq_fusion.cpp), with numpy references of ONNX's exact definitions.

Writes, for every case, into quant_cases/:
  <case>.onnx                 a one-node model (opset 13 unless the op needs otherwise; qdq_* are QDQ chains)
  <case>.in.<name>.npy        its graph inputs (seeded; int8 edge values included)
  <case>.ref.npy              the expected output y (its own dtype: uint8 / int8 / int32 / float32)
  <case>.ref.<name>.npy       further expected outputs (DynamicQuantizeLinear's y_scale, y_zero_point)
  <case>.ref_fused.npy        qdq_* cases: what the fused QLinearConv / QLinearMatMul must give exactly
                              (the pass's int32 bias, the exact requantization)
  manifest.json               per case: how each output is compared, which ops must (not) appear after the
                              host's passes, whether the kernels may run reference code

Also: error_* cases (models ophost must refuse at load, the message naming node and input) and float16_* cases
(half-precision graphs, run in float32 by the host's float16-promotion pass).

Comparison: integer outputs exactly (any difference fails: count and first differing index printed); float
outputs within 1e-6 relative; qdq_* cases (a float graph the pass rewrites to an int8 op) within one
quantization step of the float graph's result (|diff| <= 1 as integers; the count of 1-step differences is
printed), and, when the pass fused the chain, exactly equal to ref_fused.

References:
  ConvInteger / MatMulInteger  int64 sums of (x - x_zp) * (w - w_zp); padding contributes 0 ((x - x_zp) padded)
  QLinearConv / QLinearMatMul  scale = f32(x_scale) * f32(w_scale[m]) / f32(y_scale) (float32 ops in that order),
                               y = clip(rint(f32(acc + B) * scale) + y_zp, type range)  (rint: half to even)
  QuantizeLinear               clip(rint(f32(x) / f32(scale)) + zp)
  DequantizeLinear             f32(x - zp) * f32(scale)
  DynamicQuantizeLinear        lo = min(0, min x), hi = max(0, max x) (float32), scale = (hi - lo) / 255,
                               zp = clip(rint((0 - lo) / scale)), y = clip(rint(x / scale) + zp)

  /usr/bin/python3 make_quant_cases.py                              # (re)generate quant_cases/ (deterministic)
  /usr/bin/python3 make_quant_cases.py --check OPHOST               # run every case through `OPHOST run`
  /usr/bin/python3 make_quant_cases.py --check OPHOST --only qlinearconv
  /usr/bin/python3 make_quant_cases.py --check OPHOST --isa avx2    # the same with ONEDNN_MAX_CPU_ISA=AVX2

--check also runs `OPHOST inspect CASE --kernels` on every case: qdq_* cases must show the fused op (and no
float Conv / MatMul), cases that should run on oneDNN must show no REFERENCE, and the w_zero_point-3 and
non-constant-B cases must show REFERENCE for their op (the reference loops quant_ref.cpp reports).

Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from make_cases import conv_ref

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "quant_cases")
FLOAT_RTOL = 1e-6

NP2ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
           np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32,
           np.dtype(np.int64): TensorProto.INT64}
RANGE = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


# ----------------------------------------------------------------------------------------------------------
# references
# ----------------------------------------------------------------------------------------------------------

def conv_acc(x, w, strides, pads, dilations, group):
    """Integer (int64) or float64 convolution of already zero-point-shifted x [N, C, ...] and w [M, C/g, ...];
    padding adds zeros (ONNX: the padded x equals x_zero_point, so (x - x_zp) is 0 there)."""
    return conv_ref(x, w, None, strides, pads, dilations, group)


def same_upper_pads(sp, k, strides, dilations):
    nd = len(sp)
    begin, end = [], []
    for i in range(nd):
        out = -(-sp[i] // strides[i])
        total = max(0, (out - 1) * strides[i] + (k[i] - 1) * dilations[i] + 1 - sp[i])
        begin.append(total // 2)
        end.append(total - total // 2)
    return begin + end


def per_channel(v, m, ndim, axis=0):
    """A scalar or a 1-D per-channel array broadcast along `axis` of an ndim tensor."""
    v = np.asarray(v)
    if v.size == 1:
        return v.reshape([1] * ndim)
    shape = [1] * ndim
    shape[axis] = m
    return v.reshape(shape)


def saturate(v, dtype):
    lo, hi = RANGE[np.dtype(dtype)]
    return np.clip(v, lo, hi).astype(dtype)


def requant_scales(x_scale, w_scale, y_scale):
    """float32 per-channel scales as the kernels compute them: x_scale * w_scale[m] / y_scale, float32 ops."""
    ws = np.asarray(w_scale, dtype=np.float32).reshape(-1)
    return np.array([(np.float32(x_scale) * np.float32(s)) / np.float32(y_scale) for s in ws], dtype=np.float32)


def requantize(acc, scales, y_zp, y_dtype, axis):
    """clip(rint(f32(acc) * scale[c]) + y_zp) with scales along `axis` of acc (acc already includes B)."""
    s = per_channel(scales, acc.shape[axis] if scales.size > 1 else 1, acc.ndim, axis)
    v = acc.astype(np.float32) * s  # float32 x float32
    assert v.dtype == np.float32
    return saturate(np.rint(v).astype(np.float64) + int(y_zp), y_dtype)


def quantize_ref(x, scale, zp, dtype, axis=1):
    """QuantizeLinear: clip(rint(f32(x) / f32(scale)) + zp); per-axis when scale is 1-D."""
    x = np.asarray(x)
    scale = np.asarray(scale, dtype=np.float32)
    zp = np.zeros(scale.shape, dtype=dtype) if zp is None else np.asarray(zp)
    if scale.size > 1:
        ax = axis % x.ndim
        s = per_channel(scale, x.shape[ax], x.ndim, ax)
        z = per_channel(zp.astype(np.int64), x.shape[ax], x.ndim, ax)
    else:
        s, z = scale.reshape(()), zp.astype(np.int64).reshape(())
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        q = np.rint(x.astype(np.float32) / s)
    assert q.dtype == np.float32
    return saturate(q.astype(np.float64) + z, dtype)


def dequantize_ref(x, scale, zp, axis=1):
    """DequantizeLinear: f32(x - zp) * f32(scale); per-axis when scale is 1-D."""
    x = np.asarray(x)
    scale = np.asarray(scale, dtype=np.float32)
    zp = np.zeros(scale.shape, dtype=np.int64) if zp is None else np.asarray(zp).astype(np.int64)
    if scale.size > 1:
        ax = axis % x.ndim
        s = per_channel(scale, x.shape[ax], x.ndim, ax)
        z = per_channel(zp, x.shape[ax], x.ndim, ax)
    else:
        s, z = scale.reshape(()), zp.reshape(())
    y = (x.astype(np.int64) - z).astype(np.float32) * s
    assert y.dtype == np.float32
    return y


def dynamic_quantize_ref(x):
    x = x.astype(np.float32)
    lo = np.float32(min(np.float32(0), x.min())) if x.size else np.float32(0)
    hi = np.float32(max(np.float32(0), x.max())) if x.size else np.float32(0)
    scale = np.float32(np.float32(hi - lo) / np.float32(255))
    if scale == 0:
        zp = np.uint8(0)
        y = np.zeros(x.shape, np.uint8)
    else:
        zp = saturate(np.rint(np.float32(np.float32(0) - lo) / scale).astype(np.float64), np.uint8)
        q = np.rint(x / scale)
        assert q.dtype == np.float32
        y = saturate(q.astype(np.float64) + int(zp), np.uint8)
    return y, np.array(scale, dtype=np.float32), np.array(zp, dtype=np.uint8)


# ----------------------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------------------

def rand_q(rng, dtype, shape, lo=None, hi=None, edges=True):
    """Uniform integers of an 8-bit type within [lo, hi] (default the type's range), with the type's extreme
    values written at a few random places when `edges` (and they lie within [lo, hi])."""
    tlo, thi = RANGE[np.dtype(dtype)]
    lo = tlo if lo is None else lo
    hi = thi if hi is None else hi
    a = rng.integers(lo, hi + 1, size=shape).astype(dtype)
    if edges and a.size >= 8:
        flat = a.reshape(-1)
        idx = rng.choice(a.size, size=max(2, a.size // 16), replace=False)
        for j, i in enumerate(idx):
            flat[i] = (lo, hi)[j % 2]
    return a


def pick_y_params(real, y_dtype, spread=250.0):
    """A y_scale and y_zero_point that map the 2nd..98th percentile of `real` (the float result) onto about
    `spread` steps of y's type, so that most outputs are in range and some saturate at both ends."""
    lo_q, hi_q = RANGE[np.dtype(y_dtype)]
    p_lo, p_hi = np.percentile(real, 2), np.percentile(real, 98)
    if p_hi - p_lo <= 0:
        p_lo, p_hi = float(real.min()) - 1, float(real.max()) + 1
    y_scale = np.float32((p_hi - p_lo) / spread)
    zp = int(np.clip(np.rint((lo_q + hi_q) / 2 - (p_lo + p_hi) / 2 / float(y_scale)), lo_q, hi_q))
    return y_scale, np.array(zp, dtype=y_dtype)


# ----------------------------------------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------------------------------------

def build_model(name, nodes, inputs, inits, outputs, opset=13):
    """inputs: list of (name, array) graph inputs; inits: dict name -> array (initializers);
    outputs: list of (name, array) graph outputs (the references: their dtypes and shapes)."""
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], list(a.shape)) for n, a in outputs],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx_core make_quant_cases")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


class Case:
    def __init__(self, name, model, inputs, refs, compare=None, expect_ops=(), forbid_ops=(), onednn=True,
                 reference_ops=(), fused_ref=None, note="", error=None):
        self.name, self.model, self.inputs, self.refs = name, model, inputs, refs
        # compare: output name -> "exact" | "float" | "step1"
        self.compare = compare or {n: ("float" if a.dtype == np.float32 else "exact") for n, a in refs}
        self.expect_ops, self.forbid_ops = list(expect_ops), list(forbid_ops)
        self.onednn = onednn            # no node may report REFERENCE
        self.reference_ops = list(reference_ops)  # ops that must report REFERENCE
        self.fused_ref = fused_ref
        self.note = note
        self.error = error  # a model ophost must refuse at load: every string here must be in its message


# ----- QLinearConv / ConvInteger -----

def qconv_case(rng, name, *, xs, ws, x_dtype=np.uint8, x_zp=128, w_dtype=np.int8, w_zp=0, per_channel_w=False,
               bias=True, y_dtype=np.uint8, kw=None, qlinear=True, x_range=None, w_range=None, w_sign_blocks=False,
               scales=None, onednn=True, x_zp_input=True, note=""):
    """One QLinearConv (qlinear) or ConvInteger node. w_zp: scalar, or per output channel with per_channel_w.
    x_range / w_range: (lo, hi) of the random values (saturation cases); w_sign_blocks: each output channel's
    weights share a sign (so pairs of products add up). scales: (x_scale, w_scale, y_scale) fixed (ties)."""
    kw = dict(kw or {})
    M = ws[0]
    x = rand_q(rng, x_dtype, xs, *(x_range or (None, None)))
    w = rand_q(rng, w_dtype, ws, *(w_range or (None, None)))
    if w_sign_blocks:
        sign = np.where(rng.random(M) < 0.5, -1, 1).reshape([M] + [1] * (len(ws) - 1))
        w = (np.abs(w.astype(np.int64)) * sign).clip(*RANGE[np.dtype(w_dtype)]).astype(w_dtype)
    nd = len(xs) - 2
    strides = kw.get("strides", [1] * nd)
    dil = kw.get("dilations", [1] * nd)
    if kw.get("auto_pad") == "SAME_UPPER":
        pads = same_upper_pads(xs[2:], ws[2:], strides, dil)
    else:
        pads = kw.get("pads", [0] * 2 * nd)
    group = kw.get("group", 1)
    wzp_arr = np.array([w_zp] * M if per_channel_w else w_zp, dtype=w_dtype)
    xi = x.astype(np.int64) - int(x_zp)
    wi = w.astype(np.int64) - per_channel(wzp_arr.astype(np.int64), M, len(ws), 0)
    acc = conv_acc(xi, wi, strides, pads, dil, group)
    xzp_arr = np.array(x_zp, dtype=x_dtype)
    if not qlinear:
        ref = acc.astype(np.int32)
        assert (ref == acc).all()
        inits = {"W": w}
        node_in = ["X", "W", "x_zero_point" if x_zp_input else "", "w_zero_point"]
        if x_zp_input:
            inits["x_zero_point"] = xzp_arr
        inits["w_zero_point"] = wzp_arr
        while node_in and node_in[-1] == "":
            node_in.pop()
        node = helper.make_node("ConvInteger", node_in, ["y"], **kw)
        m = build_model(name, [node], [("X", x)], inits, [("y", ref)], opset=13)
        return Case(name, m, [("X", x)], [("y", ref)], onednn=onednn,
                    reference_ops=[] if onednn else ["ConvInteger"], note=note)
    if scales is None:
        x_scale = np.float32(rng.uniform(0.01, 0.05))
        w_scale = np.asarray(rng.uniform(0.002, 0.02, size=M) if per_channel_w else rng.uniform(0.002, 0.02), np.float32)
    else:
        x_scale = np.float32(scales[0])
        w_scale = np.array([scales[1]] * M if per_channel_w else scales[1], dtype=np.float32)
    B = None
    full = acc.copy()
    if bias:
        B = rng.integers(-3000, 3000, size=M).astype(np.int32)
        B[0], B[-1] = -50000, 50000
        full = full + B.reshape([1, M] + [1] * nd).astype(np.int64)
    if scales is None:
        real = full.astype(np.float64) * float(x_scale) * per_channel(w_scale.astype(np.float64), M, full.ndim, 1)
        y_scale, y_zp = pick_y_params(real, y_dtype)
    else:
        y_scale, y_zp = np.float32(scales[2]), np.array(scales[3], dtype=y_dtype)
    sc = requant_scales(x_scale, w_scale, y_scale)
    ref = requantize(full, sc, y_zp, y_dtype, axis=1)
    inits = {"x_scale": np.array(x_scale, np.float32), "x_zero_point": xzp_arr, "W": w,
             "w_scale": np.asarray(w_scale, np.float32), "w_zero_point": wzp_arr,
             "y_scale": np.array(y_scale, np.float32), "y_zero_point": np.asarray(y_zp, dtype=y_dtype)}
    names = ["X", "x_scale", "x_zero_point", "W", "w_scale", "w_zero_point", "y_scale", "y_zero_point"]
    if bias:
        inits["B"] = B
        names.append("B")
    node = helper.make_node("QLinearConv", names, ["y"], **kw)
    m = build_model(name, [node], [("X", x)], inits, [("y", ref)], opset=13)
    return Case(name, m, [("X", x)], [("y", ref)], onednn=onednn, note=note)


def qconv_cases():
    rng = np.random.default_rng(1001)
    out = []
    u8, s8 = np.uint8, np.int8
    # QLinearConv
    for name, a in [
        ("qlinearconv_u8zp128_s8w_tensor_bias_pad1", dict(xs=(1, 8, 10, 10), ws=(16, 8, 3, 3), kw=dict(pads=[1, 1, 1, 1]))),
        ("qlinearconv_u8zp0_s8w_channel_nobias_asympad_s8out",
         dict(xs=(1, 6, 9, 11), ws=(12, 6, 3, 3), x_zp=0, per_channel_w=True, bias=False, y_dtype=s8,
              kw=dict(pads=[1, 0, 2, 1]))),
        ("qlinearconv_s8x_s8w_channel_stride2_s8out",
         dict(xs=(1, 8, 11, 12), ws=(16, 8, 3, 3), x_dtype=s8, x_zp=-3, per_channel_w=True, y_dtype=s8,
              kw=dict(strides=[2, 2], pads=[1, 1, 1, 1]))),
        ("qlinearconv_s8x_zp0_s8w_tensor_u8out",
         dict(xs=(1, 4, 8, 8), ws=(8, 4, 3, 3), x_dtype=s8, x_zp=0, kw=dict(pads=[1, 1, 1, 1]))),
        ("qlinearconv_u8w_zp128", dict(xs=(1, 8, 9, 9), ws=(8, 8, 3, 3), w_dtype=u8, w_zp=128, kw=dict(pads=[1, 1, 1, 1]))),
        ("qlinearconv_u8w_zp128_channel_s8out",
         dict(xs=(1, 8, 9, 9), ws=(8, 8, 3, 3), w_dtype=u8, w_zp=128, per_channel_w=True, y_dtype=s8, bias=False)),
        ("qlinearconv_dilation2", dict(xs=(1, 4, 12, 12), ws=(8, 4, 3, 3), per_channel_w=True, kw=dict(dilations=[2, 2], pads=[2, 2, 2, 2]))),
        ("qlinearconv_group2", dict(xs=(1, 8, 9, 9), ws=(12, 4, 3, 3), per_channel_w=True, kw=dict(group=2, pads=[1, 1, 1, 1]))),
        ("qlinearconv_depthwise_c16", dict(xs=(1, 16, 10, 10), ws=(16, 1, 3, 3), per_channel_w=True, kw=dict(group=16, pads=[1, 1, 1, 1]))),
        ("qlinearconv_depthwise_c24_s2_s8x_s8out",
         dict(xs=(1, 24, 11, 11), ws=(24, 1, 5, 5), x_dtype=s8, x_zp=5, per_channel_w=True, y_dtype=s8,
              kw=dict(group=24, strides=[2, 2], pads=[2, 2, 2, 2]))),
        ("qlinearconv_1x1", dict(xs=(1, 32, 7, 7), ws=(24, 32, 1, 1), per_channel_w=True)),
        ("qlinearconv_1x1_nobias_s8out", dict(xs=(1, 16, 6, 5), ws=(32, 16, 1, 1), bias=False, y_dtype=s8)),
        ("qlinearconv_1d", dict(xs=(2, 6, 17), ws=(8, 6, 5), per_channel_w=True, kw=dict(strides=[2], pads=[2, 1]))),
        ("qlinearconv_3d", dict(xs=(1, 4, 5, 6, 4), ws=(6, 4, 3, 3, 2), kw=dict(pads=[1, 1, 0, 1, 1, 1]))),
        ("qlinearconv_3d_s8x_channel_s8out",
         dict(xs=(1, 4, 5, 5, 6), ws=(8, 4, 2, 3, 3), x_dtype=s8, x_zp=-10, per_channel_w=True, y_dtype=s8,
              kw=dict(strides=[1, 2, 1], pads=[0, 1, 1, 1, 1, 1]))),
        ("qlinearconv_batch2", dict(xs=(2, 8, 9, 7), ws=(16, 8, 3, 3), per_channel_w=True, kw=dict(pads=[1, 1, 1, 1]))),
        ("qlinearconv_auto_pad_same_upper",
         dict(xs=(1, 3, 10, 9), ws=(4, 3, 4, 4), kw=dict(auto_pad="SAME_UPPER", strides=[2, 2]))),
        # activations near 255 and weights near +-127 with one sign per output channel: pairs of products sum
        # far beyond int16 (saturating 16-bit pair sums would be visible)
        ("qlinearconv_saturation",
         dict(xs=(1, 16, 8, 8), ws=(16, 16, 3, 3), x_zp=0, x_range=(240, 255), w_range=(100, 127),
              w_sign_blocks=True, per_channel_w=True, kw=dict(pads=[1, 1, 1, 1]))),
        ("qlinearconv_saturation_zp128_s8out",
         dict(xs=(1, 16, 6, 6), ws=(8, 16, 3, 3), x_zp=128, x_range=(240, 255), w_range=(-128, -100), y_dtype=s8)),
        # power-of-two scales: (acc + B) * 1/8 lands on .5 for every acc = 4 mod 8 (round half to even)
        ("qlinearconv_ties_half_even",
         dict(xs=(1, 4, 6, 6), ws=(8, 4, 3, 3), x_range=(118, 138), w_range=(-20, 20), scales=(0.5, 0.25, 1.0, 128),
              kw=dict(pads=[1, 1, 1, 1]))),
        ("qlinearconv_ties_half_even_s8out",
         dict(xs=(1, 4, 6, 6), ws=(8, 4, 3, 3), x_dtype=s8, x_zp=0, x_range=(-10, 10), w_range=(-20, 20),
              scales=(0.25, 0.5, 1.0, -3), y_dtype=s8, per_channel_w=True)),
        # group 2 with 4 input and 8 output channels per group (AVX2's int8 jit takes multiples of 4; the 6 output
        # channels per group of qlinearconv_group2 get oneDNN's ref_int8 there), and the depthwise shape of
        # qlinearconv_depthwise_c24_s2_s8x_s8out with uint8 activations
        ("qlinearconv_group2_oc8", dict(xs=(1, 8, 9, 9), ws=(16, 4, 3, 3), per_channel_w=True, y_dtype=s8,
                                        kw=dict(group=2, strides=[2, 1], pads=[1, 1, 1, 1]))),
        ("qlinearconv_depthwise_c24_s2_u8x",
         dict(xs=(1, 24, 11, 11), ws=(24, 1, 5, 5), x_zp=120, per_channel_w=True,
              kw=dict(group=24, strides=[2, 2], pads=[2, 2, 2, 2]))),
        # depthwise weights are never split (qconv.cpp: oneDNN's depthwise int8 kernel does not pair products in
        # 16 bits): activations near 255, weights near +-127 of one sign per channel
        ("qlinearconv_depthwise_saturation",
         dict(xs=(1, 16, 8, 8), ws=(16, 1, 3, 3), x_zp=0, x_range=(240, 255), w_range=(100, 127),
              w_sign_blocks=True, per_channel_w=True, kw=dict(group=16, pads=[1, 1, 1, 1]))),
    ]:
        out.append(qconv_case(rng, name, **a))
    # ConvInteger
    for name, a in [
        ("convinteger_u8x_zp7_s8w", dict(xs=(1, 8, 9, 9), ws=(16, 8, 3, 3), x_zp=7, kw=dict(pads=[1, 1, 1, 1]))),
        ("convinteger_u8w_zp128", dict(xs=(1, 8, 9, 9), ws=(8, 8, 3, 3), x_zp=7, w_dtype=u8, w_zp=128,
                                       kw=dict(strides=[2, 2], pads=[0, 1, 1, 0]))),
        ("convinteger_s8x_group2_nozp", dict(xs=(1, 8, 7, 7), ws=(8, 4, 3, 3), x_dtype=s8, x_zp=0, x_zp_input=False,
                                             kw=dict(group=2, pads=[1, 1, 1, 1]))),
        ("convinteger_wzp3_reference", dict(xs=(1, 8, 9, 9), ws=(8, 8, 3, 3), x_zp=7, w_zp=3, onednn=False,
                                            kw=dict(pads=[1, 1, 1, 1]))),
        ("convinteger_saturation", dict(xs=(1, 16, 8, 8), ws=(16, 16, 3, 3), x_zp=0, x_range=(240, 255),
                                        w_range=(100, 127), w_sign_blocks=True, kw=dict(pads=[1, 1, 1, 1]))),
        ("convinteger_depthwise_saturation", dict(xs=(1, 16, 8, 8), ws=(16, 1, 3, 3), x_zp=0, x_range=(240, 255),
                                                  w_range=(100, 127), w_sign_blocks=True,
                                                  kw=dict(group=16, pads=[1, 1, 1, 1]))),
        # NCHW and NHWC coincide (one output channel; one output pixel): ConvInteger writes y directly
        ("convinteger_one_output_channel", dict(xs=(2, 8, 7, 7), ws=(1, 8, 3, 3), x_zp=100)),
        ("convinteger_one_output_pixel", dict(xs=(2, 8, 5, 5), ws=(16, 8, 5, 5), x_zp=100)),
    ]:
        out.append(qconv_case(rng, name, qlinear=False, **a))
    return out


# ----- QLinearMatMul / MatMulInteger -----

def qmatmul_case(rng, name, *, a_shape, b_shape, a_dtype=np.uint8, a_zp=128, b_dtype=np.int8, b_zp=0,
                 per_column=False, y_dtype=np.uint8, qlinear=True, a_range=None, b_range=None, b_sign_cols=False,
                 b_input=False, scales=None, a_zp_input=True, note=""):
    a = rand_q(rng, a_dtype, a_shape, *(a_range or (None, None)))
    b = rand_q(rng, b_dtype, b_shape, *(b_range or (None, None)))
    N = b_shape[1] if len(b_shape) == 2 else 1
    if b_sign_cols:
        sign = np.where(rng.random(N) < 0.5, -1, 1)
        b = (np.abs(b.astype(np.int64)) * sign).clip(*RANGE[np.dtype(b_dtype)]).astype(b_dtype)
    bzp = np.array([b_zp] * N if per_column else b_zp, dtype=b_dtype)
    ai = a.astype(np.int64) - int(a_zp)
    bi = b.astype(np.int64) - (bzp.astype(np.int64).reshape(1, N) if per_column else int(b_zp))
    acc = np.matmul(ai, bi)
    azp = np.array(a_zp, dtype=a_dtype)
    graph_inputs = [("A", a)] + ([("B", b)] if b_input else [])
    if not qlinear:
        ref = acc.astype(np.int32)
        assert (ref == acc).all()
        inits = {} if b_input else {"B": b}
        names = ["A", "B"]
        if a_zp_input:
            inits["a_zero_point"] = azp
            names.append("a_zero_point")
        else:
            names.append("")
        inits["b_zero_point"] = bzp
        names.append("b_zero_point")
        node = helper.make_node("MatMulInteger", names, ["y"])
        m = build_model(name, [node], graph_inputs, inits, [("y", ref)], opset=13)
        return Case(name, m, graph_inputs, [("y", ref)], onednn=not b_input,
                    reference_ops=["MatMulInteger"] if b_input else [], note=note)
    if scales is None:
        a_scale = np.float32(rng.uniform(0.01, 0.05))
        b_scale = np.asarray(rng.uniform(0.002, 0.02, size=N) if per_column else rng.uniform(0.002, 0.02), np.float32)
        real = acc.astype(np.float64) * float(a_scale) * (b_scale.astype(np.float64) if per_column else float(b_scale))
        y_scale, y_zp = pick_y_params(real, y_dtype)
    else:
        a_scale = np.float32(scales[0])
        b_scale = np.array([scales[1]] * N if per_column else scales[1], dtype=np.float32)
        y_scale, y_zp = np.float32(scales[2]), np.array(scales[3], dtype=y_dtype)
    sc = requant_scales(a_scale, b_scale, y_scale)
    ref = requantize(acc, sc, y_zp, y_dtype, axis=-1)
    inits = {"a_scale": np.array(a_scale, np.float32), "a_zero_point": azp, "b_scale": np.asarray(b_scale, np.float32),
             "b_zero_point": bzp, "y_scale": np.array(y_scale, np.float32), "y_zero_point": np.asarray(y_zp, dtype=y_dtype)}
    if not b_input:
        inits["B"] = b
    node = helper.make_node("QLinearMatMul", ["A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point",
                                              "y_scale", "y_zero_point"], ["y"])
    m = build_model(name, [node], graph_inputs, inits, [("y", ref)], opset=13)
    return Case(name, m, graph_inputs, [("y", ref)], onednn=not b_input,
                reference_ops=["QLinearMatMul"] if b_input else [], note=note)


def qmatmul_cases():
    rng = np.random.default_rng(2002)
    u8, s8 = np.uint8, np.int8
    out = []
    for name, a in [
        ("qlinearmatmul_u8_s8_tensor", dict(a_shape=(2, 5, 16), b_shape=(16, 8))),
        ("qlinearmatmul_u8_s8_column", dict(a_shape=(2, 5, 16), b_shape=(16, 8), per_column=True)),
        ("qlinearmatmul_s8a", dict(a_shape=(2, 5, 16), b_shape=(16, 8), a_dtype=s8, a_zp=-7, per_column=True)),
        ("qlinearmatmul_s8a_zpm128_s8out", dict(a_shape=(3, 16), b_shape=(16, 8), a_dtype=s8, a_zp=-128, y_dtype=s8)),
        ("qlinearmatmul_b1d", dict(a_shape=(2, 5, 16), b_shape=(16,))),
        ("qlinearmatmul_u8b_zp128", dict(a_shape=(2, 5, 16), b_shape=(16, 8), b_dtype=u8, b_zp=128)),
        ("qlinearmatmul_u8b_zp128_column_s8out", dict(a_shape=(2, 5, 16), b_shape=(16, 8), b_dtype=u8, b_zp=128,
                                                       per_column=True, y_dtype=s8)),
        ("qlinearmatmul_s8out", dict(a_shape=(2, 5, 16), b_shape=(16, 8), y_dtype=s8)),
        ("qlinearmatmul_k33_n19", dict(a_shape=(7, 33), b_shape=(33, 19), per_column=True, a_zp=3)),
        ("qlinearmatmul_saturation", dict(a_shape=(2, 6, 64), b_shape=(64, 24), a_zp=0, a_range=(240, 255),
                                          b_range=(100, 127), b_sign_cols=True, per_column=True)),
        ("qlinearmatmul_ties_half_even", dict(a_shape=(2, 5, 16), b_shape=(16, 8), a_range=(118, 138),
                                              b_range=(-30, 30), scales=(0.5, 0.25, 1.0, 128))),
        ("qlinearmatmul_b_input_reference", dict(a_shape=(2, 5, 16), b_shape=(16, 8), b_input=True)),
    ]:
        out.append(qmatmul_case(rng, name, **a))
    for name, a in [
        ("matmulinteger_u8_zp5_s8", dict(a_shape=(3, 4, 32), b_shape=(32, 24), a_zp=5)),
        ("matmulinteger_s8a", dict(a_shape=(3, 4, 32), b_shape=(32, 24), a_dtype=s8, a_zp=-2)),
        ("matmulinteger_u8b_zp128", dict(a_shape=(3, 4, 32), b_shape=(32, 24), a_zp=5, b_dtype=u8, b_zp=128)),
        ("matmulinteger_no_a_zp", dict(a_shape=(6, 40), b_shape=(40, 10), a_zp=0, a_zp_input=False)),
        ("matmulinteger_saturation", dict(a_shape=(3, 4, 64), b_shape=(64, 24), a_zp=0, a_range=(240, 255),
                                          b_range=(100, 127), b_sign_cols=True)),
        ("matmulinteger_b_input_reference", dict(a_shape=(3, 4, 32), b_shape=(32, 24), a_zp=5, b_input=True)),
    ]:
        out.append(qmatmul_case(rng, name, qlinear=False, **a))
    return out


# ----- QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear -----

def single(name, op, inputs, inits, refs, attrs=None, opset=13):
    node = helper.make_node(op, [n for n in ["X"] + list(inits)], [n for n, _ in refs], **(attrs or {}))
    m = build_model(name, [node], inputs, inits, refs, opset)
    return Case(name, m, inputs, refs, onednn=True)


def quantize_cases():
    rng = np.random.default_rng(3003)
    out = []
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9], np.float32)

    def q(name, x, scale, zp, dtype, axis=None, opset=13):
        scale = np.asarray(scale, np.float32)
        inits = {"y_scale": scale}
        if zp is not None:
            inits["y_zero_point"] = np.asarray(zp, dtype=dtype)
        ref = quantize_ref(x, scale, zp, dtype, 1 if axis is None else axis)
        out.append(single(name, "QuantizeLinear", [("X", x)], inits, [("y", ref)],
                          {} if axis is None else dict(axis=axis), opset))

    # per-tensor, lengths that are not a multiple of 16, values beyond the range and special values
    x = (rng.standard_normal(3 * 37) * 4).astype(np.float32)
    x[:special.size] = special
    x = x.reshape(3, 37)
    q("quantizelinear_u8_zp128", x, 0.03, 128, np.uint8)
    q("quantizelinear_s8_zpm3", x, 0.03, -3, np.int8)
    q("quantizelinear_u8_no_zp", x[:, :29], 0.05, None, np.uint8)
    q("quantizelinear_u8_opset10", x, 0.03, 128, np.uint8, opset=10)
    x1 = (rng.standard_normal(1) * 2).astype(np.float32)
    q("quantizelinear_s8_length1", x1, 0.01, 1, np.int8)
    # exact .5 ties: x / 0.5 = k + 0.5 (round half to even: 2.5 -> 2, -2.5 -> -2, 3.5 -> 4)
    ties = (np.arange(-281, 282, dtype=np.float32) * np.float32(0.25)).astype(np.float32)  # 563 values
    xt = np.concatenate([ties, special]).astype(np.float32)
    q("quantizelinear_ties_u8", xt, 0.5, 128, np.uint8)
    q("quantizelinear_ties_s8", xt, 0.5, 0, np.int8)
    q("quantizelinear_ties_s8_zpm7", xt, 0.5, -7, np.int8)
    # per-axis
    xa = (rng.standard_normal((2, 5, 19)) * 3).astype(np.float32)
    xa.reshape(-1)[:special.size] = special
    sa = rng.uniform(0.01, 0.05, 5).astype(np.float32)
    q("quantizelinear_axis1_u8", xa, sa, rng.integers(0, 256, 5), np.uint8, axis=1)
    q("quantizelinear_axis1_s8", xa, sa, rng.integers(-128, 128, 5), np.int8, axis=1)
    xb = (rng.standard_normal((4, 33)) * 3).astype(np.float32)
    xb[:, 0] = [2.5 * 0.5, -2.5 * 0.5, 0.75, -0.75]  # ties at scale 0.5 for row 0
    sb = np.array([0.5, 0.02, 0.03, 0.25], np.float32)
    q("quantizelinear_axis0_s8", xb, sb, np.array([0, -5, 5, 0]), np.int8, axis=0)
    q("quantizelinear_axis0_u8", xb, sb, np.array([128, 0, 255, 10]), np.uint8, axis=0)
    q("quantizelinear_axis_neg1_u8", xb.T.copy(), sb, np.array([128, 0, 255, 10]), np.uint8, axis=-1)
    # int32 x
    xi = rng.integers(-2000, 2000, size=(5, 21)).astype(np.int32)
    xi.reshape(-1)[:6] = [2 ** 31 - 1, -2 ** 31, 15, -15, 45, -45]  # 15/6 = 2.5, 45/6 = 7.5
    q("quantizelinear_int32x_u8", xi, 6.0, 100, np.uint8)
    q("quantizelinear_int32x_s8", xi, 6.0, -1, np.int8)

    def dq(name, x, scale, zp, axis=None):
        scale = np.asarray(scale, np.float32)
        inits = {"x_scale": scale}
        if zp is not None:
            inits["x_zero_point"] = np.asarray(zp, dtype=x.dtype)
        ref = dequantize_ref(x, scale, zp, 1 if axis is None else axis)
        out.append(single(name, "DequantizeLinear", [("X", x)], inits, [("y", ref)],
                          {} if axis is None else dict(axis=axis)))

    dq("dequantizelinear_u8_zp128", rand_q(rng, np.uint8, (3, 37)), 0.0371, 128)
    dq("dequantizelinear_s8_zpm5", rand_q(rng, np.int8, (3, 37)), 0.0123, -5)
    dq("dequantizelinear_u8_no_zp", rand_q(rng, np.uint8, (77,)), 0.5, None)
    xi = rng.integers(-2 ** 31, 2 ** 31, size=(4, 29), dtype=np.int64).astype(np.int32)
    xi.reshape(-1)[:4] = [2 ** 31 - 1, -2 ** 31, 16777217, -16777217]
    dq("dequantizelinear_int32_zp0", xi, 1.7e-4, np.int32(0))
    dq("dequantizelinear_axis1_u8", rand_q(rng, np.uint8, (2, 5, 19)), rng.uniform(0.01, 0.05, 5),
       rng.integers(0, 256, 5), axis=1)
    dq("dequantizelinear_axis0_s8", rand_q(rng, np.int8, (4, 33)), rng.uniform(0.01, 0.05, 4),
       rng.integers(-128, 128, 4), axis=0)
    dq("dequantizelinear_axis1_int32", rng.integers(-100000, 100000, size=(3, 4, 5)).astype(np.int32),
       rng.uniform(1e-4, 1e-3, 4), np.zeros(4, np.int32), axis=1)

    def dyn(name, x):
        y, s, z = dynamic_quantize_ref(x)
        node = helper.make_node("DynamicQuantizeLinear", ["X"], ["y", "y_scale", "y_zero_point"])
        refs = [("y", y), ("y_scale", s), ("y_zero_point", z)]
        m = build_model(name, [node], [("X", x)], {}, refs, 13)
        out.append(Case(name, m, [("X", x)], refs))

    xm = (rng.standard_normal((7, 53)) * 3 + 0.5).astype(np.float32)
    xm[0, :4] = [0.0, -0.0, 1e-30, -1e-30]
    dyn("dynamicquantizelinear_mixed", xm)
    dyn("dynamicquantizelinear_positive", (rng.random(1000) * 7 + 0.5).astype(np.float32))
    dyn("dynamicquantizelinear_negative", (-rng.random(333) * 2 - 0.1).astype(np.float32))
    dyn("dynamicquantizelinear_zeros", np.zeros((3, 17), np.float32))
    dyn("dynamicquantizelinear_length1", np.array([-2.5], np.float32))
    # Over two of DynamicQuantizeLinear's 65536-value min/max chunks, not a multiple of a vector.
    xl = (rng.standard_normal(140003) * 2 - 0.3).astype(np.float32)
    xl[77777] = 11.0
    xl[140002] = -9.0  # the extremes in a chunk's middle and the last element
    dyn("dynamicquantizelinear_140003", xl)
    return out


# ----- QDQ chains (qdq-fusion) -----

def qdq_conv_case(rng, name, *, act="relu", y_zp=0, y_dtype=np.uint8, x_dtype=np.uint8, x_zp=128, cast_input=False,
                  bias_dq_node=False, xs=(1, 8, 10, 10), ws=(16, 8, 3, 3), kw=None, expect_fused=True):
    """DQ(x) -> Conv(., DQ(W int8, per output channel, axis 0), B) [-> Relu | Clip(0, 6)] -> Q(y).
    cast_input: the input is float X, and the chain starts Q(X) -> Cast(to x's type) -> DQ (PyTorch's form).
    bias_dq_node: B is DequantizeLinear(int32 bias, x_scale * w_scale) in the graph (ONNX Runtime's form)
    instead of its float value."""
    kw = dict(kw or dict(pads=[1, 1, 1, 1]))
    M = ws[0]
    nd = len(xs) - 2
    x_scale = np.float32(0.02)
    w = rand_q(rng, np.int8, ws)
    w_scale = rng.uniform(0.002, 0.01, M).astype(np.float32)
    b32 = rng.integers(-2000, 2000, size=M).astype(np.int32)
    b_scale = (np.float32(x_scale) * w_scale).astype(np.float32)   # the float32 product, as exporters write it
    b_float = (b32.astype(np.float32) * b_scale).astype(np.float32)  # = DequantizeLinear(b32, b_scale)
    if cast_input:
        xf = ((rng.random(xs) * 255 - float(x_zp)) * float(x_scale)).astype(np.float32)
        xf.reshape(-1)[:4] = [-1e3, 1e3, 0.0, -0.0]  # saturate at the input's quantization too
        xq = quantize_ref(xf, x_scale, np.array(x_zp, x_dtype), x_dtype)
    else:
        xq = rand_q(rng, x_dtype, xs)
    dqx = dequantize_ref(xq, x_scale, np.array(x_zp, x_dtype))
    dqw = dequantize_ref(w, w_scale, np.zeros(M, np.int8), axis=0)
    strides, dil = kw.get("strides", [1] * nd), kw.get("dilations", [1] * nd)
    pads, group = kw.get("pads", [0] * 2 * nd), kw.get("group", 1)
    conv = conv_acc(dqx.astype(np.float64), dqw.astype(np.float64), strides, pads, dil, group)
    conv = (conv + b_float.astype(np.float64).reshape([1, M] + [1] * nd)).astype(np.float32)
    if act == "relu":
        a = np.maximum(conv, np.float32(0))
    elif act == "clip6":
        a = np.clip(conv, np.float32(0), np.float32(6))
    else:
        a = conv
    # y's scale: the float result's range over about 250 steps; Clip(0, 6) with u8 zero point 0: 6 / 255
    if act == "clip6":
        y_scale = np.float32(6.0 / 255)
    else:
        y_scale = np.float32((np.percentile(conv, 99) - min(0.0, np.percentile(conv, 1))) / 250)
    yzp = np.array(y_zp, dtype=y_dtype)
    ref = quantize_ref(a, y_scale, yzp, y_dtype)
    # what a fused QLinearConv computes: int32 bias as the pass derives it, exact requantization
    unit = np.float64(x_scale) * w_scale.astype(np.float64)
    bias_i = np.rint(b_float.astype(np.float64) / unit).astype(np.int64)
    acc = conv_acc(xq.astype(np.int64) - int(x_zp), w.astype(np.int64), strides, pads, dil, group)
    acc = acc + bias_i.reshape([1, M] + [1] * nd)
    fused = requantize(acc, requant_scales(x_scale, w_scale, y_scale), yzp, y_dtype, axis=1)

    inits = {"x_scale": np.array(x_scale, np.float32), "x_zero_point": np.array(x_zp, x_dtype), "Wq": w,
             "w_scale": w_scale, "w_zero_point": np.zeros(M, np.int8),
             "y_scale": np.array(y_scale, np.float32), "y_zero_point": yzp}
    nodes = []
    if cast_input:
        nodes += [helper.make_node("QuantizeLinear", ["X", "x_scale", "x_zero_point"], ["xq"]),
                  helper.make_node("Cast", ["xq"], ["xq_cast"], to=NP2ONNX[np.dtype(x_dtype)]),
                  helper.make_node("DequantizeLinear", ["xq_cast", "x_scale", "x_zero_point"], ["xf"])]
        graph_inputs = [("X", xf)]
    else:
        nodes += [helper.make_node("DequantizeLinear", ["X", "x_scale", "x_zero_point"], ["xf"])]
        graph_inputs = [("X", xq)]
    nodes.append(helper.make_node("DequantizeLinear", ["Wq", "w_scale", "w_zero_point"], ["wf"], axis=0))
    if bias_dq_node:
        inits.update({"Bq": b32, "b_scale": b_scale, "b_zero_point": np.zeros(M, np.int32)})
        nodes.append(helper.make_node("DequantizeLinear", ["Bq", "b_scale", "b_zero_point"], ["B"], axis=0))
    else:
        inits["B"] = b_float
    nodes.append(helper.make_node("Conv", ["xf", "wf", "B"], ["c"], **kw))
    q_in = "c"
    if act == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["a"]))
        q_in = "a"
    elif act == "clip6":
        inits.update({"clip_min": np.array(0.0, np.float32), "clip_max": np.array(6.0, np.float32)})
        nodes.append(helper.make_node("Clip", ["c", "clip_min", "clip_max"], ["a"]))
        q_in = "a"
    nodes.append(helper.make_node("QuantizeLinear", [q_in, "y_scale", "y_zero_point"], ["y"]))
    m = build_model(name, nodes, graph_inputs, inits, [("y", ref)], 13)
    if expect_fused:
        return Case(name, m, graph_inputs, [("y", ref)], compare={"y": "step1"}, expect_ops=["QLinearConv"],
                    forbid_ops=["Conv", "Relu", "Clip"] if act else ["Conv"], fused_ref=fused)
    return Case(name, m, graph_inputs, [("y", ref)], compare={"y": "step1"}, fused_ref=None,
                note="fusion optional: the result must be right either way")


def qdq_matmul_case(rng, name, *, a_shape=(2, 5, 16), b_shape=(16, 8), y_dtype=np.uint8, y_zp=128, a_dtype=np.uint8,
                    a_zp=128, per_column=True):
    N = b_shape[1]
    a_scale = np.float32(0.03)
    aq = rand_q(rng, a_dtype, a_shape)
    b = rand_q(rng, np.int8, b_shape)
    b_scale = (rng.uniform(0.002, 0.01, N) if per_column else np.array(0.005)).astype(np.float32)
    bzp = np.zeros(N, np.int8) if per_column else np.array(0, np.int8)
    dqa = dequantize_ref(aq, a_scale, np.array(a_zp, a_dtype))
    dqb = dequantize_ref(b, b_scale, bzp, axis=1)
    mm = np.matmul(dqa.astype(np.float64), dqb.astype(np.float64)).astype(np.float32)
    y_scale = np.float32((np.percentile(mm, 99) - np.percentile(mm, 1)) / 250)
    yzp = np.array(y_zp, y_dtype)
    ref = quantize_ref(mm, y_scale, yzp, y_dtype)
    acc = np.matmul(aq.astype(np.int64) - int(a_zp), b.astype(np.int64))
    fused = requantize(acc, requant_scales(a_scale, b_scale, y_scale), yzp, y_dtype, axis=-1)
    inits = {"a_scale": np.array(a_scale, np.float32), "a_zero_point": np.array(a_zp, a_dtype), "Bq": b,
             "b_scale": b_scale, "b_zero_point": bzp, "y_scale": np.array(y_scale, np.float32), "y_zero_point": yzp}
    nodes = [helper.make_node("DequantizeLinear", ["X", "a_scale", "a_zero_point"], ["af"]),
             helper.make_node("DequantizeLinear", ["Bq", "b_scale", "b_zero_point"], ["bf"], axis=1),
             helper.make_node("MatMul", ["af", "bf"], ["mm"]),
             helper.make_node("QuantizeLinear", ["mm", "y_scale", "y_zero_point"], ["y"])]
    m = build_model(name, nodes, [("X", aq)], inits, [("y", ref)], 13)
    return Case(name, m, [("X", aq)], [("y", ref)], compare={"y": "step1"}, expect_ops=["QLinearMatMul"],
                forbid_ops=["MatMul"], fused_ref=fused)


def qdq_cases():
    rng = np.random.default_rng(4004)
    return [
        qdq_conv_case(rng, "qdq_conv_relu_u8"),
        qdq_conv_case(rng, "qdq_conv_relu_u8_cast_input", cast_input=True),
        qdq_conv_case(rng, "qdq_conv_relu_u8_bias_dq_node", bias_dq_node=True),
        qdq_conv_case(rng, "qdq_conv_clip6_u8", act="clip6", kw=dict(strides=[2, 2], pads=[1, 1, 1, 1])),
        qdq_conv_case(rng, "qdq_conv_relu_yzp10", y_zp=10, expect_fused=False),
        qdq_conv_case(rng, "qdq_conv_relu_s8_zpm128", x_dtype=np.int8, x_zp=0, y_dtype=np.int8, y_zp=-128),
        qdq_conv_case(rng, "qdq_conv_noact_s8out", act=None, y_dtype=np.int8, y_zp=3,
                      xs=(1, 16, 8, 8), ws=(16, 1, 3, 3), kw=dict(group=16, pads=[1, 1, 1, 1])),
        qdq_matmul_case(rng, "qdq_matmul_u8_column"),
        qdq_matmul_case(rng, "qdq_matmul_s8a_tensor_s8out", a_dtype=np.int8, a_zp=-4, y_dtype=np.int8, y_zp=0,
                        per_column=False),
    ]


# ----- bad quantization parameters: refused at load, naming the node, the input and the fix -----

def error_cases():
    """Models with quantization parameters no runtime can honour; ophost must refuse each at load (non-zero exit)
    with a message that names the node and the input (the strings listed per case)."""
    out = []
    f32 = lambda a: numpy_helper.from_array(np.asarray(a, np.float32))

    def one(name, node, inits, x_shape, x_type, error):
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("X", x_type, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        x = np.zeros(x_shape, np.float32 if x_type == TensorProto.FLOAT else np.uint8)
        out.append(Case(name, m, [("X", x)], [], error=error))

    def tensor(name, arr):
        t = numpy_helper.from_array(np.asarray(arr))
        t.name = name
        return t

    q = lambda scale, zp, **kw: helper.make_node("QuantizeLinear", ["X", "s", "z"], ["y"], name="q_node", **kw)
    one("error_quantize_zero_scale", q(0, 0), [tensor("s", np.float32(0)), tensor("z", np.uint8(0))],
        [2, 3], TensorProto.FLOAT, ["q_node", "y_scale[0] is 0", "finite positive"])
    one("error_quantize_negative_axis_scale", q(0, 0, axis=1),
        [tensor("s", np.array([0.5, -1, 2], np.float32)), tensor("z", np.zeros(3, np.uint8))],
        [2, 3], TensorProto.FLOAT, ["q_node", "y_scale[1] is -1"])
    one("error_quantize_axis_length", q(0, 0, axis=1),
        [tensor("s", np.array([0.5, 1], np.float32)), tensor("z", np.zeros(2, np.uint8))],
        [2, 3], TensorProto.FLOAT, ["q_node", "per-axis y_scale has 2 values but axis 1 of x has 3"])
    one("error_quantize_axis_range", q(0, 0, axis=4),
        [tensor("s", np.array([0.5, 1, 2], np.float32)), tensor("z", np.zeros(3, np.uint8))],
        [2, 3], TensorProto.FLOAT, ["q_node", "axis 4 is out of range"])
    one("error_dequantize_zero_point_length",
        helper.make_node("DequantizeLinear", ["X", "s", "z"], ["y"], name="dq_node", axis=1),
        [tensor("s", np.array([0.5, 1, 2], np.float32)), tensor("z", np.zeros(2, np.uint8))],
        [2, 3], TensorProto.UINT8, ["dq_node", "x_zero_point has 2 values but x_scale has 3"])
    conv_inits = lambda xs, ws: [tensor("xs", np.float32(xs)), tensor("xz", np.uint8(128)),
                                 tensor("W", np.ones((4, 2, 1, 1), np.int8)), tensor("ws", np.asarray(ws, np.float32)),
                                 tensor("wz", np.int8(0)), tensor("ys", np.float32(0.1)), tensor("yz", np.uint8(0))]
    conv = helper.make_node("QLinearConv", ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz"], ["y"], name="conv_node")
    one("error_qlinearconv_zero_x_scale", conv, conv_inits(0.0, 0.5), [1, 2, 3, 3], TensorProto.UINT8,
        ["conv_node", "x_scale[0] is 0"])
    one("error_qlinearconv_w_scale_length", conv, conv_inits(0.5, [0.5, 0.5, 0.5]), [1, 2, 3, 3], TensorProto.UINT8,
        ["conv_node", "w_scale has 3 values", "one value per output channel (4)"])
    one("error_qlinearconv_nan_w_scale", conv, conv_inits(0.5, [0.5, np.nan, 0.5, 0.5]), [1, 2, 3, 3],
        TensorProto.UINT8, ["conv_node", "w_scale[1] is nan"])
    return out


# ----- half-precision graphs (the host's float16-promotion pass: the graph runs in float32) -----

def float16_cases():
    """float16 / bfloat16 graphs whose float32 evaluation is exact (products and sums of few-bit values), so the
    float16 output must equal numpy's float32 result rounded to float16 exactly."""
    rng = np.random.default_rng(16)
    out = []
    # float16 in and out, float16 weights: y = Relu(x * w + c) with c a bfloat16 constant cast to float16.
    x = (rng.integers(-8, 8, (3, 5)) / 4).astype(np.float16)
    w = (rng.integers(-8, 8, (5,)) / 8).astype(np.float16)
    c = helper.make_tensor("c", TensorProto.BFLOAT16, [1], [0.75])  # (onnx converts the float to bfloat16 bits)
    nodes = [helper.make_node("Mul", ["X", "w"], ["m"]), helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT16),
             helper.make_node("Add", ["m", "cf"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    g = helper.make_graph(nodes, "float16_graph", [helper.make_tensor_value_info("X", TensorProto.FLOAT16, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, x.shape)],
                          [numpy_helper.from_array(w, "w"), c])
    ref = np.maximum(x.astype(np.float32) * w.astype(np.float32) + np.float32(0.75), 0).astype(np.float16)
    out.append(Case("float16_graph", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), [("X", x)],
                    [("y", ref)], compare={"y": "float"}))
    # onnxconverter-common's keep_io_types layout: float32 in and out, Casts to and from float16 at the edges,
    # a float16 MatMul weight between.
    x = (rng.integers(-4, 4, (2, 4)) / 2).astype(np.float32)
    b = (rng.integers(-4, 4, (4, 3)) / 4).astype(np.float16)
    nodes = [helper.make_node("Cast", ["X"], ["xh"], to=TensorProto.FLOAT16), helper.make_node("MatMul", ["xh", "B"], ["mh"]),
             helper.make_node("Cast", ["mh"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "float16_keep_io", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [numpy_helper.from_array(b, "B")])
    ref = (x.astype(np.float16).astype(np.float32) @ b.astype(np.float32)).astype(np.float16).astype(np.float32)
    out.append(Case("float16_keep_io", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), [("X", x)],
                    [("y", ref)], compare={"y": "float"}))
    return out


def cases():
    return qconv_cases() + qmatmul_cases() + quantize_cases() + qdq_cases() + error_cases() + float16_cases()


# ----------------------------------------------------------------------------------------------------------
# write / check
# ----------------------------------------------------------------------------------------------------------

def ref_file(case, out_name):
    return case + (".ref.npy" if out_name == "y" else ".ref.%s.npy" % out_name)


def write():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    manifest = {}
    all_cases = cases()
    assert len({c.name for c in all_cases}) == len(all_cases), "duplicate case names"
    for c in all_cases:
        onnx.save(c.model, os.path.join(OUT, c.name + ".onnx"))
        for n, arr in c.inputs:
            np.save(os.path.join(OUT, "%s.in.%s.npy" % (c.name, n)), arr)
        for n, arr in c.refs:
            np.save(os.path.join(OUT, ref_file(c.name, n)), arr)
        if c.fused_ref is not None:
            np.save(os.path.join(OUT, c.name + ".ref_fused.npy"), c.fused_ref)
        manifest[c.name] = {"compare": c.compare, "expect_ops": c.expect_ops, "forbid_ops": c.forbid_ops,
                            "onednn": c.onednn, "reference_ops": c.reference_ops, "note": c.note}
        if c.error:
            manifest[c.name]["error"] = c.error
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %d cases (%d files) to %s" % (len(all_cases), len(os.listdir(OUT)), OUT))
    return 0


def compare(got, ref, mode):
    """Returns (ok, message)."""
    if got.shape != ref.shape:
        return False, "shape %s, expected %s" % (got.shape, ref.shape)
    if got.dtype != ref.dtype:
        return False, "dtype %s, expected %s" % (got.dtype, ref.dtype)
    if ref.size == 0:
        return True, "empty"
    if mode == "float":
        g, r = got.astype(np.float64), ref.astype(np.float64)
        same = (g == r) | (np.abs(g - r) <= FLOAT_RTOL * np.abs(r))
        bad = np.flatnonzero(~same.reshape(-1))
        rel = float(np.max(np.abs(g - r) / np.maximum(np.abs(r), 1e-30))) if ref.size else 0.0
        if bad.size:
            i = bad[0]
            return False, "%d of %d differ beyond %g relative; first at %s: got %r, expected %r" % (
                bad.size, ref.size, FLOAT_RTOL, np.unravel_index(i, ref.shape), g.reshape(-1)[i], r.reshape(-1)[i])
        return True, "max rel err %.3g" % rel
    d = got.astype(np.int64) - ref.astype(np.int64)
    if mode == "exact":
        bad = np.flatnonzero(d.reshape(-1))
        if bad.size:
            i = bad[0]
            return False, "%d of %d differ (max |diff| %d); first at %s: got %d, expected %d" % (
                bad.size, ref.size, int(np.abs(d).max()), np.unravel_index(i, ref.shape),
                got.reshape(-1)[i], ref.reshape(-1)[i])
        return True, "exact (%d values)" % ref.size
    # step1
    far = np.flatnonzero(np.abs(d.reshape(-1)) > 1)
    ones = int(np.count_nonzero(np.abs(d) == 1))
    if far.size:
        i = far[0]
        return False, "%d of %d differ by more than 1 step (max %d), %d by 1; first at %s: got %d, expected %d" % (
            far.size, ref.size, int(np.abs(d).max()), ones, np.unravel_index(i, ref.shape),
            got.reshape(-1)[i], ref.reshape(-1)[i])
    return True, "within 1 step of the float graph, %d of %d differ by exactly 1" % (ones, ref.size)


def inspect_kernels(ophost, model, env):
    """`OPHOST inspect MODEL --kernels`: returns (rows [(node, op, implementation, reference)], error)."""
    r = subprocess.run([ophost, "inspect", model, "--kernels", "--threads", "1"], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip().splitlines()[-1:]
    rows, on = [], False
    for line in r.stdout.splitlines():
        if line.startswith("kernels (after one run):"):
            on = True
            continue
        if not on:
            continue
        if line.startswith("kernels:"):
            break
        parts = line.split()
        if not parts or parts[0] == "node":
            continue
        rows.append((parts[0], parts[1], " ".join(parts[4:]), line.rstrip().endswith("REFERENCE")))
    return rows, None


def check(ophost, only=None, isa=None, threads=1):
    with open(os.path.join(OUT, "manifest.json")) as f:
        manifest = json.load(f)
    names = sorted(n for n in manifest if not only or only in n)
    env = dict(os.environ)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa.upper()
    print("ophost %s, ONEDNN_MAX_CPU_ISA=%s, --threads %d, %d cases" % (ophost, env.get("ONEDNN_MAX_CPU_ISA", "(native)"),
                                                                        threads, len(names)))
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            meta = manifest[name]
            problems, notes = [], []
            fused_cmp = None
            model = os.path.join(OUT, name + ".onnx")
            ins = ["--input=%s=%s" % (f[len(name) + 4:-4], os.path.join(OUT, f)) for f in sorted(os.listdir(OUT))
                   if f.startswith(name + ".in.")]
            od = os.path.join(tmp, name)
            r = subprocess.run([ophost, "run", model, *ins, "--threads", str(threads), "--output-dir", od],
                               capture_output=True, text=True, env=env)
            if meta.get("error"):  # must be refused, with a message naming what is wrong
                msg = (r.stderr + r.stdout).strip()
                if r.returncode == 0:
                    problems.append("ran (exit 0); expected a load error")
                elif r.returncode not in (1, 2):
                    problems.append("exit %d (a crash?): %s" % (r.returncode, msg.splitlines()[-1:]))
                missing = [e for e in meta["error"] if e not in msg]
                if missing:
                    problems.append("message lacks %s: %s" % (missing, msg.splitlines()[-1:]))
                else:
                    notes.append("refused: " + (msg.splitlines()[-1] if msg else ""))
                print("%s %-50s %s" % ("FAIL" if problems else "ok  ", name, " | ".join(problems + notes)))
                if problems:
                    failed.append(name)
                continue
            if r.returncode != 0:
                problems.append("ophost run: %s" % (r.stderr or r.stdout).strip().splitlines()[-1:])
            else:
                for out_name, mode in sorted(meta["compare"].items()):
                    ref = np.load(os.path.join(OUT, ref_file(name, out_name)))
                    path = os.path.join(od, out_name + ".npy")
                    if not os.path.exists(path):
                        problems.append("%s: no output file" % out_name)
                        continue
                    got = np.load(path)
                    ok, msg = compare(got, ref, mode)
                    (notes if ok else problems).append("%s: %s" % (out_name, msg))
                    fused_path = os.path.join(OUT, name + ".ref_fused.npy")
                    if ok and mode == "step1" and os.path.exists(fused_path):
                        fused_cmp = compare(got, np.load(fused_path), "exact")
            rows, err = inspect_kernels(ophost, model, env)
            if rows is None:
                problems.append("ophost inspect --kernels: %s" % err)
            else:
                ops = [op for _, op, _, _ in rows]
                refs = [(node, op) for node, op, _, ref in rows if ref]
                fused = any(op in ("QLinearConv", "QLinearMatMul") for op in ops) and name.startswith("qdq_")
                for op in meta["expect_ops"]:
                    if op not in ops:
                        problems.append("fusion: %s not among the nodes %s" % (op, ops))
                for op in meta["forbid_ops"]:
                    if op in ops:
                        problems.append("fusion: %s still among the nodes %s" % (op, ops))
                if meta["onednn"] and refs:
                    problems.append("REFERENCE reported by %s" % refs)
                for op in meta["reference_ops"]:
                    if not any(o == op for _, o in refs):
                        problems.append("%s expected to report REFERENCE (reference loops), got %s" % (
                            op, [(o, impl) for _, o, impl, _ in rows]))
                impls = sorted({"%s: %s" % (op, impl) for _, op, impl, _ in rows if impl != "-"})
                if impls:
                    notes.append("kernels " + "; ".join(impls))
                if name.startswith("qdq_"):
                    notes.append("nodes %s%s" % (ops, "" if fused else " (not fused)"))
                    if meta["note"]:
                        notes.append(meta["note"])
                    if fused_cmp is not None:
                        fused_ok, fmsg = fused_cmp
                        fmsg = "vs the fused int8 reference: " + fmsg
                        if fused:
                            (notes if fused_ok else problems).append(fmsg)
                        else:
                            notes.append("not fused (" + fmsg + ")")
            status = "FAIL" if problems else "ok  "
            print("%s %-50s %s" % (status, name, " | ".join(problems + notes)))
            if problems:
                failed.append(name)
    print("%d of %d cases failed%s" % (len(failed), len(names), (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="OPHOST", help="run the cases through OPHOST and compare with the references")
    ap.add_argument("--only", metavar="TEXT", help="with --check: only the cases whose name contains TEXT")
    ap.add_argument("--isa", metavar="ISA", help="with --check: run with ONEDNN_MAX_CPU_ISA=ISA (e.g. avx2)")
    ap.add_argument("--threads", type=int, default=1, help="with --check: ophost run --threads (default 1)")
    a = ap.parse_args()
    sys.exit(check(a.check, a.only, a.isa, a.threads) if a.check else write())
