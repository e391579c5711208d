// onnx-core: Slice and Split.
#include "common.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace onnx_core {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Slice
// ---------------------------------------------------------------------------------------------------------

struct SliceSpec {
  std::vector<int64_t> shape;    // output shape
  std::vector<int64_t> start;    // per input dim
  std::vector<int64_t> step;
};

SliceSpec slice_spec(std::span<const int64_t> in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     std::vector<int64_t> axes, std::vector<int64_t> steps, const std::string& op) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) fail(op + ": starts and ends must have the same length");
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    fail(op + ": starts, ends, axes and steps must have the same length");
  SliceSpec s;
  s.shape.assign(in.begin(), in.end());
  s.start.assign(static_cast<size_t>(r), 0);
  s.step.assign(static_cast<size_t>(r), 1);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = normalize_axis(axes[k], r, true, op);
    if (seen[static_cast<size_t>(a)]) fail(op + ": axis " + std::to_string(axes[k]) + " is repeated");
    seen[static_cast<size_t>(a)] = true;
    int64_t d = in[static_cast<size_t>(a)], st = steps[k];
    if (st == 0) fail(op + ": steps must not be 0");
    if (d < 0) {
      s.shape[static_cast<size_t>(a)] = OPH_DIM_UNKNOWN;
      continue;
    }
    int64_t b = starts[k], e = ends[k];
    if (b < 0) b += d;
    if (e < 0) e += d;
    int64_t len;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      len = b > e ? (b - e + (-st) - 1) / (-st) : 0;
    }
    s.shape[static_cast<size_t>(a)] = len;
    s.start[static_cast<size_t>(a)] = b;
    s.step[static_cast<size_t>(a)] = st;
  }
  return s;
}

void slice_run(const oph::KernelContext& ctx, const oph::TensorRef& x, const SliceSpec& s, const std::string& op) {
  oph::TensorRef y = ensure_output(ctx, 0, s.shape, op);
  if (!y.present()) return;
  auto st = compact_strides(x.shape());
  std::vector<int64_t> strides(st.size());
  int64_t base = 0;
  for (size_t k = 0; k < st.size(); ++k) {
    strides[k] = st[k] * s.step[k];
    base += s.start[k] * st[k];
  }
  strided_copy(y.data(), x.data(), elem_size(x.dtype()), s.shape, strides, base);
}

void register_slice(oph::Pack& pack) {
  {
    oph::OpBuilder& b = pack.op(kDomain, "Slice")
                            .versions(1, 9)
                            .doc("data[starts:ends] along axes (attributes)")
                            .required_attr("starts", OPH_ATTR_INTS)
                            .required_attr("ends", OPH_ATTR_INTS)
                            .optional_attr("axes", OPH_ATTR_INTS)
                            .input("data", "T")
                            .output("output", "T")
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto ax = c.attrs().has("axes") ? c.attr<std::vector<int64_t>>("axes") : std::vector<int64_t>{};
                              SliceSpec s = slice_spec(c.input_shape(0), c.attr<std::vector<int64_t>>("starts"),
                                                       c.attr<std::vector<int64_t>>("ends"), ax, {}, "Slice");
                              c.set_output(0, c.input_dtype(0), s.shape);
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Slice");
                              auto ax = ctx.attrs().has("axes") ? ctx.attr<std::vector<int64_t>>("axes") : std::vector<int64_t>{};
                              SliceSpec s = slice_spec(x.shape(), ctx.attr<std::vector<int64_t>>("starts"),
                                                       ctx.attr<std::vector<int64_t>>("ends"), ax, {}, "Slice");
                              slice_run(ctx, x, s, "Slice");
                            });
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b = pack.op(kDomain, "Slice")
                          .versions(10, OPH_OPSET_MAX)
                          .doc("data[starts:ends:steps] along axes (inputs in host memory)")
                          .input("data", "T")
                          .input("starts", "Tind", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                          .input("ends", "Tind", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                          .optional_input("axes", "Tind", OPH_MEMORY_HOST)
                          .optional_input("steps", "Tind", OPH_MEMORY_HOST)
                          .output("output", "T")
                          .types("Tind", {i32, i64})
                          .infer([](oph::InferContext& c) {
                            if (!c.input_rank_known(0)) {
                              c.set_output_unknown_rank(0, c.input_dtype(0));
                              return;
                            }
                            auto in = c.input_shape(0);
                            auto starts = const_ints(c, 1, "Slice", "starts"), ends = const_ints(c, 2, "Slice", "ends");
                            std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{}, steps = std::vector<int64_t>{};
                            if (c.has_input(3)) axes = const_ints(c, 3, "Slice", "axes");
                            if (c.has_input(4)) steps = const_ints(c, 4, "Slice", "steps");
                            if (!starts || !ends || !axes || !steps) {
                              c.set_output(0, c.input_dtype(0), std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
                              return;
                            }
                            c.set_output(0, c.input_dtype(0), slice_spec(in, *starts, *ends, *axes, *steps, "Slice").shape);
                          })
                          .compute([](oph::KernelContext& ctx) {
                            oph::TensorRef x = input(ctx, 0, "Slice");
                            auto ints = [&](size_t i, const char* w) {
                              return ctx.input(i).present() ? read_ints(ctx.input(i).raw(), "Slice", w) : std::vector<int64_t>{};
                            };
                            SliceSpec s = slice_spec(x.shape(), ints(1, "starts"), ints(2, "ends"), ints(3, "axes"),
                                                     ints(4, "steps"), "Slice");
                            slice_run(ctx, x, s, "Slice");
                          });
  add_types(b, "T", kAll);
}

// ---------------------------------------------------------------------------------------------------------
// Split
// ---------------------------------------------------------------------------------------------------------

// Chunk sizes along the axis; nullopt when they are only known at run time.
std::vector<int64_t> split_sizes(int64_t dim, size_t n_out, const std::vector<int64_t>& split, int64_t num_outputs,
                                 const std::string& op) {
  if (!split.empty()) {
    if (split.size() != n_out)
      fail(op + ": split has " + std::to_string(split.size()) + " entries for " + std::to_string(n_out) + " outputs");
    int64_t s = 0;
    for (int64_t v : split) {
      if (v < 0) fail(op + ": split entries must be non-negative");
      s += v;
    }
    if (dim >= 0 && s != dim)
      fail(op + ": split sums to " + std::to_string(s) + " but the axis has size " + std::to_string(dim));
    return split;
  }
  int64_t n = num_outputs > 0 ? num_outputs : static_cast<int64_t>(n_out);
  if (num_outputs > 0 && static_cast<size_t>(num_outputs) != n_out)
    fail(op + ": num_outputs is " + std::to_string(num_outputs) + " but the node has " + std::to_string(n_out) + " outputs");
  std::vector<int64_t> out(static_cast<size_t>(n), OPH_DIM_UNKNOWN);
  if (dim < 0) return out;
  if (num_outputs > 0) {  // opset 18: ceil chunks, the last one smaller
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = std::max<int64_t>(0, std::min(chunk, dim - i * chunk));
  } else {
    if (dim % n != 0)
      fail(op + ": axis of size " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(n) + " outputs");
    std::fill(out.begin(), out.end(), dim / n);
  }
  return out;
}

void register_split(oph::Pack& pack) {
  struct V {
    int32_t since, until;
  };
  for (V v : {V{2, 10}, V{11, 12}, V{13, 17}, V{18, OPH_OPSET_MAX}}) {
    const int32_t since = v.since;
    const bool split_input = since >= 13;
    oph::OpBuilder& b = pack.op(kDomain, "Split").versions(v.since, v.until).doc("input split into chunks along axis");
    b.attr("axis", int64_t{0}).input("input", "T");
    if (split_input) b.optional_input("split", "I", OPH_MEMORY_HOST).types("I", {i64});
    else b.optional_attr("split", OPH_ATTR_INTS);
    if (since >= 18) b.optional_attr("num_outputs", OPH_ATTR_INT);
    b.output("outputs", "T", OPH_ARITY_VARIADIC);
    auto get_split = [split_input](const oph::Attrs& a, const oph_tensor* t, bool present, bool& known) {
      known = true;
      if (split_input) {
        if (!present) return std::vector<int64_t>{};
        if (!t) {
          known = false;
          return std::vector<int64_t>{};
        }
        return read_ints(t, "Split", "split");
      }
      return a.has("split") ? a.get<std::vector<int64_t>>("split") : std::vector<int64_t>{};
    };
    b.infer([since, get_split](oph::InferContext& c) {
       const oph_dtype dt = c.input_dtype(0);
       const size_t n_out = c.num_outputs();
       if (!c.input_rank_known(0)) {
         for (size_t i = 0; i < n_out; ++i) c.set_output_unknown_rank(i, dt);
         return;
       }
       auto in = c.input_shape(0);
       int64_t axis = normalize_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(in.size()), since >= 11, "Split");
       bool known;
       auto split = get_split(c.attrs(), c.has_input(1) ? c.input_constant(1) : nullptr, c.has_input(1), known);
       int64_t num = since >= 18 && c.attrs().has("num_outputs") ? c.attr<int64_t>("num_outputs") : 0;
       if (since >= 18 && c.attrs().has("num_outputs") && num < 1)
         fail("Split: num_outputs must be >= 1, got " + std::to_string(num));
       std::vector<int64_t> sizes =
           known ? split_sizes(in[static_cast<size_t>(axis)], n_out, split, num, "Split")
                 : std::vector<int64_t>(n_out, OPH_DIM_UNKNOWN);
       for (size_t i = 0; i < n_out; ++i) {
         std::vector<int64_t> s(in.begin(), in.end());
         s[static_cast<size_t>(axis)] = i < sizes.size() ? sizes[i] : OPH_DIM_UNKNOWN;
         c.set_output(i, dt, s);
       }
     }).compute([since, get_split](oph::KernelContext& ctx) {
      oph::TensorRef x = input(ctx, 0, "Split");
      auto in = x.shape();
      int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), x.ndim(), since >= 11, "Split");
      bool known;
      bool present = ctx.num_inputs() > 1 && ctx.input(1).present();
      auto split = get_split(ctx.attrs(), present ? ctx.input(1).raw() : nullptr, present, known);
      int64_t num = since >= 18 && ctx.attrs().has("num_outputs") ? ctx.attr<int64_t>("num_outputs") : 0;
      if (since >= 18 && ctx.attrs().has("num_outputs") && num < 1)
        fail("Split: num_outputs must be >= 1, got " + std::to_string(num));
      const size_t n_out = ctx.num_outputs();
      std::vector<int64_t> sizes = split_sizes(in[static_cast<size_t>(axis)], n_out, split, num, "Split");
      size_t outer = 1, inner = 1;
      for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(in[k]);
      for (int64_t k = axis + 1; k < x.ndim(); ++k) inner *= static_cast<size_t>(in[k]);
      const size_t es = elem_size(x.dtype()), dim = static_cast<size_t>(in[axis]);
      const char* S = static_cast<const char*>(x.data());
      size_t offset = 0;
      for (size_t i = 0; i < n_out; ++i) {
        std::vector<int64_t> s(in.begin(), in.end());
        s[static_cast<size_t>(axis)] = sizes[i];
        oph::TensorRef y = ensure_output(ctx, i, s, "Split");
        const size_t len = static_cast<size_t>(sizes[i]);
        if (y.present()) {
          char* D = static_cast<char*>(y.data());
          for (size_t o = 0; o < outer; ++o)
            std::memcpy(D + o * len * inner * es, S + (o * dim + offset) * inner * es, len * inner * es);
        }
        offset += len;
      }
    });
    add_types(b, "T", kAll);
  }
}

void register_slice_split(oph::Pack& pack) {
  register_slice(pack);
  register_split(pack);
}

}  // namespace

static const Family kFamily("slice_split", &register_slice_split);

}  // namespace onnx_core
