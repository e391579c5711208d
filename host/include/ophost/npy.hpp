// Public (installed): the `ophost` command and embedders read and write inputs and outputs with these.
// .npy files (NumPy's array format) and the deterministic "random" input fill shared with the ONNX Runtime peer
// (shared/peers/ort/ort-run.js randomFill()).
#pragma once

#include <ophost/export.hpp>
#include <ophost/tensor.hpp>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace ophost {

// Reads a .npy file (format 1.0, 2.0 or 3.0; little-endian or byte-order-free dtypes '<f4' '<f8' '<f2' '|i1'
// '<i2' '<i4' '<i8' '|u1' '<u2' '<u4' '<u8' '|b1'; C order). Throws ophost::Error naming the file for Fortran
// order, big-endian data, other dtypes, a malformed header, truncated or over-long data.
OPHOST_API Tensor read_npy(const std::filesystem::path& path);

// Writes `tensor` as .npy format 1.0 (2.0 only if the header would not fit), header padded with spaces to a
// multiple of 64 bytes like numpy. Strings and bfloat16 (no numpy dtype) are rejected.
OPHOST_API void write_npy(const std::filesystem::path& path, const Tensor& tensor);

// Deterministic fill, identical to ort-run.js randomFill(): for element i, h = fmix32(uint32(i)) (MurmurHash3's
// 32-bit finaliser) and
//   float32:  x = float((h >> 8) / 2^24 * 2 - 1)   (computed in double, exact, then rounded to float32)
//   float64:  the same double value
//   float16 / bfloat16: the float32 value rounded to nearest even
//   integer types: (h >> 8) % 10          bool: (h >> 8) & 1
// Strings are rejected.
OPHOST_API Tensor random_tensor(DType dtype, std::vector<int64_t> shape);

// MurmurHash3 fmix32, exposed for tests.
OPHOST_API uint32_t fmix32(uint32_t h) noexcept;

// IEEE float32 -> float16 / bfloat16 bit patterns, round to nearest even (NaN stays NaN).
OPHOST_API uint16_t float_to_half_bits(float f) noexcept;
OPHOST_API uint16_t float_to_bfloat16_bits(float f) noexcept;

}  // namespace ophost
