// onnx-core: com.ophost::LayoutReorder, the boundary of a channel-blocked region (the host's nchwc-layout pass
// inserts it). to="blocked": plain NCHW in, nChw8c/16c out (the block from the channel count, nchwc_block);
// to="plain": the reverse. Both sides are 4-D float32 tensors of the same shape and size (C a multiple of 8),
// so the host plans and sees an ordinary [N, C, H, W] value; only the kernels that the pass marked read the
// bytes as blocked. One oneDNN reorder primitive per input shape.
#include "common.hpp"
#include "dnnl_util.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace onnx_core {
namespace {

using dnnl::memory;

void check_blockable(std::span<const int64_t> x, const std::string& to) {
  if (x.size() != 4)
    fail("LayoutReorder: X must be 4-D (N, C, H, W), got " + shape_str(x));
  if (x[1] >= 0 && nchwc_block(x[1]) == 0)
    fail("LayoutReorder: channels must be a multiple of 8 for the blocked layout, got " + shape_str(x));
  if (to != "blocked" && to != "plain") fail("LayoutReorder: to must be 'blocked' or 'plain', got '" + to + "'");
}

struct Reorder {
  dnnl::reorder prim;
  memory::desc src, dst;
  std::string impl;
};

class LayoutReorderK {
 public:
  explicit LayoutReorderK(const oph::KernelInit& init) : to_blocked_(init.attrs().get<std::string>("to") == "blocked") {
    // Static shapes: the primitive now, so that `ophost inspect --kernels` names its implementation.
    const oph_value_info& x = init.input(0);
    std::span<const int64_t> shape(x.shape, static_cast<size_t>(std::max<int32_t>(0, x.ndim)));
    if (x.ndim == 4 && all_known(shape) && nchwc_block(shape[1])) get(shape);
  }

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, "LayoutReorder");
    if (!(x.dtype() == f32)) fail("LayoutReorder: only float32 is supported", OPH_CODE_UNIMPLEMENTED);
    check_blockable(x.shape(), to_blocked_ ? "blocked" : "plain");
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "LayoutReorder");
    if (!y.present() || oph::numel(x.shape()) == 0) return;
    std::shared_ptr<const Reorder> r = get(x.shape());
    auto& eng = cpu_engine();
    thread_local dnnl::stream stream(eng);
    set_dnnl_threads();
    memory src(r->src, eng, x.data()), dst(r->dst, eng, y.data());
    r->prim.execute(stream, src, dst);
    stream.wait();
  }

  oph::Implementation implementation() {
    std::lock_guard lock(mu_);
    return dnnl_implementation(cache_, "oneDNN reorder ");
  }

 private:
  std::shared_ptr<const Reorder> get(std::span<const int64_t> shape) {
    std::vector<int64_t> key(shape.begin(), shape.end());
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() > 16) cache_.clear();  // dynamic shapes: keep the cache bounded
    auto r = std::make_shared<Reorder>();
    const memory::dims dims(shape.begin(), shape.end());
    const memory::desc plain(dims, memory::data_type::f32, memory::format_tag::nchw);
    const memory::desc blocked(dims, memory::data_type::f32, nchwc_tag(shape[1]));
    if (blocked.get_size() != plain.get_size())
      fail("LayoutReorder: the blocked layout of " + shape_str(shape) + " does not fit the plain tensor's buffer",
           OPH_CODE_INTERNAL);
    r->src = to_blocked_ ? plain : blocked;
    r->dst = to_blocked_ ? blocked : plain;
    set_dnnl_threads();
    dnnl::reorder::primitive_desc pd(cpu_engine(), r->src, cpu_engine(), r->dst);
    r->impl = pd.impl_info_str();
    r->prim = dnnl::reorder(pd);
    return cache_.emplace(key, r).first->second;
  }

  bool to_blocked_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<const Reorder>> cache_;
};

void register_layout(oph::Pack& pack) {
  pack.op("com.ophost", "LayoutReorder")
      .versions(1, OPH_OPSET_MAX)
      .doc("plain NCHW <-> channel-blocked nChw8c/16c (same shape and size; C a multiple of 8), at the edges of "
           "the regions the host's nchwc-layout pass keeps blocked")
      .input("X", "T")
      .output("Y", "T")
      .types("T", {f32})
      .required_attr("to", OPH_ATTR_STRING)
      .infer([](oph::InferContext& c) {
        const std::string to = c.attrs().get<std::string>("to");
        if (c.input_rank_known(0)) check_blockable(c.input_shape(0), to);
        if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, c.input_dtype(0));
        else c.set_output(0, c.input_dtype(0), c.input_shape(0));
      })
      .kernel<LayoutReorderK>();
}

}  // namespace

static const Family kFamily("layout", &register_layout);

}  // namespace onnx_core