#include "served_model.hpp"

#include "request_error.hpp"
#include "v2_types.hpp"

#include <ophost/error.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace ophost::serve {

namespace {

int64_t micros(ServedVersion::Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

std::string names_of(std::span<const ValueInfo> values) {
  std::string s;
  for (const ValueInfo& v : values) s += (s.empty() ? "" : ", ") + v.name;
  return s;
}

std::string describe(const ValueInfo& v) {
  std::string_view dt = v2_datatype(v.dtype);
  return std::string(dt.empty() ? dtype_name(v.dtype) : dt) + " " + v2_shape(v.shape);
}

}  // namespace

RequestScope::RequestScope(VersionMetrics& m, std::chrono::steady_clock::time_point arrival)
    : m_(m), arrival_(arrival) {
  m_.requests.fetch_add(1, std::memory_order_relaxed);
  m_.in_flight.fetch_add(1, std::memory_order_relaxed);
}

RequestScope::~RequestScope() {
  if (!ok_) m_.failures.fetch_add(1, std::memory_order_relaxed);
  m_.in_flight.fetch_sub(1, std::memory_order_relaxed);
}

void RequestScope::succeeded(const InferResult& result) {
  ok_ = true;
  m_.queue_us.fetch_add(result.queue_us, std::memory_order_relaxed);
  m_.compute_us.fetch_add(result.compute_us, std::memory_order_relaxed);
  m_.request_us.fetch_add(micros(std::chrono::steady_clock::now() - arrival_), std::memory_order_relaxed);
}

ServedVersion::ServedVersion(std::string model, std::string version, std::filesystem::path file, ModelConfig config)
    : model_(std::move(model)), version_(std::move(version)), file_(std::move(file)), config_(std::move(config)) {}

std::string ServedVersion::error() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

std::span<const ValueInfo> ServedVersion::inputs() const noexcept {
  return ready() ? std::span<const ValueInfo>(inputs_) : std::span<const ValueInfo>();
}
std::span<const ValueInfo> ServedVersion::outputs() const noexcept {
  return ready() ? std::span<const ValueInfo>(outputs_) : std::span<const ValueInfo>();
}

std::vector<NamedTensor> ServedVersion::warmup_inputs() const {
  std::vector<NamedTensor> feeds;
  for (const ValueInfo& in : inputs_) {
    std::vector<int64_t> dims = in.shape;
    if (auto it = config_.warmup_shapes.find(in.name); it != config_.warmup_shapes.end()) {
      dims = it->second;
    } else if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) {
      throw Error(Code::kInvalidArgument, "input '" + in.name + "' has unknown dims " + v2_shape(dims) +
                                              ": give its warm-up shape in config.json, e.g. \"warmup\": {\"" +
                                              in.name + "\": [...]}");
    }
    feeds.push_back({in.name, Tensor(in.dtype, std::move(dims))});
  }
  for (const auto& [name, dims] : config_.warmup_shapes) {
    if (std::none_of(inputs_.begin(), inputs_.end(), [&](const ValueInfo& v) { return v.name == name; }))
      throw Error(Code::kInvalidArgument, "config.json 'warmup' names '" + name + "', which is not an input of the "
                                          "model (inputs: " + names_of(inputs_) + ")");
  }
  return feeds;
}

void ServedVersion::load(Runtime& runtime, SessionOptions options, int64_t default_timeout_ms) {
  std::string stage = "load";
  try {
    timeout_ms_ = config_.request_timeout_ms >= 0 ? config_.request_timeout_ms : default_timeout_ms;
    if (!config_.devices.empty()) options.devices = config_.devices;
    if (config_.threads > 1) {
      options.execution_mode = SessionOptions::ExecutionMode::kParallel;
      options.inter_op_threads = config_.threads;
    }
    if (timeout_ms_ > 0) options.run_timeout_ms = timeout_ms_;
    std::vector<std::unique_ptr<Session>> sessions;
    for (int i = 0; i < config_.instances; ++i) sessions.push_back(runtime.load(file_, options));
    inputs_ = sessions.front()->inputs();
    outputs_ = sessions.front()->outputs();
    stage = "warm-up";
    std::vector<NamedTensor> feeds = warmup_inputs();
    // Every instance runs once on its own thread: its arena planned, its packs' kernels (and their per-thread
    // state) ready before the version is.
    BatchPolicy batch{config_.max_batch, std::chrono::microseconds(config_.max_queue_delay_us)};
    pool_ = std::make_unique<InstancePool>(std::move(sessions), static_cast<size_t>(config_.max_queue),
                                           [&feeds](Session& s) { s.run(feeds); }, batch);
    ready_.store(true, std::memory_order_release);
    spdlog::info("serve: model '{}' version {} ready ({} instance(s), warm-up ran)", model_, version_,
                 config_.instances);
  } catch (const std::exception& e) {
    std::lock_guard lock(error_mutex_);
    error_ = stage + " of " + file_.string() + " failed: " + e.what();
    spdlog::error("serve: model '{}' version {} is not ready: {}", model_, version_, error_);
  }
  done_.store(true, std::memory_order_release);
}

ServedVersion::Clock::time_point ServedVersion::deadline(Clock::time_point arrival) const noexcept {
  return timeout_ms_ > 0 ? arrival + std::chrono::milliseconds(timeout_ms_) : Clock::time_point::max();
}

std::vector<NamedTensor> ServedVersion::bind(std::vector<InputData>& inputs) const {
  std::vector<NamedTensor> feeds(inputs_.size());
  std::vector<bool> given(inputs_.size(), false);
  for (InputData& in : inputs) {
    auto it = std::find_if(inputs_.begin(), inputs_.end(), [&](const ValueInfo& v) { return v.name == in.name; });
    if (it == inputs_.end()) {
      throw RequestError(400, in.field + ": '" + in.name + "' is not an input of model '" + model_ +
                                  "' (inputs: " + names_of(inputs_) + ")");
    }
    size_t k = static_cast<size_t>(it - inputs_.begin());
    if (given[k]) throw RequestError(400, in.field + ": input '" + in.name + "' is given more than once");
    given[k] = true;
    const ValueInfo& want = *it;
    if (in.dtype != want.dtype) {
      throw RequestError(400, in.field + " '" + in.name + "': datatype " + std::string(v2_datatype(in.dtype)) +
                                  " does not match the model's " + describe(want));
    }
    bool shape_ok = in.shape.size() == want.shape.size();
    for (size_t d = 0; shape_ok && d < in.shape.size(); ++d) shape_ok = want.shape[d] < 0 || want.shape[d] == in.shape[d];
    if (!shape_ok) {
      throw RequestError(400, in.field + " '" + in.name + "': shape " + v2_shape(in.shape) +
                                  " does not match the model's " + describe(want) + " (-1: any size)");
    }
    if (config_.max_batch > 0 && !in.shape.empty() && in.shape[0] > config_.max_batch) {
      throw RequestError(400, in.field + " '" + in.name + "': batch (dim 0) " + std::to_string(in.shape[0]) +
                                  " is over the model's max_batch " + std::to_string(config_.max_batch));
    }
    if (!in.is_raw) {
      feeds[k] = {in.name, std::move(in.tensor)};
      continue;
    }
    int64_t numel = shape_numel(in.shape);
    size_t need = static_cast<size_t>(numel) * dtype_size(in.dtype);
    if (in.raw.size() != need) {
      throw RequestError(400, in.field + " '" + in.name + "': " + std::to_string(in.raw.size()) +
                                  " bytes of data for " + describe({in.name, in.dtype, in.shape}) + ", which needs " +
                                  std::to_string(need));
    }
    auto* p = const_cast<std::byte*>(in.raw.data());
    if (reinterpret_cast<uintptr_t>(p) % 64 == 0 && need > 0) {
      // Aligned: the request's own bytes are the tensor (no copy); the body outlives the run.
      feeds[k] = {in.name, Tensor::wrap(in.dtype, in.shape, std::shared_ptr<std::byte>(std::shared_ptr<void>(), p))};
    } else {
      Tensor t(in.dtype, in.shape);
      if (need > 0) std::memcpy(t.data(), p, need);
      feeds[k] = {in.name, std::move(t)};
    }
  }
  for (size_t k = 0; k < inputs_.size(); ++k) {
    if (!given[k]) {
      throw RequestError(400, "inputs: '" + inputs_[k].name + "' (" + describe(inputs_[k]) + ") of model '" +
                                  model_ + "' is missing");
    }
  }
  return feeds;
}

std::vector<size_t> ServedVersion::pick_outputs(const std::vector<std::string>& requested) const {
  std::vector<size_t> picks;
  if (requested.empty()) {
    for (size_t k = 0; k < outputs_.size(); ++k) picks.push_back(k);
    return picks;
  }
  for (size_t i = 0; i < requested.size(); ++i) {
    auto it = std::find_if(outputs_.begin(), outputs_.end(), [&](const ValueInfo& v) { return v.name == requested[i]; });
    if (it == outputs_.end()) {
      throw RequestError(400, "outputs[" + std::to_string(i) + "]: '" + requested[i] + "' is not an output of model '" +
                                  model_ + "' (outputs: " + names_of(outputs_) + ")");
    }
    picks.push_back(static_cast<size_t>(it - outputs_.begin()));
  }
  return picks;
}

InferResult ServedVersion::infer(std::vector<InputData>& inputs, const std::vector<std::string>& requested,
                                 Clock::time_point deadline) {
  if (!ready()) {
    std::string why = loading_done() ? error() : "it is still loading";
    throw RequestError(503, "model '" + model_ + "' version " + version_ + " is not ready: " + why);
  }
  std::vector<NamedTensor> feeds = bind(inputs);
  std::vector<size_t> picks = pick_outputs(requested);
  InferResult result;
  std::vector<NamedTensor> outs;
  InstancePool::Timing timing;
  InstancePool::Wait wait = InstancePool::Wait::kRan;
  try {
    wait = pool_->run(deadline, feeds, outs, timing);
  } catch (const Error& e) {
    int status = e.code() == Code::kDeadlineExceeded ? 504 : 500;
    throw RequestError(status, "model '" + model_ + "' version " + version_ + ": " + e.what());
  } catch (const std::exception& e) {
    throw RequestError(500, "model '" + model_ + "' version " + version_ + ": run failed: " + e.what());
  }
  if (wait == InstancePool::Wait::kQueueFull) {
    throw RequestError(503, "model '" + model_ + "' is busy: all " + std::to_string(pool_->size()) +
                                " instance(s) run and " + std::to_string(pool_->max_queue()) +
                                " request(s) wait (config max_queue); retry later", 1);
  }
  if (wait == InstancePool::Wait::kTimedOut) {
    throw RequestError(504, "model '" + model_ + "': no instance became free within the request timeout of " +
                                std::to_string(timeout_ms_) + " ms");
  }
  result.queue_us = micros(timing.queued);
  result.compute_us = micros(timing.computed);
  result.outputs.reserve(picks.size());
  for (size_t k : picks) result.outputs.push_back(outs[k]);  // shares the buffer, no copy
  return result;
}

int64_t ServedVersion::pool_bytes() const {
  if (!ready()) return 0;
  int64_t total = 0;
  for (size_t i = 0; i < pool_->size(); ++i) total += pool_->instance(i).memory_stats().total_allocated_bytes;
  return total;
}

uint64_t ServedVersion::runs() const { return ready() ? pool_->runs() : 0; }

size_t ServedVersion::queued() const { return ready() ? pool_->waiting() : 0; }

}  // namespace ophost::serve
