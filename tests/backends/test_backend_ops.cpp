// One backend-agnostic op suite that every device backend joins, with the CPU backend as the oracle.
//
// For each backend (cpu, cuda, hip) and each case of the op table (relu6_scale, gelu, Add, Mul, Relu, Sigmoid,
// Softmax, MatMul, Gemm over shapes that include 1 element and non-multiples of the GPU block size: 1, 7,
// 1000, 4097, [3,5,7], broadcasts): random inputs go through the backend's own alloc/copy (H2D), the pack's
// kernel runs on a backend stream, the result comes back (D2H) and is compared
//   - for cpu: with a plain double-precision reference computed here;
//   - for a GPU backend: with the CPU backend's result for the same inputs, within tolerance.
// A backend without a device (no driver, no GPU) skips its cases with the reason its enumerate reported;
// an op no pack provides on that device is skipped naming the op. The BackendApi tests exercise each
// backend's device table (inactive reporting runs everywhere; memory, copies, streams, events need a device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mini_host.hpp"

namespace {

using minihost::AttrValue;
using minihost::Backend;
using minihost::HostTensor;
using minihost::Plugin;

constexpr oph_dtype kF32{OPH_DTYPE_FLOAT, 32, 1};
constexpr oph_dtype kI32{OPH_DTYPE_INT, 32, 1};
constexpr oph_dtype kI64{OPH_DTYPE_INT, 64, 1};

// ---------------------------------------------------------------------------------------------------------
// Backends and their packs

struct Env {
  std::string device;
  std::unique_ptr<Backend> backend;
  std::vector<std::unique_ptr<Plugin>> packs;
};

const std::map<std::string, std::pair<std::string, std::vector<std::string>>>& backend_table() {
  static const std::map<std::string, std::pair<std::string, std::vector<std::string>>> t = {
      {"cpu", {"cpu", {"myops", "onnx-core"}}},
      {"cuda", {"cuda", {"myops-cuda", "cuda-core"}}},
      {"hip", {"hip", {"myops-hip"}}},
  };
  return t;
}

// Loaded once per process per backend (cuBLAS and runtime start-up are slow), and deliberately never
// released: at exit the packs' own static destructors may already have run, so releasing them then is unsafe.
Env& env(const std::string& device) {
  static auto* envs = new std::map<std::string, std::unique_ptr<Env>>();
  auto& slot = (*envs)[device];
  if (!slot) {
    slot = std::make_unique<Env>();
    slot->device = device;
    const auto& [backend_plugin, packs] = backend_table().at(device);
    slot->backend = std::make_unique<Backend>(backend_plugin);
    if (slot->backend->active())
      for (const auto& p : packs) slot->packs.push_back(std::make_unique<Plugin>(p));
  }
  return *slot;
}

// ---------------------------------------------------------------------------------------------------------
// The op table

struct OpCase {
  std::string label;
  std::string domain, op;
  int32_t opset = 17;
  std::vector<HostTensor> inputs;
  std::map<std::string, AttrValue> attrs;
  std::function<HostTensor(const std::vector<HostTensor>&)> reference;  // double precision, float32 result
  double atol = 1e-6, rtol = 1e-5;
};

HostTensor random_tensor(std::mt19937& rng, oph_dtype dt, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dt;
  t.shape = std::move(shape);
  const size_t n = t.numel();
  t.bytes.resize(n * (dt.bits / 8));
  if (dt == kF32) {
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    for (size_t i = 0; i < n; ++i) t.data<float>()[i] = u(rng);
  } else {
    std::uniform_int_distribution<int> u(-50, 50);
    for (size_t i = 0; i < n; ++i) {
      if (dt == kI32) t.data<int32_t>()[i] = u(rng);
      else t.data<int64_t>()[i] = u(rng);
    }
  }
  return t;
}

double get(const HostTensor& t, size_t i) {
  if (t.dtype == kF32) return t.data<float>()[i];
  if (t.dtype == kI32) return t.data<int32_t>()[i];
  return static_cast<double>(t.data<int64_t>()[i]);
}

HostTensor make_like(oph_dtype dt, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.bytes.resize(t.numel() * (dt.bits / 8));
  return t;
}

void set(HostTensor& t, size_t i, double v) {
  if (t.dtype == kF32) t.data<float>()[i] = static_cast<float>(v);
  else if (t.dtype == kI32) t.data<int32_t>()[i] = static_cast<int32_t>(v);
  else t.data<int64_t>()[i] = static_cast<int64_t>(v);
}

HostTensor map_ref(const HostTensor& x, const std::function<double(double)>& f) {
  HostTensor y = make_like(x.dtype, x.shape);
  for (size_t i = 0; i < x.numel(); ++i) set(y, i, f(get(x, i)));
  return y;
}

std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    out[k] = da == 1 ? db : da;
  }
  return out;
}

// Flat index into `shape` (right-aligned, broadcast) of the output coordinates `idx`.
size_t source_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& idx) {
  size_t off = idx.size() - shape.size(), flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + (shape[k] == 1 ? 0 : idx[k + off]);
  return flat;
}

std::vector<int64_t> unravel(size_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = static_cast<int64_t>(i % shape[k]);
    i /= shape[k];
  }
  return idx;
}

HostTensor binary_ref(const HostTensor& a, const HostTensor& b, const std::function<double(double, double)>& f) {
  HostTensor y = make_like(a.dtype, broadcast(a.shape, b.shape));
  for (size_t i = 0; i < y.numel(); ++i) {
    auto idx = unravel(i, y.shape);
    set(y, i, f(get(a, source_index(a.shape, idx)), get(b, source_index(b.shape, idx))));
  }
  return y;
}

HostTensor softmax_ref(const HostTensor& x, int64_t axis, bool flatten) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (axis < 0) axis += r;
  size_t outer = 1, len = 1, inner = 1;
  for (int64_t k = 0; k < r; ++k) {
    if (k < axis) outer *= x.shape[k];
    else if (k == axis || flatten) len *= x.shape[k];
    else inner *= x.shape[k];
  }
  HostTensor y = make_like(kF32, x.shape);
  for (size_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < inner; ++j) {
      double m = -INFINITY, s = 0;
      for (size_t l = 0; l < len; ++l) m = std::max(m, get(x, (o * len + l) * inner + j));
      for (size_t l = 0; l < len; ++l) s += std::exp(get(x, (o * len + l) * inner + j) - m);
      for (size_t l = 0; l < len; ++l) set(y, (o * len + l) * inner + j, std::exp(get(x, (o * len + l) * inner + j) - m) / s);
    }
  return y;
}

HostTensor matmul_ref(const HostTensor& a, const HostTensor& b) {
  std::vector<int64_t> as = a.shape, bs = b.shape;
  const bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as.insert(as.begin(), 1);
  if (bv) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  std::vector<int64_t> batch = broadcast(ab, bb);
  std::vector<int64_t> out = batch;
  if (!av) out.push_back(M);
  if (!bv) out.push_back(N);
  HostTensor y = make_like(kF32, out);
  size_t nb = 1;
  for (int64_t d : batch) nb *= d;
  for (size_t t = 0; t < nb; ++t) {
    auto idx = unravel(t, batch);
    size_t ao = source_index(ab, idx), bo = source_index(bb, idx);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += get(a, (ao * M + i) * K + k) * get(b, (bo * K + k) * N + j);
        set(y, (t * M + i) * N + j, s);
      }
  }
  return y;
}

HostTensor gemm_ref(const std::vector<HostTensor>& in, bool ta, bool tb, double alpha, double beta) {
  const HostTensor &a = in[0], &b = in[1];
  const int64_t M = ta ? a.shape[1] : a.shape[0], K = ta ? a.shape[0] : a.shape[1];
  const int64_t N = tb ? b.shape[0] : b.shape[1];
  HostTensor y = make_like(kF32, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += get(a, ta ? k * M + i : i * K + k) * get(b, tb ? j * K + k : k * N + j);
      double c = in.size() > 2 ? get(in[2], source_index(in[2].shape, {i, j})) : 0.0;
      set(y, i * N + j, alpha * s + beta * c);
    }
  return y;
}

std::string shape_label(const std::vector<int64_t>& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

const std::vector<OpCase>& op_table() {
  static const std::vector<OpCase> table = [] {
    std::vector<OpCase> t;
    std::mt19937 rng(20240611);
    const std::vector<std::vector<int64_t>> shapes = {{1}, {7}, {1000}, {4097}, {3, 5, 7}};

    for (const auto& s : shapes) {
      OpCase c{"relu6_scale_" + shape_label(s), "myops", "relu6_scale", 1, {random_tensor(rng, kF32, s)},
               {{"scale", 1.5f}, {"max_val", 4.0f}}};
      c.reference = [](const auto& in) {
        return map_ref(in[0], [](double v) { return std::min(std::max(double(float(v * 1.5f)), 0.0), 4.0); });
      };
      t.push_back(std::move(c));
      OpCase g{"gelu_" + shape_label(s), "myops", "gelu", 1, {random_tensor(rng, kF32, s)}, {}};
      g.reference = [](const auto& in) {
        return map_ref(in[0], [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); });
      };
      t.push_back(std::move(g));
      OpCase r{"Relu_" + shape_label(s), "", "Relu", 17, {random_tensor(rng, kF32, s)}, {}};
      r.reference = [](const auto& in) { return map_ref(in[0], [](double v) { return std::max(v, 0.0); }); };
      t.push_back(std::move(r));
      OpCase sg{"Sigmoid_" + shape_label(s), "", "Sigmoid", 17, {random_tensor(rng, kF32, s)}, {}};
      sg.reference = [](const auto& in) { return map_ref(in[0], [](double v) { return 1 / (1 + std::exp(-v)); }); };
      t.push_back(std::move(sg));
    }

    // NaN and infinities through relu6_scale: NaN in, NaN out (as ONNX Clip and numpy's clip), +inf -> max_val,
    // -inf -> 0, on every backend.
    {
      HostTensor x = random_tensor(rng, kF32, {37});
      x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
      x.data<float>()[5] = std::numeric_limits<float>::infinity();
      x.data<float>()[36] = -std::numeric_limits<float>::infinity();
      OpCase c{"relu6_scale_nan_inf", "myops", "relu6_scale", 1, {x}, {{"scale", 1.5f}, {"max_val", 4.0f}}};
      c.reference = [](const auto& in) {
        return map_ref(in[0], [](double v) {
          const double y = double(float(v * 1.5f));
          return std::isnan(y) ? y : std::min(std::max(y, 0.0), 4.0);
        });
      };
      t.push_back(std::move(c));
    }

    // Binary ops: same shape, scalar on either side, general broadcasting, integer types.
    struct Bin {
      std::vector<int64_t> a, b;
      oph_dtype dt;
      const char* tag;
    };
    std::vector<Bin> bins;
    for (const auto& s : shapes) bins.push_back({s, s, kF32, "same"});
    bins.push_back({{4097}, {}, kF32, "scalarB"});
    bins.push_back({{}, {7}, kF32, "scalarA"});
    bins.push_back({{3, 1, 7}, {5, 1}, kF32, "bcast"});
    bins.push_back({{3, 5, 7}, {7}, kF32, "bcast_row"});
    bins.push_back({{1000}, {1000}, kI64, "same_i64"});
    bins.push_back({{3, 1, 7}, {5, 1}, kI32, "bcast_i32"});
    for (const char* op : {"Add", "Mul"}) {
      const bool add = std::string(op) == "Add";
      for (const auto& b : bins) {
        OpCase c{std::string(op) + "_" + b.tag + "_" + shape_label(b.a) + "_" + shape_label(b.b), "", op, 17,
                 {random_tensor(rng, b.dt, b.a), random_tensor(rng, b.dt, b.b)}, {}};
        c.reference = [add](const auto& in) {
          return binary_ref(in[0], in[1], [add](double x, double y) { return add ? x + y : x * y; });
        };
        c.atol = 1e-5;
        t.push_back(std::move(c));
      }
    }

    // Softmax: opset 13 one axis (rows: inner == 1, columns: inner > 1), and opset 11 (coerced to 2-D).
    struct Sm {
      std::vector<int64_t> s;
      int64_t axis;
      int32_t opset;
    };
    for (const Sm& sm : std::vector<Sm>{{{1}, -1, 13}, {{7}, -1, 13}, {{4097}, 0, 13}, {{3, 5, 7}, -1, 13},
                                        {{3, 5, 7}, 1, 13}, {{3, 5, 7}, 0, 13}, {{3, 5, 7}, 1, 11}}) {
      OpCase c{"Softmax_op" + std::to_string(sm.opset) + "_axis" + (sm.axis < 0 ? "m" + std::to_string(-sm.axis) : std::to_string(sm.axis)) +
                   "_" + shape_label(sm.s),
               "", "Softmax", sm.opset, {random_tensor(rng, kF32, sm.s)}, {{"axis", sm.axis}}};
      const bool flatten = sm.opset < 13;
      const int64_t axis = sm.axis;
      c.reference = [axis, flatten](const auto& in) { return softmax_ref(in[0], axis, flatten); };
      t.push_back(std::move(c));
    }

    // MatMul: 1x1, plain, batched with broadcast B, general batch broadcasting, 1-D operands.
    for (const auto& [a, b] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{1, 1}, {1, 1}}, {{7, 13}, {13, 5}}, {{3, 5, 7}, {7, 4}}, {{2, 1, 4, 5}, {3, 5, 6}},
             {{7}, {7, 3}}, {{4, 33, 65}, {65}}, {{64, 257}, {257, 33}}}) {
      OpCase c{"MatMul_" + shape_label(a) + "_" + shape_label(b), "", "MatMul", 17,
               {random_tensor(rng, kF32, a), random_tensor(rng, kF32, b)}, {}};
      c.reference = [](const auto& in) { return matmul_ref(in[0], in[1]); };
      c.atol = 1e-4;
      c.rtol = 1e-4;
      t.push_back(std::move(c));
    }

    // Gemm: transposes, alpha/beta, C broadcast (row, column, full, absent).
    struct Gm {
      std::vector<int64_t> a, b, c;
      bool ta, tb;
      float alpha, beta;
      const char* tag;
    };
    for (const Gm& g : std::vector<Gm>{{{7, 13}, {13, 5}, {5}, false, false, 1.0f, 1.0f, "cRow"},
                                       {{13, 7}, {13, 5}, {7, 1}, true, false, 0.5f, 2.0f, "transA_cCol"},
                                       {{7, 13}, {5, 13}, {7, 5}, false, true, 1.0f, -1.0f, "transB_cFull"},
                                       {{13, 7}, {5, 13}, {}, true, true, 2.0f, 1.0f, "transAB_noC"}}) {
      OpCase c{std::string("Gemm_") + g.tag, "", "Gemm", 13, {random_tensor(rng, kF32, g.a), random_tensor(rng, kF32, g.b)},
               {{"alpha", g.alpha}, {"beta", g.beta}, {"transA", int64_t{g.ta}}, {"transB", int64_t{g.tb}}}};
      if (!g.c.empty()) c.inputs.push_back(random_tensor(rng, kF32, g.c));
      const bool ta = g.ta, tb = g.tb;
      const double al = g.alpha, be = g.beta;
      c.reference = [=](const auto& in) { return gemm_ref(in, ta, tb, al, be); };
      c.atol = 1e-4;
      c.rtol = 1e-4;
      t.push_back(std::move(c));
    }
    return t;
  }();
  return table;
}

// ---------------------------------------------------------------------------------------------------------
// Comparison

::testing::AssertionResult close(const HostTensor& got, const HostTensor& want, double atol, double rtol) {
  if (got.shape != want.shape)
    return ::testing::AssertionFailure() << "shape " << shape_label(got.shape) << " vs " << shape_label(want.shape);
  if (!(got.dtype == want.dtype)) return ::testing::AssertionFailure() << "dtype differs";
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < got.numel(); ++i) {
    double g = get(got, i), w = get(want, i), err = std::abs(g - w);
    if (std::isnan(w) && std::isnan(g)) continue;  // NaN where the reference has NaN
    if (std::isinf(w) && g == w) continue;
    if (!(err <= atol + rtol * std::abs(w))) {
      if (bad++ == 0) first = i;
      worst = std::max(worst, err);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.numel() << " elements differ; first at " << first
                                       << ": got " << get(got, first) << ", want " << get(want, first)
                                       << "; worst abs error " << worst << " (atol " << atol << ", rtol " << rtol << ")";
}

const ophost::OpSchema* find_op(const Env& e, const OpCase& c, std::string* packs_tried) {
  for (const auto& p : e.packs) {
    if (!p->ok()) {
      *packs_tried += " " + p->name() + " (not loaded: " + p->error() + ")";
      continue;
    }
    *packs_tried += " " + p->name();
    if (const ophost::OpSchema* d = p->find_op(c.domain, c.op, e.device, c.opset)) return d;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------------------
// The suite

class BackendOps : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {};

TEST_P(BackendOps, MatchesOracle) {
  const auto& [device, index] = GetParam();
  const OpCase& c = op_table()[index];
  Env& e = env(device);
  if (!e.backend->active()) GTEST_SKIP() << device << " backend inactive: " << e.backend->reason();
  std::string tried;
  const ophost::OpSchema* op = find_op(e, c, &tried);
  if (!op) GTEST_SKIP() << "no " << device << " kernel for " << (c.domain.empty() ? "" : c.domain + "::") << c.op
                        << " opset " << c.opset << " in packs:" << tried;
  std::vector<HostTensor> got;
  try {
    got = minihost::run(*op, *e.backend, c.inputs, c.attrs);
  } catch (const std::exception& ex) {
    FAIL() << ex.what();
  }
  ASSERT_EQ(got.size(), 1u);
  // The plain reference checks the CPU kernels; the CPU backend is the oracle of every other backend.
  HostTensor want;
  if (device == "cpu") {
    want = c.reference(c.inputs);
  } else {
    Env& cpu = env("cpu");
    ASSERT_TRUE(cpu.backend->active()) << cpu.backend->reason();
    std::string cpu_tried;
    const ophost::OpSchema* cpu_op = find_op(cpu, c, &cpu_tried);
    ASSERT_NE(cpu_op, nullptr) << "the CPU oracle has no kernel for " << c.op << " in" << cpu_tried;
    want = minihost::run(*cpu_op, *cpu.backend, c.inputs, c.attrs)[0];
  }
  EXPECT_TRUE(close(got[0], want, c.atol, c.rtol)) << device << " " << c.label;
}

std::vector<size_t> all_indices() {
  std::vector<size_t> v(op_table().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(Ops, BackendOps,
                         ::testing::Combine(::testing::Values("cpu", "cuda", "hip"), ::testing::ValuesIn(all_indices())),
                         [](const ::testing::TestParamInfo<BackendOps::ParamType>& info) {
                           return std::get<0>(info.param) + "_" + op_table()[std::get<1>(info.param)].label;
                         });

// ---------------------------------------------------------------------------------------------------------
// The device table of each backend

class BackendApi : public ::testing::TestWithParam<std::string> {};

// Runs everywhere: a backend either has devices or says why not, and never fails to enumerate.
// Whether this build tree configured the backend (OPHOST_TEST_BUILT_BACKENDS, from tests/backends/CMakeLists.txt).
bool backend_built(const std::string& device) {
  const std::string built = "," OPHOST_TEST_BUILT_BACKENDS ",";
  return built.find("," + device + ",") != std::string::npos;
}

TEST_P(BackendApi, EnumerateReportsDevicesOrReason) {
  if (!backend_built(GetParam()))
    GTEST_SKIP() << "the " << GetParam() << " backend is not built in this tree: its toolkit was not found at "
                 << "configure time (docs/gpu.md)";
  Backend b(backend_table().at(GetParam()).first);
  ASSERT_NE(b.def(), nullptr) << b.reason();
  EXPECT_EQ(b.type(), GetParam());
  if (b.active()) {
    EXPECT_GT(b.count(), 0);
  } else {
    EXPECT_FALSE(b.reason().empty());
    std::cout << "[ INFO     ] " << GetParam() << ": inactive (" << b.reason() << ")\n";
    // Every call on an inactive backend is a clean error naming the reason, never a crash.
    void* p = reinterpret_cast<void*>(1);
    oph_status* s = b.def()->alloc(b.def()->backend, 0, 64, 0, &p);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(p, nullptr);
    std::string msg = minihost::take(s);
    EXPECT_NE(msg.find("inactive"), std::string::npos) << msg;
    void* stream = nullptr;
    s = b.def()->stream_create(b.def()->backend, 0, &stream);
    ASSERT_NE(s, nullptr);
    minihost::take(s);
  }
}

TEST_P(BackendApi, PropertiesMemoryCopiesStreamsEvents) {
  Backend b(backend_table().at(GetParam()).first);
  if (!b.active()) GTEST_SKIP() << GetParam() << " backend inactive: " << b.reason();
  const oph_device_backend_def* d = b.def();
  oph_device_properties p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(d->get_properties(d->backend, 0, &p), nullptr);
  EXPECT_NE(p.name, nullptr);
  EXPECT_GT(p.total_memory, 0u);
  EXPECT_LE(p.free_memory, p.total_memory);
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_GE(p.alignment, 64u);
  std::cout << "[ INFO     ] " << GetParam() << ":0 " << p.name << ", " << (p.arch ? p.arch : "") << ", "
            << p.multiprocessors << " SMs/CUs/cores, " << (p.total_memory >> 20) << " MiB (" << (p.free_memory >> 20)
            << " free), fp16 " << p.fp16 << " bf16 " << p.bf16 << "\n";
  // Out-of-range device ids are errors.
  oph_status* bad = d->get_properties(d->backend, 1000, &p);
  EXPECT_NE(bad, nullptr);
  minihost::take(bad);

  // 0 bytes: a distinct, freeable pointer; over-aligned requests honoured.
  void* z = nullptr;
  ASSERT_EQ(d->alloc(d->backend, 0, 0, 0, &z), nullptr);
  EXPECT_NE(z, nullptr);
  d->free(d->backend, 0, z);
  void* big_align = nullptr;
  ASSERT_EQ(d->alloc(d->backend, 0, 100, 4096, &big_align), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big_align) % 4096, 0u);
  d->free(d->backend, 0, big_align);
  d->free(d->backend, 0, nullptr);

  // H2D -> D2D -> D2H on one stream, timed by events; then synchronous copies (stream NULL).
  for (size_t n : {size_t{1}, size_t{7}, size_t{4097}, size_t{1} << 20}) {
    std::vector<uint8_t> src(n), dst(n, 0);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 31 + 7);
    void* stream = b.stream_create();
    void *e0 = nullptr, *e1 = nullptr;
    if (d->event_create) {
      ASSERT_EQ(d->event_create(d->backend, 0, &e0), nullptr);
      ASSERT_EQ(d->event_create(d->backend, 0, &e1), nullptr);
      ASSERT_EQ(d->event_record(d->backend, 0, e0, stream), nullptr);
    }
    void* a = b.alloc(n);
    void* c = b.alloc(n);
    b.copy(OPH_COPY_HOST_TO_DEVICE, a, src.data(), n, stream);
    b.copy(OPH_COPY_DEVICE_TO_DEVICE, c, a, n, stream);
    b.copy(OPH_COPY_DEVICE_TO_HOST, dst.data(), c, n, stream);
    if (d->event_create) {
      ASSERT_EQ(d->event_record(d->backend, 0, e1, stream), nullptr);
      ASSERT_EQ(d->event_synchronize(d->backend, 0, e1), nullptr);
      float ms = -1;
      ASSERT_EQ(d->event_elapsed_ms(d->backend, 0, e0, e1, &ms), nullptr);
      EXPECT_GE(ms, 0.0f);
      d->event_destroy(d->backend, 0, e0);
      d->event_destroy(d->backend, 0, e1);
    }
    b.sync(stream);
    EXPECT_EQ(src, dst) << n << " bytes on a stream";
    std::fill(dst.begin(), dst.end(), 0);
    b.copy(OPH_COPY_HOST_TO_DEVICE, c, src.data(), n, nullptr);
    b.copy(OPH_COPY_DEVICE_TO_HOST, dst.data(), c, n, nullptr);
    EXPECT_EQ(src, dst) << n << " bytes, synchronous";
    b.free(a);
    b.free(c);
    b.stream_destroy(stream);
  }
  // Bad copy kind is an error.
  oph_status* s = d->copy(d->backend, 0, 42, &p, &p, 1, nullptr);
  EXPECT_NE(s, nullptr);
  minihost::take(s);
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendApi, ::testing::Values("cpu", "cuda", "hip"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
