// What the REST and gRPC front ends share: the repository, the limits, the draining flag, the access log.
#pragma once

#include "repository.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
}

namespace ophost::serve {

struct ServeLimits {
  size_t max_body_bytes = size_t{64} << 20;      // --max-body-bytes: larger bodies / messages are refused (413)
  uint64_t max_tensor_bytes = uint64_t{64} << 20;  // --max-request-tensor-bytes: per input tensor
  int read_timeout_s = 10;                          // --read-timeout: a client slower than this is dropped
  int http_threads = 32;                            // --http-threads: connections served at once
};

// One access-log line's fields (logfmt: key=value, values with spaces quoted).
struct AccessRecord {
  std::string_view protocol;  // "http" | "grpc"
  std::string_view method;    // "POST" | "ModelInfer" ...
  std::string_view path;
  int status = 0;             // HTTP status (gRPC: the HTTP status the error maps from; 200 for OK)
  std::string_view model;
  std::string_view version;   // the repository's (numbers), not the client's
  size_t bytes_in = 0;
  size_t bytes_out = 0;
  int64_t queue_us = -1;      // -1: not an inference
  int64_t compute_us = -1;
  int64_t total_us = 0;
  std::string_view peer;
};

struct ServerContext {
  ServerContext(Repository& r, ServeLimits l) : repo(r), limits(l) {}
  Repository& repo;
  ServeLimits limits;
  std::atomic<bool> draining{false};
  std::shared_ptr<spdlog::logger> access_log;  // null: no access log

  // Server readiness: models loaded, at least one ready, not draining. `why` says what is missing.
  bool ready(std::string* why = nullptr) const;
  void log_access(const AccessRecord& r) const;
};

}  // namespace ophost::serve
