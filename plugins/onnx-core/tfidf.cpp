// onnx-core: TfIdfVectorizer (9) over int32/int64 token ids (string tokens are not supported: the ABI carries
// strings as opaque values), with skip-grams, TF / IDF / TFIDF weighting. Counting follows ONNX Runtime: for
// each skip distance 1..max_skip_count+1, every start position, n-grams of min..max length; unigrams are counted
// once (only at the first skip distance).
#include "common.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace onnx_core {
namespace {

const std::string kOp = "TfIdfVectorizer";

// Output columns: one past the largest of ngram_indexes, each of which must be a column (>= 0; a negative or
// INT64_MAX index was written through as an output offset: an op fuzz target find).
int64_t output_columns(const std::vector<int64_t>& indexes) {
  int64_t cols = 0;
  for (size_t k = 0; k < indexes.size(); ++k) {
    const int64_t v = indexes[k];
    if (v < 0 || v == std::numeric_limits<int64_t>::max())
      fail(kOp + ": ngram_indexes[" + std::to_string(k) + "] is " + std::to_string(v) +
           "; each entry is an output column, >= 0");
    cols = std::max(cols, v + 1);
  }
  return cols;
}

struct TfIdfKernel {
  int64_t min_n, max_n, max_skip;
  enum { kTF, kIDF, kTFIDF } mode;
  std::map<std::vector<int64_t>, int64_t> pool;  // n-gram -> output column
  std::vector<float> weights;
  int64_t out_dim = 0;

  explicit TfIdfKernel(const oph::KernelInit& init) {
    const oph::Attrs& at = init.attrs();
    min_n = at.get<int64_t>("min_gram_length");
    max_n = at.get<int64_t>("max_gram_length");
    max_skip = at.get<int64_t>("max_skip_count");
    if (min_n < 1 || max_n < min_n) fail(kOp + ": need 1 <= min_gram_length <= max_gram_length");
    if (max_skip < 0) fail(kOp + ": max_skip_count must be >= 0");
    const std::string m = at.get<std::string>("mode");
    if (m == "TF") mode = kTF;
    else if (m == "IDF") mode = kIDF;
    else if (m == "TFIDF") mode = kTFIDF;
    else fail(kOp + ": mode '" + m + "' is not one of TF, IDF, TFIDF");
    if (at.has("pool_strings")) fail(kOp + ": pool_strings (string tokens) are not supported", OPH_CODE_UNIMPLEMENTED);
    if (!at.has("pool_int64s")) fail(kOp + ": pool_int64s is required");
    auto ints = at.get<std::vector<int64_t>>("pool_int64s");
    auto counts = at.get<std::vector<int64_t>>("ngram_counts");
    auto indexes = at.get<std::vector<int64_t>>("ngram_indexes");
    if (at.has("weights")) weights = at.get<std::vector<float>>("weights");
    // ngram_counts[k] is where the (k+1)-grams start in the pool.
    size_t id = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      const size_t n = k + 1;
      const int64_t begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(ints.size());
      if (begin < 0 || end < begin || end > static_cast<int64_t>(ints.size()) || (end - begin) % n != 0)
        fail(kOp + ": ngram_counts does not partition pool_int64s into " + std::to_string(n) + "-grams");
      for (int64_t p = begin; p < end; p += n, ++id) {
        if (id >= indexes.size()) fail(kOp + ": ngram_indexes has fewer entries than the pool has n-grams");
        pool[std::vector<int64_t>(ints.begin() + p, ints.begin() + p + n)] = indexes[id];
      }
    }
    if (id != indexes.size()) fail(kOp + ": ngram_indexes must have one entry per n-gram in the pool");
    out_dim = output_columns(indexes);
    if (!weights.empty() && static_cast<int64_t>(weights.size()) < out_dim)
      fail(kOp + ": weights must have one value per output column");
  }

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, kOp);
    auto xs = x.shape();
    if (xs.size() != 1 && xs.size() != 2) fail(kOp + ": X must be [C] or [N, C], got " + shape_str(xs));
    const size_t rows = xs.size() == 1 ? 1 : xs[0], C = xs.back();
    std::vector<int64_t> os = xs.size() == 1 ? std::vector<int64_t>{out_dim} : std::vector<int64_t>{xs[0], out_dim};
    oph::TensorRef y = ensure_output(ctx, 0, os, kOp);
    if (!y.present()) return;
    auto tok = [&](size_t i) -> int64_t {
      return x.dtype() == i32 ? static_cast<const int32_t*>(x.data())[i] : static_cast<const int64_t*>(x.data())[i];
    };
    std::vector<float> freq(rows * out_dim, 0.0f);
    std::vector<int64_t> gram;
    // A skip distance of C or more cannot reach a second token, so distances stop at C (max_skip_count may be
    // anything up to INT64_MAX); token k of a gram at s is at s + skip*k, compared by division so that a hostile
    // min/max_gram_length cannot overflow the product.
    const int64_t last_skip = std::min<int64_t>(max_skip, static_cast<int64_t>(C)) + 1;
    for (size_t r = 0; r < rows; ++r) {
      int64_t start_n = min_n;
      for (int64_t skip = 1; skip <= last_skip; ++skip) {
        for (size_t s = 0; s < C; ++s) {
          const int64_t reach = static_cast<int64_t>(C - 1 - s) / skip;  // the largest k with s + skip*k < C
          if (start_n - 1 > reach) break;
          gram.clear();
          for (int64_t n = 1; n <= max_n; ++n) {
            if (n - 1 > reach) break;
            const size_t pos = s + static_cast<size_t>(skip * (n - 1));
            gram.push_back(tok(r * C + pos));
            if (n < start_n) continue;
            auto hit = pool.find(gram);
            if (hit != pool.end()) freq[r * out_dim + hit->second] += 1;
          }
        }
        if (start_n == 1 && ++start_n > max_n) break;  // unigrams do not depend on the skip distance
      }
    }
    float* yp = static_cast<float*>(y.data());
    for (size_t i = 0; i < freq.size(); ++i) {
      const size_t col = i % out_dim;
      const float w = weights.empty() ? 1.0f : weights[col];
      switch (mode) {
        case kTF: yp[i] = freq[i]; break;
        case kIDF: yp[i] = freq[i] > 0 ? w : 0.0f; break;
        case kTFIDF: yp[i] = freq[i] * w; break;
      }
    }
  }
};

void tfidf_infer(oph::InferContext& c) {
  const int64_t out_dim = output_columns(c.attr<std::vector<int64_t>>("ngram_indexes"));
  if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, f32);
  auto xs = c.input_shape(0);
  if (xs.size() == 1) c.set_output(0, f32, {out_dim});
  else if (xs.size() == 2) c.set_output(0, f32, {xs[0], out_dim});
  else fail(kOp + ": X must have rank 1 or 2, got " + shape_str(xs));
}

void register_tfidf(oph::Pack& pack) {
  auto& b = pack.op(kDomain, "TfIdfVectorizer")
                .versions(9, OPH_OPSET_MAX)
                .doc("n-gram / skip-gram counts with TF, IDF or TFIDF weighting (integer tokens)")
                .input("X", "T")
                .output("Y", "T1")
                .required_attr("max_gram_length", OPH_ATTR_INT)
                .required_attr("max_skip_count", OPH_ATTR_INT)
                .required_attr("min_gram_length", OPH_ATTR_INT)
                .required_attr("mode", OPH_ATTR_STRING)
                .required_attr("ngram_counts", OPH_ATTR_INTS)
                .required_attr("ngram_indexes", OPH_ATTR_INTS)
                .optional_attr("pool_int64s", OPH_ATTR_INTS)
                .optional_attr("pool_strings", OPH_ATTR_STRINGS)
                .optional_attr("weights", OPH_ATTR_FLOATS)
                .types("T1", {f32})
                .infer(&tfidf_infer)
                .kernel<TfIdfKernel>();
  add_types(b, "T", {i32, i64});
}

}  // namespace

static const Family kFamily("tfidf", &register_tfidf);

}  // namespace onnx_core
