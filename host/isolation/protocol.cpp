#include "isolation/protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace ophost::isolation {

size_t tensor_bytes(oph_dtype dtype, std::span<const int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<size_t>(d), &n))
      throw Error(Code::kOutOfRange, "isolation: a tensor shape has a negative or too large dimension");
  }
  const size_t elem = (static_cast<size_t>(dtype.bits) * std::max<size_t>(dtype.lanes, 1) + 7) / 8;
  size_t bytes = 0;
  if (__builtin_mul_overflow(n, elem, &bytes)) throw Error(Code::kOutOfRange, "isolation: a tensor is too large");
  return bytes;
}

void Writer::raw(const void* p, size_t n) {
  if (n == 0) return;
  const auto* b = static_cast<const std::byte*>(p);
  buf_.insert(buf_.end(), b, b + n);
}

std::span<const std::byte> Reader::raw_checked(size_t n, const char* what) {
  if (n > data_.size() - pos_)
    throw Error(Code::kDataLoss, std::string("isolation protocol: message ends inside a ") + what + " (" +
                                     std::to_string(data_.size()) + " bytes)");
  auto s = data_.subspan(pos_, n);
  pos_ += n;
  return s;
}

std::span<const std::byte> Reader::raw(size_t n) { return raw_checked(n, "byte string"); }

std::string Reader::str() {
  const uint64_t n = u64();
  auto s = raw_checked(n, "string");
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

std::vector<int64_t> Reader::shape() {
  const uint32_t ndim = u32();
  if (ndim > OPH_MAX_NDIM)
    throw Error(Code::kDataLoss, "isolation protocol: a shape of rank " + std::to_string(ndim) + " (most is " +
                                     std::to_string(OPH_MAX_NDIM) + ")");
  std::vector<int64_t> dims(ndim);
  auto s = raw_checked(ndim * sizeof(int64_t), "shape");
  if (ndim) std::memcpy(dims.data(), s.data(), s.size());
  return dims;
}

namespace {

bool send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Waits until `fd` is readable or the deadline passes.
ReadResult wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return ReadResult::kTimeout;
      timeout = static_cast<int>(std::min<int64_t>(left, 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, timeout);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ReadResult::kError;
    if (r == 0) continue;  // re-check the deadline
    return ReadResult::kOk;  // readable, or hung up / error: read() says which
  }
}

ReadResult recv_all(int fd, void* p, size_t n, std::chrono::steady_clock::time_point deadline) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    if (ReadResult w = wait_readable(fd, deadline); w != ReadResult::kOk) return w;
    ssize_t r = ::recv(fd, b, n, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return errno == ECONNRESET ? ReadResult::kEof : ReadResult::kError;
    if (r == 0) return ReadResult::kEof;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return ReadResult::kOk;
}

}  // namespace

bool write_frame(int fd, std::span<const std::byte> payload) {
  const uint64_t n = payload.size();
  return send_all(fd, &n, sizeof n) && send_all(fd, payload.data(), payload.size());
}

ReadResult read_frame(int fd, std::vector<std::byte>& out, std::chrono::steady_clock::time_point deadline) {
  uint64_t n = 0;
  if (ReadResult r = recv_all(fd, &n, sizeof n, deadline); r != ReadResult::kOk) return r;
  if (n > kMaxFrame) {
    errno = EMSGSIZE;
    return ReadResult::kError;
  }
  out.resize(n);
  return recv_all(fd, out.data(), n, deadline);
}

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

}  // namespace ophost::isolation
