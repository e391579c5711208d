// RequestError: a request that cannot be served, with the HTTP status the REST front end answers (the gRPC front
// end maps it to a status code) and a message naming the field, model or node at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace ophost::serve {

class RequestError : public std::runtime_error {
 public:
  RequestError(int http_status, const std::string& message, int retry_after_s = 0)
      : std::runtime_error(message), status_(http_status), retry_after_s_(retry_after_s) {}
  int status() const noexcept { return status_; }
  // Seconds for a Retry-After header (0: none); set on 503 answers of a full queue.
  int retry_after_s() const noexcept { return retry_after_s_; }

 private:
  int status_;
  int retry_after_s_;
};

}  // namespace ophost::serve
