// onnx-core: recurrent layers RNN, GRU, LSTM (opsets 7 and 14; 14 adds `layout`): forward, reverse and
// bidirectional, sequence_lens, initial states, LSTM peepholes and input_forget, clip, and every ONNX activation
// with activation_alpha/activation_beta. float32 (and 16-bit floats) compute in float: the input projection of
// every time step is one oneDNN sgemm; with the default activations the recurrent product and the gate arithmetic
// of each step are Highway kernels dispatched to the CPU's best ISA (rnn_simd.hpp), other activations run a scalar
// loop. float64 computes in double loops.
#include "common.hpp"
#include "dnnl_util.hpp"
#include "rnn_simd.hpp"

#include <cmath>

namespace onnx_core {
namespace {

enum class Cell { kRnn, kGru, kLstm };

int gates_of(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
const char* cell_name(Cell c) { return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM"; }
// The ONNX default activations of a cell, in order (one direction).
std::span<const char* const> default_activations(Cell c) {
  static const char* const rnn[] = {"Tanh"}, *const gru[] = {"Sigmoid", "Tanh"},
                           *const lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  if (c == Cell::kRnn) return rnn;
  if (c == Cell::kGru) return gru;
  return lstm;
}

struct Act {
  enum Kind { kSigmoid, kTanh, kRelu, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
              kSoftsign, kSoftplus };
  Kind kind = kSigmoid;
  double alpha = 0, beta = 0;
  template <class V>
  V operator()(V x) const {
    const V a = static_cast<V>(alpha), b = static_cast<V>(beta);
    switch (kind) {
      case kSigmoid: return V(1) / (V(1) + std::exp(-x));
      case kTanh: return std::tanh(x);
      case kRelu: return std::max(V(0), x);
      case kAffine: return a * x + b;
      case kLeakyRelu: return x >= 0 ? x : a * x;
      case kThresholdedRelu: return x > a ? x : V(0);
      case kScaledTanh: return a * std::tanh(b * x);
      case kHardSigmoid: return std::max(V(0), std::min(V(1), a * x + b));
      case kElu: return x >= 0 ? x : a * (std::exp(x) - V(1));
      case kSoftsign: return x / (V(1) + std::abs(x));
      case kSoftplus: return std::log1p(std::exp(x));
    }
    return x;
  }
};

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Parses activations with their alpha/beta (consumed in order by the activations that take them; ONNX defaults
// otherwise). Names are case-insensitive in ONNX. Runs once per node, when its kernel is created.
std::vector<Act> parse_activations(const oph::Attrs& at, Cell cell, int dirs, const std::string& op) {
  const std::span<const char* const> defaults = default_activations(cell);
  const bool given = at.has("activations");
  std::vector<std::string> names;
  if (given) names = at.get<std::vector<std::string>>("activations");
  const size_t per = defaults.size(), count = given ? names.size() : per * dirs;
  if (count != per * dirs)
    fail(op + ": activations must list " + std::to_string(per * dirs) + " functions, got " + std::to_string(count));
  std::vector<float> alphas, betas;
  if (at.has("activation_alpha")) alphas = at.get<std::vector<float>>("activation_alpha");
  if (at.has("activation_beta")) betas = at.get<std::vector<float>>("activation_beta");
  static const char* const known[] = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
                                      "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  size_t ai = 0, bi = 0;
  std::vector<Act> out;
  for (size_t i = 0; i < count; ++i) {
    const std::string_view n = given ? std::string_view(names[i]) : std::string_view(defaults[i % per]);
    size_t ki = 0;
    while (ki < std::size(known) && !equals_ignoring_case(n, known[ki])) ++ki;
    if (ki == std::size(known))
      fail(op + ": activation '" + std::string(n) + "' is not supported", OPH_CODE_UNIMPLEMENTED);
    Act a;
    a.kind = static_cast<Act::Kind>(ki);  // `known` lists the names in Act::Kind's order
    double da = 0, db = 0;
    bool ua = false, ub = false;
    switch (a.kind) {
      case Act::kAffine: da = 1; db = 0; ua = ub = true; break;
      case Act::kLeakyRelu: da = 0.01; ua = true; break;
      case Act::kThresholdedRelu: da = 1; ua = true; break;
      case Act::kScaledTanh: da = 1; db = 1; ua = ub = true; break;
      case Act::kHardSigmoid: da = 0.2; db = 0.5; ua = ub = true; break;
      case Act::kElu: da = 1; ua = true; break;
      default: break;
    }
    a.alpha = ua && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = ub && bi < betas.size() ? betas[bi++] : db;
    out.push_back(a);
  }
  return out;
}

// Whether a direction's activations (f, per cell) are the ONNX defaults, which rnn_simd computes vectorised.
bool default_activations_of(const Act* f, Cell cell) {
  if (cell == Cell::kRnn) return f[0].kind == Act::kTanh;
  if (cell == Cell::kGru) return f[0].kind == Act::kSigmoid && f[1].kind == Act::kTanh;
  return f[0].kind == Act::kSigmoid && f[1].kind == Act::kTanh && f[2].kind == Act::kTanh;
}

int num_dirs(const std::string& dir, const std::string& op) {
  if (dir == "forward" || dir == "reverse") return 1;
  if (dir == "bidirectional") return 2;
  fail(op + ": direction '" + dir + "' is not one of forward, reverse, bidirectional");
}

void rnn_infer(oph::InferContext& c, Cell cell, bool has_layout) {
  const std::string op = cell_name(cell);
  const oph_dtype t = c.input_dtype(0);
  const int layout = has_layout ? static_cast<int>(c.attr<int64_t>("layout")) : 0;
  if (layout != 0 && layout != 1) fail(op + ": layout must be 0 or 1");
  const int64_t dirs = num_dirs(c.attr<std::string>("direction"), op);
  int64_t H = c.attrs().has("hidden_size") ? c.attr<int64_t>("hidden_size") : OPH_DIM_UNKNOWN;
  if (c.attrs().has("hidden_size") && H < 1) fail(op + ": hidden_size must be >= 1, got " + std::to_string(H));
  // R is [directions, gates * hidden, hidden]: check it against hidden_size here, before any output is sized
  // from hidden_size (a hostile hidden_size would otherwise size a huge output that compute then refuses).
  if (c.input_rank_known(2)) {
    auto rs = c.input_shape(2);
    if (rs.size() != 3) fail(op + ": R must have rank 3, got " + shape_str(rs));
    if (H >= 0 && rs[2] >= 0 && rs[2] != H)
      fail(op + ": hidden_size " + std::to_string(H) + " disagrees with R's shape " + shape_str(rs) +
           " (R's last dimension is the hidden size)");
    if (rs[2] >= 0 && rs[1] >= 0 && rs[1] != gates_of(cell) * rs[2])
      fail(op + ": R has shape " + shape_str(rs) + "; its second dimension must be " + std::to_string(gates_of(cell)) +
           " x the hidden size");
    if (H < 0) H = rs[2];
  }
  int64_t S = OPH_DIM_UNKNOWN, B = OPH_DIM_UNKNOWN;
  if (c.input_rank_known(0)) {
    auto xs = c.input_shape(0);
    if (xs.size() != 3) fail(op + ": X must have rank 3, got " + shape_str(xs));
    S = layout == 0 ? xs[0] : xs[1];
    B = layout == 0 ? xs[1] : xs[0];
  }
  if (layout == 0) c.set_output(0, t, {S, dirs, B, H});
  else c.set_output(0, t, {B, S, dirs, H});
  for (size_t o = 1; o < (cell == Cell::kLstm ? 3u : 2u); ++o) {
    if (layout == 0) c.set_output(o, t, {dirs, B, H});
    else c.set_output(o, t, {B, dirs, H});
  }
}

template <class A>
std::vector<A> values_of(const oph::TensorRef& t, const std::string& op) {
  std::vector<A> v(t.size());
  dispatch_float(t.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* p = static_cast<const T*>(t.data());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<A>(p[i]);
  });
  return v;
}

// C[M, N] = X[M, K] (rows `ldx` apart) * W[N, K]^T (+ C when accumulate): oneDNN's sgemm for float, loops for
// double.
template <class A>
void gemm_xwt(int64_t M, int64_t N, int64_t K, const A* X, int64_t ldx, const A* W, A* C, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (M == 1 && K <= 1024) {
    // One row (the recurrent projection of one step): a dot product per output, eight partial sums so that the
    // compiler vectorises it; an sgemm call costs more than the work at these sizes.
    for (int64_t n = 0; n < N; ++n) {
      const A* wn = W + n * K;
      A acc[8] = {};
      int64_t k = 0;
      for (; k + 8 <= K; k += 8)
        for (int l = 0; l < 8; ++l) acc[l] += X[k + l] * wn[k + l];
      A sum = accumulate ? C[n] : A(0);
      for (; k < K; ++k) sum += X[k] * wn[k];
      for (int l = 0; l < 8; ++l) sum += acc[l];
      C[n] = sum;
    }
    return;
  }
  if constexpr (std::is_same_v<A, float>) {
    dnnl_status_t st = dnnl_sgemm('N', 'T', M, N, K, 1.0f, X, std::max<int64_t>(1, ldx), W, std::max<int64_t>(1, K),
                                  accumulate ? 1.0f : 0.0f, C, N);
    if (st != dnnl_success) fail("oneDNN sgemm failed with status " + std::to_string(static_cast<int>(st)), OPH_CODE_INTERNAL);
  } else {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        A s = accumulate ? C[m * N + n] : A(0);
        for (int64_t k = 0; k < K; ++k) s += X[m * ldx + k] * W[n * K + k];
        C[m * N + n] = s;
      }
  }
}

// One time step with the default activations, vectorised (rnn_simd): gh holds the recurrent biases Rb on entry;
// the recurrent product is added to it, then the cell updates h (and c) in place. Without linear_before_reset the
// GRU's h gate reads R_h (r * h), so its rows are multiplied after the reset gate (rh: H floats of scratch).
void step_simd(Cell cell, const float* gx, float* gh, const float* Rd, float* hs, float* cs, float* rh,
               const float* peep, int64_t H, float clip, bool lbr, bool input_forget) {
  const size_t h = static_cast<size_t>(H);
  if (cell == Cell::kGru && !lbr) {
    rnn_simd::matvec_acc(Rd, hs, gh, 2 * h, h);
    rnn_simd::gru_reset_hidden(gx + h, gh + h, hs, rh, h, clip);
    rnn_simd::matvec_acc(Rd + 2 * h * h, rh, gh + 2 * h, h, h);
  } else {
    rnn_simd::matvec_acc(Rd, hs, gh, gates_of(cell) * h, h);
  }
  if (cell == Cell::kRnn) rnn_simd::rnn_step(gx, gh, hs, h, clip);
  else if (cell == Cell::kGru) rnn_simd::gru_step(gx, gh, hs, h, clip, lbr);
  else rnn_simd::lstm_step({gx, gh, peep, cs, hs, h, clip, input_forget});
}

template <class A>
void rnn_compute_as(oph::KernelContext& ctx, Cell cell, bool has_layout, const std::vector<Act>& acts) {
  const std::string op = cell_name(cell);
  const oph::Attrs& at = ctx.attrs();
  const int layout = has_layout ? static_cast<int>(at.get<int64_t>("layout")) : 0;
  if (layout != 0 && layout != 1) fail(op + ": layout must be 0 or 1");
  const std::string dir = at.get<std::string>("direction");
  const int D = num_dirs(dir, op);
  const int G = gates_of(cell);
  oph::TensorRef X = input(ctx, 0, op), W = input(ctx, 1, op), R = input(ctx, 2, op);
  auto xs = X.shape(), ws = W.shape(), rs = R.shape();
  if (xs.size() != 3 || ws.size() != 3 || rs.size() != 3) fail(op + ": X, W and R must have rank 3");
  const int64_t S = layout == 0 ? xs[0] : xs[1], B = layout == 0 ? xs[1] : xs[0], I = xs[2];
  const int64_t H = rs[2];
  if (at.has("hidden_size") && at.get<int64_t>("hidden_size") != H)
    fail(op + ": hidden_size " + std::to_string(at.get<int64_t>("hidden_size")) + " disagrees with R's shape " + shape_str(rs));
  if (ws[0] != D || ws[1] != G * H || ws[2] != I) fail(op + ": W has shape " + shape_str(ws) + ", expected [" +
                                                       std::to_string(D) + "," + std::to_string(G * H) + "," +
                                                       std::to_string(I) + "]");
  if (rs[0] != D || rs[1] != G * H) fail(op + ": R has shape " + shape_str(rs));
  const bool has_clip = at.has("clip");
  const A clip = has_clip ? static_cast<A>(at.get<float>("clip")) : A(0);
  if (has_clip && clip <= 0) fail(op + ": clip must be > 0");
  const bool lbr = cell == Cell::kGru && at.get<int64_t>("linear_before_reset") != 0;
  const bool input_forget = cell == Cell::kLstm && at.get<int64_t>("input_forget") != 0;
  const size_t per = default_activations(cell).size();

  // X, W and R read in place when they are stored as A already, else converted once per call.
  std::vector<A> xc, wc, rc;
  auto view = [&](const oph::TensorRef& t, std::vector<A>& copy) -> const A* {
    if ((std::is_same_v<A, float> && t.dtype() == f32) || (std::is_same_v<A, double> && t.dtype() == f64))
      return static_cast<const A*>(t.data());
    copy = values_of<A>(t, op);
    return copy.data();
  };
  const A* x = view(X, xc);
  const A* w = view(W, wc);
  const A* r = view(R, rc);
  std::vector<A> bias(static_cast<size_t>(D) * 2 * G * H, 0.0);
  if (ctx.input(3).present()) {
    oph::TensorRef bt = input(ctx, 3, op);
    if (bt.size() != bias.size()) fail(op + ": B must be [num_directions, " + std::to_string(2 * G * H) + "]");
    bias = values_of<A>(bt, op);
  }
  std::vector<int64_t> seq(B, S);
  if (ctx.input(4).present()) {
    oph::TensorRef st = input(ctx, 4, op);
    if (st.size() != static_cast<size_t>(B)) fail(op + ": sequence_lens must have batch_size values");
    for (int64_t b = 0; b < B; ++b) {
      seq[b] = st.dtype() == i32 ? static_cast<const int32_t*>(st.data())[b] : static_cast<const int64_t*>(st.data())[b];
      if (seq[b] < 0 || seq[b] > S) fail(op + ": sequence_lens[" + std::to_string(b) + "] is out of range");
    }
  }
  // State layout in the tensors: layout 0 [D, B, H], layout 1 [B, D, H]. Held internally as [D][B][H].
  auto state_index = [&](int d, int64_t b, int64_t h) {
    return layout == 0 ? (static_cast<size_t>(d) * B + b) * H + h : (static_cast<size_t>(b) * D + d) * H + h;
  };
  std::vector<A> hstate(static_cast<size_t>(D) * B * H, 0.0), cstate(hstate.size(), 0.0);
  auto load_state = [&](size_t idx, std::vector<A>& dst, const char* what) {
    if (!ctx.input(idx).present()) return;
    oph::TensorRef t = input(ctx, idx, op);
    if (t.size() != dst.size()) fail(op + ": " + what + " has the wrong number of values");
    std::vector<A> v = values_of<A>(t, op);
    for (int d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) dst[(static_cast<size_t>(d) * B + b) * H + h] = v[state_index(d, b, h)];
  };
  load_state(5, hstate, "initial_h");
  std::vector<A> peep(static_cast<size_t>(D) * 3 * H, 0.0);
  const bool has_peep = cell == Cell::kLstm && ctx.input(7).present();
  if (cell == Cell::kLstm) {
    load_state(6, cstate, "initial_c");
    if (has_peep) {
      oph::TensorRef pt = input(ctx, 7, op);
      if (pt.size() != peep.size()) fail(op + ": P must be [num_directions, " + std::to_string(3 * H) + "]");
      peep = values_of<A>(pt, op);
    }
  }

  const int64_t ys_l0[4] = {S, D, B, H}, ys_l1[4] = {B, S, D, H};
  const int64_t hs_l0[3] = {D, B, H}, hs_l1[3] = {B, D, H};
  oph::TensorRef Y = ensure_output(ctx, 0, layout == 0 ? std::span<const int64_t>(ys_l0) : std::span<const int64_t>(ys_l1), op);
  std::vector<A> yv(static_cast<size_t>(S) * D * B * H, 0.0);
  auto y_index = [&](int64_t t, int d, int64_t b, int64_t h) {
    return layout == 0 ? ((static_cast<size_t>(t) * D + d) * B + b) * H + h
                       : ((static_cast<size_t>(b) * S + t) * D + d) * H + h;
  };
  auto clipv = [&](A v) { return has_clip ? std::max(-clip, std::min(clip, v)) : v; };

  const int64_t GH = G * H;
  // rh: the GRU's reset hidden state r (.) h (without linear_before_reset).
  std::vector<A> gx_all(static_cast<size_t>(S * GH)), gh(static_cast<size_t>(GH)), hnew(H), cnew(H), rh(H);
  set_dnnl_threads();
  for (int d = 0; d < D; ++d) {
    const bool reverse = dir == "reverse" || d == 1;
    const A* Wd = w + static_cast<size_t>(d) * G * H * I;
    const A* Rd = r + static_cast<size_t>(d) * G * H * H;
    const A* Wb = bias.data() + static_cast<size_t>(d) * 2 * G * H;
    const A* Rb = Wb + G * H;
    const A* Pd = peep.data() + static_cast<size_t>(d) * 3 * H;
    const Act* f = &acts[d * per];
    const bool simd = std::is_same_v<A, float> && default_activations_of(f, cell);
    for (int64_t b = 0; b < B; ++b) {
      A* hs = hstate.data() + (static_cast<size_t>(d) * B + b) * H;
      A* cs = cstate.data() + (static_cast<size_t>(d) * B + b) * H;
      // The input projection of every time step at once: gx_all[t] = W x_t + Wb.
      const A* xb = x + (layout == 0 ? static_cast<size_t>(b) * I : static_cast<size_t>(b) * S * I);
      gemm_xwt<A>(S, GH, I, xb, layout == 0 ? B * I : I, Wd, gx_all.data(), false);
      for (int64_t t = 0; t < S; ++t)
        for (int64_t g = 0; g < GH; ++g) gx_all[static_cast<size_t>(t * GH + g)] += Wb[g];
      for (int64_t step = 0; step < seq[b]; ++step) {
        const int64_t t = reverse ? seq[b] - 1 - step : step;
        // gh = R h_{t-1} + Rb (every gate row).
        const A* gx = gx_all.data() + static_cast<size_t>(t * GH);
        std::copy(Rb, Rb + GH, gh.begin());
        if constexpr (std::is_same_v<A, float>) {
          if (simd) {
            step_simd(cell, gx, gh.data(), Rd, hs, cs, rh.data(), has_peep ? Pd : nullptr, H, has_clip ? clip : 0.0f,
                      lbr, input_forget);
            for (int64_t h = 0; h < H; ++h) yv[y_index(t, d, b, h)] = hs[h];
            continue;
          }
        }
        gemm_xwt<A>(1, GH, H, hs, H, Rd, gh.data(), true);
        if (cell == Cell::kRnn) {
          for (int64_t h = 0; h < H; ++h) hnew[h] = f[0](clipv(gx[h] + gh[h]));
        } else if (cell == Cell::kGru) {
          // Gate order z, r, h. Without linear_before_reset the h gate reads R_h (r (.) h): every unit's reset
          // gate first.
          if (!lbr)
            for (int64_t k = 0; k < H; ++k) rh[k] = f[0](clipv(gx[H + k] + gh[H + k])) * hs[k];
          for (int64_t h = 0; h < H; ++h) {
            const A z = f[0](clipv(gx[h] + gh[h]));
            A pre;
            if (lbr) {
              pre = gx[2 * H + h] + f[0](clipv(gx[H + h] + gh[H + h])) * gh[2 * H + h];
            } else {
              A s = Rb[2 * H + h];
              for (int64_t k = 0; k < H; ++k) s += Rd[(2 * H + h) * H + k] * rh[k];
              pre = gx[2 * H + h] + s;
            }
            const A hh = f[1](clipv(pre));
            hnew[h] = (A(1) - z) * hh + z * hs[h];
          }
        } else {
          // Gate order i, o, f, c; peepholes P = [Pi, Po, Pf].
          for (int64_t h = 0; h < H; ++h) {
            const A ig = f[0](clipv(gx[h] + gh[h] + Pd[h] * cs[h]));
            const A fg = input_forget ? A(1) - ig : f[0](clipv(gx[2 * H + h] + gh[2 * H + h] + Pd[2 * H + h] * cs[h]));
            const A cg = f[1](clipv(gx[3 * H + h] + gh[3 * H + h]));
            const A c = fg * cs[h] + ig * cg;
            const A og = f[0](clipv(gx[H + h] + gh[H + h] + Pd[H + h] * c));
            cnew[h] = c;
            hnew[h] = og * f[2](c);
          }
          std::copy(cnew.begin(), cnew.end(), cs);
        }
        std::copy(hnew.begin(), hnew.end(), hs);
        for (int64_t h = 0; h < H; ++h) yv[y_index(t, d, b, h)] = hs[h];
      }
    }
  }
  auto store = [&](const oph::TensorRef& out, const std::vector<A>& v) {
    dispatch_float(out.dtype(), op, [&]<class T>(std::type_identity<T>) {
      T* p = static_cast<T*>(out.data());
      for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
    });
  };
  if (Y.present()) store(Y, yv);
  for (size_t o = 1; o < (cell == Cell::kLstm ? 3u : 2u); ++o) {
    oph::TensorRef out = ensure_output(ctx, o, layout == 0 ? std::span<const int64_t>(hs_l0) : std::span<const int64_t>(hs_l1), op);
    if (!out.present()) continue;
    const std::vector<A>& src = o == 1 ? hstate : cstate;
    std::vector<A> v(src.size());
    for (int d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) v[state_index(d, b, h)] = src[(static_cast<size_t>(d) * B + b) * H + h];
    store(out, v);
  }
}

// The kernel of one node: its activations parsed once, at load (a name that is not supported fails there).
class RnnKernel {
 public:
  RnnKernel(const oph::KernelInit& init, Cell cell, bool has_layout)
      : cell_(cell), has_layout_(has_layout), f64_(init.input(0).dtype == f64) {
    const int dirs = num_dirs(init.attr<std::string>("direction"), cell_name(cell));
    acts_ = parse_activations(init.attrs(), cell, dirs, cell_name(cell));
    const size_t per = default_activations(cell).size();
    for (int d = 0; d < dirs; ++d) all_default_ = all_default_ && default_activations_of(&acts_[d * per], cell);
  }
  void compute(oph::KernelContext& ctx) {
    // float64 in double; float32 and the 16-bit floats in float (their storage is converted on the way in and out).
    if (ctx.input(0).dtype() == f64) rnn_compute_as<double>(ctx, cell_, has_layout_, acts_);
    else rnn_compute_as<float>(ctx, cell_, has_layout_, acts_);
  }
  oph::Implementation implementation() {
    if (f64_) return {"scalar loops (float64)", false};
    if (!all_default_) return {"oneDNN sgemm + scalar loops (activations other than the defaults)", false};
    return {std::string("oneDNN sgemm + Highway ") + rnn_simd::target_name(), false};
  }

 private:
  Cell cell_;
  bool has_layout_;
  bool f64_;
  bool all_default_ = true;
  std::vector<Act> acts_;
};

template <Cell C, bool L>
struct RnnK : RnnKernel {
  explicit RnnK(const oph::KernelInit& init) : RnnKernel(init, C, L) {}
};

template <Cell C>
void set_kernel(oph::OpBuilder& b, bool has_layout) {
  if (has_layout) b.kernel<RnnK<C, true>>();
  else b.kernel<RnnK<C, false>>();
}

void register_rnn(oph::Pack& pack) {
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    for (int since : {7, 14}) {
      const bool has_layout = since >= 14;
      auto& b = pack.op(kDomain, cell_name(cell))
                    .versions(since, since == 7 ? 13 : OPH_OPSET_MAX)
                    .doc("recurrent layer (sgemm for the input and recurrent projections)")
                    .input("X", "T")
                    .input("W", "T")
                    .input("R", "T")
                    .optional_input("B", "T")
                    .optional_input("sequence_lens", "T1")
                    .optional_input("initial_h", "T");
      if (cell == Cell::kLstm) b.optional_input("initial_c", "T").optional_input("P", "T");
      b.output("Y", "T", OPH_ARITY_OPTIONAL).output("Y_h", "T", OPH_ARITY_OPTIONAL);
      if (cell == Cell::kLstm) b.output("Y_c", "T", OPH_ARITY_OPTIONAL);
      b.optional_attr("activation_alpha", OPH_ATTR_FLOATS)
          .optional_attr("activation_beta", OPH_ATTR_FLOATS)
          .optional_attr("activations", OPH_ATTR_STRINGS)
          .optional_attr("clip", OPH_ATTR_FLOAT)
          .attr("direction", std::string("forward"))
          .optional_attr("hidden_size", OPH_ATTR_INT);
      if (has_layout) b.attr("layout", int64_t{0});
      if (cell == Cell::kGru) b.attr("linear_before_reset", int64_t{0});
      if (cell == Cell::kLstm) b.attr("input_forget", int64_t{0});
      add_types(b, "T", kFloat);
      b.types("T1", {i32});
      b.infer([cell, has_layout](oph::InferContext& c) { rnn_infer(c, cell, has_layout); });
      if (cell == Cell::kRnn) set_kernel<Cell::kRnn>(b, has_layout);
      else if (cell == Cell::kGru) set_kernel<Cell::kGru>(b, has_layout);
      else set_kernel<Cell::kLstm>(b, has_layout);
    }
  }
}

}  // namespace

static const Family kFamily("rnn", &register_rnn);

}  // namespace onnx_core
