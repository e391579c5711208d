#include "server_context.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace ophost::serve {

namespace {
// Client-chosen text (path, model name) as a JSON string literal: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced, so a request cannot forge log lines.
std::string quoted(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

bool ServerContext::ready(std::string* why) const {
  auto say = [&](const char* text) {
    if (why) *why = text;
    return false;
  };
  if (draining.load()) return say("the server is shutting down (draining in-flight requests)");
  if (!repo.loading_done()) return say("models are still loading and warming up");
  if (!repo.ready()) return say("no model is ready (see /v2/models/NAME/ready for each model's error)");
  return true;
}

void ServerContext::log_access(const AccessRecord& r) const {
  if (!access_log) return;
  if (r.queue_us >= 0) {
    access_log->info("proto={} method={} path={} status={} model={} version={} bytes_in={} bytes_out={} "
                     "queue_us={} compute_us={} total_us={} peer={}",
                     r.protocol, r.method, quoted(r.path), r.status, quoted(r.model),
                     r.version.empty() ? std::string_view("-") : r.version, r.bytes_in, r.bytes_out, r.queue_us,
                     r.compute_us, r.total_us, r.peer);
  } else {
    access_log->info("proto={} method={} path={} status={} bytes_in={} bytes_out={} total_us={} peer={}",
                     r.protocol, r.method, quoted(r.path), r.status, r.bytes_in, r.bytes_out, r.total_us, r.peer);
  }
}

}  // namespace ophost::serve
