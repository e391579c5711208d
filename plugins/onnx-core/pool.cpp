// onnx-core: pooling: GlobalAveragePool, GlobalMaxPool, MaxPool (with Indices), AveragePool; 1-3 spatial dims;
// com.ophost::BlockedMaxPool and BlockedAveragePool, on channel-blocked values (the host's nchwc-layout pass writes
// them).
#include "common.hpp"
#include "dnnl_util.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

namespace onnx_core {
namespace {

// ----- Global pools -----

template <bool kMax>
void global_pool_infer(oph::InferContext& c) {
  const char* op = kMax ? "GlobalMaxPool" : "GlobalAveragePool";
  if (!c.input_rank_known(0)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    return;
  }
  auto x = c.input_shape(0);
  if (x.size() < 2) fail(std::string(op) + ": X must have rank >= 2 (N, C, spatial...), got " + shape_str(x));
  std::vector<int64_t> y(x.begin(), x.end());
  for (size_t i = 2; i < y.size(); ++i) y[i] = 1;
  c.set_output(0, c.input_dtype(0), y);
}

template <bool kMax>
void global_pool_compute(const oph::KernelContext& ctx) {
  const std::string op = kMax ? "GlobalMaxPool" : "GlobalAveragePool";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  if (xs.size() < 2) fail(op + ": X must have rank >= 2, got " + shape_str(xs));
  std::vector<int64_t> ys(xs.begin(), xs.end());
  for (size_t i = 2; i < ys.size(); ++i) ys[i] = 1;
  oph::TensorRef y = ensure_output(ctx, 0, ys, op);
  if (!y.present()) return;
  const size_t planes = static_cast<size_t>(xs[0] * xs[1]);
  const size_t hw = x.size() / std::max<size_t>(planes, 1);
  if (planes == 0) return;
  if (hw == 0 && kMax) fail(op + ": empty spatial extent");
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    parallel_for(planes, std::max<size_t>(1, kGrain / std::max<size_t>(hw, 1)), [=](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {
        const T* s = xp + p * hw;
        if constexpr (kMax) {
          T m = s[0];
          for (size_t i = 1; i < hw; ++i) m = s[i] > m || std::isnan(s[i]) ? s[i] : m;
          yp[p] = m;
        } else {
          // Several partial sums: vectorizes and keeps float rounding close to pairwise summation.
          constexpr size_t L = 16;
          T acc[L] = {};
          size_t i = 0;
          for (; i + L <= hw; i += L)
            for (size_t l = 0; l < L; ++l) acc[l] += s[i + l];
          T sum = 0;
          for (; i < hw; ++i) sum += s[i];
          for (size_t l = 0; l < L; ++l) sum += acc[l];
          yp[p] = sum / static_cast<T>(hw);
        }
      }
    });
  });
}

// ----- MaxPool / AveragePool -----

struct PoolAttrs {
  std::string op, auto_pad;
  bool is_max = true;
  int64_t ceil_mode = 0, count_include_pad = 0, storage_order = 0;
  std::vector<int64_t> kernel, pads, strides, dilations;
};

PoolAttrs read_pool_attrs(const oph::Attrs& at, bool is_max) {
  PoolAttrs a;
  a.is_max = is_max;
  a.op = is_max ? "MaxPool" : "AveragePool";
  auto has = [&](const char* n) {  // false also when the attribute is not in this version's schema
    try {
      return at.has(n);
    } catch (const oph::Error&) {
      return false;
    }
  };
  a.auto_pad = at.get<std::string>("auto_pad");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" && a.auto_pad != "VALID")
    fail(a.op + ": auto_pad '" + a.auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  a.kernel = at.get<std::vector<int64_t>>("kernel_shape");
  if (has("pads")) a.pads = at.get<std::vector<int64_t>>("pads");
  if (has("strides")) a.strides = at.get<std::vector<int64_t>>("strides");
  if (has("dilations")) a.dilations = at.get<std::vector<int64_t>>("dilations");
  if (has("ceil_mode")) a.ceil_mode = at.get<int64_t>("ceil_mode");
  if (has("count_include_pad")) a.count_include_pad = at.get<int64_t>("count_include_pad");
  if (has("storage_order")) a.storage_order = at.get<int64_t>("storage_order");
  const size_t n = a.kernel.size();
  if (n < 1 || n > 3) fail(a.op + ": kernel_shape must have 1 to 3 values, got " + std::to_string(n), OPH_CODE_UNIMPLEMENTED);
  for (int64_t k : a.kernel)
    if (k < 1) fail(a.op + ": kernel_shape values must be >= 1");
  if (!a.pads.empty() && a.pads.size() != 2 * n) fail(a.op + ": pads must have 2 * " + std::to_string(n) + " values");
  if (!a.strides.empty() && a.strides.size() != n) fail(a.op + ": strides must have " + std::to_string(n) + " values");
  if (!a.dilations.empty() && a.dilations.size() != n)
    fail(a.op + ": dilations must have " + std::to_string(n) + " values");
  for (int64_t p : a.pads)
    if (p < 0) fail(a.op + ": pads must be >= 0");
  for (int64_t s : a.strides)
    if (s < 1) fail(a.op + ": strides must be >= 1");
  for (int64_t d : a.dilations)
    if (d < 1) fail(a.op + ": dilations must be >= 1");
  if (a.ceil_mode != 0 && a.ceil_mode != 1) fail(a.op + ": ceil_mode must be 0 or 1");
  if (a.count_include_pad != 0 && a.count_include_pad != 1) fail(a.op + ": count_include_pad must be 0 or 1");
  if (a.storage_order != 0 && a.storage_order != 1) fail(a.op + ": storage_order must be 0 or 1");
  if (!a.pads.empty() && a.auto_pad != "NOTSET") fail(a.op + ": pads and auto_pad=" + a.auto_pad + " must not both be given");
  return a;
}

struct PoolGeom {
  size_t n = 0;
  std::vector<int64_t> in, out, k, s, d, pb, pe;
  std::vector<int64_t> out_shape;
};

PoolGeom pool_geom(const PoolAttrs& a, std::span<const int64_t> x) {
  const size_t n = a.kernel.size();
  if (x.size() != n + 2)
    fail(a.op + ": X " + shape_str(x) + " must have rank " + std::to_string(n + 2) + " for a " + std::to_string(n) +
         "-d kernel_shape");
  PoolGeom g;
  g.n = n;
  for (size_t i = 0; i < n; ++i) {
    g.in.push_back(x[2 + i]);
    g.k.push_back(a.kernel[i]);
    g.s.push_back(a.strides.empty() ? 1 : a.strides[i]);
    g.d.push_back(a.dilations.empty() ? 1 : a.dilations[i]);
    g.pb.push_back(a.pads.empty() ? 0 : a.pads[i]);
    g.pe.push_back(a.pads.empty() ? 0 : a.pads[n + i]);
  }
  g.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = g.in[i], ek = (g.k[i] - 1) * g.d[i] + 1, s = g.s[i];
    if (in < 0) { g.out[i] = -1; continue; }
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
      int64_t small = total / 2, big = total - small;
      g.pb[i] = a.auto_pad == "SAME_UPPER" ? small : big;
      g.pe[i] = a.auto_pad == "SAME_UPPER" ? big : small;
      g.out[i] = out;
      continue;
    }
    int64_t span = in + g.pb[i] + g.pe[i] - ek;
    if (span < 0) fail(a.op + ": kernel (extent " + std::to_string(ek) + ") is larger than the padded input " + shape_str(x));
    int64_t out = (a.ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // ceil_mode: a window that starts in the end padding is dropped (as ONNX's reference and PyTorch do).
    if (a.ceil_mode && (out - 1) * s >= in + g.pb[i]) --out;
    g.out[i] = out;
  }
  g.out_shape = {x[0], x[1]};
  g.out_shape.insert(g.out_shape.end(), g.out.begin(), g.out.end());
  return g;
}

void pool_infer(oph::InferContext& c, bool is_max) {
  PoolAttrs a = read_pool_attrs(c.attrs(), is_max);
  if (!c.input_rank_known(0)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    if (c.num_outputs() > 1) c.set_output_unknown_rank(1, i64);
    return;
  }
  PoolGeom g = pool_geom(a, c.input_shape(0));
  c.set_output(0, c.input_dtype(0), g.out_shape);
  if (is_max && c.num_outputs() > 1) c.set_output(1, i64, g.out_shape);
}

// The kernel taps t in [0, k) whose input index start + t * dilation lies in [0, in), as [lo, hi) (empty when
// lo >= hi). Loops run over these only: a window far larger than the input (kernel_shape 2^40 with SAME
// padding, from the op fuzz target) costs the input's extent, not the kernel's.
inline std::pair<int64_t, int64_t> valid_taps(int64_t start, int64_t dilation, int64_t in, int64_t k) {
  const int64_t lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t hi = in - start <= 0 ? 0 : (in - start + dilation - 1) / dilation;
  return {lo, std::min(hi, k)};
}

template <class T>
void pool_run(const PoolAttrs& a, const PoolGeom& g0, const T* x, T* y, int64_t* ind,
              int64_t planes) {
  // Pad to 3 spatial dims (leading dims of size 1).
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  const size_t off = 3 - g0.n;
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= off;
    size_t j = i - off;
    in[i] = real ? g0.in[j] : 1;
    out[i] = real ? g0.out[j] : 1;
    k[i] = real ? g0.k[j] : 1;
    s[i] = real ? g0.s[j] : 1;
    d[i] = real ? g0.d[j] : 1;
    pb[i] = real ? g0.pb[j] : 0;
    pe[i] = real ? g0.pe[j] : 0;
  }
  const int64_t in_sz = in[0] * in[1] * in[2], out_sz = out[0] * out[1] * out[2];
  const bool is_max = a.is_max, incl = a.count_include_pad != 0, col_major = a.storage_order == 1;
  if (is_max && !ind && g0.n == 2 && d[1] == 1 && d[2] == 1) {
    // 2-d max without Indices: row by row, each kernel tap a pass over the output row's valid columns (no
    // per-element bounds checks). NaN propagates as in numpy's max.
    parallel_for(static_cast<size_t>(planes), 1, [&](size_t pb0, size_t pe0) {
      for (size_t p = pb0; p < pe0; ++p) {
        const T* xp = x + p * in_sz;
        T* yp = y + p * out_sz;
        for (int64_t oh = 0; oh < out[1]; ++oh) {
          T* yr = yp + oh * out[2];
          std::fill(yr, yr + out[2], std::numeric_limits<T>::lowest());
          const auto [kh_lo, kh_hi] = valid_taps(oh * s[1] - pb[1], 1, in[1], k[1]);
          // Columns: taps whose input column ow * s - pl + kw is inside [0, in) for some output column ow.
          const int64_t kw_lo = std::max<int64_t>(0, pb[2] - (out[2] - 1) * s[2]), kw_hi = std::min(k[2], in[2] + pb[2]);
          for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
            const int64_t ih = oh * s[1] - pb[1] + kh;
            const T* xr = xp + ih * in[2];
            for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
              // Output columns whose input column ow * s - pl + kw lies inside [0, in).
              const int64_t off = kw - pb[2];
              int64_t lo = off >= 0 ? 0 : (-off + s[2] - 1) / s[2];
              int64_t hi = in[2] - off <= 0 ? 0 : (in[2] - off + s[2] - 1) / s[2];
              hi = std::min(hi, out[2]);
              const int64_t st2 = s[2];
              for (int64_t ow = lo; ow < hi; ++ow) {
                const T v = xr[ow * st2 + off];
                yr[ow] = (v > yr[ow] || v != v) ? v : yr[ow];
              }
            }
          }
        }
      }
    });
    return;
  }
  parallel_for(static_cast<size_t>(planes), 1, [&](size_t pb0, size_t pe0) {
    for (size_t p = pb0; p < pe0; ++p) {
      const T* xp = x + p * in_sz;
      T* yp = y + p * out_sz;
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            const int64_t st[3] = {o0 * s[0] - pb[0], o1 * s[1] - pb[1], o2 * s[2] - pb[2]};
            T acc = is_max ? std::numeric_limits<T>::lowest() : T(0);
            int64_t best = -1, count = 0;
            const auto [lo0, hi0] = valid_taps(st[0], d[0], in[0], k[0]);
            const auto [lo1, hi1] = valid_taps(st[1], d[1], in[1], k[1]);
            const auto [lo2, hi2] = valid_taps(st[2], d[2], in[2], k[2]);
            for (int64_t a0 = lo0; a0 < hi0; ++a0) {
              const int64_t i0 = st[0] + a0 * d[0];
              for (int64_t a1 = lo1; a1 < hi1; ++a1) {
                const int64_t i1 = st[1] + a1 * d[1];
                for (int64_t a2 = lo2; a2 < hi2; ++a2) {
                  const int64_t i2 = st[2] + a2 * d[2];
                  int64_t idx = (i0 * in[1] + i1) * in[2] + i2;
                  T v = xp[idx];
                  if (is_max) {
                    if (best < 0 || v > acc) {
                      acc = v;
                      best = idx;
                    }
                  } else {
                    acc += v;
                  }
                  ++count;
                }
              }
            }
            const int64_t oi = (o0 * out[1] + o1) * out[2] + o2;
            if (is_max) {
              yp[oi] = acc;
              if (ind) {
                int64_t flat = best;
                if (col_major && best >= 0) {
                  int64_t i2 = best % in[2], i1 = (best / in[2]) % in[1], i0 = best / (in[2] * in[1]);
                  flat = (i2 * in[1] + i1) * in[0] + i0;
                }
                ind[p * out_sz + oi] = static_cast<int64_t>(p) * in_sz + flat;
              }
            } else {
              int64_t div = count;
              if (incl) {
                // Window clipped to the padded input (pads count, the area past them does not).
                div = 1;
                for (int i = 0; i < 3; ++i) {
                  int64_t lo = st[i], hi = std::min(st[i] + (k[i] - 1) * d[i] + 1, in[i] + pe[i]);
                  div *= (hi - lo + d[i] - 1) / d[i];
                }
              }
              yp[oi] = div > 0 ? acc / static_cast<T>(div) : T(0);
            }
          }
    }
  });
}

// float32 pooling without the Indices output on oneDNN (jit kernels on plain NC[D]HW), where its semantics
// equal ONNX's: the right padding is what makes oneDNN's floor formula give ONNX's output size (ceil_mode
// included); AveragePool counting pads only when that padding is the declared one (windows clipped at the
// padded input's end divide by the clipped size in ONNX, by the full kernel in oneDNN).
using memory_desc_pair = std::pair<dnnl::memory::desc, dnnl::memory::desc>;  // src, dst

struct DnnlPool {
  dnnl::pooling_v2_forward prim;
  memory_desc_pair md;
  size_t scratch_bytes = 0;
  std::string impl;
};

std::shared_ptr<const DnnlPool> build_dnnl_pool(const PoolAttrs& a, const PoolGeom& g, std::span<const int64_t> x,
                                                bool blocked = false) {
  using dnnl::memory;
  dnnl::memory::dims strides, kernel, dil, pl, pr;
  for (size_t i = 0; i < g.n; ++i) {
    const int64_t ek = (g.k[i] - 1) * g.d[i] + 1;
    int64_t r = std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + ek - g.in[i] - g.pb[i]);
    if ((g.in[i] + g.pb[i] + r - ek) / g.s[i] + 1 != g.out[i]) return nullptr;
    // oneDNN divides by the whole kernel where ONNX clips a window to the padded input: the same while no window
    // reaches past the declared end padding (r <= pe; ceil_mode can make r larger).
    if (!a.is_max && a.count_include_pad && r > g.pe[i]) return nullptr;
    strides.push_back(g.s[i]);
    kernel.push_back(g.k[i]);
    dil.push_back(g.d[i] - 1);
    pl.push_back(g.pb[i]);
    pr.push_back(r);
  }
  auto t = g.n == 1 ? memory::format_tag::ncw : g.n == 2 ? memory::format_tag::nchw : memory::format_tag::ncdhw;
  if (blocked) t = nchwc_tag(x[1]);  // nChw8c/16c in and out (BlockedMaxPool, BlockedAveragePool)
  memory::desc src(memory::dims(x.begin(), x.end()), memory::data_type::f32, t);
  memory::desc dst(memory::dims(g.out_shape.begin(), g.out_shape.end()), memory::data_type::f32, t);
  const auto alg = a.is_max ? dnnl::algorithm::pooling_max
                            : a.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, strides, kernel, dil, pl, pr);
    set_dnnl_threads();  // work is partitioned for the team size current at creation
    dnnl::pooling_v2_forward::primitive_desc pd(d, attr, cpu_engine());
    // Only oneDNN's jit kernels beat the host loop; its reference and "simple_nchw" (AVX2 on plain layouts,
    // 3x slower than the loop on SqueezeNet's pools) do not.
    if (std::string_view(pd.impl_info_str()).rfind("jit", 0) != 0) return nullptr;
    auto p = std::make_shared<DnnlPool>();
    p->md = {src, dst};
    p->scratch_bytes = pd.scratchpad_desc().get_size();
    p->impl = pd.impl_info_str();
    p->prim = dnnl::pooling_v2_forward(pd);
    return p;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

void run_dnnl(const DnnlPool& p, const void* x, void* y) {
  auto& eng = cpu_engine();
  thread_local dnnl::stream stream(eng);
  thread_local std::vector<char> scratch;
  set_dnnl_threads();
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(p.md.first, eng, const_cast<void*>(x))},
                                             {DNNL_ARG_DST, dnnl::memory(p.md.second, eng, y)}};
  if (p.scratch_bytes) {
    if (scratch.size() < p.scratch_bytes) scratch.resize(p.scratch_bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 dnnl::memory(dnnl::memory::desc({static_cast<dnnl::memory::dim>(p.scratch_bytes)},
                                                 dnnl::memory::data_type::u8, dnnl::memory::format_tag::x),
                              eng, scratch.data()));
  }
  p.prim.execute(stream, args);
  stream.wait();
}

struct PoolKernel {
  PoolAttrs a;
  std::mutex mu;
  std::map<std::vector<int64_t>, std::shared_ptr<const DnnlPool>> cache;  // by input shape; null: host loop

  bool blocked = false;  // com.ophost::Blocked{Max,Average}Pool: X and Y channel-blocked, oneDNN only

  PoolKernel(const oph::KernelInit& init, bool is_max, bool blocked_layout = false)
      : a(read_pool_attrs(init.attrs(), is_max)), blocked(blocked_layout) {}

  oph::Implementation implementation() {
    std::lock_guard lock(mu);
    oph::Implementation out;
    for (const auto& [shape, p] : cache) append_distinct(out.name, p ? "oneDNN " + p->impl : "onnx-core loop");
    return out;
  }

  // The oneDNN primitive for this input shape, or null (host loop).
  std::shared_ptr<const DnnlPool> dnnl_for(const PoolGeom& g, std::span<const int64_t> shape) {
    std::vector<int64_t> key(shape.begin(), shape.end());
    std::lock_guard lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    if (cache.size() > 16) cache.clear();  // dynamic shapes: keep the cache bounded
    return cache.emplace(key, build_dnnl_pool(a, g, shape, blocked)).first->second;
  }

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, a.op);
    PoolGeom g = pool_geom(a, x.shape());
    oph::TensorRef y = ensure_output(ctx, 0, g.out_shape, a.op);
    oph::TensorRef ind = a.is_max && ctx.num_outputs() > 1 ? ensure_output(ctx, 1, g.out_shape, a.op) : oph::TensorRef();
    if (!y.present() && !ind.present()) return;
    if (blocked) {
      const std::string op = "Blocked" + a.op;
      if (!(x.dtype() == f32) || g.n != 2 || nchwc_block(x.shape()[1]) == 0)
        fail(op + ": X must be a 4-D float32 tensor whose channels are a multiple of 8, got " + shape_str(x.shape()));
      if (oph::numel(g.out_shape) == 0) return;
      auto p = dnnl_for(g, x.shape());
      if (!p)
        fail(op + ": oneDNN has no jit kernel for this pooling on blocked layouts (X " + shape_str(x.shape()) +
                 "); run with --disable-pass nchwc-layout",
             OPH_CODE_UNIMPLEMENTED);
      run_dnnl(*p, x.data(), y.data());
      return;
    }
    if (x.dtype() == f32 && y.present() && !ind.present() && oph::numel(g.out_shape) > 0) {
      if (auto p = dnnl_for(g, x.shape())) {
        run_dnnl(*p, x.data(), y.data());
        return;
      }
    }
    if (a.storage_order == 1 && ind.present() && g.n != 2)
      fail(a.op + ": storage_order=1 is only defined for 2-d pooling", OPH_CODE_UNIMPLEMENTED);
    const int64_t planes = x.shape()[0] * x.shape()[1];
    if (planes == 0 || oph::numel(g.out_shape) == 0) return;
    std::vector<char> tmp;
    auto run = [&]<class T>(std::type_identity<T>) {
      T* yp = static_cast<T*>(y.present() ? y.data() : nullptr);
      if (!yp) {
        tmp.resize(oph::numel(g.out_shape) * sizeof(T));
        yp = reinterpret_cast<T*>(tmp.data());
      }
      pool_run<T>(a, g, static_cast<const T*>(x.data()), yp,
                  ind.present() ? static_cast<int64_t*>(ind.data()) : nullptr, planes);
    };
    oph_dtype dt = x.dtype();
    if (dt == f32) run(std::type_identity<float>{});
    else if (dt == f64) run(std::type_identity<double>{});
    else if (a.is_max && dt == i8) run(std::type_identity<int8_t>{});
    else if (a.is_max && dt == u8) run(std::type_identity<uint8_t>{});
    else fail(a.op + ": dtype " + oph::dtype_name(dt) + " is not supported", OPH_CODE_UNIMPLEMENTED);
  }
};
struct MaxPoolK : PoolKernel {
  explicit MaxPoolK(const oph::KernelInit& i) : PoolKernel(i, true) {}
};
struct BlockedMaxPoolK : PoolKernel {
  explicit BlockedMaxPoolK(const oph::KernelInit& i) : PoolKernel(i, true, true) {}
};
struct AveragePoolK : PoolKernel {
  explicit AveragePoolK(const oph::KernelInit& i) : PoolKernel(i, false) {}
};
struct BlockedAveragePoolK : PoolKernel {
  explicit BlockedAveragePoolK(const oph::KernelInit& i) : PoolKernel(i, false, true) {}
};

void register_pool(oph::Pack& pack) {
  for (bool is_max : {false, true}) {
    const char* name = is_max ? "GlobalMaxPool" : "GlobalAveragePool";
    auto& b = pack.op(kDomain, name)
                  .versions(1, OPH_OPSET_MAX)
                  .doc(is_max ? "max over all spatial positions" : "mean over all spatial positions")
                  .input("X", "T")
                  .output("Y", "T")
                  .infer(is_max ? &global_pool_infer<true> : &global_pool_infer<false>)
                  .compute(is_max ? &global_pool_compute<true> : &global_pool_compute<false>);
    add_types(b, "T", kFloat);
  }

  // MaxPool: 1-7 base; 8-9 + storage_order, Indices; 10-11 + ceil_mode, dilations; 12+ int8/uint8.
  struct V { int since, until; bool storage, ceil_dil, ints; };
  for (V v : {V{1, 7, false, false, false}, V{8, 9, true, false, false}, V{10, 11, true, true, false},
              V{12, OPH_OPSET_MAX, true, true, true}}) {
    auto& b = pack.op(kDomain, "MaxPool").versions(v.since, v.until).doc("max pooling (1-3 spatial dims)");
    b.input("X", "T").output("Y", "T");
    if (v.storage) b.output("Indices", "I", OPH_ARITY_OPTIONAL).types("I", {i64});
    b.attr("auto_pad", std::string("NOTSET"));
    if (v.ceil_dil) b.attr("ceil_mode", int64_t{0}).optional_attr("dilations", OPH_ATTR_INTS);
    b.required_attr("kernel_shape", OPH_ATTR_INTS).optional_attr("pads", OPH_ATTR_INTS);
    if (v.storage) b.attr("storage_order", int64_t{0});
    b.optional_attr("strides", OPH_ATTR_INTS);
    b.infer([](oph::InferContext& c) { pool_infer(c, true); }).kernel<MaxPoolK>();
    add_types(b, "T", kFloat);
    if (v.ints) add_types(b, "T", {i8, u8});
  }
  // MaxPool (opset 12 attributes, no Indices) and AveragePool (opset 19 attributes) on channel-blocked X and Y,
  // written by the host's nchwc-layout pass.
  for (bool is_max : {true, false}) {
    const std::string op = is_max ? "MaxPool" : "AveragePool";
    auto& b = pack.op("com.ophost", "Blocked" + op)
                  .versions(1, OPH_OPSET_MAX)
                  .doc(op + " on channel-blocked (nChw8c/16c) 4-D float32 values, oneDNN; written by the host's "
                            "nchwc-layout pass")
                  .input("X", "T")
                  .output("Y", "T")
                  .types("T", {f32})
                  .attr("auto_pad", std::string("NOTSET"))
                  .attr("ceil_mode", int64_t{0})
                  .optional_attr("dilations", OPH_ATTR_INTS)
                  .required_attr("kernel_shape", OPH_ATTR_INTS)
                  .optional_attr("pads", OPH_ATTR_INTS)
                  .optional_attr("strides", OPH_ATTR_INTS)
                  .infer([is_max](oph::InferContext& c) { pool_infer(c, is_max); });
    if (is_max) b.attr("storage_order", int64_t{0}).kernel<BlockedMaxPoolK>();
    else b.attr("count_include_pad", int64_t{0}).kernel<BlockedAveragePoolK>();
  }
  // AveragePool: 1-6 base; 7-9 + count_include_pad; 10-18 + ceil_mode; 19+ + dilations.
  struct A { int since, until; bool cip, ceil, dil; };
  for (A v : {A{1, 6, false, false, false}, A{7, 9, true, false, false}, A{10, 18, true, true, false},
              A{19, OPH_OPSET_MAX, true, true, true}}) {
    auto& b = pack.op(kDomain, "AveragePool").versions(v.since, v.until).doc("average pooling (1-3 spatial dims)");
    b.input("X", "T").output("Y", "T").attr("auto_pad", std::string("NOTSET"));
    if (v.ceil) b.attr("ceil_mode", int64_t{0});
    if (v.cip) b.attr("count_include_pad", int64_t{0});
    if (v.dil) b.optional_attr("dilations", OPH_ATTR_INTS);
    b.required_attr("kernel_shape", OPH_ATTR_INTS)
        .optional_attr("pads", OPH_ATTR_INTS)
        .optional_attr("strides", OPH_ATTR_INTS)
        .infer([](oph::InferContext& c) { pool_infer(c, false); })
        .kernel<AveragePoolK>();
    add_types(b, "T", kFloat);
  }
}

}  // namespace

static const Family kFamily("pool", &register_pool);

}  // namespace onnx_core
