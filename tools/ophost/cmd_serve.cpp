// ophost serve --model-repository DIR: models behind the Open Inference Protocol (KServe v2) over REST and gRPC
// (tools/serve, docs/serving.md).
#include "common.hpp"

#ifdef OPHOST_HAVE_SERVE
#include "server.hpp"
#endif

#include <iostream>

namespace ophost::cli {

namespace {

constexpr const char* kServeUsage =
    "Usage: ophost serve --model-repository DIR [--http-port 8000] [--grpc-port 8001] [--host 127.0.0.1]\n"
    "                    [--access-log] [--plugin-path DIR ...] [--device cpu] [--threads N] [--log-level L]\n"
    "\n"
    "Serves every model of DIR (one folder per model: model.onnx, or version folders 1/, 2/ each with\n"
    "model.onnx, and an optional config.json) over the Open Inference Protocol (KServe v2): REST with JSON\n"
    "and binary tensor data, and gRPC (inference.GRPCInferenceService). The ports are printed on stdout\n"
    "('ophost serve: HTTP listening on HOST:PORT'). Models load and run once on a warm-up input in the\n"
    "background: /v2/health/live answers at once, /v2/health/ready and /healthz once every model that loaded\n"
    "ran its warm-up. SIGTERM/SIGINT stop accepting connections, let in-flight requests finish (up to\n"
    "--drain-timeout) and exit 0. Routes, config keys and probes: docs/serving.md.\n";

}  // namespace

int cmd_serve(int argc, char** argv) {
#ifndef OPHOST_HAVE_SERVE
  (void)argc;
  (void)argv;
  std::cerr << "ophost serve: not built: configure found no cpp-httplib or gRPC (install them with "
               "tools/dev/deps.sh and reconfigure)\n";
  return kExitError;
#else
  CommonOptions common;
  serve::ServeOptions opts;
  int64_t max_body = static_cast<int64_t>(opts.limits.max_body_bytes);
  int64_t max_tensor = static_cast<int64_t>(opts.limits.max_tensor_bytes);
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")(
      "model-repository", po::value(&opts.model_repository), "folder of model folders (required)")(
      "host", po::value(&opts.host)->default_value(opts.host),
      "address to listen on (0.0.0.0 for every interface, e.g. in a container)")(
      "http-port", po::value(&opts.http_port)->default_value(opts.http_port),
      "REST port (0: a free port, printed; -1: no REST)")(
      "grpc-port", po::value(&opts.grpc_port)->default_value(opts.grpc_port),
      "gRPC port (0: a free port, printed; -1: no gRPC)")(
      "default-model", po::value(&opts.default_model),
      "model POST /infer serves (default: the repository's only model)")(
      "request-timeout", po::value(&opts.request_timeout_ms)->default_value(opts.request_timeout_ms),
      "milliseconds one request may wait for an instance and run (0: no limit; config.json request_timeout_ms "
      "overrides); past it the answer is 504")(
      "drain-timeout", po::value(&opts.drain_timeout_s)->default_value(opts.drain_timeout_s),
      "seconds in-flight requests may take after SIGTERM/SIGINT before the process exits anyway (exit 0)")(
      "max-body-bytes", po::value(&max_body)->default_value(max_body),
      "largest request body (REST) or message (gRPC) accepted; a larger one is answered 413")(
      "max-request-tensor-bytes", po::value(&max_tensor)->default_value(max_tensor),
      "largest input tensor a request may declare (dtype size x shape); a larger one is answered 413")(
      "read-timeout", po::value(&opts.limits.read_timeout_s)->default_value(opts.limits.read_timeout_s),
      "seconds a client may take to send its request (slower ones are dropped)")(
      "http-threads", po::value(&opts.limits.http_threads)->default_value(opts.limits.http_threads),
      "HTTP connections served at once (each keep-alive connection holds one)")(
      "access-log", po::bool_switch(&opts.access_log),
      "write one logfmt line per request to stdout (protocol, route, status, model, bytes, queue/compute/total "
      "microseconds, peer)");
  add_common_options(visible, common);
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse(argc, argv, visible, visible, pos, vm, kServeUsage)) return kExitOk;
  if (opts.model_repository.empty()) {
    std::cerr << "ophost serve: missing --model-repository DIR\n\n" << kServeUsage;
    return kExitUsage;
  }
  if (max_body <= 0 || max_tensor <= 0) throw po::error("--max-body-bytes and --max-request-tensor-bytes must be > 0");
  if (opts.limits.http_threads < 1) throw po::error("--http-threads must be >= 1");
  if (opts.limits.read_timeout_s < 1) throw po::error("--read-timeout must be >= 1");
  if (opts.drain_timeout_s < 0) throw po::error("--drain-timeout must be >= 0");
  if (opts.request_timeout_ms < 0) throw po::error("--request-timeout must be >= 0");
  if (opts.http_port < -1 || opts.http_port > 65535 || opts.grpc_port < -1 || opts.grpc_port > 65535)
    throw po::error("--http-port and --grpc-port must be -1 (off), 0 (any) or a port number");
  opts.limits.max_body_bytes = static_cast<size_t>(max_body);
  opts.limits.max_tensor_bytes = static_cast<uint64_t>(max_tensor);
  setup_logging(common.log_level, "info");
  return serve::run_server(opts, runtime_options(common), session_options(common));
#endif
}

}  // namespace ophost::cli
