#!/usr/bin/python3
"""onnx-core's packed float32 matrix multiply (plugins/onnx-core/gemm_packed.hpp) against float64, through `ophost run`.

One model holds a grid of MatMul nodes with constant 2-D weights (the packed path), MatMul + Add of a constant bias
(rewritten to com.ophost::FusedMatMul by the matmul-bias-fusion pass), explicit com.ophost::FusedMatMul nodes, and
Gemm with constant B (transB 0/1, alpha, beta, C absent / [N] / [1, N] / one value / [M, N]). The shapes cross every
edge of the kernel: rows 1, below and above one micro-kernel (6 at AVX2, 12 at AVX-512) and the 120-row block;
columns below, at and past one panel (16 / 32); depths 1, one K slice, and 2-3 uneven slices of the 256 limit;
A with batch dims folded into rows. Each output element must be within the float32 dot-product error bound
    |y - ref| <= (K + 3) * 2^-24 * (sum_k |a_ik| |w_kj| + |bias_j|) + 1e-37
(any summation order meets it; a wrong element, row or column is off by far more). Run it under
ONEDNN_MAX_CPU_ISA=AVX2 / SSE41 as well: the kernels follow oneDNN's cap.

  /usr/bin/python3 check_matmul_packed.py OPHOST      # exit 1 on any failure; prints the worst error/bound ratio
Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

U = 2.0 ** -24


def cases():
    out = []
    for m in (1, 5, 13, 49, 130):
        for k in (1, 7, 300, 700):
            for n in (1, 15, 16, 17, 33, 100):
                out.append((m, k, n))
    return out


def build(path, rng):
    nodes, inits, inputs, outputs, checks = [], [], [], [], []

    def add_input(name, arr):
        inputs.append((name, arr))

    def add_init(name, arr):
        inits.append(numpy_helper.from_array(arr, name))

    for i, (m, k, n) in enumerate(cases()):
        a = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        if i % 5 == 0:  # batch dims folded into rows
            a = rng.standard_normal((2, 3, m, k)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        kind = ("matmul", "matmul_add", "fused")[i % 3]
        an, wn, yn = "a%d" % i, "w%d" % i, "y%d" % i
        add_input(an, a)
        add_init(wn, w)
        if kind == "matmul":
            nodes.append(helper.make_node("MatMul", [an, wn], [yn]))
            checks.append((yn, a, w, None, k))
        elif kind == "matmul_add":
            add_init("b%d" % i, bias)
            nodes.append(helper.make_node("MatMul", [an, wn], ["h%d" % i]))
            nodes.append(helper.make_node("Add", ["h%d" % i, "b%d" % i], [yn]))
            checks.append((yn, a, w, bias, k))
        else:
            add_init("b%d" % i, bias)
            nodes.append(helper.make_node("FusedMatMul", [an, wn, "b%d" % i], [yn], domain="com.ophost"))
            checks.append((yn, a, w, bias, k))
        outputs.append(yn)
    # Gemm: (M, K, N, transB, alpha, beta, C shape or None)
    gemms = [(1, 1280, 1000, 1, 1.0, 1.0, (1000,)), (49, 300, 17, 0, 0.5, 2.0, (1, 17)), (13, 7, 33, 1, 1.0, 1.0, None),
             (130, 513, 40, 0, 1.5, -1.0, (1,)), (5, 64, 16, 1, 1.0, 0.5, (5, 16)), (2, 3, 1, 0, 1.0, 1.0, (1,))]
    for j, (m, k, n, tb, alpha, beta, cshape) in enumerate(gemms):
        a = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        an, wn, yn = "ga%d" % j, "gw%d" % j, "gy%d" % j
        add_input(an, a)
        add_init(wn, w)
        ins = [an, wn]
        c = None
        if cshape is not None:
            c = rng.standard_normal(cshape).astype(np.float32)
            add_init("gc%d" % j, c)
            ins.append("gc%d" % j)
        nodes.append(helper.make_node("Gemm", ins, [yn], alpha=alpha, beta=beta, transB=tb))
        wk = (w.T if tb else w).astype(np.float64) * alpha
        bias = None if c is None else np.broadcast_to(beta * c.astype(np.float64), (m, n))
        checks.append((yn, a, wk, bias, k))
        outputs.append(yn)
    g = helper.make_graph(
        nodes, "packed",
        [helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(arr.shape)) for nm, arr in inputs],
        [helper.make_tensor_value_info(nm, TensorProto.FLOAT, None) for nm in outputs], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.ophost", 1)])
    model.ir_version = 8
    onnx.save(model, path)
    return inputs, checks


def main():
    ophost = sys.argv[1]
    rng = np.random.default_rng(11)
    failures, worst = 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "packed.onnx")
        inputs, checks = build(model, rng)
        args = []
        for name, arr in inputs:
            p = os.path.join(tmp, name + ".npy")
            np.save(p, arr)
            args.append("--input=%s=%s" % (name, p))
        out = os.path.join(tmp, "out")
        for threads in ("1", "2"):
            r = subprocess.run([ophost, "run", model, *args, "--threads", threads, "--output-dir", out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL ophost run: " + (r.stderr or r.stdout).strip())
                return 1
            for yn, a, w, bias, k in checks:
                y = np.load(os.path.join(out, yn + ".npy"))
                a64, w64 = a.astype(np.float64), np.asarray(w, np.float64)
                ref = a64 @ w64
                mag = np.abs(a64) @ np.abs(w64)
                if bias is not None:
                    ref = ref + bias
                    mag = mag + np.abs(bias)
                if y.shape != ref.shape:
                    print("FAIL %s: shape %s, expected %s" % (yn, y.shape, ref.shape))
                    failures += 1
                    continue
                bound = (k + 3) * U * mag + 1e-37
                ratio = float(np.max(np.abs(y - ref) / bound))
                worst = max(worst, ratio)
                if not ratio <= 1.0:
                    idx = np.unravel_index(np.argmax(np.abs(y - ref) / bound), y.shape)
                    print("FAIL %s (threads %s): A %s, K %d: element %s is %r, expected %r (bound %.3g)" %
                          (yn, threads, a.shape, k, idx, float(y[idx]), float(ref[idx]), float(bound[idx])))
                    failures += 1
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA") or "native"
    print("%d products at %s, 1 and 2 threads: worst error %.3f of the bound, %d failures" %
          (len(checks), isa, worst, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
