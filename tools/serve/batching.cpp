#include "batching.hpp"

#include <ophost/error.hpp>

#include <cstring>
#include <numeric>

namespace ophost::serve {

namespace {
size_t row_bytes(const Tensor& t) {
  size_t n = dtype_size(t.dtype());
  for (size_t d = 1; d < t.shape().size(); ++d) n *= static_cast<size_t>(t.shape()[d]);
  return n;
}
}  // namespace

int64_t batch_rows(const std::vector<NamedTensor>& feeds) {
  for (const NamedTensor& f : feeds)
    if (f.tensor.shape().empty() || f.tensor.dtype() == DType::kString) return 0;
  return feeds.empty() ? 0 : feeds.front().tensor.shape()[0];
}

bool batch_compatible(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  if (a.size() != b.size() || batch_rows(b) == 0) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor &x = a[i].tensor, &y = b[i].tensor;
    if (a[i].name != b[i].name || x.dtype() != y.dtype() || x.shape().size() != y.shape().size()) return false;
    for (size_t d = 1; d < x.shape().size(); ++d)
      if (x.shape()[d] != y.shape()[d]) return false;
    if (y.shape()[0] != b.front().tensor.shape()[0]) return false;  // every input of a request has its rows
  }
  return true;
}

std::vector<NamedTensor> stack_batch(const std::vector<const std::vector<NamedTensor>*>& parts) {
  std::vector<NamedTensor> out;
  const std::vector<NamedTensor>& first = *parts.front();
  for (size_t i = 0; i < first.size(); ++i) {
    std::vector<int64_t> shape(first[i].tensor.shape().begin(), first[i].tensor.shape().end());
    shape[0] = 0;
    for (const auto* p : parts) shape[0] += (*p)[i].tensor.shape()[0];
    Tensor t(first[i].tensor.dtype(), shape);
    auto* dst = static_cast<std::byte*>(t.data());
    for (const auto* p : parts) {
      const Tensor& src = (*p)[i].tensor;
      if (src.nbytes()) std::memcpy(dst, src.data(), src.nbytes());
      dst += src.nbytes();
    }
    out.push_back({first[i].name, std::move(t)});
  }
  return out;
}

std::vector<std::vector<NamedTensor>> split_batch(const std::vector<NamedTensor>& outputs,
                                                  const std::vector<int64_t>& rows) {
  int64_t total = std::accumulate(rows.begin(), rows.end(), int64_t{0});
  std::vector<std::vector<NamedTensor>> per(rows.size());
  for (const NamedTensor& o : outputs) {
    const Tensor& t = o.tensor;
    if (t.shape().empty() || t.shape()[0] != total || t.dtype() == DType::kString) {
      throw Error(Code::kFailedPrecondition,
                  "dynamic batching: output '" + o.name + "' has shape " + shape_to_string(t.shape()) +
                      ", not " + std::to_string(total) + " rows (the batch's) along dim 0; this model cannot be "
                      "batched: set max_queue_delay_us to 0 in its config.json");
    }
    size_t rb = row_bytes(t);
    const auto* src = static_cast<const std::byte*>(t.data());
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
      shape[0] = rows[r];
      Tensor part(t.dtype(), shape);
      size_t n = rb * static_cast<size_t>(rows[r]);
      if (n) std::memcpy(part.data(), src, n);
      src += n;
      per[r].push_back({o.name, std::move(part)});
    }
  }
  return per;
}

}  // namespace ophost::serve
