// /metrics: Prometheus text exposition format (version 0.0.4) of the repository's counters.
#pragma once

#include "repository.hpp"

#include <string>

namespace ophost::serve {

// Per model version: requests, failures, queue / compute / request time (microseconds, summed), requests in
// flight and queued, pool bytes, readiness. `draining` is exported as ophost_draining.
std::string render_metrics(const Repository& repo, bool draining);

}  // namespace ophost::serve
