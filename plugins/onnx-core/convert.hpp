// onnx-core: conversion of elements between dtypes (Cast's rules) and Cast's `to` codes, shared by Cast,
// CastLike, EyeLike and NonZero.
#pragma once

#include "common.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

namespace onnx_core {

template <class S>
double to_double(S v) {
  if constexpr (std::is_same_v<S, Half>) return half_to_float(v.bits);
  else if constexpr (std::is_same_v<S, BF16>) return bf16_to_float(v.bits);
  else return static_cast<double>(v);
}

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    if constexpr (std::is_integral_v<S>) return v != 0;
    else return to_double(v) != 0.0;
  } else if constexpr (std::is_same_v<D, Half>) {
    if constexpr (std::is_same_v<S, double>) {
      return Half{float_to_half(static_cast<float>(v))};
    }
    return Half{float_to_half(static_cast<float>(to_double(v)))};
  } else if constexpr (std::is_same_v<D, BF16>) {
    return BF16{float_to_bf16(static_cast<float>(to_double(v)))};
  } else if constexpr (std::is_integral_v<D> && std::is_integral_v<S>) {
    return static_cast<D>(v);
  } else if constexpr (std::is_integral_v<D>) {
    double d = to_double(v);
    if (std::isnan(d)) return D(0);
    if (d <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(d);
  } else {
    return static_cast<D>(to_double(v));
  }
}

// Cast `to` and EyeLike `dtype`: any kAll dtype (string tensors are named as such).
inline oph_dtype cast_dtype(int64_t t, const std::string& op) {
  if (t == 8) fail(op + ": string tensors are not supported by onnx-core", OPH_CODE_UNIMPLEMENTED);
  return dtype_from_onnx(t, kAll, op, "element type");
}

}  // namespace onnx_core
