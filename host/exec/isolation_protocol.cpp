#include "exec/isolation_protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
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

// Sends the frame's length and payload with one sendmsg (more only when the socket takes part of it).
bool send_frame(int fd, uint64_t n, std::span<const std::byte> payload) {
  iovec iov[2] = {{&n, sizeof n}, {const_cast<std::byte*>(payload.data()), payload.size()}};
  iovec* v = iov;
  size_t count = 2;
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = v;
    msg.msg_iovlen = count;
    const ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    auto left = static_cast<size_t>(w);
    while (count > 0 && left >= v->iov_len) {
      left -= v->iov_len;
      ++v;
      --count;
    }
    if (count > 0) {
      v->iov_base = static_cast<char*>(v->iov_base) + left;
      v->iov_len -= left;
    }
  }
  return true;
}

// Waits until `fd` is readable or the deadline passes.
ReadResult wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return ReadResult::kTimeout;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ReadResult::kError;
    if (r > 0) return ReadResult::kOk;  // readable, or hung up / error: recv says which
  }
}

// Receives what is there (at least one byte), waiting at most until `deadline`; `got` is the count.
ReadResult recv_some(int fd, std::byte* p, size_t n, std::chrono::steady_clock::time_point deadline, size_t& got) {
  const bool bounded = deadline != std::chrono::steady_clock::time_point::max();
  for (;;) {
    if (bounded) {
      if (ReadResult w = wait_readable(fd, deadline); w != ReadResult::kOk) return w;
    }
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return errno == ECONNRESET ? ReadResult::kEof : ReadResult::kError;
    if (r == 0) return ReadResult::kEof;
    got = static_cast<size_t>(r);
    return ReadResult::kOk;
  }
}

}  // namespace

bool write_frame(int fd, std::span<const std::byte> payload) { return send_frame(fd, payload.size(), payload); }

// The peers take turns (a request, then its reply), so nothing ever follows a frame in the socket: one recv into a
// buffer larger than the length usually brings the whole frame.
ReadResult read_frame(int fd, std::vector<std::byte>& out, std::chrono::steady_clock::time_point deadline,
                      uint64_t max_bytes) {
  constexpr size_t kHead = sizeof(uint64_t);
  out.resize(4096);  // enough for any compute request or reply; a larger frame grows it below
  size_t have = 0, want = 0;  // want: the whole frame, once its length is known
  while (want == 0 || have < want) {
    size_t got = 0;
    if (ReadResult r = recv_some(fd, out.data() + have, out.size() - have, deadline, got); r != ReadResult::kOk)
      return r;
    have += got;
    if (want == 0 && have >= kHead) {
      uint64_t n = 0;
      std::memcpy(&n, out.data(), kHead);
      if (n > max_bytes) {
        errno = EMSGSIZE;
        return ReadResult::kError;
      }
      want = kHead + n;
      if (out.size() < want) out.resize(want);
    }
  }
  if (have != want) {  // the peer sent more than one frame: not this protocol
    errno = EPROTO;
    return ReadResult::kError;
  }
  std::memmove(out.data(), out.data() + kHead, want - kHead);
  out.resize(want - kHead);
  return ReadResult::kOk;
}

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

}  // namespace ophost::isolation
