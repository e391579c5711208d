// Kernels of the misbehaving fake packs (fake::echo, built with FAKE_MISBEHAVE; see CMakeLists.txt). C++ on
// purpose: a badly written pack throws straight out of its C entry points, which the host must survive.
//   (none)                      well behaved: create_kernel allocates a state, compute copies x to out
//   FAKE_MB_THROW_IN_COMPUTE    compute throws std::runtime_error across the C ABI
//   FAKE_MB_COMPUTE_ERROR       compute returns an OPH_CODE_INTERNAL status
//   FAKE_MB_KERNEL_ERROR        create_kernel returns an OPH_CODE_FAILED_PRECONDITION status
//   FAKE_MB_KERNEL_THROW        create_kernel throws std::bad_alloc across the C ABI
//   FAKE_MB_WRONG_OUTPUT_SHAPE  compute asks the host (allocate_output) for an output whose first dimension is
//                               one larger than what its infer() declared (infer says: same shape as x), and
//                               returns the status it gets; it never writes outside a buffer it was given
#include <ophost/ophost_plugin.h>

#include <cstring>
#include <new>
#include <stdexcept>

namespace {
struct State {
  long magic = 0x5eed;
};
}  // namespace

extern "C" oph_status* fake_mb_create_kernel(const oph_kernel_create_args* args, void** out_state) {
#if defined(FAKE_MB_KERNEL_ERROR)
  return args->services->status_create(OPH_CODE_FAILED_PRECONDITION,
                                       "fake: weights for this node could not be prepared (by design)");
#elif defined(FAKE_MB_KERNEL_THROW)
  (void)args;
  (void)out_state;
  throw std::bad_alloc();
#else
  (void)args;
  *out_state = new State();
  return nullptr;
#endif
}

extern "C" void fake_mb_destroy_kernel(void* state) { delete static_cast<State*>(state); }

extern "C" oph_status* fake_mb_compute(void* state, const oph_compute_context* ctx) {
  if (state == nullptr || static_cast<State*>(state)->magic != 0x5eed) {
    return ctx->services->status_create(OPH_CODE_INTERNAL, "fake: compute called without its kernel state");
  }
#if defined(FAKE_MB_THROW_IN_COMPUTE)
  throw std::runtime_error("fake: something went wrong inside the kernel (by design)");
#elif defined(FAKE_MB_COMPUTE_ERROR)
  return ctx->services->status_create(OPH_CODE_INTERNAL, "fake: the kernel reports failure (by design)");
#else
  const oph_tensor* x = ctx->inputs[0];
  oph_tensor* y = ctx->outputs[0];
  int64_t shape[OPH_MAX_NDIM];
  for (int32_t d = 0; d < x->ndim; ++d) shape[d] = x->shape[d];
#if defined(FAKE_MB_WRONG_OUTPUT_SHAPE)
  if (x->ndim > 0) shape[0] += 1;
  if (ctx->allocate_output == nullptr) {
    return ctx->services->status_create(OPH_CODE_INTERNAL, "fake: no allocate_output to misuse");
  }
  if (oph_status* st = ctx->allocate_output(ctx, 0, x->ndim, shape)) return st;
  return nullptr;  // the host accepted the wrong shape: the test then sees the wrong output shape
#else
  if (y->data == nullptr) {
    if (oph_status* st = ctx->allocate_output(ctx, 0, x->ndim, shape)) return st;
  }
  size_t n = 4;
  for (int32_t d = 0; d < x->ndim; ++d) n *= static_cast<size_t>(x->shape[d]);
  std::memmove(static_cast<char*>(y->data) + y->byte_offset, static_cast<const char*>(x->data) + x->byte_offset, n);
  return nullptr;
#endif
#endif
}
