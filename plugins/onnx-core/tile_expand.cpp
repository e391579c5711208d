// onnx-core: Expand and Tile (the input broadcast to a shape, or repeated along each axis).
#include "common.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace onnx_core {
namespace {

// "[-3,4]": shape_str would print a negative entry as an unknown dim.
std::string ints_str(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t k = 0; k < v.size(); ++k) out += (k ? "," : "") + std::to_string(v[k]);
  return out + "]";
}

// Expand's shape may hold 0 (an empty output) and 1 (keep the input's dimension), never a negative entry.
void check_expand_shape(const std::vector<int64_t>& shape) {
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] < 0)
      fail("Expand: shape " + ints_str(shape) + " holds a negative dimension (" + std::to_string(shape[k]) +
           " at index " + std::to_string(k) + "); every entry must be >= 0 (1 keeps the input's dimension)");
}

void register_expand_tile(oph::Pack& pack) {
  {
    oph::OpBuilder& b =
        pack.op(kDomain, "Expand")
            .versions(8, OPH_OPSET_MAX)
            .doc("input broadcast to `shape` (bidirectional broadcasting)")
            .input("input", "T")
            .input("shape", "I", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .output("output", "T")
            .types("I", {i64})
            .infer([](oph::InferContext& c) {
              auto shape = const_ints(c, 1, "Expand", "shape");
              if (!shape || !c.input_rank_known(0)) {
                if (c.input_rank_known(1) && c.input_shape(1).size() == 1 && c.input_shape(1)[0] >= 0 &&
                    c.input_rank_known(0))
                  c.set_output(0, c.input_dtype(0),
                               std::vector<int64_t>(std::max<size_t>(c.input_shape(0).size(),
                                                                     static_cast<size_t>(c.input_shape(1)[0])),
                                                    OPH_DIM_UNKNOWN));
                else c.set_output_unknown_rank(0, c.input_dtype(0));
                return;
              }
              check_expand_shape(*shape);
              c.set_output(0, c.input_dtype(0), oph::broadcast_shapes(c.input_shape(0), *shape));
            })
            .compute([](oph::KernelContext& ctx) {
              oph::TensorRef x = input(ctx, 0, "Expand");
              std::vector<int64_t> shape = read_ints(ctx.input(1).raw(), "Expand", "shape");
              check_expand_shape(shape);
              std::vector<int64_t> oshape = oph::broadcast_shapes(x.shape(), shape);
              oph::TensorRef y = ensure_output(ctx, 0, oshape, "Expand");
              if (!y.present()) return;
              auto st = compact_strides(x.shape());
              std::vector<int64_t> strides(oshape.size(), 0);
              const size_t off = oshape.size() - x.shape().size();
              for (size_t k = 0; k < x.shape().size(); ++k) strides[k + off] = x.shape()[k] == 1 ? 0 : st[k];
              strided_copy(y.data(), x.data(), elem_size(x.dtype()), oshape, strides, 0);
            });
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b =
      pack.op(kDomain, "Tile")
          .versions(6, OPH_OPSET_MAX)
          .doc("input repeated `repeats` times along each axis")
          .input("input", "T")
          .input("repeats", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
          .output("output", "T")
          .types("T1", {i64})
          .infer([](oph::InferContext& c) {
            if (!c.input_rank_known(0)) {
              c.set_output_unknown_rank(0, c.input_dtype(0));
              return;
            }
            auto in = c.input_shape(0);
            auto rep = const_ints(c, 1, "Tile", "repeats");
            if (!rep) {
              c.set_output(0, c.input_dtype(0), std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
              return;
            }
            if (rep->size() != in.size()) fail("Tile: repeats must have one entry per input dimension");
            std::vector<int64_t> out(in.size());
            for (size_t k = 0; k < in.size(); ++k) out[k] = in[k] < 0 ? OPH_DIM_UNKNOWN : in[k] * (*rep)[k];
            c.set_output(0, c.input_dtype(0), out);
          })
          .compute([](oph::KernelContext& ctx) {
            oph::TensorRef x = input(ctx, 0, "Tile");
            std::vector<int64_t> rep = read_ints(ctx.input(1).raw(), "Tile", "repeats");
            auto in = x.shape();
            if (rep.size() != in.size()) fail("Tile: repeats must have one entry per input dimension");
            const size_t r = in.size();
            std::vector<int64_t> oshape(r);
            for (size_t k = 0; k < r; ++k) {
              if (rep[k] < 0) fail("Tile: repeats must be non-negative");
              oshape[k] = in[k] * rep[k];
            }
            oph::TensorRef y = ensure_output(ctx, 0, oshape, "Tile");
            if (!y.present()) return;
            const size_t n = oph::numel(oshape), es = elem_size(x.dtype());
            auto st = compact_strides(in);
            const char* S = static_cast<const char*>(x.data());
            char* D = static_cast<char*>(y.data());
            for (size_t i = 0; i < n; ++i) {
              size_t rem = i;
              int64_t off = 0;
              for (size_t k = r; k-- > 0;) {
                int64_t c = static_cast<int64_t>(rem % static_cast<size_t>(oshape[k]));
                rem /= static_cast<size_t>(oshape[k]);
                off += (c % in[k]) * st[k];
              }
              std::memcpy(D + i * es, S + static_cast<size_t>(off) * es, es);
            }
          });
  add_types(b, "T", kAll);
}

}  // namespace

static const Family kFamily("tile_expand", &register_expand_tile);

}  // namespace onnx_core
