// Dynamic batching along dim 0 (config max_batch + max_queue_delay_us): requests queued for the same model
// version whose inputs agree in every dim but the first are run as one batch, their inputs stacked along dim 0,
// and each gets its rows of every output back.
#pragma once

#include <ophost/tensor.hpp>

#include <cstdint>
#include <vector>

namespace ophost::serve {

// Rows (dim 0) of a request's first input; 0 when the request cannot join a batch (a scalar or string input).
int64_t batch_rows(const std::vector<NamedTensor>& feeds);
// Whether `b` can join a batch with `a`: same inputs, dtypes and dims past dim 0.
bool batch_compatible(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b);
// The requests' inputs stacked along dim 0, in order.
std::vector<NamedTensor> stack_batch(const std::vector<const std::vector<NamedTensor>*>& parts);
// The batch's outputs cut back into each request's rows. Throws ophost::Error naming the output when one does
// not have the batch's rows as dim 0 (the model is not batchable along dim 0: set max_queue_delay_us to 0).
std::vector<std::vector<NamedTensor>> split_batch(const std::vector<NamedTensor>& outputs,
                                                  const std::vector<int64_t>& rows);

}  // namespace ophost::serve
