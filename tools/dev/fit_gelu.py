#!/usr/bin/python3
"""Fits the Phi(-|x|) approximation of onnx-core's float32 Gelu (plugins/onnx-core/simd_math.cpp, GeluV) and
prints its coefficients and the error of the kernel's float32 arithmetic (emulated here without FMA, as the SSE4
target computes it).

    gelu(x) = x * Phi(x),  Phi(x) = 1 - c for x >= 0, c for x < 0,  c = Phi(-a) = 0.5 * erfc(a / sqrt(2)), a = |x|
    c = t * exp(-a^2 / 2 + G(t - TC)),  t = 1 / (1 + K a),  a capped at 14.5 (x * c underflows to 0 from 14.37)

G (degree 11) is a least-squares fit of log(c / t) + a^2 / 2 on Chebyshev nodes in t (the form of Numerical
Recipes' erfcc, refitted for Phi and float32). -a^2 / 2 is computed exactly (a split into 12 + 12 significant
bits) and the rounding of its sum with G carried into the exp's result, so c keeps its relative accuracy down to
the underflow: 1 + erf(x / sqrt(2)), what the written-out graph and Erf-based kernels compute, loses it all for
x < -3. Needs numpy.   /usr/bin/python3 tools/dev/fit_gelu.py
"""
import math

import numpy as np

K, DEG, CAP = 0.5, 11, 14.5
f32 = np.float32


def phi_neg(a):
    return 0.5 * np.vectorize(math.erfc)(a / math.sqrt(2))


def fit():
    tmin = 1 / (1 + K * CAP)
    tc = (1 + tmin) / 2
    t = np.cos(np.linspace(0, np.pi, 6000)) * (1 - tmin) / 2 + tc
    a = (1 / t - 1) / K
    return np.polynomial.polynomial.polyfit(t - tc, np.log(phi_neg(a)) + a * a / 2 - np.log(t), DEG), tc


def gelu32(x, g, tc):
    """The kernel's arithmetic in float32 (separate multiply and add, as without FMA)."""
    a = np.minimum(np.abs(x), f32(CAP))
    ah = (a.view(np.uint32) & np.uint32(0xFFFFF000)).view(f32)
    al = a - ah
    t = f32(1) / (f32(1) + f32(K) * a)
    w = t - f32(tc)
    w2 = w * w
    w4 = w2 * w2
    pp = [f32(g[2 * k + 1]) * w + f32(g[2 * k]) for k in range(6)]  # Estrin's scheme, as the kernel
    q01, q23, q45 = pp[1] * w2 + pp[0], pp[3] * w2 + pp[2], pp[5] * w2 + pp[4]
    q = (q45 * w4 + q23) * w4 + q01
    hi = f32(-0.5) * ah * ah
    lo = f32(-0.5) * al * (a + ah) + q
    s = hi + lo
    bb = s - hi
    err = (hi - (s - bb)) + (lo - bb)
    e = np.exp(s)
    e = e * err + e
    c = t * e
    return np.where(x < 0, -(a * c), x * (f32(1) - c)).astype(f32)


def main():
    g, tc = fit()
    print("K = %r, TC = %r" % (float(f32(K)), float(f32(tc))))
    print("G (w^0 first):", [float(f32(v)) for v in g])
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-16, 16, 400000), np.linspace(-15, 15, 300001)]).astype(f32)
    with np.errstate(all="ignore"):
        got = gelu32(x, g, tc)
        ref = (0.5 * x.astype(np.float64) * np.vectorize(math.erfc)(-x.astype(np.float64) / math.sqrt(2)))
    r32 = ref.astype(f32)
    spacing = np.maximum(np.spacing(np.abs(r32)).astype(np.float64), 2.0 ** -149)
    ulp = np.abs(got.astype(np.float64) - r32) / spacing
    print("max error of the float32 evaluation on [-16, 16]: %.1f ULP" % ulp.max())


if __name__ == "__main__":
    main()
