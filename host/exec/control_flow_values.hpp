// Tensor and shape helpers of the host's If/Loop/Scan kernels (control_flow.cpp): views of the node's inputs,
// slicing and stacking along an axis (Scan), scalar conditions and trip counts, writing outputs, and the shape
// metadata merged across branches and iterations.
#pragma once

#include "exec/session_impl.hpp"

#include <ophost/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ophost::cf {

// A Tensor over an input's buffer (not copied; valid during the compute).
Tensor borrow(const oph_tensor& t, const std::string& what);
// Element `index` along `axis` of t, with that axis removed (a copy).
Tensor slice_axis(const Tensor& t, size_t axis, int64_t index);
// The parts (equal dtypes and shapes) stacked along a new dimension at `axis`; `empty_part` gives the part
// shape when there are none.
Tensor stack_axis(const std::vector<Tensor>& parts, size_t axis, DType dtype, std::vector<int64_t> empty_part,
                  const std::string& what);
bool scalar_bool(const oph_tensor* t, const std::string& what);
int64_t scalar_int64(const oph_tensor* t, const std::string& what);
Tensor scalar_tensor(DType dtype, int64_t value);
// Writes t into the node's output `index` (allocated through the context: checked against the plan when the
// shape was planned, allocated now when it was not).
void emit(const oph_compute_context* ctx, size_t index, const Tensor& t, const std::string& what);

ValueMeta scalar_meta(DType d);
// What a value can be when it comes from either of two sources (If's branches; a loop's first and later
// iterations).
ValueMeta merge(const ValueMeta& a, const ValueMeta& b, const std::string& what);
ValueMeta remove_dim(const ValueMeta& m, size_t axis);
ValueMeta insert_dim(const ValueMeta& m, size_t axis, int64_t dim);

}  // namespace ophost::cf
