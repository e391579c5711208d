// `ophost pack check`: the guarded buffers of the run check and the host side of its compute calls
// (pack_check_buffers.hpp).
#include "pack_check_buffers.hpp"

#include <ophost/error.hpp>
#include <ophost/services.hpp>

#include <algorithm>
#include <cstring>

namespace ophost::cli::pack {

namespace {

// One element of the poison pattern: a signalling NaN for floats (arithmetic never produces one), 0xA5 (0x5A)
// bytes for the rest. Variant 1 is a second pattern, to confirm that an element equal to variant 0 really was
// not written (and is not a computed value that happens to equal it).
std::vector<uint8_t> poison_element(oph_dtype d, int variant) {
  auto bytes_of = [](auto v) {
    std::vector<uint8_t> out(sizeof v);
    std::memcpy(out.data(), &v, sizeof v);
    return out;
  };
  if (d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && d.bits == 32) return bytes_of(variant ? 0x7F8A5A5Au : 0x7FA5A5A5u);
  if (d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && d.bits == 64)
    return bytes_of(variant ? uint64_t{0x7FF25A5A5A5A5A5A} : uint64_t{0x7FF4A5A5A5A5A5A5});
  if (d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && d.bits == 16) return bytes_of(uint16_t(variant ? 0x7C5A : 0x7CA5));
  if (d.lanes == 1 && d.code == OPH_DTYPE_BFLOAT && d.bits == 16) return bytes_of(uint16_t(variant ? 0x7F9A : 0x7FA5));
  return std::vector<uint8_t>(elem_bytes(d), variant ? 0x5A : 0xA5);
}

// ---- the host side of compute --------------------------------------------------------------------------------

// parallel_for without threads: the chunks run one after another on the calling thread. The child is a fork
// of the command, so the host's pool may have workers that do not exist in it; serial chunks also make a crash
// point at the kernel, not at a worker.
void serial_parallel_for(void*, size_t n, size_t grain, oph_parallel_fn fn, void* user) {
  if (n == 0 || !fn) return;
  size_t chunk = std::max<size_t>({grain, 1, (n + 3) / 4});
  for (size_t begin = 0; begin < n; begin += chunk) fn(user, begin, std::min(n, begin + chunk));
}

}  // namespace

void poison(Buffer& b, int variant) {
  std::vector<uint8_t> e = poison_element(b.dtype, variant);
  if (e.empty()) return;
  size_t n = numel(b.shape);
  for (size_t i = 0; i < n; ++i) std::memcpy(b.data() + i * e.size(), e.data(), e.size());
}

std::vector<size_t> poisoned_elements(const Buffer& b, int variant) {
  std::vector<uint8_t> e = poison_element(b.dtype, variant);
  std::vector<size_t> out;
  if (e.empty()) return out;
  size_t n = numel(b.shape);
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(b.data() + i * e.size(), e.data(), e.size()) == 0) out.push_back(i);
  return out;
}

void fill_random(Buffer& b, std::mt19937& rng) {
  b.allocate();
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(-5, 5), unsig(0, 10), bit(0, 1);
  const oph_dtype d = b.dtype;
  uint8_t* p = b.data();
  for (size_t i = 0, n = numel(b.shape); i < n; ++i) {
    if (d.code == OPH_DTYPE_FLOAT && d.bits == 32) {
      float v = static_cast<float>(real(rng));
      std::memcpy(p + 4 * i, &v, 4);
    } else if (d.code == OPH_DTYPE_FLOAT) {
      double v = real(rng);
      std::memcpy(p + 8 * i, &v, 8);
    } else if (d.code == OPH_DTYPE_BOOL) {
      p[i] = static_cast<uint8_t>(bit(rng));
    } else {
      int64_t v = d.code == OPH_DTYPE_INT ? small(rng) : unsig(rng);
      std::memcpy(p + i * elem_bytes(d), &v, elem_bytes(d));  // little-endian truncation
    }
  }
}

Buffer from_sample(const SampleInput& s) {
  Buffer b;
  b.shape = s.shape;
  b.dtype = s.dtype;
  b.allocate();
  std::copy(s.bytes.begin(), s.bytes.end(), b.data());
  return b;
}

std::vector<std::pair<std::string, std::string>> guard_damage(const Buffer& b, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t payload = b.payload();
  const std::string holds = "the buffer holds " + std::to_string(payload) + " bytes: " + dtype_str(b.dtype) + " " +
                            shape_str(b.shape);
  size_t k = 0;
  while (k < kGuard && b.storage[k] == kGuardByte) ++k;
  if (k < kGuard) {
    size_t before = kGuard - k;
    out.emplace_back("compute wrote " + std::string(before == kGuard ? "at least " : "") + std::to_string(before) +
                         " bytes before the start of " + name + " (the furthest corrupted byte at start-" +
                         std::to_string(before) + "; " + holds + ")",
                     "before the start of " + name);
  }
  const uint8_t* after = b.storage.data() + kGuard + payload;
  size_t first = kGuard, last = 0;
  for (size_t i = 0; i < kGuard; ++i) {
    if (after[i] != kGuardByte) {
      first = std::min(first, i);
      last = i;
    }
  }
  if (first < kGuard) {
    out.emplace_back("compute wrote " + std::string(last + 1 == kGuard ? "at least " : "") +
                         std::to_string(last + 1) + " bytes past the end of " + name + " (first corrupted byte at end+" +
                         std::to_string(first) + "; " + holds + ")",
                     "past the end of " + name);
  }
  return out;
}

const oph_host_services* check_services() {
  static const oph_host_services services = [] {
    oph_host_services s = *host_services();
    s.parallel_for = &serial_parallel_for;
    return s;
  }();
  return &services;
}

oph_status* check_allocate_output(const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape) {
  auto* st = static_cast<ComputeState*>(ctx->host_data);
  if (index >= st->outputs->size()) {
    return make_status(Code::kOutOfRange, "allocate_output: output " + std::to_string(index) + " does not exist");
  }
  if (ndim < 0 || ndim > OPH_MAX_NDIM) return make_status(Code::kInvalidArgument, "allocate_output: bad rank");
  Buffer& b = (*st->outputs)[index];
  b.shape.assign(shape, shape + ndim);
  for (int64_t d : b.shape)
    if (d < 0) return make_status(Code::kInvalidArgument, "allocate_output: negative dimension");
  b.allocate();
  poison(b, st->poison_variant);
  (*st->allocated)[index] = true;
  *(*st->out_ptrs)[index] = b.view;
  return nullptr;
}

}  // namespace ophost::cli::pack
