// The host services table handed to every plugin (status factory, logger, thread pool, scratch memory,
// config), and helpers to convert between oph_status* and ophost::Error.
#pragma once

#include <ophost/export.hpp>
#include <ophost/error.hpp>
#include <ophost/ophost_plugin.h>

#include <string>

namespace ophost {

// The process-wide services table (valid for the life of the process).
OPHOST_API const oph_host_services* host_services() noexcept;

// Creates an oph_status (owned by the receiver).
OPHOST_API oph_status* make_status(Code code, const std::string& message) noexcept;

// Takes ownership of `status` (may be NULL) and throws Error(code, context + ": " + message) when it is not
// OK. The status is destroyed in every case.
OPHOST_API void throw_if_error(oph_status* status, const std::string& context);

// Takes ownership of `status`; returns "" for OK, else its message. Destroys the status.
OPHOST_API std::string consume_status(oph_status* status, Code* out_code = nullptr);

}  // namespace ophost
