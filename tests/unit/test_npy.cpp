// .npy read/write, numpy interoperability, and the deterministic random fill shared with the ORT peer.
#include <ophost/npy.hpp>

#include <ophost/error.hpp>
#include <ophost/tensor.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using ophost::Code;
using ophost::DType;
using ophost::Error;
using ophost::Tensor;

#define EXPECT_CONTAINS(haystack, needle)                                                   \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                          \
      << "expected to find \"" << (needle) << "\" in:\n  " << (haystack)

struct NpyTempDir {
  fs::path path;
  NpyTempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ophost-npy-test-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~NpyTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A hand-made .npy file: version major.0, `header` padded to 64, then `data`.
std::string make_npy(const std::string& header, const std::string& data, int major = 1) {
  std::string h = header;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (int b = 0; b < (major == 1 ? 2 : 4); ++b) out += static_cast<char>((h.size() >> (8 * b)) & 0xff);
  return out + h + data;
}

std::string error_of(const std::function<void()>& f, Code* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "no ophost::Error thrown";
  return "";
}

std::vector<int64_t> shape_of(const Tensor& t) { return {t.shape().begin(), t.shape().end()}; }

// ---------------------------------------------------------------------------------------------------------
// write -> read

TEST(Npy, RoundTripEveryDType) {
  NpyTempDir dir;
  const DType types[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8,  DType::kInt16,
                         DType::kInt32,   DType::kInt64,   DType::kUint8,   DType::kUint16, DType::kUint32,
                         DType::kUint64,  DType::kBool};
  for (DType d : types) {
    Tensor t(d, {2, 3, 5});
    auto* bytes = static_cast<unsigned char*>(t.data());
    for (size_t i = 0; i < t.nbytes(); ++i) {
      bytes[i] = d == DType::kBool ? (i % 3 == 0) : static_cast<unsigned char>(i * 13 + 5);
    }
    const fs::path file = dir.path / (std::string(ophost::dtype_name(d)) + ".npy");
    ophost::write_npy(file, t);
    const Tensor r = ophost::read_npy(file);
    EXPECT_EQ(r.dtype(), d) << ophost::dtype_name(d);
    EXPECT_EQ(shape_of(r), (std::vector<int64_t>{2, 3, 5}));
    ASSERT_EQ(r.nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(r.data(), t.data(), t.nbytes()), 0) << ophost::dtype_name(d);
  }
}

TEST(Npy, RoundTripScalarOneDAndEmpty) {
  NpyTempDir dir;
  Tensor s(DType::kFloat64, {});
  s.data_as<double>()[0] = 3.5;
  ophost::write_npy(dir.path / "s.npy", s);
  Tensor rs = ophost::read_npy(dir.path / "s.npy");
  EXPECT_EQ(rs.shape().size(), 0u);
  EXPECT_EQ(rs.data_as<double>()[0], 3.5);

  Tensor v(DType::kInt64, {3});
  ophost::write_npy(dir.path / "v.npy", v);
  EXPECT_CONTAINS(read_all(dir.path / "v.npy"), "'shape': (3,), }");
  EXPECT_EQ(shape_of(ophost::read_npy(dir.path / "v.npy")), (std::vector<int64_t>{3}));

  Tensor e(DType::kFloat32, {0, 4});
  ophost::write_npy(dir.path / "e.npy", e);
  const Tensor re = ophost::read_npy(dir.path / "e.npy");
  EXPECT_EQ(shape_of(re), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(re.numel(), 0);
}

TEST(Npy, HeaderLayoutLikeNumpy) {
  NpyTempDir dir;
  Tensor t(DType::kFloat32, {2, 3});
  ophost::write_npy(dir.path / "t.npy", t);
  const std::string bytes = read_all(dir.path / "t.npy");
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], 1);  // version 1.0
  EXPECT_EQ(bytes[7], 0);
  const size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + hlen + 24);
  const std::string header = bytes.substr(10, hlen);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');

  Tensor b(DType::kBool, {1});
  ophost::write_npy(dir.path / "b.npy", b);
  EXPECT_CONTAINS(read_all(dir.path / "b.npy"), "'descr': '|b1'");
  Tensor u(DType::kUint8, {1});
  ophost::write_npy(dir.path / "u.npy", u);
  EXPECT_CONTAINS(read_all(dir.path / "u.npy"), "'descr': '|u1'");
}

TEST(Npy, WriteRejectsTypesNumpyLacks) {
  NpyTempDir dir;
  EXPECT_CONTAINS(error_of([&] { ophost::write_npy(dir.path / "x.npy", Tensor(DType::kBFloat16, {2})); }),
                  "cannot write a bfloat16 tensor as .npy");
  EXPECT_CONTAINS(error_of([&] { ophost::write_npy(dir.path / "x.npy", Tensor(DType::kString, {2})); }),
                  "cannot write a string tensor");
  EXPECT_CONTAINS(error_of([&] { ophost::write_npy(dir.path / "x.npy", Tensor()); }), "empty");
}

// ---------------------------------------------------------------------------------------------------------
// Reading hand-made files

TEST(Npy, ReadsVersion2And3AndLegacyHeaders) {
  NpyTempDir dir;
  const float vals[2] = {1.25f, -2.5f};
  const std::string data(reinterpret_cast<const char*>(vals), sizeof vals);
  for (int major : {2, 3}) {
    const fs::path f = dir.path / ("v" + std::to_string(major) + ".npy");
    write_all(f, make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data, major));
    const Tensor t = ophost::read_npy(f);
    EXPECT_EQ(t.dtype(), DType::kFloat32);
    EXPECT_EQ(t.data_as<float>()[1], -2.5f);
  }
  // Python 2 long literals, double quotes, no trailing comma, different key order, '=' byte order.
  write_all(dir.path / "legacy.npy",
            make_npy("{\"shape\": (1L, 2L), \"fortran_order\": False, \"descr\": \"=f4\"}", data));
  const Tensor t = ophost::read_npy(dir.path / "legacy.npy");
  EXPECT_EQ(shape_of(t), (std::vector<int64_t>{1, 2}));
  // Single-byte types are byte-order free: '|i1' and '<i1' both read.
  write_all(dir.path / "i1.npy", make_npy("{'descr': '<i1', 'fortran_order': False, 'shape': (2,), }", "\x01\xff"));
  const Tensor i1 = ophost::read_npy(dir.path / "i1.npy");
  EXPECT_EQ(i1.dtype(), DType::kInt8);
  EXPECT_EQ(i1.data_as<int8_t>()[1], -1);
  // Fortran order is the same layout for 1-D arrays.
  write_all(dir.path / "f1.npy", make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data));
  EXPECT_EQ(ophost::read_npy(dir.path / "f1.npy").numel(), 2);
  // Booleans are normalised to 0/1.
  write_all(dir.path / "b.npy",
            make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x00\x07", 2)));
  const Tensor b = ophost::read_npy(dir.path / "b.npy");
  EXPECT_EQ(b.data_as<uint8_t>()[1], 1);
}

TEST(Npy, ReadErrorsNameTheFile) {
  NpyTempDir dir;
  const std::string data(24, '\0');
  struct Case {
    const char* name;
    std::string bytes;
    const char* expect;
  };
  const Case cases[] = {
      {"fortran.npy", make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data),
       "Fortran-order arrays are not supported"},
      {"big.npy", make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", data),
       "big-endian data ('>f4') is not supported"},
      {"trunc.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", data),
       "truncated data: shape [2,4] (float32) needs 32 bytes but the file holds 24"},
      {"long.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data),
       "8 unexpected bytes after the data"},
      {"complex.npy", make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", data),
       "dtype '<c8' is not supported"},
      {"unicode.npy", make_npy("{'descr': '<U2', 'fortran_order': False, 'shape': (3,), }", data),
       "dtype '<U2' is not supported"},
      {"badhdr.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", data),
       "bad .npy header"},
      {"nokey.npy", make_npy("{'descr': '<f4', 'shape': (2, 3), }", data), "no 'fortran_order' key"},
      {"extrakey.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", data),
       "bad .npy header"},
      {"structured.npy", make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", data),
       "structured dtypes are not supported"},
      {"negdim.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", data),
       "bad .npy header"},
      {"magic.npy", "PK\x03\x04 not numpy at all", "not a .npy file"},
      {"short.npy", std::string("\x93NUMPY\x01\x00\x50\x00{'descr'", 17), "truncated .npy header"},
      {"version.npy", std::string("\x93NUMPY\x04\x00\x00\x00", 10), ".npy format version 4.0 is not supported"},
  };
  for (const auto& c : cases) {
    const fs::path f = dir.path / c.name;
    write_all(f, c.bytes);
    const std::string msg = error_of([&] { ophost::read_npy(f); });
    EXPECT_EQ(msg.rfind(f.string() + ": ", 0), 0u) << c.name << ": " << msg;
    EXPECT_CONTAINS(msg, c.expect);
  }
  Code code{};
  EXPECT_CONTAINS(error_of([&] { ophost::read_npy(dir.path / "missing.npy"); }, &code), ".npy file not found");
  EXPECT_EQ(code, Code::kNotFound);
}

// ---------------------------------------------------------------------------------------------------------
// numpy interoperability (skipped without python3 + numpy)

std::string find_python_with_numpy() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

TEST(NpyNumpy, ReadsFilesWrittenByNumpy) {
  const std::string py = find_python_with_numpy();
  if (py.empty()) GTEST_SKIP() << "python3 with numpy not available";
  NpyTempDir dir;
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "np.save(d + '/f32.npy', (np.arange(12, dtype=np.float32) * 0.5 - 2).reshape(3, 4))\n"
      "np.save(d + '/f64.npy', np.array([[1e-300, -0.1]], dtype=np.float64))\n"
      "np.save(d + '/f16.npy', np.array([1.0, -2.0, 65504.0], dtype=np.float16))\n"
      "np.save(d + '/i8.npy', np.array([-128, 0, 127], dtype=np.int8))\n"
      "np.save(d + '/i64.npy', np.array([[-(2**62)], [5]], dtype=np.int64))\n"
      "np.save(d + '/u16.npy', np.array([65535, 1], dtype=np.uint16))\n"
      "np.save(d + '/b.npy', np.array([True, False, True]))\n"
      "np.save(d + '/scalar.npy', np.float32(7.5))\n"
      "np.save(d + '/fortran.npy', np.asfortranarray(np.ones((2, 3), dtype=np.float32)))\n"
      "np.save(d + '/big.npy', np.ones(3, dtype='>f4'))\n";
  write_all(dir.path / "gen.py", script);
  const std::string cmd = py + " " + (dir.path / "gen.py").string() + " " + dir.path.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  const Tensor f32 = ophost::read_npy(dir.path / "f32.npy");
  EXPECT_EQ(f32.dtype(), DType::kFloat32);
  EXPECT_EQ(shape_of(f32), (std::vector<int64_t>{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f32.data_as<float>()[i], static_cast<float>(i) * 0.5f - 2.f);
  const Tensor f64 = ophost::read_npy(dir.path / "f64.npy");
  EXPECT_EQ(shape_of(f64), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f64.data_as<double>()[0], 1e-300);
  EXPECT_EQ(f64.data_as<double>()[1], -0.1);
  const Tensor f16 = ophost::read_npy(dir.path / "f16.npy");
  EXPECT_EQ(f16.dtype(), DType::kFloat16);
  EXPECT_EQ(f16.data_as<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(f16.data_as<uint16_t>()[1], 0xc000);
  EXPECT_EQ(f16.data_as<uint16_t>()[2], 0x7bff);
  const Tensor i8 = ophost::read_npy(dir.path / "i8.npy");
  EXPECT_EQ(i8.dtype(), DType::kInt8);
  EXPECT_EQ(i8.data_as<int8_t>()[0], -128);
  const Tensor i64 = ophost::read_npy(dir.path / "i64.npy");
  EXPECT_EQ(shape_of(i64), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(i64.data_as<int64_t>()[0], -(int64_t{1} << 62));
  const Tensor u16 = ophost::read_npy(dir.path / "u16.npy");
  EXPECT_EQ(u16.data_as<uint16_t>()[0], 65535);
  const Tensor b = ophost::read_npy(dir.path / "b.npy");
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(std::vector<uint8_t>(b.data_as<uint8_t>(), b.data_as<uint8_t>() + 3), (std::vector<uint8_t>{1, 0, 1}));
  const Tensor s = ophost::read_npy(dir.path / "scalar.npy");
  EXPECT_EQ(s.shape().size(), 0u);
  EXPECT_EQ(s.data_as<float>()[0], 7.5f);
  EXPECT_CONTAINS(error_of([&] { ophost::read_npy(dir.path / "fortran.npy"); }), "Fortran-order");
  EXPECT_CONTAINS(error_of([&] { ophost::read_npy(dir.path / "big.npy"); }), "big-endian");
}

TEST(NpyNumpy, NumpyReadsOurFiles) {
  const std::string py = find_python_with_numpy();
  if (py.empty()) GTEST_SKIP() << "python3 with numpy not available";
  NpyTempDir dir;
  Tensor f(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) f.data_as<float>()[i] = static_cast<float>(i) - 2.5f;
  ophost::write_npy(dir.path / "f.npy", f);
  Tensor b(DType::kBool, {4});
  b.data_as<uint8_t>()[2] = 1;
  ophost::write_npy(dir.path / "b.npy", b);
  Tensor s(DType::kInt64, {});
  s.data_as<int64_t>()[0] = -9;
  ophost::write_npy(dir.path / "s.npy", s);
  ophost::write_npy(dir.path / "r.npy", ophost::random_tensor(DType::kFloat16, {5}));
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "f = np.load(d + '/f.npy'); assert f.dtype == np.float32 and f.shape == (2, 3), f\n"
      "assert (f == np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5).all(), f\n"
      "b = np.load(d + '/b.npy'); assert b.dtype == np.bool_ and list(b) == [False, False, True, False], b\n"
      "s = np.load(d + '/s.npy'); assert s.dtype == np.int64 and s.shape == () and s == -9, s\n"
      "r = np.load(d + '/r.npy'); assert r.dtype == np.float16\n"
      "def fmix(h):\n"
      "  h ^= h >> 16; h = (h * 0x85ebca6b) & 0xffffffff; h ^= h >> 13; h = (h * 0xc2b2ae35) & 0xffffffff\n"
      "  return h ^ (h >> 16)\n"
      "ref = np.array([(fmix(i) >> 8) / 16777216 * 2 - 1 for i in range(5)], dtype=np.float32).astype(np.float16)\n"
      "assert (r.view(np.uint16) == ref.view(np.uint16)).all(), (r, ref)\n";
  write_all(dir.path / "check.py", script);
  const std::string cmd = py + " " + (dir.path / "check.py").string() + " " + dir.path.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// ---------------------------------------------------------------------------------------------------------
// random_tensor: golden values computed with node (ort-run.js's fmix32 / randomFill formula):
//   a[i] = ((fmix32(i) >>> 8) / 16777216) * 2 - 1  stored in a Float32Array

TEST(RandomTensor, Float32MatchesOrtPeerGolden) {
  const uint32_t expected_bits[8] = {0xbf800000, 0xbebac760, 0xbf1e167a, 0x3d3e1680,
                                     0xbf36c69c, 0x3f181aa6, 0xbe8c52cc, 0xbf4e6ca4};
  const Tensor t = ophost::random_tensor(DType::kFloat32, {2, 4});
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(shape_of(t), (std::vector<int64_t>{2, 4}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(t.data_as<float>()[i]), expected_bits[i]) << "element " << i;
  }
  EXPECT_FLOAT_EQ(t.data_as<float>()[1], -0.364802361f);
  EXPECT_FLOAT_EQ(t.data_as<float>()[3], 0.0464081764f);

  const Tensor big = ophost::random_tensor(DType::kFloat32, {65536});
  EXPECT_EQ(std::bit_cast<uint32_t>(big.data_as<float>()[1000]), 0xbe4cb6d0u);   // -0.199916124
  EXPECT_EQ(std::bit_cast<uint32_t>(big.data_as<float>()[65535]), 0x3e88eeb8u);  // 0.267446280
  for (int64_t i = 0; i < big.numel(); ++i) {
    const float v = big.data_as<float>()[i];
    ASSERT_TRUE(v >= -1.f && v < 1.f) << i << ": " << v;
  }
}

TEST(RandomTensor, FmixAndShapeIndependence) {
  EXPECT_EQ(ophost::fmix32(0), 0u);
  EXPECT_EQ(ophost::fmix32(1), 0x514e28b7u);
  EXPECT_EQ(ophost::fmix32(7), 0x18c9aec4u);
  EXPECT_EQ(ophost::fmix32(16777219), 0xcc01adbau);
  EXPECT_EQ(ophost::fmix32(4294967295u), 0x81f16f39u);
  const Tensor a = ophost::random_tensor(DType::kFloat32, {3, 5});
  const Tensor b = ophost::random_tensor(DType::kFloat32, {15});
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
}

TEST(RandomTensor, OtherDTypes) {
  const Tensor d = ophost::random_tensor(DType::kFloat64, {4});
  EXPECT_EQ(d.data_as<double>()[0], -1.0);
  EXPECT_EQ(d.data_as<double>()[1], -0.36480236053466797);
  EXPECT_EQ(d.data_as<double>()[2], -0.6175304651260376);
  EXPECT_EQ(d.data_as<double>()[3], 0.04640817642211914);

  // float16: numpy's np.float32(x).astype(np.float16) of the same values.
  const uint16_t half[8] = {0xbc00, 0xb5d6, 0xb8f1, 0x29f1, 0xb9b6, 0x38c1, 0xb463, 0xba73};
  const Tensor h = ophost::random_tensor(DType::kFloat16, {8});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(h.data_as<uint16_t>()[i], half[i]) << i;

  const Tensor bf = ophost::random_tensor(DType::kBFloat16, {2});
  EXPECT_EQ(bf.data_as<uint16_t>()[0], 0xbf80);  // -1
  EXPECT_EQ(bf.data_as<uint16_t>()[1], 0xbebb);  // 0xbebac760 rounded to nearest

  // Integers: (h >> 8) % 10; bool: (h >> 8) & 1.
  const std::vector<int64_t> digits = {0, 4, 7, 8, 0, 5, 9, 4};
  const Tensor i64 = ophost::random_tensor(DType::kInt64, {8});
  EXPECT_EQ(std::vector<int64_t>(i64.data_as<int64_t>(), i64.data_as<int64_t>() + 8), digits);
  const Tensor i8 = ophost::random_tensor(DType::kInt8, {8});
  const Tensor u32 = ophost::random_tensor(DType::kUint32, {8});
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(i8.data_as<int8_t>()[i], digits[i]);
    EXPECT_EQ(static_cast<int64_t>(u32.data_as<uint32_t>()[i]), digits[i]);
  }
  const Tensor bl = ophost::random_tensor(DType::kBool, {8});
  EXPECT_EQ(std::vector<uint8_t>(bl.data_as<uint8_t>(), bl.data_as<uint8_t>() + 8),
            (std::vector<uint8_t>{0, 0, 1, 0, 0, 1, 1, 0}));

  EXPECT_THROW(ophost::random_tensor(DType::kString, {2}), Error);
}

TEST(RandomTensor, LargeIndexUint8) {
  const Tensor t = ophost::random_tensor(DType::kUint8, {16777220});
  EXPECT_EQ(t.data_as<uint8_t>()[16777219], 3);  // (0xcc01adba >> 8) % 10
}

TEST(HalfConversion, EdgeCases) {
  EXPECT_EQ(ophost::float_to_half_bits(0.f), 0x0000);
  EXPECT_EQ(ophost::float_to_half_bits(-0.f), 0x8000);
  EXPECT_EQ(ophost::float_to_half_bits(1.f), 0x3c00);
  EXPECT_EQ(ophost::float_to_half_bits(65504.f), 0x7bff);
  EXPECT_EQ(ophost::float_to_half_bits(65519.f), 0x7bff);  // rounds down to max
  EXPECT_EQ(ophost::float_to_half_bits(65520.f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(ophost::float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(ophost::float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(ophost::float_to_half_bits(std::ldexp(1.f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(ophost::float_to_half_bits(std::ldexp(1.f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(ophost::float_to_half_bits(std::ldexp(1.f, -25)), 0x0000);  // tie to even -> 0
  EXPECT_EQ(ophost::float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(ophost::float_to_half_bits(1.f + std::ldexp(1.f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(ophost::float_to_half_bits(1.f + 3 * std::ldexp(1.f, -11)), 0x3c02);  // tie, odd rounds up
  const uint16_t nan = ophost::float_to_half_bits(NAN);
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_EQ(ophost::float_to_bfloat16_bits(1.f), 0x3f80);
  EXPECT_EQ(ophost::float_to_bfloat16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even
  EXPECT_EQ(ophost::float_to_bfloat16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd
  EXPECT_EQ(ophost::float_to_bfloat16_bits(NAN) & 0x7fc0, 0x7fc0);
}

// A device or FIFO given as a .npy file: a clear refusal ("/dev/zero": was "Operation not supported"; a FIFO
// would block).
TEST(Npy, DevicesAndFifosAreNotNpyFiles) {
  Code code{};
  std::string msg = error_of([&] { ophost::read_npy("/dev/zero"); }, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(msg, "is not a regular file");
  NpyTempDir dir;
  const fs::path fifo = dir.path / "x.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_CONTAINS(error_of([&] { ophost::read_npy(fifo); }), "is not a regular file");
}

}  // namespace
