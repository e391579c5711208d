// Attribute types the C++ layer does not take: each variant must fail to compile with the SDK's one-line
// static_assert (OPH_ATTR_TYPE_MESSAGE) and no other error; VARIANT_GOOD must compile. Driven by
// check_attr_type_errors.cmake (CTest sdk.attr_type_*).
#include <ophost/ophost_plugin.hpp>

namespace oph = ophost::sdk;

namespace {

#if defined(VARIANT_INT_PARAM)
void scale(oph::In<float> x, oph::Out<float> y, int k) {  // int: the attribute is an int64_t
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * static_cast<float>(k);
}
#elif defined(VARIANT_DOUBLE_PARAM)
void scale(oph::In<float> x, oph::Out<float> y, double k) {  // double: the attribute is a float
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * static_cast<float>(k);
}
#else
void scale(oph::In<float> x, oph::Out<float> y, int64_t k) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * static_cast<float>(k);
}
#endif

}  // namespace

OPH_PACK(pack) {
#if defined(VARIANT_ATTR_GET_INT)
  pack.op("t", "get").attr("k", 2).infer(oph::same_as_input(0)).compute([](oph::KernelContext& ctx) {
    int k = ctx.attr<int>("k");  // int: read it as int64_t
    (void)k;
  });
#elif defined(VARIANT_DEFAULT_DOUBLES)
  pack.op("t", "defaults").attr("ks", std::vector<double>{1.0, 2.0}).infer(oph::same_as_input(0)).compute(
      [](oph::KernelContext&) {});
#else
  pack.op("t", "scale").attr("k", 2).infer(oph::same_as_input(0)).fn<scale>();
#endif
}
