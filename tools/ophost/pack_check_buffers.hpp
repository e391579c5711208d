// `ophost pack check`: the guarded buffers of the run check (pack_check_run.cpp) and the host side of its compute
// calls (services, allocate_output). Every input and output of a run lies between guard zones (kGuard bytes of
// kGuardByte on each side), outputs are poisoned before compute, and after it the guards and the poison show
// writes outside a buffer and elements never written. Private to the ophost command.
#pragma once

#include "pack_check_internal.hpp"

#include <cstddef>
#include <cstdint>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace ophost::cli::pack {

inline constexpr size_t kGuard = 1024;       // guard bytes before and after every input and output buffer
inline constexpr uint8_t kGuardByte = 0xFD;  // their value

template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, std::align_val_t{64}); }
  friend bool operator==(const Aligned64&, const Aligned64&) { return true; }
};
using Bytes = std::vector<uint8_t, Aligned64<uint8_t>>;

// One tensor with its own storage: [kGuard guard bytes][payload, 64-byte aligned][kGuard guard bytes].
struct Buffer {
  std::vector<int64_t> shape;
  oph_dtype dtype{};
  Bytes storage;
  oph_tensor view{};

  Buffer() = default;
  Buffer(const Buffer& o) : shape(o.shape), dtype(o.dtype), storage(o.storage) { rebind(); }
  Buffer& operator=(const Buffer& o) {
    shape = o.shape;
    dtype = o.dtype;
    storage = o.storage;
    rebind();
    return *this;
  }
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  size_t payload() const { return numel(shape) * elem_bytes(dtype); }
  uint8_t* data() { return storage.data() + kGuard; }
  const uint8_t* data() const { return storage.data() + kGuard; }
  // Guard bytes everywhere (the payload is filled by the caller).
  void allocate() {
    storage.assign(payload() + 2 * kGuard, kGuardByte);
    rebind();
  }
  // The view over this buffer's own payload.
  void rebind() {
    view = oph_tensor{};
    view.data = data();
    view.device = {OPH_DL_CPU, 0};
    view.ndim = static_cast<int32_t>(shape.size());
    view.dtype = dtype;
    view.shape = shape.data();
    view.strides = nullptr;
    view.byte_offset = 0;
  }
};

// Fills every element of `b` with the poison pattern `variant` (0 or 1): a signalling NaN for floats (arithmetic
// never produces one), 0xA5 (0x5A) bytes for the rest. Variant 1 confirms that an element equal to variant 0
// really was not written (and is not a computed value that happens to equal it).
void poison(Buffer& b, int variant);
// Indices of the elements still equal to the poison pattern.
std::vector<size_t> poisoned_elements(const Buffer& b, int variant);
// Allocates `b` (its shape and dtype set) and fills it with random values: floats in [-2, 2), signed ints in
// [-5, 5], unsigned in [0, 10], bools.
void fill_random(Buffer& b, std::mt19937& rng);
// A buffer holding the sample's values.
Buffer from_sample(const SampleInput& s);
// Writes outside [data, data + payload): what the guard zones show. {what, kind of damage} for each side.
std::vector<std::pair<std::string, std::string>> guard_damage(const Buffer& b, const std::string& name);

// ---- the host side of compute --------------------------------------------------------------------------------

// The host's services, with a parallel_for that runs the chunks one after another on the calling thread.
const oph_host_services* check_services();

// allocate_output's context (oph_compute_context::host_data): the run's output buffers, the output pointers
// compute sees, which outputs were allocated, and the poison pattern of new buffers.
struct ComputeState {
  std::vector<Buffer>* outputs;
  std::vector<oph_tensor*>* out_ptrs;
  std::vector<bool>* allocated;
  int poison_variant;
};
// allocate_output of the run check: a guarded, poisoned buffer of the shape asked for, in `outputs[index]`.
oph_status* check_allocate_output(const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape);

}  // namespace ophost::cli::pack
