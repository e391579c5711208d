// onnx-core: Trilu (the upper or lower triangular part of matrices).
#include "common.hpp"

#include <cstring>

namespace onnx_core {
namespace {

void trilu_compute(const oph::KernelContext& ctx) {
  const std::string op = "Trilu";
  oph::TensorRef x = input(ctx, 0, op);
  if (x.ndim() < 2) fail(op + ": input must have rank >= 2");
  int64_t k = 0;
  if (ctx.num_inputs() > 1 && ctx.input(1).present()) {
    auto kv = read_ints(ctx.input(1).raw(), op, "k");
    if (kv.size() != 1) fail(op + ": k must be a scalar");
    k = kv[0];
  }
  const bool upper = ctx.attr<int64_t>("upper") != 0;
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  const int64_t R = x.shape()[x.ndim() - 2], C = x.shape()[x.ndim() - 1];
  const size_t es = elem_size(x.dtype()), mat = static_cast<size_t>(R * C), batches = mat ? x.size() / mat : 0;
  const char* S = static_cast<const char*>(x.data());
  char* D = static_cast<char*>(y.data());
  for (size_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const size_t at = (b * mat + static_cast<size_t>(i * C + j)) * es;
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (keep) std::memcpy(D + at, S + at, es);
        else std::memset(D + at, 0, es);
      }
}

void register_trilu(oph::Pack& pack) {
  oph::OpBuilder& b = pack.op(kDomain, "Trilu")
                          .versions(14, OPH_OPSET_MAX)
                          .doc("upper (or lower) triangular part of the last two dims, diagonal offset k")
                          .attr("upper", int64_t{1})
                          .input("input", "T")
                          .optional_input("k", "I", OPH_MEMORY_HOST)
                          .output("output", "T")
                          .types("I", {i64})
                          .infer(oph::same_as_input(0))
                          .compute(trilu_compute);
  add_types(b, "T", kAll);
}

}  // namespace

static const Family kFamily("trilu", &register_trilu);

}  // namespace onnx_core
