#!/usr/bin/python3
"""Fits the erf approximation of plugins/onnx-core/simd_math.cpp and prints its coefficients and errors.

    erf(x) = x * P(x^2)                 for |x| < 0.921875  (P: degree 5, weighted relative least squares)
    erf(x) = sign(x) * (1 - exp(Q(c)))   above, c = min(|x|, 3.92)   (Q: degree 8 fit of log(erfc))
Both are least-squares fits on Chebyshev nodes (float64), then evaluated in float32 as the kernel does to report
the max error. Needs numpy.   /usr/bin/python3 tools/dev/fit_erf.py
"""
import math

import numpy as np

erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)
SPLIT, CAP = 0.921875, 3.92


def horner(coefs, t):
    p = np.float32(0)
    for c in coefs[::-1]:
        p = p * t + np.float32(c)
    return p


def main():
    x = np.cos(np.linspace(0, np.pi, 4000)) * SPLIT / 2 + SPLIT / 2
    y = np.where(x > 0, erf(x) / np.where(x > 0, x, 1), 2 / np.sqrt(np.pi))
    p = np.polynomial.polynomial.polyfit(x * x, y, 5, w=1 / y)
    xs = np.linspace(1e-6, SPLIT, 200001).astype(np.float32)
    got = (xs * horner(p, xs * xs)).astype(np.float32)
    print("P (x^0 first):", [float(np.float32(v)) for v in p])
    print("  max relative error below the split: %.3g" % np.max(np.abs(got - erf(xs)) / erf(xs)))
    x = np.cos(np.linspace(0, np.pi, 4000)) * (CAP - SPLIT) / 2 + (CAP + SPLIT) / 2
    q = np.polynomial.polynomial.polyfit(x, np.log(erfc(x)), 8)
    xs = np.linspace(SPLIT, 6, 200001).astype(np.float32)
    got = (np.float32(1) - np.exp(horner(q, np.minimum(xs, np.float32(CAP))).astype(np.float32))).astype(np.float32)
    print("Q (x^0 first):", [float(np.float32(v)) for v in q])
    print("  max absolute error above the split: %.3g" % np.max(np.abs(got - erf(xs))))


if __name__ == "__main__":
    main()
