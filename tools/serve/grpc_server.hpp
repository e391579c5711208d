// The gRPC front end: inference.GRPCInferenceService (ServerLive, ServerReady, ModelReady, ServerMetadata,
// ModelMetadata, ModelInfer with raw_input_contents or typed contents; outputs as raw_output_contents).
#pragma once

#include "server_context.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace ophost::serve {

class GrpcServer {
 public:
  explicit GrpcServer(ServerContext& ctx);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Starts serving on host:port (0: a free port); returns the port. Throws ophost::Error when it cannot.
  int start(const std::string& host, int port);
  // Stops accepting calls, lets calls in flight finish until `deadline`, cancels the rest.
  void shutdown(std::chrono::system_clock::time_point deadline);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ophost::serve
