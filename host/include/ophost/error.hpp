// ophost::Error: the one exception type used inside the host. It carries an OPH_CODE_* status code and a
// complete, user-facing message (what failed, where, and how to fix it). It is converted to an oph_status
// only at the C ABI boundary.
#pragma once

#include <ophost/export.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ophost {

enum class Code : int32_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

OPHOST_API const char* code_name(Code code) noexcept;

class OPHOST_API Error : public std::runtime_error {
 public:
  Error(Code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

}  // namespace ophost
