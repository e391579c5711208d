#!/usr/bin/python3
"""Accuracy of onnx-core's vectorised float32 math (plugins/onnx-core/simd_math.hpp) through `ophost run`.

For Sigmoid, Tanh, Exp, Log, Erf, Gelu (approximate "none" and "tanh"), Softmax and Pow(x, 2) it runs a one-node model on a sweep of float32 inputs
(Swish: Conv 1x1 by 1.0, Sigmoid, Mul, which conv-activation-fusion makes one FusedConv running simd_math::silu)
(every power-of-two range from subnormals to the overflow edges, random values, +-0, +-inf, NaN, the overflow and
underflow thresholds) and compares each output with the float64 result rounded to float32:
  - finite results: error in ULPs of the float32 reference, at most the bound below (the header's figures);
  - special values exactly: NaN stays NaN, infinities and signed zeros as std::exp/std::log/... give them (Gelu:
    the limits, gelu(+inf) = +inf, gelu(-inf) = -0).
Run it under ONEDNN_MAX_CPU_ISA=AVX2 / SSE41 to check the lower Highway targets (the kernels follow oneDNN's cap).

  /usr/bin/python3 check_simd_math.py OPHOST      # exit 1 on any failure; prints the max ULP error per op
Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

GELU_BOUND = 3
# Max error in ULPs of the float32 reference (measured: see simd_math.hpp; a change that worsens one fails here).
BOUNDS = {"Sigmoid": 4, "Tanh": 4, "Exp": 1, "Log": 4, "Erf": 3, "Gelu": GELU_BOUND, "GeluTanh": 160, "Pow2": 0,
          "Swish": 4}
# Swish below x = -87 (|result| < 1.5e-36): counted in units of max(ULP(result), 1.5e-36), see simd_math.hpp.
# Gelu against x * erfc(-x / sqrt(2)) / 2 (exact, no cancellation), in units of max(ULP(result), ULP(1) |x| / 2)
# (see ulp_errors' floor). GeluTanh: the
# float32 rounding of u = sqrt(2/pi) (x + 0.044715 x^3) is amplified |2u| times by sigmoid(2u)'s tail (14 ULP on
# [-3, 0], 155 around x = -9.7; 2 ULP for x >= 0).


def sweep():
    rng = np.random.default_rng(7)
    mags = [np.float32(2.0) ** e for e in range(-149, 128)]
    base = np.concatenate([np.array(mags, np.float32) * f for f in (1.0, 1.37, 1.9)])
    base = base[np.isfinite(base)]
    vals = np.concatenate([base, -base,
                           rng.uniform(-10, 10, 20000).astype(np.float32),
                           rng.uniform(-110, 110, 20000).astype(np.float32),
                           rng.standard_normal(20000).astype(np.float32) * 3,
                           np.linspace(-5, 5, 20011, dtype=np.float32),
                           rng.uniform(-16, 16, 20000).astype(np.float32),  # Gelu's tail, to its underflow
                           np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283935546875, 88.7228469848632,
                                     -87.33654, -103.97208, -104.0, -150.0, 0.921875, -0.921875, 3.92, 3.9199998,
                                     1e-38, -1e-38, 1.17549435e-38, -14.37, -14.5, -10.9, 14.5], np.float32)])
    return vals.astype(np.float32)


def reference(op, x):
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if op == "Sigmoid":
            return np.where(xd >= 0, 1 / (1 + np.exp(-xd)), np.exp(xd) / (1 + np.exp(xd)))
        if op == "Tanh":
            return np.tanh(xd)
        if op == "Exp":
            return np.exp(xd)
        if op == "Swish":  # x * sigmoid(x) of the Conv's output (x + 0: -0 becomes +0); the limits at +-inf
            xd = xd + 0.0
            return np.where(np.isneginf(xd), -0.0, np.where(np.isposinf(xd), np.inf, xd / (1 + np.exp(-xd))))
        if op == "Log":
            return np.log(xd)
        if op == "Erf":
            return np.array([math.erf(v) if np.isfinite(v) else (np.sign(v) if np.isinf(v) else v) for v in xd])
        if op == "Pow2":
            return xd * xd
        if op == "Gelu":
            g = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) if np.isfinite(v) else v for v in xd])
            return np.where(xd == -np.inf, -0.0, g)
        if op == "GeluTanh":  # 0.5 x (1 + tanh(u)) as x * sigmoid(2u), without the cancellation for x < 0
            u2 = 2 * math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)
            e = np.exp(-np.abs(u2))
            g = xd * np.where(u2 >= 0, 1 / (1 + e), e / (1 + e))
            return np.where(xd == -np.inf, -0.0, np.where(xd == np.inf, np.inf, g))
    raise ValueError(op)


def ulp_errors(got, ref64, floor=None):
    """Errors in ULPs of the float32 reference; `floor` (per element) raises the unit where an absolute error
    floor applies (Gelu's cancellation in 1 + erf)."""
    with np.errstate(over="ignore"):  # exp overflows to inf in float32 as it should
        ref = ref64.astype(np.float32)  # the correctly rounded float32 result (double rounding aside: negligible)
    fin = np.isfinite(ref) & np.isfinite(got)
    r, g = ref[fin].astype(np.float64), got[fin].astype(np.float64)
    spacing = np.spacing(np.abs(ref[fin])).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.finfo(np.float32).smallest_subnormal))
    if floor is not None:
        spacing = np.maximum(spacing, floor[fin])
    return np.abs(g - r) / spacing, ref


def run(ophost, model, feeds, tmp):
    ins = []
    for name, arr in feeds.items():
        p = os.path.join(tmp, name + ".npy")
        np.save(p, arr)
        ins.append("--input=%s=%s" % (name, p))
    out = os.path.join(tmp, "out")
    r = subprocess.run([ophost, "run", model, *ins, "--threads", "1", "--output-dir", out], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("ophost run failed: " + (r.stderr or r.stdout).strip())
    return np.load(os.path.join(out, "y.npy"))


def unary_model(op, n, path):
    opset = 13
    inits = []
    if op == "Pow2":
        node = helper.make_node("Pow", ["x", "two"], ["y"])
        inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])]
    elif op == "Swish":
        conv = helper.make_node("Conv", ["x4", "w"], ["c"])
        nodes = [helper.make_node("Reshape", ["x", "shape4"], ["x4"]), conv,
                 helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y4"]),
                 helper.make_node("Reshape", ["y4", "shape1"], ["y"])]
        inits = [helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0]),
                 helper.make_tensor("shape4", TensorProto.INT64, [4], [1, 1, 1, n]),
                 helper.make_tensor("shape1", TensorProto.INT64, [1], [n])]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], inits)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
        return
    elif op.startswith("Gelu"):
        node = helper.make_node("Gelu", ["x"], ["y"], approximate="tanh" if op == "GeluTanh" else "none")
        opset = 20
    else:
        node = helper.make_node(op, ["x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)


def check_unary(ophost, op, x, tmp):
    path = os.path.join(tmp, op + ".onnx")
    unary_model(op, x.size, path)
    if op == "Swish":  # the three nodes must have become one FusedConv that runs simd_math::silu
        r = subprocess.run([ophost, "inspect", path, "--kernels"], capture_output=True, text=True)
        if "then SiLU (Highway)" not in r.stdout:
            return 0.0, ["the model did not run FusedConv with SiLU after the primitive:\n" + r.stdout + r.stderr]
    got = run(ophost, path, {"x": x}, tmp)
    ref64 = reference(op, x)
    # Gelu computes Gelu-20's formula 0.5 x (1 + erf(x / sqrt(2))) as written (simd_math.cpp GeluV): where 1 + erf
    # cancels (x < -1) its error is counted in units of ULP(1) * |x| / 2, the rounding of the sum scaled by x / 2.
    floor = np.abs(x.astype(np.float64)) * 0.5 * 2.0 ** -23 if op == "Gelu" else None
    if op == "Swish":
        floor = np.where(x < -87, 1.5e-36, 0.0)
    errs, ref = ulp_errors(got, ref64, floor)
    problems = []
    # Specials: where the reference is NaN / inf / zero, the result must be exactly that (sign included).
    nan_ref = np.isnan(ref)
    if not np.array_equal(np.isnan(got), nan_ref):
        i = np.flatnonzero(np.isnan(got) != nan_ref)[0]
        problems.append("NaN mismatch at x=%r: got %r, expected %r" % (x[i], got[i], ref[i]))
    inf = np.isinf(ref) | np.isinf(got)
    if np.any(got[inf] != ref[inf]):
        i = np.flatnonzero(inf)[np.flatnonzero(got[inf] != ref[inf])[0]]
        problems.append("infinity mismatch at x=%r: got %r, expected %r" % (x[i], got[i], ref[i]))
    zero = ref == 0
    if np.any(np.signbit(got[zero]) != np.signbit(ref[zero])):
        i = np.flatnonzero(zero)[np.flatnonzero(np.signbit(got[zero]) != np.signbit(ref[zero]))[0]]
        problems.append("signed zero mismatch at x=%r: got %r, expected %r" % (x[i], got[i], ref[i]))
    worst = float(errs.max()) if errs.size else 0.0
    if worst > BOUNDS[op]:
        fin = np.flatnonzero(np.isfinite(ref) & np.isfinite(got))
        i = fin[int(np.argmax(errs))]
        problems.append("%.2f ULP at x=%r (got %r, expected %r), bound %d" % (worst, x[i], got[i], ref[i], BOUNDS[op]))
    return worst, problems


def check_softmax(ophost, tmp):
    """Rows of 1001 with special rows, then row lengths around the vector widths (4, 8, 16 floats: shorter than a
    vector, one, a multiple, a partial last vector; 49 as in Swin-T's attention), then masked attention rows."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 1001)) * 8).astype(np.float32)
    x[5, :] = 0.0
    x[6, 17] = 90.0  # exp of the shifted values never overflows
    x[7, :] = -1e30
    inputs = [x] + [(rng.standard_normal((7, n)) * 8).astype(np.float32) for n in (1, 3, 7, 8, 15, 16, 17, 49, 64)]
    masked = rng.uniform(-1, 1, (48, 49)).astype(np.float32)  # Swin-T's shifted windows: -100 added to masked
    masked[:, 20:] -= 100.0                                    # scores (exp 0 there, not subnormal)
    masked[40:, :] = -np.linspace(0, 90, 49, dtype=np.float32)  # x - max from 0 past Softmax's exp cut-off (-80)
    inputs.append(masked)
    worst, problems = 0.0, []
    for i, x in enumerate(inputs):
        g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
        path = os.path.join(tmp, "softmax%d.onnx" % i)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        got = run(ophost, path, {"x": x}, tmp).astype(np.float64)
        xd = x.astype(np.float64)
        e = np.exp(xd - xd.max(axis=-1, keepdims=True))
        ref = e / e.sum(axis=-1, keepdims=True)
        err = float(np.abs(got - ref).max())
        rel = float((np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30))[ref > 1e-30].max())
        worst = max(worst, rel)
        if not (err <= 1e-6 and rel <= 1e-5):
            problems.append("rows of %d: max abs error %.3g, max rel error %.3g" % (x.shape[1], err, rel))
    return worst, problems


def main():
    ophost = sys.argv[1]
    x = sweep()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for op in ("Sigmoid", "Tanh", "Exp", "Log", "Erf", "Gelu", "GeluTanh", "Pow2", "Swish"):
            worst, problems = check_unary(ophost, op, x, tmp)
            print("%s %-8s max %.2f ULP over %d inputs%s" % ("ok  " if not problems else "FAIL", op, worst, x.size,
                                                             "".join("\n     " + p for p in problems)))
            bad += bool(problems)
        rel, problems = check_softmax(ophost, tmp)
        print("%s Softmax  max rel error %.3g%s" % ("ok  " if not problems else "FAIL", rel,
                                                    "".join("\n     " + p for p in problems)))
        bad += bool(problems)
    print("ISA cap: %s" % os.environ.get("ONEDNN_MAX_CPU_ISA", "none (native)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
