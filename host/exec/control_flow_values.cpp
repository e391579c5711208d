// Tensor and shape helpers of the host's If/Loop/Scan kernels (declared in control_flow_values.hpp).
#include "exec/control_flow_values.hpp"

#include <ophost/error.hpp>

#include <cstring>

namespace ophost::cf {

// ---- tensors ----------------------------------------------------------------------------------------------

namespace {
alignas(64) std::byte g_no_bytes[64];
}  // namespace

// A Tensor over an input's buffer (not copied; valid during the compute).
Tensor borrow(const oph_tensor& t, const std::string& what) {
  const DType d = from_dl(t.dtype);
  if (d == DType::kUndefined || d == DType::kString) {
    throw Error(Code::kUnimplemented, what + " is not a numeric tensor; string tensors cannot pass into or out of "
                                             "If/Loop/Scan bodies yet");
  }
  if (t.device.device_type != OPH_DL_CPU) {
    throw Error(Code::kInternal, what + " is not in host memory");
  }
  std::vector<int64_t> dims(t.shape, t.shape + std::max(0, t.ndim));
  std::byte* p = t.data ? static_cast<std::byte*>(t.data) + t.byte_offset : g_no_bytes;
  return Tensor::wrap(d, std::move(dims), std::shared_ptr<std::byte>(p, [](std::byte*) {}));
}

// Element `index` along `axis` of t, with that axis removed (a copy).
Tensor slice_axis(const Tensor& t, size_t axis, int64_t index) {
  auto s = t.shape();
  std::vector<int64_t> dims;
  size_t outer = 1, inner = dtype_size(t.dtype());
  for (size_t k = 0; k < s.size(); ++k) {
    if (k < axis) outer *= static_cast<size_t>(s[k]);
    if (k > axis) inner *= static_cast<size_t>(s[k]);
    if (k != axis) dims.push_back(s[k]);
  }
  const size_t len = static_cast<size_t>(s[axis]);
  Tensor out(t.dtype(), std::move(dims));
  const auto* src = static_cast<const std::byte*>(t.data());
  auto* dst = static_cast<std::byte*>(out.data());
  for (size_t o = 0; o < outer && inner; ++o)
    std::memcpy(dst + o * inner, src + (o * len + static_cast<size_t>(index)) * inner, inner);
  return out;
}

// The parts (equal dtypes and shapes) stacked along a new dimension at `axis`; `empty_part` gives the part
// shape when there are none.
Tensor stack_axis(const std::vector<Tensor>& parts, size_t axis, DType dtype, std::vector<int64_t> empty_part,
                  const std::string& what) {
  std::vector<int64_t> part = parts.empty() ? std::move(empty_part)
                                            : std::vector<int64_t>(parts[0].shape().begin(), parts[0].shape().end());
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].dtype() != dtype || !std::equal(part.begin(), part.end(), parts[p].shape().begin(),
                                                 parts[p].shape().end())) {
      throw Error(Code::kInvalidArgument,
                  what + " is " + dtype_name(parts[p].dtype()) + " " + shape_to_string(parts[p].shape()) +
                      " in iteration " + std::to_string(p) + " but " + dtype_name(dtype) + " " +
                      shape_to_string(part) + " before; every iteration must give the same shape");
    }
  }
  if (axis > part.size()) {
    throw Error(Code::kInvalidArgument, what + ": axis " + std::to_string(axis) + " is out of range for rank " +
                                            std::to_string(part.size() + 1));
  }
  std::vector<int64_t> dims = part;
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(parts.size()));
  Tensor out(dtype, dims);
  size_t outer = 1, inner = dtype_size(dtype);
  for (size_t k = 0; k < part.size(); ++k) (k < axis ? outer : inner) *= static_cast<size_t>(part[k]);
  auto* dst = static_cast<std::byte*>(out.data());
  const size_t n = parts.size();
  for (size_t p = 0; p < n && inner; ++p) {
    const auto* src = static_cast<const std::byte*>(parts[p].data());
    for (size_t o = 0; o < outer; ++o) std::memcpy(dst + (o * n + p) * inner, src + o * inner, inner);
  }
  return out;
}

bool scalar_bool(const oph_tensor* t, const std::string& what) {
  if (from_dl(t->dtype) != DType::kBool) throw Error(Code::kInvalidArgument, what + " must be bool");
  int64_t n = 1;
  for (int32_t k = 0; k < t->ndim; ++k) n *= t->shape[k];
  if (n != 1) throw Error(Code::kInvalidArgument, what + " must hold one element, not " + std::to_string(n));
  return *(static_cast<const uint8_t*>(t->data) + t->byte_offset) != 0;
}

int64_t scalar_int64(const oph_tensor* t, const std::string& what) {
  if (from_dl(t->dtype) != DType::kInt64) throw Error(Code::kInvalidArgument, what + " must be int64");
  int64_t n = 1;
  for (int32_t k = 0; k < t->ndim; ++k) n *= t->shape[k];
  if (n != 1) throw Error(Code::kInvalidArgument, what + " must hold one element, not " + std::to_string(n));
  int64_t v;
  std::memcpy(&v, static_cast<const std::byte*>(t->data) + t->byte_offset, sizeof v);
  return v;
}

Tensor scalar_tensor(DType dtype, int64_t value) {
  Tensor t(dtype, {});
  if (dtype == DType::kBool) *t.data_as<uint8_t>() = value != 0;
  else *t.data_as<int64_t>() = value;
  return t;
}

// Writes t into the node's output `index` (allocated through the context: checked against the plan when the
// shape was planned, allocated now when it was not).
void emit(const oph_compute_context* ctx, size_t index, const Tensor& t, const std::string& what) {
  oph_tensor* out = ctx->outputs[index];
  if (!out) return;  // absent optional output
  if (from_dl(out->dtype) != t.dtype()) {
    throw Error(Code::kInvalidArgument, what + " is " + dtype_name(t.dtype()) + " but the node's output is " +
                                            dtype_name(from_dl(out->dtype)));
  }
  auto s = t.shape();
  const bool same = out->data && out->ndim == static_cast<int32_t>(s.size()) &&
                    std::equal(s.begin(), s.end(), out->shape);
  if (!same) {
    if (oph_status* st = ctx->allocate_output(ctx, index, static_cast<int32_t>(s.size()), s.data())) {
      Code code = Code::kInternal;
      std::string msg = consume_status(st, &code);
      throw Error(code, what + ": " + msg);
    }
  }
  if (t.nbytes()) std::memcpy(static_cast<std::byte*>(out->data) + out->byte_offset, t.data(), t.nbytes());
}

// ---- metadata ---------------------------------------------------------------------------------------------

ValueMeta scalar_meta(DType d) {
  ValueMeta m;
  m.dtype = d;
  m.rank_known = true;
  return m;
}

// What a value can be when it comes from either of two sources (If's branches; a loop's first and later
// iterations).
ValueMeta merge(const ValueMeta& a, const ValueMeta& b, const std::string& what) {
  if (a.dtype != b.dtype && a.dtype != DType::kUndefined && b.dtype != DType::kUndefined) {
    throw Error(Code::kInvalidArgument, what + " is " + dtype_name(a.dtype) + " one way and " + dtype_name(b.dtype) +
                                            " the other; both must give the same element type");
  }
  ValueMeta m;
  m.dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
  if (!a.rank_known || !b.rank_known || a.shape.size() != b.shape.size()) return m;
  m.rank_known = true;
  m.shape = a.shape;
  for (size_t k = 0; k < m.shape.size(); ++k)
    if (a.shape[k] != b.shape[k]) m.shape[k] = OPH_DIM_UNKNOWN;
  return m;
}

ValueMeta remove_dim(const ValueMeta& m, size_t axis) {
  ValueMeta r = m;
  if (r.rank_known && axis < r.shape.size()) r.shape.erase(r.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  return r;
}

ValueMeta insert_dim(const ValueMeta& m, size_t axis, int64_t dim) {
  ValueMeta r = m;
  if (r.rank_known && axis <= r.shape.size())
    r.shape.insert(r.shape.begin() + static_cast<std::ptrdiff_t>(axis), dim);
  return r;
}

}  // namespace ophost::cf
