// The REST front end (cpp-httplib): the Open Inference Protocol v2 routes, /healthz, /infer and /metrics.
#pragma once

#include "server_context.hpp"

#include <memory>
#include <string>

namespace ophost::serve {

class RestServer {
 public:
  explicit RestServer(ServerContext& ctx);
  ~RestServer();
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds host:port (0: a free port) and returns the port. Throws ophost::Error when it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns after the connections being served have been answered.
  void listen();
  // Stops accepting connections; safe from any thread.
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ophost::serve
