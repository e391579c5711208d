#include "rest_server.hpp"

#include "metrics.hpp"
#include "request_error.hpp"
#include "rest_codec.hpp"
#include "v2_types.hpp"

#include <ophost/error.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <vector>

namespace ophost::serve {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kRoutes =
    "GET /v2, /v2/health/live, /v2/health/ready, /healthz, /metrics, /v2/models/NAME[/versions/V][/ready]; "
    "POST /v2/models/NAME[/versions/V]/infer, /infer";

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    size_t end = path.find('/');
    parts.push_back(path.substr(0, end));
    if (end == std::string_view::npos) break;
    path.remove_prefix(end);
  }
  return parts;
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message, int retry_after_s = 0) {
  if (retry_after_s > 0) res.set_header("Retry-After", std::to_string(retry_after_s));
  send_json(res, status, json{{"error", message}});
}

json tensor_metadata(std::span<const ValueInfo> values) {
  json list = json::array();
  for (const ValueInfo& v : values) {
    std::string_view dt = v2_datatype(v.dtype);
    list.push_back({{"name", v.name}, {"datatype", dt.empty() ? dtype_name(v.dtype) : dt}, {"shape", v.shape}});
  }
  return list;
}

}  // namespace

struct RestServer::Impl {
  explicit Impl(ServerContext& c) : ctx(c) {}

  ServerContext& ctx;
  httplib::Server http;

  // What the dispatcher learned about an inference, for the access log.
  struct Served {
    std::string model, version;
    int64_t queue_us = -1, compute_us = -1;
  };

  void route(const httplib::Request& req, httplib::Response& res, Served& served);
  void get(const std::vector<std::string_view>& p, httplib::Response& res);
  void infer(ServedVersion& v, const httplib::Request& req, httplib::Response& res, Served& served,
             Clock::time_point arrival);

  void model_metadata(ServedVersion& v, const ServedModel& m, httplib::Response& res) {
    if (!v.ready()) {
      std::string why = v.loading_done() ? v.error() : "it is still loading";
      throw RequestError(503, "model '" + m.name + "' version " + v.version() + " is not ready: " + why);
    }
    json versions = json::array();
    for (const auto& [n, sv] : m.versions) versions.push_back(sv->version());
    send_json(res, 200, {{"name", m.name}, {"versions", versions}, {"platform", "onnx"},
                         {"inputs", tensor_metadata(v.inputs())}, {"outputs", tensor_metadata(v.outputs())}});
  }

  void model_ready(const ServedModel& m, std::string_view version, httplib::Response& res) {
    if (!m.error.empty()) return send_json(res, 400, {{"name", m.name}, {"ready", false}, {"error", m.error}});
    ServedVersion& v = ctx.repo.find(m.name, version);
    if (v.ready()) {
      send_json(res, 200, {{"name", m.name}, {"version", v.version()}, {"ready", true}});
    } else {
      std::string why = v.loading_done() ? v.error() : "it is still loading and warming up";
      send_json(res, 400, {{"name", m.name}, {"version", v.version()}, {"ready", false}, {"error", why}});
    }
  }
};

void RestServer::Impl::get(const std::vector<std::string_view>& p, httplib::Response& res) {
  size_t n = p.size();
  if (n == 1 && (p[0] == "healthz")) {
    std::string why;
    bool ok = ctx.ready(&why);
    return ok ? send_json(res, 200, {{"ready", true}}) : send_json(res, 400, {{"ready", false}, {"error", why}});
  }
  if (n == 1 && p[0] == "metrics") {
    res.status = 200;
    res.set_content(render_metrics(ctx.repo, ctx.draining.load()), "text/plain; version=0.0.4");
    return;
  }
  if (n == 1 && p[0] == "v2") {
    return send_json(res, 200, {{"name", "ophost"}, {"version", OPHOST_SERVE_VERSION},
                                {"extensions", {"binary_tensor_data"}}});
  }
  if (n == 3 && p[0] == "v2" && p[1] == "health" && p[2] == "live") return send_json(res, 200, {{"live", true}});
  if (n == 3 && p[0] == "v2" && p[1] == "health" && p[2] == "ready") {
    std::string why;
    bool ok = ctx.ready(&why);
    return ok ? send_json(res, 200, {{"ready", true}}) : send_json(res, 400, {{"ready", false}, {"error", why}});
  }
  if (n >= 3 && p[0] == "v2" && p[1] == "models") {
    const ServedModel& m = ctx.repo.model(p[2]);
    std::string_view version;
    size_t rest = 3;
    if (n >= 5 && p[3] == "versions") {
      version = p[4];
      rest = 5;
    }
    if (n == rest) return model_metadata(ctx.repo.find(m.name, version), m, res);
    if (n == rest + 1 && p[rest] == "ready") return model_ready(m, version, res);
  }
  throw RequestError(404, "no route GET /" + [&] {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += (i ? "/" : "") + std::string(p[i]);
    return s;
  }() + " (routes: " + kRoutes + ")");
}

void RestServer::Impl::infer(ServedVersion& v, const httplib::Request& req, httplib::Response& res, Served& served,
                             Clock::time_point arrival) {
  served.model = v.model();
  served.version = v.version();
  RequestScope scope(v.metrics, arrival);
  std::string header_value;  // get_header_value returns a copy: kept alive here
  std::optional<std::string_view> header_length;
  if (req.has_header("Inference-Header-Content-Length")) {
    header_value = req.get_header_value("Inference-Header-Content-Length");
    header_length = header_value;
  }
  RestRequest r = parse_rest_request(req.body, header_length, ctx.limits.max_tensor_bytes);
  InferResult result = v.infer(r.inputs, r.outputs, v.deadline(arrival));
  RestResponse out = encode_rest_response(v, r, result);
  served.queue_us = result.queue_us;
  served.compute_us = result.compute_us;
  res.status = 200;
  if (out.header_length > 0) res.set_header("Inference-Header-Content-Length", std::to_string(out.header_length));
  res.set_header("Content-Type", out.header_length > 0 ? "application/octet-stream" : "application/json");
  res.body = std::move(out.body);
  scope.succeeded(result);
}

void RestServer::Impl::route(const httplib::Request& req, httplib::Response& res, Served& served) {
  auto arrival = Clock::now();
  std::vector<std::string_view> p = split_path(req.path);
  if (req.method == "GET") return get(p, res);
  if (req.method != "POST") throw RequestError(405, "method " + req.method + " is not served (routes: " + kRoutes + ")");
  size_t n = p.size();
  if (n == 1 && p[0] == "infer") return infer(ctx.repo.default_version(), req, res, served, arrival);
  if (n == 4 && p[0] == "v2" && p[1] == "models" && p[3] == "infer")
    return infer(ctx.repo.find(p[2], ""), req, res, served, arrival);
  if (n == 6 && p[0] == "v2" && p[1] == "models" && p[3] == "versions" && p[5] == "infer")
    return infer(ctx.repo.find(p[2], p[4]), req, res, served, arrival);
  throw RequestError(404, "no route POST " + req.path + " (routes: " + kRoutes + ")");
}

RestServer::RestServer(ServerContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {
  Impl& s = *impl_;
  httplib::Server& http = s.http;
  int threads = ctx.limits.http_threads;
  // httplib takes ownership of the queue it is handed (its API: a raw pointer it deletes).
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_tcp_nodelay(true);
  http.set_payload_max_length(ctx.limits.max_body_bytes);
  http.set_read_timeout(ctx.limits.read_timeout_s, 0);
  http.set_write_timeout(ctx.limits.read_timeout_s, 0);
  http.set_keep_alive_max_count(1000);
  http.set_keep_alive_timeout(5);
  auto handler = [&s](const httplib::Request& req, httplib::Response& res) {
    auto t0 = Clock::now();
    Impl::Served served;
    try {
      s.route(req, res, served);
    } catch (const RequestError& e) {
      send_error(res, e.status(), e.what(), e.retry_after_s());
    } catch (const std::exception& e) {
      send_error(res, 500, std::string("internal error: ") + e.what());
    }
    if (!s.ctx.access_log) return;
    std::string peer = req.remote_addr + ":" + std::to_string(req.remote_port);
    s.ctx.log_access({"http", req.method, req.path, res.status, served.model, served.version, req.body.size(),
                      res.body.size(), served.queue_us, served.compute_us,
                      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count(), peer});
  };
  http.Get(".*", handler);
  http.Post(".*", handler);
  http.Put(".*", handler);
  http.Delete(".*", handler);
  http.Patch(".*", handler);
  http.Options(".*", handler);
  // Errors httplib answers itself (body over the limit, malformed request line or headers) get a JSON body too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([&ctx](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 413) {
      message = "request body is over the server's limit of " + std::to_string(ctx.limits.max_body_bytes) +
                " bytes (--max-body-bytes)";
    } else if (res.status == 400) {
      message = "malformed HTTP request (request line, headers over 8192 bytes, or body framing)";
    } else if (res.status == 414) {
      message = "request URI is over 8192 bytes";
    }
    send_error(res, res.status, message);
    return httplib::Server::HandlerResponse::Handled;
  }));
}

RestServer::~RestServer() = default;

int RestServer::bind(const std::string& host, int port) {
  bool ok = port == 0 ? (port = impl_->http.bind_to_any_port(host)) > 0 : impl_->http.bind_to_port(host, port);
  if (!ok) {
    throw Error(Code::kUnavailable, "cannot listen for HTTP on " + host + ":" + std::to_string(port) +
                                        " (address in use, or not an address of this machine; --host, --http-port)");
  }
  return port;
}

void RestServer::listen() { impl_->http.listen_after_bind(); }

void RestServer::stop() { impl_->http.stop(); }

}  // namespace ophost::serve
