#include "server.hpp"

#include "grpc_server.hpp"
#include "repository.hpp"
#include "rest_server.hpp"

#include <ophost/error.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

namespace ophost::serve {

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// Joins a thread on every path out of run_server.
struct Joiner {
  std::thread& t;
  ~Joiner() {
    if (t.joinable()) t.join();
  }
};

}  // namespace

int run_server(const ServeOptions& options, const RuntimeOptions& runtime_options,
               const SessionOptions& session_options) {
  if (options.http_port < 0 && options.grpc_port < 0) {
    throw Error(Code::kInvalidArgument, "--http-port and --grpc-port are both off (-1); enable at least one");
  }
  // Every thread started from here on (kernels' pools, httplib's, gRPC's) inherits the mask, so SIGTERM and
  // SIGINT reach only the sigwait below.
  sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Request bodies, input copies and responses of image models are megabytes, freed by whichever of the many
  // HTTP/gRPC threads served them. glibc raises its mmap threshold after such a free, so later ones come from
  // per-thread heaps that keep them: RSS went 116 -> 398 MiB over 28 PP-OCRv4 det requests (24 of them 8 at a
  // time), still rising. A fixed threshold keeps blocks over 1 MiB mmapped, returned when freed: 114 -> 123 MiB.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);

  Runtime runtime(runtime_options);
  Repository repo(options.model_repository);
  repo.set_default_model(options.default_model);
  if (!options.default_model.empty()) repo.model(options.default_model);  // unknown: an error now, not at /infer
  ServerContext ctx(repo, options.limits);
  if (options.access_log) {
    ctx.access_log = spdlog::stdout_logger_mt("ophost.access");
    ctx.access_log->set_pattern("%Y-%m-%dT%H:%M:%S.%e access %v");
    ctx.access_log->set_level(spdlog::level::info);
    ctx.access_log->flush_on(spdlog::level::info);
  }

  std::optional<RestServer> rest;
  std::optional<GrpcServer> grpc;
  if (options.http_port >= 0) {
    rest.emplace(ctx);
    int port = rest->bind(options.host, options.http_port);
    std::printf("ophost serve: HTTP listening on %s:%d\n", options.host.c_str(), port);
  }
  if (options.grpc_port >= 0) {
    grpc.emplace(ctx);
    int port = grpc->start(options.host, options.grpc_port);
    std::printf("ophost serve: gRPC listening on %s:%d\n", options.host.c_str(), port);
  }
  std::fflush(stdout);

  std::thread loader([&] {
    repo.load_all(runtime, session_options, options.request_timeout_ms);
    std::string why;
    if (ctx.ready(&why)) spdlog::info("serve: ready");
    else spdlog::warn("serve: not ready: {}", why);
  });
  Joiner join_loader{loader};

  // The stopper waits for the signal, stops the REST listener and then guards the drain deadline; the main
  // thread drains (REST in listen(), then gRPC) and says when it is done.
  std::mutex mutex;
  std::condition_variable cv;
  bool stop_requested = false, finished = false;
  auto deadline = std::chrono::system_clock::time_point::max();
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("serve: {} received: no new connections, draining in-flight requests (up to {} s)",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", options.drain_timeout_s);
    ctx.draining.store(true);
    std::unique_lock lock(mutex);
    deadline = std::chrono::system_clock::now() + std::chrono::seconds(options.drain_timeout_s);
    stop_requested = true;
    cv.notify_all();
    lock.unlock();
    if (rest) rest->stop();
    lock.lock();
    if (!cv.wait_until(lock, deadline, [&] { return finished; })) {
      spdlog::warn("serve: drain deadline of {} s passed with requests or model loading unfinished; exiting",
                   options.drain_timeout_s);
      std::fflush(stdout);
      std::_Exit(0);
    }
  });
  Joiner join_stopper{stopper};

  if (rest) {
    rest->listen();  // returns after stop(), once the connections being served were answered
    if (!ctx.draining.load()) kill(getpid(), SIGTERM);  // listen ended by itself: shut the rest down too
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return stop_requested; });
  lock.unlock();
  if (grpc) grpc->shutdown(deadline);  // calls in flight finish (until the deadline), new ones are refused
  loader.join();
  lock.lock();
  finished = true;
  cv.notify_all();
  lock.unlock();
  stopper.join();
  spdlog::info("serve: drained; exiting");
  return 0;
}

}  // namespace ophost::serve
