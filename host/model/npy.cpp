// .npy read/write and the deterministic random fill.
#include <ophost/npy.hpp>

#include <ophost/error.hpp>

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace ophost {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct NpyType {
  const char* code;  // descr without the byte-order character
  DType dtype;
  char order;        // byte-order character written by numpy
};

constexpr NpyType kTypes[] = {
    {"f4", DType::kFloat32, '<'}, {"f8", DType::kFloat64, '<'}, {"f2", DType::kFloat16, '<'},
    {"i1", DType::kInt8, '|'},    {"i2", DType::kInt16, '<'},   {"i4", DType::kInt32, '<'},
    {"i8", DType::kInt64, '<'},   {"u1", DType::kUint8, '|'},   {"u2", DType::kUint16, '<'},
    {"u4", DType::kUint32, '<'},  {"u8", DType::kUint64, '<'},  {"b1", DType::kBool, '|'},
};

[[noreturn]] void fail(Code code, const fs::path& path, const std::string& what) {
  throw Error(code, path.string() + ": " + what);
}

// A parsed value of the header dict: a string, a bool or a tuple of integers.
struct HeaderValue {
  enum Kind { kString, kBool, kTuple } kind = kString;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

// Parses the Python dict literal numpy writes, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const fs::path& path) : s_(text), path_(path) {}

  std::map<std::string, HeaderValue> parse() {
    std::map<std::string, HeaderValue> out;
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      HeaderValue v = parse_value();
      if (!out.emplace(key, std::move(v)).second) bad("key '" + key + "' appears twice");
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        bad("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) bad("unexpected text after the closing '}'");
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(Code::kInvalidArgument, path_,
         "bad .npy header (" + what + " at offset " + std::to_string(pos_) + " of \"" + std::string(s_) + "\")");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) bad("unterminated string");
    ++pos_;
    return out;
  }
  HeaderValue parse_value() {
    HeaderValue v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = HeaderValue::kString;
      v.str = parse_string();
    } else if (s_.substr(pos_, 4) == "True") {
      v.kind = HeaderValue::kBool;
      v.boolean = true;
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "False") {
      v.kind = HeaderValue::kBool;
      v.boolean = false;
      pos_ += 5;
    } else if (c == '(') {
      v.kind = HeaderValue::kTuple;
      ++pos_;
      skip_ws();
      while (peek() != ')') {
        if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("expected a non-negative integer in the shape");
        int64_t n = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
          if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, peek() - '0', &n)) {
            bad("dimension too large");
          }
          ++pos_;
        }
        if (peek() == 'L') ++pos_;  // Python 2 long literal
        v.ints.push_back(n);
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          skip_ws();
        } else if (peek() != ')') {
          bad("expected ',' or ')' in the shape");
        }
      }
      ++pos_;
    } else {
      bad("unsupported value (structured dtypes are not supported)");
    }
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
  const fs::path& path_;
};

const NpyType* npy_type_for(DType d) {
  for (const auto& t : kTypes)
    if (t.dtype == d) return &t;
  return nullptr;
}

}  // namespace

Tensor read_npy(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(Code::kNotFound, path, ".npy file not found");
  if (fs::is_directory(path, ec)) fail(Code::kInvalidArgument, path, "is a folder, not a .npy file");
  // A FIFO would block and a device has no size: only regular files are .npy files.
  if (!fs::is_regular_file(path, ec)) fail(Code::kInvalidArgument, path, "is not a regular file (a device, FIFO or "
                                                                          "socket), not a .npy file");
  const uintmax_t file_size = fs::file_size(path, ec);
  if (ec) fail(Code::kUnavailable, path, "cannot stat .npy file: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(Code::kUnavailable, path, std::string("cannot open .npy file: ") + std::strerror(errno));

  unsigned char pre[12] = {};
  const size_t pre_len = file_size < 12 ? static_cast<size_t>(file_size) : 12;
  in.read(reinterpret_cast<char*>(pre), static_cast<std::streamsize>(pre_len));
  if (pre_len < 10 || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    fail(Code::kInvalidArgument, path, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  const int major = pre[6], minor = pre[7];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = pre[8] | (static_cast<size_t>(pre[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (pre_len < 12) fail(Code::kInvalidArgument, path, "truncated .npy header");
    header_len = pre[8] | (static_cast<size_t>(pre[9]) << 8) | (static_cast<size_t>(pre[10]) << 16) |
                 (static_cast<size_t>(pre[11]) << 24);
    header_start = 12;
  } else {
    fail(Code::kUnimplemented, path, ".npy format version " + std::to_string(major) + "." +
                                         std::to_string(minor) + " is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (header_start + header_len > file_size) {
    fail(Code::kInvalidArgument, path, "truncated .npy header (header length " + std::to_string(header_len) +
                                           ", file is " + std::to_string(file_size) + " bytes)");
  }
  std::string header(header_len, '\0');
  in.seekg(static_cast<std::streamoff>(header_start));
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail(Code::kDataLoss, path, "error reading the .npy header");

  const auto dict = HeaderParser(header, path).parse();
  auto get = [&](const char* key, HeaderValue::Kind kind) -> const HeaderValue& {
    auto it = dict.find(key);
    if (it == dict.end()) fail(Code::kInvalidArgument, path, std::string("bad .npy header: no '") + key + "' key");
    if (it->second.kind != kind) {
      fail(Code::kInvalidArgument, path, std::string("bad .npy header: '") + key + "' has the wrong type");
    }
    return it->second;
  };
  for (const auto& [k, v] : dict) {
    if (k != "descr" && k != "fortran_order" && k != "shape") {
      fail(Code::kInvalidArgument, path, "bad .npy header: unexpected key '" + k + "'");
    }
  }
  const std::string descr = get("descr", HeaderValue::kString).str;
  const bool fortran = get("fortran_order", HeaderValue::kBool).boolean;
  std::vector<int64_t> shape = get("shape", HeaderValue::kTuple).ints;

  std::optional<DType> dtype;
  if (descr.size() == 3 && std::strchr("<>|=", descr[0]) != nullptr) {
    for (const auto& t : kTypes) {
      if (descr.compare(1, 2, t.code) == 0) dtype = t.dtype;
    }
    if (dtype && descr[0] == '>' && dtype_size(*dtype) > 1) {
      fail(Code::kUnimplemented, path,
           "big-endian data ('" + descr + "') is not supported; save it little-endian, e.g. "
           "np.save(f, a.astype(a.dtype.newbyteorder('<')))");
    }
  }
  if (!dtype) {
    fail(Code::kUnimplemented, path,
         "dtype '" + descr +
             "' is not supported (supported: <f4 <f8 <f2 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)");
  }
  if (fortran && shape.size() > 1) {
    fail(Code::kUnimplemented, path,
         "Fortran-order arrays are not supported; save a C-ordered array (np.ascontiguousarray(a))");
  }
  int64_t numel = 0;
  try {
    numel = shape_numel(shape);
  } catch (const Error& e) {
    fail(e.code(), path, e.what());
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(*dtype), &nbytes)) {
    fail(Code::kOutOfRange, path, "shape " + shape_to_string(shape) + " is too large");
  }
  const uint64_t available = file_size - header_start - header_len;
  if (available < nbytes) {
    fail(Code::kDataLoss, path, "truncated data: shape " + shape_to_string(shape) + " (" + dtype_name(*dtype) +
                                    ") needs " + std::to_string(nbytes) + " bytes but the file holds " +
                                    std::to_string(available));
  }
  if (available > nbytes) {
    fail(Code::kInvalidArgument, path, std::to_string(available - nbytes) +
                                           " unexpected bytes after the data of shape " + shape_to_string(shape) +
                                           " (" + dtype_name(*dtype) + "); the header does not match the data");
  }
  Tensor t(*dtype, std::move(shape));
  if (nbytes > 0) {
    in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(nbytes));
    if (!in || static_cast<uint64_t>(in.gcount()) != nbytes) fail(Code::kDataLoss, path, "short read");
  }
  if (t.dtype() == DType::kBool) {
    uint8_t* b = t.data_as<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0 ? 1 : 0;
  }
  return t;
}

void write_npy(const fs::path& path, const Tensor& tensor) {
  if (tensor.empty()) fail(Code::kInvalidArgument, path, "cannot write an empty (undefined) tensor");
  const NpyType* type = npy_type_for(tensor.dtype());
  if (type == nullptr) {
    fail(Code::kUnimplemented, path,
         std::string("cannot write a ") + dtype_name(tensor.dtype()) + " tensor as .npy (numpy has no such dtype)");
  }
  std::string dict = "{'descr': '";
  dict += type->order;
  dict += type->code;
  dict += "', 'fortran_order': False, 'shape': (";
  const auto shape = tensor.shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dict += ",";
  dict += "), }";
  // Like numpy: pad with spaces and end with '\n' so that the data starts on a 64-byte boundary.
  constexpr size_t kAlign = 64;
  size_t prefix = kMagicLen + 2 + 2;
  size_t hlen = dict.size() + 1;
  int major = 1;
  if (hlen + kAlign > 65535) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
  }
  const size_t padlen = kAlign - ((prefix + hlen) % kAlign);
  dict.append(padlen, ' ');
  dict += '\n';
  const size_t total = dict.size();

  std::string head(kMagic, kMagicLen);
  head += static_cast<char>(major);
  head += '\0';
  for (int b = 0; b < (major == 1 ? 2 : 4); ++b) head += static_cast<char>((total >> (8 * b)) & 0xff);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(Code::kUnavailable, path, std::string("cannot create .npy file: ") + std::strerror(errno));
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  if (tensor.nbytes() > 0) {
    out.write(static_cast<const char*>(tensor.data()), static_cast<std::streamsize>(tensor.nbytes()));
  }
  out.close();
  if (!out) fail(Code::kDataLoss, path, std::string("error writing .npy file: ") + std::strerror(errno));
}

uint32_t fmix32(uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

uint16_t float_to_half_bits(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {  // inf / NaN (keep NaN quiet and non-zero)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  }
  const int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e <= 0) {  // half subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is correct
  if (h >= 0x7c00u) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | h);
}

uint16_t float_to_bfloat16_bits(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

Tensor random_tensor(DType dtype, std::vector<int64_t> shape) {
  if (dtype == DType::kString || dtype == DType::kUndefined) {
    throw Error(Code::kInvalidArgument,
                std::string("cannot fill a ") + dtype_name(dtype) + " tensor with random values");
  }
  Tensor t(dtype, std::move(shape));
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = fmix32(static_cast<uint32_t>(i)) >> 8;  // 24 random bits
    const double x = static_cast<double>(r) / 16777216.0 * 2.0 - 1.0;  // as JS computes it
    const uint32_t digit = r % 10;
    switch (dtype) {
      case DType::kFloat32: t.data_as<float>()[i] = static_cast<float>(x); break;
      case DType::kFloat64: t.data_as<double>()[i] = x; break;
      case DType::kFloat16: t.data_as<uint16_t>()[i] = float_to_half_bits(static_cast<float>(x)); break;
      case DType::kBFloat16: t.data_as<uint16_t>()[i] = float_to_bfloat16_bits(static_cast<float>(x)); break;
      case DType::kInt8: t.data_as<int8_t>()[i] = static_cast<int8_t>(digit); break;
      case DType::kInt16: t.data_as<int16_t>()[i] = static_cast<int16_t>(digit); break;
      case DType::kInt32: t.data_as<int32_t>()[i] = static_cast<int32_t>(digit); break;
      case DType::kInt64: t.data_as<int64_t>()[i] = digit; break;
      case DType::kUint8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(digit); break;
      case DType::kUint16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(digit); break;
      case DType::kUint32: t.data_as<uint32_t>()[i] = digit; break;
      case DType::kUint64: t.data_as<uint64_t>()[i] = digit; break;
      case DType::kBool: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(r & 1u); break;
      case DType::kString:
      case DType::kUndefined: break;
    }
  }
  return t;
}

}  // namespace ophost
