// ophost::Tensor and the DType helpers.
#include <ophost/error.hpp>
#include <ophost/tensor.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using ophost::Code;
using ophost::DType;
using ophost::Error;
using ophost::Tensor;

const DType kAllNumeric[] = {DType::kFloat32, DType::kUint8,   DType::kInt8,    DType::kUint16,  DType::kInt16,
                             DType::kInt32,   DType::kInt64,   DType::kBool,    DType::kFloat16, DType::kFloat64,
                             DType::kUint32,  DType::kUint64,  DType::kBFloat16};

TEST(TensorDType, SizesAndNames) {
  EXPECT_EQ(ophost::dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(ophost::dtype_size(DType::kFloat64), 8u);
  EXPECT_EQ(ophost::dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(ophost::dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(ophost::dtype_size(DType::kInt8), 1u);
  EXPECT_EQ(ophost::dtype_size(DType::kUint16), 2u);
  EXPECT_EQ(ophost::dtype_size(DType::kInt32), 4u);
  EXPECT_EQ(ophost::dtype_size(DType::kUint64), 8u);
  EXPECT_EQ(ophost::dtype_size(DType::kBool), 1u);
  EXPECT_EQ(ophost::dtype_size(DType::kString), 0u);
  EXPECT_EQ(ophost::dtype_size(DType::kUndefined), 0u);
  EXPECT_STREQ(ophost::dtype_name(DType::kFloat32), "float32");
  EXPECT_STREQ(ophost::dtype_name(DType::kFloat64), "float64");
  EXPECT_STREQ(ophost::dtype_name(DType::kFloat16), "float16");
  EXPECT_STREQ(ophost::dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_STREQ(ophost::dtype_name(DType::kInt8), "int8");
  EXPECT_STREQ(ophost::dtype_name(DType::kUint64), "uint64");
  EXPECT_STREQ(ophost::dtype_name(DType::kBool), "bool");
  EXPECT_STREQ(ophost::dtype_name(DType::kString), "string");
}

TEST(TensorDType, DLPackRoundTrip) {
  for (DType d : kAllNumeric) {
    const oph_dtype dl = ophost::to_dl(d);
    EXPECT_EQ(dl.lanes, 1) << ophost::dtype_name(d);
    EXPECT_EQ(dl.bits, ophost::dtype_size(d) * 8) << ophost::dtype_name(d);
    EXPECT_EQ(ophost::from_dl(dl), d) << ophost::dtype_name(d);
  }
  EXPECT_EQ(ophost::to_dl(DType::kFloat32).code, OPH_DTYPE_FLOAT);
  EXPECT_EQ(ophost::to_dl(DType::kBFloat16).code, OPH_DTYPE_BFLOAT);
  EXPECT_EQ(ophost::to_dl(DType::kInt64).code, OPH_DTYPE_INT);
  EXPECT_EQ(ophost::to_dl(DType::kUint8).code, OPH_DTYPE_UINT);
  const oph_dtype b = ophost::to_dl(DType::kBool);
  EXPECT_EQ(b.code, OPH_DTYPE_BOOL);
  EXPECT_EQ(b.bits, 8);
  const oph_dtype s = ophost::to_dl(DType::kString);
  EXPECT_EQ(s.code, OPH_DTYPE_OPAQUE);
  EXPECT_EQ(s.bits, 0);
  EXPECT_EQ(s.lanes, 0);
  EXPECT_EQ(ophost::from_dl(s), DType::kUndefined);
  EXPECT_EQ(ophost::from_dl(oph_dtype{OPH_DTYPE_FLOAT, 32, 4}), DType::kUndefined);  // vector lanes
  EXPECT_EQ(ophost::from_dl(oph_dtype{OPH_DTYPE_FLOAT, 8, 1}), DType::kUndefined);
  EXPECT_EQ(ophost::from_dl(oph_dtype{OPH_DTYPE_COMPLEX, 64, 1}), DType::kUndefined);
  EXPECT_EQ(ophost::from_dl(oph_dtype{OPH_DTYPE_BOOL, 1, 1}), DType::kUndefined);
}

TEST(TensorShape, ToStringAndNumel) {
  const std::vector<int64_t> s = {1, 3, 640, 640};
  EXPECT_EQ(ophost::shape_to_string(s), "[1,3,640,640]");
  const std::vector<int64_t> dyn = {-1, 3};
  EXPECT_EQ(ophost::shape_to_string(dyn), "[?,3]");
  EXPECT_EQ(ophost::shape_to_string({}), "[]");
  EXPECT_EQ(ophost::shape_numel(s), 1 * 3 * 640 * 640);
  EXPECT_EQ(ophost::shape_numel({}), 1);
  const std::vector<int64_t> zero = {4, 0, 7};
  EXPECT_EQ(ophost::shape_numel(zero), 0);
}

TEST(TensorShape, NumelOverflowAndNegative) {
  const std::vector<int64_t> big = {int64_t{1} << 32, int64_t{1} << 32};
  try {
    ophost::shape_numel(big);
    FAIL() << "expected overflow";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("[4294967296,4294967296]"), std::string::npos) << e.what();
  }
  const std::vector<int64_t> neg = {2, -1};
  try {
    ophost::shape_numel(neg);
    FAIL() << "expected an error for a negative dim";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kOutOfRange);
  }
  // Exactly INT64_MAX is fine.
  const std::vector<int64_t> max = {std::numeric_limits<int64_t>::max(), 1};
  EXPECT_EQ(ophost::shape_numel(max), std::numeric_limits<int64_t>::max());
}

TEST(TensorBasics, ZeroedAndAligned) {
  for (DType d : kAllNumeric) {
    Tensor t(d, {3, 5, 7});
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(t.numel(), 105);
    EXPECT_EQ(t.nbytes(), 105 * ophost::dtype_size(d));
    EXPECT_FALSE(t.empty());
    ASSERT_NE(t.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << ophost::dtype_name(d);
    const auto* bytes = static_cast<const unsigned char*>(t.data());
    for (size_t i = 0; i < t.nbytes(); ++i) ASSERT_EQ(bytes[i], 0) << ophost::dtype_name(d) << " byte " << i;
  }
}

TEST(TensorBasics, ScalarAndEmpty) {
  Tensor scalar(DType::kFloat32, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.shape().size(), 0u);
  scalar.data_as<float>()[0] = 2.5f;
  EXPECT_EQ(scalar.data_as<float>()[0], 2.5f);

  Tensor zero(DType::kInt64, {0, 4});
  EXPECT_EQ(zero.numel(), 0);
  EXPECT_EQ(zero.nbytes(), 0u);
  EXPECT_NE(zero.data(), nullptr);  // still a valid aligned address
  EXPECT_EQ(reinterpret_cast<uintptr_t>(zero.data()) % 64, 0u);

  Tensor none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.numel(), 0);
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_TRUE(none.clone().empty());
}

TEST(TensorBasics, RejectsBadConstruction) {
  EXPECT_THROW(Tensor(DType::kUndefined, {2}), Error);
  try {
    Tensor t(DType::kFloat32, {2, -3});
    FAIL() << "negative dim accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kOutOfRange);
  }
  try {
    Tensor t(DType::kFloat64, {int64_t{1} << 62, 4});
    FAIL() << "overflow accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kOutOfRange);
  }
  // numel fits in int64 but the bytes do not fit in size_t.
  try {
    Tensor t(DType::kFloat64, {int64_t{1} << 62});
    FAIL() << "byte-size overflow accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kOutOfRange);
  }
}

TEST(TensorBasics, StringTensor) {
  Tensor t(DType::kString, {2, 2});
  EXPECT_EQ(t.numel(), 4);
  EXPECT_EQ(t.nbytes(), 0u);
  ASSERT_EQ(t.strings().size(), 4u);
  t.strings()[3] = "hello";
  Tensor c = t.clone();
  EXPECT_EQ(c.strings()[3], "hello");
  c.strings()[3] = "x";
  EXPECT_EQ(t.strings()[3], "hello");
}

TEST(TensorBasics, ViewIsDLPackLayout) {
  Tensor t(DType::kInt32, {2, 3});
  for (int i = 0; i < 6; ++i) t.data_as<int32_t>()[i] = i * 10;
  const oph_tensor v = t.view();
  EXPECT_EQ(v.data, t.data());
  EXPECT_EQ(v.device.device_type, OPH_DL_CPU);
  EXPECT_EQ(v.device.device_id, 0);
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(v.dtype.code, OPH_DTYPE_INT);
  EXPECT_EQ(v.dtype.bits, 32);
  EXPECT_EQ(v.dtype.lanes, 1);
  ASSERT_NE(v.shape, nullptr);
  EXPECT_EQ(v.shape[0], 2);
  EXPECT_EQ(v.shape[1], 3);
  EXPECT_EQ(v.strides, nullptr);
  EXPECT_EQ(v.byte_offset, 0u);
  EXPECT_EQ(static_cast<const int32_t*>(v.data)[5], 50);

  Tensor scalar(DType::kFloat32, {});
  EXPECT_EQ(scalar.view().ndim, 0);
}

TEST(TensorBasics, CloneIsDeep) {
  Tensor t(DType::kFloat32, {4});
  for (int i = 0; i < 4; ++i) t.data_as<float>()[i] = 1.5f * static_cast<float>(i);
  Tensor c = t.clone();
  ASSERT_NE(c.data(), t.data());
  EXPECT_EQ(std::vector<int64_t>(c.shape().begin(), c.shape().end()), std::vector<int64_t>{4});
  EXPECT_EQ(std::memcmp(c.data(), t.data(), t.nbytes()), 0);
  c.data_as<float>()[0] = 99.f;
  EXPECT_EQ(t.data_as<float>()[0], 0.f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.data()) % 64, 0u);

  // Copies share storage (shared_ptr); clone() is the way to get an independent buffer.
  Tensor shared = t;
  shared.data_as<float>()[1] = -7.f;
  EXPECT_EQ(t.data_as<float>()[1], -7.f);
}

}  // namespace
