#include "server_context.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace ophost::serve {

namespace {
// Client-chosen text (path, model name) made safe for one log line: quotes, backslashes and control characters
// become \xNN, so a request cannot forge log lines.
std::string clean(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
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
    access_log->info("proto={} method={} path=\"{}\" status={} model=\"{}\" version={} bytes_in={} bytes_out={} "
                     "queue_us={} compute_us={} total_us={} peer={}",
                     r.protocol, r.method, clean(r.path), r.status, clean(r.model), r.version.empty() ? "-" : clean(r.version),
                     r.bytes_in, r.bytes_out, r.queue_us, r.compute_us, r.total_us, r.peer);
  } else {
    access_log->info("proto={} method={} path=\"{}\" status={} bytes_in={} bytes_out={} total_us={} peer={}",
                     r.protocol, r.method, clean(r.path), r.status, r.bytes_in, r.bytes_out, r.total_us, r.peer);
  }
}

}  // namespace ophost::serve
