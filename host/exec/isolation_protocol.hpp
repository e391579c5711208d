// The wire format between the host and an isolated pack's worker process (`ophost-pack-worker`, see
// isolation/worker.hpp and isolation/proxy.hpp; docs/security.md "Packs run in the host's process").
//
// One request at a time over a SOCK_STREAM socketpair, each message a frame: an 8-byte length (host byte order), then
// that many bytes written with Writer and read back with Reader. Tensor bytes of compute calls do not go through
// the socket: they lie in a memfd both processes map (MAP_SHARED), and a request names them by offset and size.
//
//   host -> worker: kCreate  id, op index, op name, node name, inputs (value infos, constants inline), outputs,
//                            attributes                              reply: status
//                   kCompute id, shm size, inputs (absent | in shm at offset | the constant given at create),
//                            outputs (absent | in shm at offset | shape known only now)
//                                                                     reply: status, shm size, per run-time output:
//                                                                            allocated?, shape, offset
//                   kImpl    id                                       reply: status, known?, reference?, name
//                   kDestroy id                                       reply: status
// Every reply starts with a status code (0 = OK) and a message.
#pragma once

#include <ophost/error.hpp>
#include <ophost/ophost_plugin.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ophost::isolation {

enum class Request : uint32_t { kCreate = 1, kCompute = 2, kImpl = 3, kDestroy = 4 };

// Where a tensor of a compute request is.
enum class Place : uint32_t { kAbsent = 0, kShm = 1, kConstant = 2, kRunTime = 3 };

// The worker's fixed descriptors (set up by the host's posix_spawn file actions).
constexpr int kSocketFd = 3;
constexpr int kShmFd = 4;
// Largest frame the worker accepts (a create request carries its constants inline), and the largest reply the
// host accepts (a status, shapes, an implementation name: a worker that says more is not believed).
constexpr uint64_t kMaxFrame = uint64_t{1} << 34;
constexpr uint64_t kMaxReply = uint64_t{1} << 24;
// Alignment of every tensor in the shared region.
constexpr size_t kShmAlign = 64;

inline size_t align_up(size_t n) { return (n + kShmAlign - 1) / kShmAlign * kShmAlign; }

// Bytes of a compact tensor of `dtype` and `shape` (throws Error(kOutOfRange) on overflow or a negative dim).
size_t tensor_bytes(oph_dtype dtype, std::span<const int64_t> shape);

class Writer {
 public:
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f32(float v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void dtype(oph_dtype d) { raw(&d, sizeof d); }
  void shape(std::span<const int64_t> dims) {
    u32(static_cast<uint32_t>(dims.size()));
    raw(dims.data(), dims.size() * sizeof(int64_t));
  }
  void raw(const void* p, size_t n);
  const std::vector<std::byte>& bytes() const noexcept { return buf_; }
  void clear() noexcept { buf_.clear(); }

 private:
  std::vector<std::byte> buf_;
};

// Reads what Writer wrote; a short or malformed message throws Error(kDataLoss) naming what was being read.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> data) : data_(data) {}
  uint32_t u32() { return pod<uint32_t>("u32"); }
  uint64_t u64() { return pod<uint64_t>("u64"); }
  int32_t i32() { return pod<int32_t>("i32"); }
  int64_t i64() { return pod<int64_t>("i64"); }
  float f32() { return pod<float>("f32"); }
  oph_dtype dtype() { return pod<oph_dtype>("dtype"); }
  std::string str();
  std::vector<int64_t> shape();
  // A view of the next n bytes (valid as long as the message).
  std::span<const std::byte> raw(size_t n);
  bool done() const noexcept { return pos_ == data_.size(); }

 private:
  template <class T>
  T pod(const char* what) {
    T v;
    auto s = raw_checked(sizeof v, what);
    __builtin_memcpy(&v, s.data(), sizeof v);
    return v;
  }
  std::span<const std::byte> raw_checked(size_t n, const char* what);
  std::span<const std::byte> data_;
  size_t pos_ = 0;
};

// Writes one frame; false when the peer is gone (EPIPE, ECONNRESET) or another error (errno set). Never raises
// SIGPIPE.
bool write_frame(int fd, std::span<const std::byte> payload);

enum class ReadResult { kOk, kEof, kTimeout, kError };
// Reads one frame of at most `max_bytes` into `out`, waiting at most until `deadline` (time_point::max(): no
// limit); a longer one is kError (EMSGSIZE).
ReadResult read_frame(int fd, std::vector<std::byte>& out,
                      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                      uint64_t max_bytes = kMaxFrame);

// "SIGSEGV" for 11 (sigabbrev_np), "signal N" for one without a name.
std::string signal_name(int sig);

}  // namespace ophost::isolation
