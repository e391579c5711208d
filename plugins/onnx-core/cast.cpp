// onnx-core: Cast and CastLike: conversion between any two fixed-size dtypes.
#include "common.hpp"
#include "convert.hpp"

namespace onnx_core {
namespace {

void cast_buffer(oph_dtype from, const void* src, oph_dtype to, void* dst, size_t n,
                 const std::string& op) {
  if (from == to) {
    copy_bytes(dst, src, n * elem_size(from));
    return;
  }
  dispatch_all(from, op, [&]<class S>(std::type_identity<S>) {
    dispatch_all(to, op, [&]<class D>(std::type_identity<D>) {
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      parallel_for(n, kGrain, [=](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) d[i] = convert<D>(s[i]);
      });
    });
  });
}

void register_cast(oph::Pack& pack) {
  for (auto vr : {std::pair{6, 12}, std::pair{13, 18}, std::pair{19, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "Cast")
                            .versions(since, until)
                            .doc("Y = X converted to the element type `to`")
                            .required_attr("to", OPH_ATTR_INT)
                            .input("input", "T1")
                            .output("output", "T2")
                            .infer([](oph::InferContext& c) {
                              oph_dtype to = cast_dtype(c.attr<int64_t>("to"), "Cast");
                              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, to);
                              else c.set_output(0, to, c.input_shape(0));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Cast");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Cast");
                              if (!y.present()) return;
                              cast_buffer(x.dtype(), x.data(), y.dtype(), y.data(), x.size(), "Cast");
                            });
    if (since >= 19) b.attr("saturate", int64_t{1});
    add_types(b, "T1", kAll);
    add_types(b, "T2", kAll);
  }
  for (auto vr : {std::pair{15, 18}, std::pair{19, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "CastLike")
                            .versions(since, until)
                            .doc("Y = X converted to the element type of target_type")
                            .input("input", "T1")
                            .input("target_type", "T2")
                            .output("output", "T2")
                            .infer([](oph::InferContext& c) {
                              oph_dtype to = c.input_dtype(1);
                              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, to);
                              else c.set_output(0, to, c.input_shape(0));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "CastLike");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "CastLike");
                              if (!y.present()) return;
                              cast_buffer(x.dtype(), x.data(), y.dtype(), y.data(), x.size(), "CastLike");
                            });
    if (since >= 19) b.attr("saturate", int64_t{1});
    add_types(b, "T1", kAll);
    add_types(b, "T2", kAll);
  }
}

}  // namespace

static const Family kFamily("cast", &register_cast);

}  // namespace onnx_core
