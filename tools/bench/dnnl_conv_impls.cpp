// Every implementation oneDNN offers for one 2-D float32 convolution, per activation layout, timed on this machine
// (1 thread: OMP_NUM_THREADS=1). What conv.cpp's layout and algorithm choices were measured with.
//
//   g++ -O2 -std=c++20 tools/bench/dnnl_conv_impls.cpp -o /tmp/dnnl_conv_impls -ldnnl
//   OMP_NUM_THREADS=1 /tmp/dnnl_conv_impls IC OC HW K STRIDE [GROUPS]     # square HW x HW input, K x K kernel
//   env: ALL=1 every implementation per layout (default: oneDNN's first choice only); ACT=relu|swish|logistic|none
//   (post-op, default relu); RECT=H,W,KH,KW a rectangular input and kernel instead of HW and K (pads KH/2, KW/2);
//   ONEDNN_MAX_CPU_ISA=AVX2 caps the ISA.
// Prints per layout (format_tag number: 1 any, 5 abcd, 20 acdb, 69 aBcd16b, 93 aBcd8b) the implementation, the
// median of 30 runs and GFLOP/s over the real (unpadded) products.
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s IC OC HW K STRIDE [GROUPS]\n", argv[0]);
    return 2;
  }
  int ic = std::atoi(argv[1]), oc = std::atoi(argv[2]), h = std::atoi(argv[3]), k = std::atoi(argv[4]),
            s = std::atoi(argv[5]), groups = argc > 6 ? std::atoi(argv[6]) : 1;
  const bool all = std::getenv("ALL") != nullptr;
  const std::string act = std::getenv("ACT") ? std::getenv("ACT") : "relu";
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  int w = h, kh = k, kw = k;
  if (const char* r = std::getenv("RECT")) std::sscanf(r, "%d,%d,%d,%d", &h, &w, &kh, &kw);
  const int ph = kh / 2, pw = kw / 2, oh = (h + 2 * ph - kh) / s + 1, ow = (w + 2 * pw - kw) / s + 1;
  const memory::dims src{1, ic, h, w}, dst{1, oc, oh, ow}, b{oc};
  const memory::dims wei =
      groups > 1 ? memory::dims{groups, oc / groups, ic / groups, kh, kw} : memory::dims{oc, ic, kh, kw};
  for (tag t : {tag::any, tag::aBcd16b, tag::acdb, tag::aBcd8b, tag::abcd}) {
    memory::desc sm(src, memory::data_type::f32, t), dm(dst, memory::data_type::f32, t),
        wm(wei, memory::data_type::f32, tag::any), bm(b, memory::data_type::f32, tag::x);
    post_ops po;
    if (act == "relu") po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    if (act == "swish") po.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
    if (act == "logistic") po.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(po);
    try {
      convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, sm, wm, bm, dm, {s, s},
                                  {ph, pw}, {ph, pw});
      convolution_forward::primitive_desc pd(d, attr, eng);
      do {
        memory S(pd.src_desc(), eng), D(pd.dst_desc(), eng), W(pd.weights_desc(), eng), B(bm, eng),
            SP(pd.scratchpad_desc(), eng);
        convolution_forward c(pd);
        std::vector<double> ts;
        for (int i = 0; i < 30; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          c.execute(st, {{DNNL_ARG_SRC, S}, {DNNL_ARG_DST, D}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_BIAS, B},
                         {DNNL_ARG_SCRATCHPAD, SP}});
          st.wait();
          ts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ts.begin(), ts.end());
        const double flops = 2.0 * oc * (ic / groups) * kh * kw * oh * ow;
        std::printf("fmt %d %-28s %9.1f us %6.1f GF/s\n", static_cast<int>(t), pd.impl_info_str(), ts[15],
                    flops / ts[15] / 1e3);
        if (!all) break;
      } while (pd.next_impl());
    } catch (const std::exception& e) {
      std::printf("fmt %d: %s\n", static_cast<int>(t), e.what());
    }
  }
  return 0;
}
