// ophost_npy_allclose GOT.npy WANT.npy [RTOL] [ATOL]: exit 0 when both are float32 tensors of one shape with
// |got - want| <= atol + rtol * |want| everywhere (defaults 1e-5, 1e-6), or both int64 tensors of one shape
// with equal elements; else 1 with the (worst) differing element.
#include <ophost/npy.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ophost_npy_allclose GOT.npy WANT.npy [RTOL] [ATOL]\n");
    return 2;
  }
  try {
    double rtol = argc > 3 ? std::atof(argv[3]) : 1e-5, atol = argc > 4 ? std::atof(argv[4]) : 1e-6;
    ophost::Tensor got = ophost::read_npy(argv[1]), want = ophost::read_npy(argv[2]);
    const bool ints = got.dtype() == ophost::DType::kInt64 && want.dtype() == ophost::DType::kInt64;
    if (!ints && (got.dtype() != ophost::DType::kFloat32 || want.dtype() != ophost::DType::kFloat32)) {
      std::fprintf(stderr, "both files must hold float32 tensors, or both int64 tensors (got %s and %s)\n",
                   ophost::dtype_name(got.dtype()), ophost::dtype_name(want.dtype()));
      return 1;
    }
    if (!std::equal(got.shape().begin(), got.shape().end(), want.shape().begin(), want.shape().end())) {
      std::fprintf(stderr, "shapes differ (%zu vs %zu dims, %lld vs %lld elements)\n", got.shape().size(),
                   want.shape().size(), (long long)got.numel(), (long long)want.numel());
      return 1;
    }
    if (ints) {
      const int64_t* gi = got.data_as<int64_t>();
      const int64_t* wi = want.data_as<int64_t>();
      for (int64_t i = 0; i < got.numel(); ++i) {
        if (gi[i] != wi[i]) {
          std::fprintf(stderr, "element %lld: got %lld, want %lld\n", (long long)i, (long long)gi[i], (long long)wi[i]);
          return 1;
        }
      }
      std::printf("equal: %lld int64 elements\n", (long long)got.numel());
      return 0;
    }
    const float* g = got.data_as<float>();
    const float* w = want.data_as<float>();
    double worst = 0;
    long long at = -1;
    for (int64_t i = 0; i < got.numel(); ++i) {
      double err = std::fabs(double(g[i]) - double(w[i])) - (atol + rtol * std::fabs(double(w[i])));
      if (!(err <= 0) && (at < 0 || err > worst)) {
        worst = err;
        at = i;
      }
    }
    if (at >= 0) {
      std::fprintf(stderr, "element %lld: got %.9g, want %.9g\n", at, g[at], w[at]);
      return 1;
    }
    std::printf("allclose: %lld elements within rtol %g atol %g\n", (long long)got.numel(), rtol, atol);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
