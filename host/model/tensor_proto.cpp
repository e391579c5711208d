// ONNX TensorProto -> ophost::Tensor, including external data confined to the model's folder.
#include "model/tensor_proto.hpp"

#include "core/big_buffer.hpp"
#include "core/unique_fd.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ophost/error.hpp>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace ophost {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data and .npy files are little-endian; ophost assumes a little-endian host");

namespace fs = std::filesystem;

namespace {

// A tensor of a fixed-size element type whose `bytes` bytes the caller overwrites at once (raw_data, external
// data): from the initializer block when one was made (InitializerBlock), else its own buffer; never
// zero-filled first. The constructor's memset of every byte, written again right after, cost a page-faulting
// pass over each initializer: ConvNeXt-T's 110 MB load spent a quarter of its time in memset.
Tensor tensor_for_overwrite(DType dtype, std::vector<int64_t> dims, size_t bytes, InitializerBlock* block) {
  if (block) {
    if (std::byte* p = block->take(bytes))
      return Tensor::wrap(dtype, std::move(dims), std::shared_ptr<std::byte>(block->owner(), p));
  }
  return Tensor::wrap(dtype, std::move(dims), allocate_for_overwrite(bytes, "an initializer"));
}

}  // namespace

InitializerBlock::InitializerBlock(size_t bytes)
    : block_(allocate_for_overwrite(bytes, "the model's initializers")), size_(bytes) {}

std::byte* InitializerBlock::take(size_t bytes) {
  const size_t need = (bytes + 63) / 64 * 64;
  if (need > size_ - used_) return nullptr;
  std::byte* p = block_.get() + used_;
  used_ += need;
  if (need > bytes) std::memset(p + bytes, 0, need - bytes);
  return p;
}

std::optional<DType> dtype_from_onnx(int32_t elem_type) noexcept {
  switch (elem_type) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUint8;
    case 3: return DType::kInt8;
    case 4: return DType::kUint16;
    case 5: return DType::kInt16;
    case 6: return DType::kInt32;
    case 7: return DType::kInt64;
    case 8: return DType::kString;
    case 9: return DType::kBool;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    case 12: return DType::kUint32;
    case 13: return DType::kUint64;
    case 16: return DType::kBFloat16;
    default: return std::nullopt;
  }
}

std::string onnx_dtype_name(int32_t elem_type) {
  if (auto d = dtype_from_onnx(elem_type)) return dtype_name(*d);
  switch (elem_type) {
    case 0: return "undefined";
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: return "type " + std::to_string(elem_type);
  }
}

namespace {

std::string tensor_label(const onnx::TensorProto& proto) {
  return proto.name().empty() ? std::string("tensor") : "tensor '" + proto.name() + "'";
}

// True when `inner` is strictly inside `outer` (both absolute, normalised).
bool is_inside(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin(), oe = outer.end();
  auto i = inner.begin(), ie = inner.end();
  // A trailing separator leaves an empty last component in `outer`; ignore it.
  for (; o != oe; ++o, ++i) {
    if (o->empty() && std::next(o) == oe) break;
    if (i == ie || *o != *i) return false;
  }
  return i != ie;
}

int64_t parse_nonnegative(const std::string& value, const std::string& key, const std::string& label) {
  int64_t v = 0;
  const char* b = value.data();
  const char* e = value.data() + value.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec == std::errc::result_out_of_range) {
    throw Error(Code::kInvalidArgument, label + ": external data " + key + " '" + value + "' is out of range");
  }
  if (ec != std::errc() || p != e || value.empty()) {
    throw Error(Code::kInvalidArgument,
                label + ": external data " + key + " '" + value + "' is not an integer; write a byte count");
  }
  if (v < 0) {
    throw Error(Code::kInvalidArgument,
                label + ": external data " + key + " is negative (" + value + "); it must be >= 0");
  }
  return v;
}

struct ExternalRef {
  std::string location;  // as written in the model
  fs::path base;         // the model's folder (canonical)
  fs::path relative;     // location, lexically normal, relative to base
  fs::path file;         // base / relative, for messages
  std::optional<uint64_t> offset, length;
};

// Checks an external-data reference (lexically, then through the file system for a clear message) before it is
// opened; open_beneath makes the opening itself safe.
ExternalRef resolve_external(const onnx::TensorProto& proto, const fs::path& base_dir) {
  const std::string label = tensor_label(proto);
  std::string location;
  bool has_location = false;
  std::optional<int64_t> offset, length;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
      has_location = true;
    } else if (kv.key() == "offset") {
      offset = parse_nonnegative(kv.value(), "offset", label);
    } else if (kv.key() == "length") {
      length = parse_nonnegative(kv.value(), "length", label);
    }
    // "checksum" and other keys are informational.
  }
  if (!has_location || location.empty()) {
    throw Error(Code::kInvalidArgument,
                label + ": data_location is EXTERNAL but external_data has no 'location'; re-export the model "
                        "with its external data, or store the tensor inline");
  }
  if (location.find('\0') != std::string::npos) {
    throw Error(Code::kInvalidArgument, label + ": external data location contains a NUL character");
  }
  if (base_dir.empty()) {
    throw Error(Code::kFailedPrecondition,
                label + ": uses external data ('" + location +
                    "') but the model was loaded from memory with no folder; load it from its file instead");
  }
  const fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory()) {
    throw Error(Code::kPermissionDenied,
                label + ": external data location '" + location +
                    "' is an absolute path; external data must be a relative path inside the model's folder");
  }
  const fs::path norm = loc.lexically_normal();
  if (norm.empty() || norm == "." || *norm.begin() == "..") {
    throw Error(Code::kPermissionDenied,
                label + ": external data location '" + location +
                    "' escapes the model's folder; external data must be a file inside the model's folder");
  }
  std::error_code ec;
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec) {
    throw Error(Code::kNotFound,
                label + ": cannot resolve the model folder '" + base_dir.string() + "': " + ec.message());
  }
  const fs::path target = fs::weakly_canonical(base / norm, ec);
  if (ec) {
    throw Error(Code::kNotFound,
                label + ": cannot resolve external data location '" + location + "': " + ec.message());
  }
  if (!is_inside(base, target)) {
    throw Error(Code::kPermissionDenied,
                label + ": external data location '" + location + "' resolves to '" + target.string() +
                    "', outside the model's folder '" + base.string() +
                    "' (through a symbolic link); copy the data file into the model's folder");
  }
  ExternalRef ref;
  ref.location = location;
  ref.base = base;
  ref.relative = norm;
  ref.file = target;
  if (offset) ref.offset = static_cast<uint64_t>(*offset);
  if (length) ref.length = static_cast<uint64_t>(*length);
  return ref;
}

// Opens the external data file relative to the model folder's descriptor without leaving it at any step:
// openat2 with RESOLVE_BENEATH (a symbolic link may point elsewhere inside the folder, never outside; the kernel
// checks every component of this very lookup, so a file swapped for a link after the checks above is refused),
// or, where the kernel has no openat2, one component at a time with O_NOFOLLOW (no link is followed at all).
UniqueFd open_beneath(const ExternalRef& ref, const std::string& label) {
  UniqueFd dir(::open(ref.base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    throw Error(Code::kUnavailable, label + ": cannot open the model folder '" + ref.base.string() + "': " +
                                        std::strerror(errno));
  }
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dir.get(), ref.relative.c_str(), &how, sizeof how);
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {  // no openat2 (kernel < 5.6, or filtered by seccomp)
    UniqueFd at(::dup(dir.get()));
    fd = -1;
    for (auto it = ref.relative.begin(); it != ref.relative.end() && at.get() >= 0; ++it) {
      const bool last = std::next(it) == ref.relative.end();
      const int next = ::openat(at.get(), it->c_str(), last ? flags | O_NOFOLLOW : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (last) fd = next;
      else at.reset(next);
      if (next < 0) break;
    }
  }
  if (fd < 0) {
    if (errno == EXDEV || errno == ELOOP || errno == ENOTDIR) {
      throw Error(Code::kPermissionDenied,
                  label + ": external data location '" + ref.location + "' leads outside the model's folder '" +
                      ref.base.string() + "' through a symbolic link (found while opening it); copy the data "
                      "file into the model's folder");
    }
    if (errno == ENOENT) {
      throw Error(Code::kNotFound, label + ": external data file '" + ref.location + "' not found (looked for '" +
                                       ref.file.string() + "'); copy it next to the model");
    }
    throw Error(Code::kUnavailable, label + ": cannot open external data file '" + ref.file.string() + "': " +
                                        std::strerror(errno));
  }
  return UniqueFd(static_cast<int>(fd));
}

// The byte range of the tensor in the opened file, checked against the size fstat gives for that very file.
void check_range(ExternalRef& ref, uint64_t file_size, uint64_t expected_bytes, const std::string& label) {
  const std::string& location = ref.location;
  const uint64_t offset = ref.offset.value_or(0);
  if (offset > file_size) {
    throw Error(Code::kOutOfRange, label + ": external data offset " + std::to_string(offset) +
                                       " is past the end of '" + location + "' (" + std::to_string(file_size) +
                                       " bytes)");
  }
  if (ref.length) {
    if (*ref.length > file_size - offset) {
      throw Error(Code::kOutOfRange, label + ": external data range offset " + std::to_string(offset) +
                                         " + length " + std::to_string(*ref.length) + " runs past the end of '" +
                                         location + "' (" + std::to_string(file_size) +
                                         " bytes); the data file is truncated or does not belong to this model");
    }
    if (*ref.length != expected_bytes) {
      throw Error(Code::kInvalidArgument, label + ": external data length " + std::to_string(*ref.length) +
                                              " does not match the tensor's size (" +
                                              std::to_string(expected_bytes) + " bytes)");
    }
  } else if (expected_bytes > file_size - offset) {
    throw Error(Code::kOutOfRange, label + ": external data file '" + location + "' holds " +
                                       std::to_string(file_size - offset) + " bytes from offset " +
                                       std::to_string(offset) + " but the tensor needs " +
                                       std::to_string(expected_bytes));
  }
  ref.offset = offset;
  ref.length = expected_bytes;
}

template <class Dst, class Src>
void copy_typed(Tensor& t, const Src& src) {
  Dst* d = t.data_as<Dst>();
  int64_t k = 0;
  for (const auto& v : src) d[k++] = static_cast<Dst>(v);
}

std::string field_count_error(const onnx::TensorProto& proto, const char* field, int64_t have, int64_t numel,
                              DType dtype) {
  std::string dims;
  for (int i = 0; i < proto.dims_size(); ++i) dims += (i ? "," : "") + std::to_string(proto.dims(i));
  return tensor_label(proto) + ": " + field + " holds " + std::to_string(have) + " values but dims [" + dims +
         "] (" + dtype_name(dtype) + ") need " + std::to_string(numel);
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const fs::path& base_dir, uint64_t max_bytes,
                         InitializerBlock* block) {
  const std::string label = tensor_label(proto);
  const auto dtype_opt = dtype_from_onnx(proto.data_type());
  if (!dtype_opt) {
    if (proto.data_type() == 0) {
      throw Error(Code::kInvalidArgument, label + ": data_type is not set");
    }
    throw Error(Code::kUnimplemented, label + ": element type " + onnx_dtype_name(proto.data_type()) +
                                          " is not supported by ophost");
  }
  const DType dtype = *dtype_opt;
  if (proto.has_segment()) {
    throw Error(Code::kUnimplemented, label + ": segmented tensors are not supported");
  }
  if (static_cast<size_t>(proto.dims_size()) > OPH_MAX_NDIM) {
    throw Error(Code::kInvalidArgument, label + ": has rank " + std::to_string(proto.dims_size()) +
                                            "; ophost supports at most " + std::to_string(OPH_MAX_NDIM) +
                                            " dimensions");
  }
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims) {
    if (d < 0) {
      throw Error(Code::kInvalidArgument,
                  label + ": dims " + shape_to_string(dims) + " contain a negative dimension");
    }
  }
  int64_t numel = 0;
  try {
    numel = shape_numel(dims);
  } catch (const Error& e) {
    throw Error(e.code(), label + ": " + e.what());
  }
  const size_t esize = dtype_size(dtype);
  uint64_t expected_bytes = 0;
  if (dtype != DType::kString &&
      __builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(esize), &expected_bytes)) {
    throw Error(Code::kOutOfRange, label + ": dims " + shape_to_string(dims) + " are too large");
  }
  if (dtype != DType::kString && expected_bytes > max_bytes) {
    throw Error(Code::kResourceExhausted,
                label + ": dims " + shape_to_string(dims) + " (" + dtype_name(dtype) + ") need " +
                    std::to_string(expected_bytes) + " bytes, over the tensor size limit of " +
                    std::to_string(max_bytes) + " bytes (SessionOptions::max_tensor_bytes, --max-tensor-bytes)");
  }
  if (dtype == DType::kString && static_cast<uint64_t>(numel) > max_bytes / sizeof(std::string)) {
    throw Error(Code::kResourceExhausted, label + ": " + std::to_string(numel) +
                                              " strings are over the tensor size limit");
  }

  const bool external = proto.has_data_location() && proto.data_location() == onnx::TensorProto::EXTERNAL;
  if (external) {
    if (dtype == DType::kString) {
      throw Error(Code::kUnimplemented, label + ": string tensors with external data are not supported");
    }
    ExternalRef ref = resolve_external(proto, base_dir);
    const UniqueFd fd = open_beneath(ref, label);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      throw Error(Code::kUnavailable, label + ": cannot stat external data file '" + ref.file.string() + "': " +
                                          std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
      throw Error(Code::kInvalidArgument,
                  label + ": external data location '" + ref.location + "' is not a regular file");
    }
    check_range(ref, static_cast<uint64_t>(st.st_size), expected_bytes, label);
    Tensor t = tensor_for_overwrite(dtype, std::move(dims), static_cast<size_t>(expected_bytes), nullptr);
    auto* dst = static_cast<char*>(t.data());
    uint64_t done = 0;
    while (done < *ref.length) {
      const ssize_t n = ::pread(fd.get(), dst + done, static_cast<size_t>(*ref.length - done),
                                static_cast<off_t>(*ref.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw Error(Code::kDataLoss, label + ": short read from external data file '" + ref.file.string() + "'" +
                                         (n < 0 ? std::string(": ") + std::strerror(errno) : std::string()));
      }
      done += static_cast<uint64_t>(n);
    }
    return t;
  }

  if (dtype == DType::kString) {
    if (proto.has_raw_data() && !proto.raw_data().empty()) {
      throw Error(Code::kInvalidArgument, label + ": string tensors must use string_data, not raw_data");
    }
    if (proto.string_data_size() != numel) {
      throw Error(Code::kInvalidArgument,
                  field_count_error(proto, "string_data", proto.string_data_size(), numel, dtype));
    }
    Tensor t(dtype, std::move(dims));
    for (int64_t k = 0; k < numel; ++k) t.strings()[static_cast<size_t>(k)] = proto.string_data(static_cast<int>(k));
    return t;
  }

  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != expected_bytes) {
      throw Error(Code::kInvalidArgument, label + ": raw_data holds " + std::to_string(raw.size()) +
                                              " bytes but dims " + shape_to_string(dims) + " (" +
                                              dtype_name(dtype) + ") need " + std::to_string(expected_bytes));
    }
    Tensor t = tensor_for_overwrite(dtype, std::move(dims), raw.size(), block);
    if (!raw.empty()) std::memcpy(t.data(), raw.data(), raw.size());
    return t;
  }

  auto check = [&](const char* field, int64_t have) {
    if (have != numel) {
      throw Error(Code::kInvalidArgument, field_count_error(proto, field, have, numel, dtype));
    }
  };
  switch (dtype) {
    case DType::kFloat32: {
      check("float_data", proto.float_data_size());
      Tensor t(dtype, std::move(dims));
      copy_typed<float>(t, proto.float_data());
      return t;
    }
    case DType::kFloat64: {
      check("double_data", proto.double_data_size());
      Tensor t(dtype, std::move(dims));
      copy_typed<double>(t, proto.double_data());
      return t;
    }
    case DType::kInt64: {
      check("int64_data", proto.int64_data_size());
      Tensor t(dtype, std::move(dims));
      copy_typed<int64_t>(t, proto.int64_data());
      return t;
    }
    case DType::kUint32:
    case DType::kUint64: {
      check("uint64_data", proto.uint64_data_size());
      Tensor t(dtype, std::move(dims));
      if (dtype == DType::kUint32) {
        copy_typed<uint32_t>(t, proto.uint64_data());
      } else {
        copy_typed<uint64_t>(t, proto.uint64_data());
      }
      return t;
    }
    case DType::kInt32:
    case DType::kInt16:
    case DType::kInt8:
    case DType::kUint16:
    case DType::kUint8:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16: {
      check("int32_data", proto.int32_data_size());
      Tensor t(dtype, std::move(dims));
      const auto& src = proto.int32_data();
      switch (dtype) {
        case DType::kInt32: copy_typed<int32_t>(t, src); break;
        case DType::kInt16: copy_typed<int16_t>(t, src); break;
        case DType::kInt8: copy_typed<int8_t>(t, src); break;
        case DType::kUint16:
        case DType::kFloat16:   // IEEE half bit patterns
        case DType::kBFloat16:  // bfloat16 bit patterns
          copy_typed<uint16_t>(t, src);
          break;
        case DType::kUint8: copy_typed<uint8_t>(t, src); break;
        case DType::kBool: {
          uint8_t* d = t.data_as<uint8_t>();
          int64_t k = 0;
          for (int32_t v : src) d[k++] = v != 0 ? 1 : 0;
          break;
        }
        default: break;
      }
      return t;
    }
    case DType::kString:
    case DType::kUndefined: break;
  }
  throw Error(Code::kInternal, label + ": unhandled element type " + std::string(dtype_name(dtype)));
}

}  // namespace ophost
