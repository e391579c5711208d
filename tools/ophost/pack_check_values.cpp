// `ophost pack check`: element values, for the comparison with a sample's expected outputs and for the NaN/Inf
// probe (pack_check_run.cpp runs both; the format of expected outputs is in pack_check_samples.cpp).
//
// Comparison: a float element matches when |got - expected| <= atol + rtol * |expected|, a NaN only a NaN, an
// infinity only the infinity of the same sign; every other dtype compares exactly (bytes).
#include "pack_check_internal.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace ophost::cli::pack {

namespace {

// IEEE half bits -> float (subnormals, infinities and NaN included).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    magnitude = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  float out = magnitude;
  if (sign) out = -out;
  return out;
}

// Element `i` of a float tensor as a double.
double float_at(oph_dtype d, const uint8_t* data, size_t i) {
  if (d.bits == 64) {
    double v;
    std::memcpy(&v, data + 8 * i, 8);
    return v;
  }
  if (d.bits == 32) {
    float v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, data + 2 * i, 2);
  return half_to_float(h);
}

bool element_matches(double got, double want, Tolerance tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

}  // namespace

Tolerance default_tolerance(oph_dtype d) {
  if (d.lanes != 1 || d.code != OPH_DTYPE_FLOAT) return {};
  switch (d.bits) {
    case 64: return {1e-12, 1e-10};
    case 32: return {1e-6, 1e-5};
    case 16: return {1e-3, 1e-3};
    default: return {};
  }
}

bool is_float(oph_dtype d) {
  return d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && (d.bits == 16 || d.bits == 32 || d.bits == 64);
}

std::string index_str(const std::vector<int64_t>& shape, size_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    const auto dim = static_cast<size_t>(shape[k]);
    idx[k] = dim ? static_cast<int64_t>(flat % dim) : 0;
    flat = dim ? flat / dim : 0;
  }
  return shape_str(idx);
}

std::string element_str(oph_dtype d, const uint8_t* data, size_t i) {
  if (is_float(d)) {
    const double v = float_at(d, data, i);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream out;
    out.precision(d.bits == 64 ? 17 : 9);
    out << v;
    return out.str();
  }
  const size_t size = elem_bytes(d);
  if (d.lanes != 1 || size == 0 || size > 8) return "(" + dtype_str(d) + ")";
  uint64_t bits = 0;
  std::memcpy(&bits, data + i * size, size);
  if (d.code == OPH_DTYPE_BOOL) return bits ? "true" : "false";
  if (d.code == OPH_DTYPE_INT && size < 8 && (bits >> (8 * size - 1)) & 1) bits |= ~uint64_t{0} << (8 * size);
  return d.code == OPH_DTYPE_INT ? std::to_string(static_cast<int64_t>(bits)) : std::to_string(bits);
}

bool has_nonfinite(oph_dtype d, const uint8_t* data, size_t n) {
  if (!is_float(d)) return false;
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(float_at(d, data, i))) return true;
  return false;
}

void set_special(oph_dtype d, uint8_t* data, size_t i, int which) {
  const double v = which == 0 ? std::numeric_limits<double>::quiet_NaN()
                              : (which == 1 ? 1.0 : -1.0) * std::numeric_limits<double>::infinity();
  if (d.bits == 64) {
    std::memcpy(data + 8 * i, &v, 8);
  } else {
    const auto f = static_cast<float>(v);
    std::memcpy(data + 4 * i, &f, 4);
  }
}

Mismatch compare_elements(oph_dtype d, const uint8_t* got, const uint8_t* want, size_t n, Tolerance tol) {
  Mismatch m;
  const size_t size = elem_bytes(d);
  for (size_t i = 0; i < n; ++i) {
    const bool same = is_float(d) ? element_matches(float_at(d, got, i), float_at(d, want, i), tol)
                                  : std::memcmp(got + i * size, want + i * size, size) == 0;
    if (same) continue;
    if (m.count++ == 0) m.first = i;
  }
  return m;
}

std::string describe_changes(const std::string& name, oph_dtype d, const std::vector<int64_t>& shape,
                             const uint8_t* before, const uint8_t* after, std::optional<size_t> focus) {
  constexpr size_t kShown = 2;
  const size_t size = elem_bytes(d), n = numel(shape);
  std::vector<std::string> shown;
  size_t more = 0;
  auto show = [&](size_t i) { shown.push_back(name + index_str(shape, i) + " " + element_str(d, after, i)); };
  if (focus && *focus < n) show(*focus);
  for (size_t i = 0; i < n; ++i) {
    if (focus && i == *focus) continue;
    if (std::memcmp(before + i * size, after + i * size, size) == 0) continue;
    if (shown.size() < kShown) show(i);
    else ++more;
  }
  return join(shown, ", ") + (more ? " and " + std::to_string(more) + " more" : "");
}

std::string expected_mismatch(const std::string& name, oph_dtype dtype, const std::vector<int64_t>& shape,
                              const uint8_t* data, const SampleInput& want, const RunSpec& spec) {
  const std::string ref = " (" + spec.reference + ")";
  if (!same_dtype(dtype, want.dtype) || shape != want.shape) {
    return name + " is " + dtype_str(dtype) + " " + shape_str(shape) + " but the sample expects " +
           dtype_str(want.dtype) + " " + shape_str(want.shape) + ref;
  }
  Tolerance tol = default_tolerance(dtype);
  if (is_float(dtype)) {
    tol.atol = spec.atol.value_or(tol.atol);
    tol.rtol = spec.rtol.value_or(tol.rtol);
  }
  const size_t n = numel(shape);
  const Mismatch m = compare_elements(dtype, data, want.bytes.data(), n, tol);
  if (m.count == 0) return "";
  std::ostringstream how;
  if (is_float(dtype)) {
    how << "atol " << tol.atol << ", rtol " << tol.rtol << "; NaN matches only NaN, an infinity only the same one";
  } else {
    how << dtype_str(dtype) << ": exact";
  }
  return name + " at " + index_str(shape, m.first) + " (element " + std::to_string(m.first) + " of " +
         std::to_string(n) + "): got " + element_str(dtype, data, m.first) + ", expected " +
         element_str(want.dtype, want.bytes.data(), m.first) + "; " + std::to_string(m.count) + " of " +
         std::to_string(n) + " elements differ (" + how.str() + ")" + ref;
}

}  // namespace ophost::cli::pack
