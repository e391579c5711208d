// One version of one model as the server holds it: its instances (InstancePool), its warm-up, the checks of a
// request's tensors against the model, the run, and its counters for /metrics. Shared by the REST and gRPC front
// ends, which only translate their wire formats into InputData and back.
#pragma once

#include "instance_pool.hpp"
#include "model_config.hpp"

#include <ophost/runtime.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace ophost::serve {

// One input tensor of a request, as a front end decoded it (before it is checked against the model).
struct InputData {
  std::string field;                // "inputs[0]", named in every message about it
  std::string name;
  DType dtype = DType::kUndefined;  // the client's datatype
  std::vector<int64_t> shape;       // dims >= 0, element count checked (checked_numel)
  bool is_raw = false;
  std::span<const std::byte> raw;   // is_raw: the bytes in the request body (alive for the whole call)
  Tensor tensor;                    // !is_raw: decoded from JSON or typed gRPC contents
};

struct InferResult {
  std::vector<NamedTensor> outputs;  // those requested (all, in graph order, when none was named)
  int64_t queue_us = 0;
  int64_t compute_us = 0;
};

struct VersionMetrics {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> queue_us{0};
  std::atomic<uint64_t> compute_us{0};
  std::atomic<uint64_t> request_us{0};
  std::atomic<int64_t> in_flight{0};
};

// One inference request's accounting on a version's counters: counted and in flight from construction; a
// failure unless succeeded() was called before destruction.
class RequestScope {
 public:
  RequestScope(VersionMetrics& m, std::chrono::steady_clock::time_point arrival);
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;
  void succeeded(const InferResult& result);

 private:
  VersionMetrics& m_;
  std::chrono::steady_clock::time_point arrival_;
  bool ok_ = false;
};

class ServedVersion {
 public:
  using Clock = std::chrono::steady_clock;

  ServedVersion(std::string model, std::string version, std::filesystem::path file, ModelConfig config);

  // Loads config.instances sessions and runs each once on the warm-up input; on success the version is ready.
  // Never throws: a failure is kept as error() (the host's message) and the version stays not ready.
  void load(Runtime& runtime, SessionOptions options, int64_t default_timeout_ms);

  const std::string& model() const noexcept { return model_; }
  const std::string& version() const noexcept { return version_; }
  const std::filesystem::path& file() const noexcept { return file_; }
  const ModelConfig& config() const noexcept { return config_; }
  bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }
  bool loading_done() const noexcept { return done_.load(std::memory_order_acquire); }
  std::string error() const;
  // Graph inputs and outputs; empty until loaded.
  std::span<const ValueInfo> inputs() const noexcept;
  std::span<const ValueInfo> outputs() const noexcept;

  // When a request arriving now must be answered by (its queue wait and run are bounded by it).
  Clock::time_point deadline(Clock::time_point arrival) const noexcept;

  // Checks the inputs and requested outputs against the model (RequestError 400 naming the field), waits for
  // an instance (RequestError 503 when the queue is full, 504 past the deadline), runs (RequestError 500 with
  // the host's message naming node and pack when a kernel fails; 504 when the run timeout stops it).
  InferResult infer(std::vector<InputData>& inputs, const std::vector<std::string>& requested,
                    Clock::time_point deadline);

  // Bytes the instances' pools hold now (total_allocated_bytes summed).
  int64_t pool_bytes() const;
  size_t queued() const;
  // Runs of the model (fewer than requests when dynamic batching formed batches).
  uint64_t runs() const;

  VersionMetrics metrics;

 private:
  std::vector<NamedTensor> bind(std::vector<InputData>& inputs) const;
  std::vector<size_t> pick_outputs(const std::vector<std::string>& requested) const;
  std::vector<NamedTensor> warmup_inputs() const;

  std::string model_;
  std::string version_;
  std::filesystem::path file_;
  ModelConfig config_;
  int64_t timeout_ms_ = 0;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
  std::unique_ptr<InstancePool> pool_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> done_{false};
  mutable std::mutex error_mutex_;
  std::string error_;
};

}  // namespace ophost::serve
