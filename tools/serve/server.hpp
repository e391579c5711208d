// `ophost serve`: the repository, the REST and gRPC front ends, and the process's life: ports bound and
// printed, models loaded and warmed up in the background (liveness answers at once, readiness once they ran),
// SIGTERM/SIGINT stop accepting, in-flight requests drain until a deadline, then the process exits 0.
#pragma once

#include "server_context.hpp"

#include <ophost/runtime.hpp>

#include <cstdint>
#include <string>

namespace ophost::serve {

struct ServeOptions {
  std::string model_repository;
  std::string host = "127.0.0.1";
  int http_port = 8000;             // 0: a free port; -1: no REST front end
  int grpc_port = 8001;             // 0: a free port; -1: no gRPC front end
  std::string default_model;        // what /infer serves (default: the only model)
  int64_t request_timeout_ms = 30000;  // queue wait + run of one request (config.json may override; 0: none)
  int drain_timeout_s = 30;         // after SIGTERM/SIGINT: how long in-flight requests may take
  bool access_log = false;          // one logfmt line per request on stdout
  ServeLimits limits;
};

// Serves until SIGTERM or SIGINT; returns the exit code (0 after a drain). Throws ophost::Error for a setup
// failure (repository missing, port in use, plugin required but rejected).
int run_server(const ServeOptions& options, const RuntimeOptions& runtime_options,
               const SessionOptions& session_options);

}  // namespace ophost::serve
