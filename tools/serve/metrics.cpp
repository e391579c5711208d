#include "metrics.hpp"

#include <functional>

namespace ophost::serve {

namespace {

// Label values escaped as the text format wants (backslash, quote, newline).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void family(std::string& out, const Repository& repo, const char* name, const char* type, const char* help,
            const std::function<long double(const ServedVersion&)>& value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const auto& [model, m] : repo.models()) {
    for (const auto& [v, version] : m.versions) {
      char num[64];
      std::snprintf(num, sizeof num, "%.0Lf", value(*version));
      out += std::string(name) + "{model=\"" + label(model) + "\",version=\"" + label(version->version()) + "\"} " +
             num + "\n";
    }
  }
}

}  // namespace

std::string render_metrics(const Repository& repo, bool draining) {
  std::string out;
  out.reserve(4096);
  auto ld = [](uint64_t x) { return static_cast<long double>(x); };
  family(out, repo, "ophost_requests_total", "counter", "Inference requests that reached the model version.",
         [&](const ServedVersion& v) { return ld(v.metrics.requests.load()); });
  family(out, repo, "ophost_request_failures_total", "counter",
         "Inference requests answered with an error (4xx or 5xx).",
         [&](const ServedVersion& v) { return ld(v.metrics.failures.load()); });
  family(out, repo, "ophost_queue_duration_us_total", "counter",
         "Microseconds requests waited for a free instance, summed.",
         [&](const ServedVersion& v) { return ld(v.metrics.queue_us.load()); });
  family(out, repo, "ophost_compute_duration_us_total", "counter", "Microseconds of model runs, summed.",
         [&](const ServedVersion& v) { return ld(v.metrics.compute_us.load()); });
  family(out, repo, "ophost_request_duration_us_total", "counter",
         "Microseconds from request decoded to response encoded, summed.",
         [&](const ServedVersion& v) { return ld(v.metrics.request_us.load()); });
  family(out, repo, "ophost_runs_total", "counter",
         "Runs of the model (fewer than requests when dynamic batching formed batches).",
         [&](const ServedVersion& v) { return ld(v.runs()); });
  family(out, repo, "ophost_inflight_requests", "gauge", "Inference requests being served now.",
         [&](const ServedVersion& v) { return static_cast<long double>(v.metrics.in_flight.load()); });
  family(out, repo, "ophost_queued_requests", "gauge", "Requests waiting for a free instance now.",
         [&](const ServedVersion& v) { return static_cast<long double>(v.queued()); });
  family(out, repo, "ophost_pool_bytes", "gauge", "Bytes the instances' memory pools hold.",
         [&](const ServedVersion& v) { return static_cast<long double>(v.pool_bytes()); });
  family(out, repo, "ophost_model_ready", "gauge", "1 when the version loaded and its warm-up ran.",
         [&](const ServedVersion& v) { return v.ready() ? 1.0L : 0.0L; });
  out += "# HELP ophost_draining 1 after SIGTERM/SIGINT, while in-flight requests finish.\n"
         "# TYPE ophost_draining gauge\nophost_draining " + std::string(draining ? "1" : "0") + "\n";
  return out;
}

}  // namespace ophost::serve
