// ophost plugin SDK, C++ layer: errors (oph::Error), the host services and exception-to-status conversion.
// One part of <ophost/ophost_plugin.hpp>, which includes every part in order; include that one.
#pragma once

#include <ophost/ophost_plugin.h>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ophost::sdk {

// ---------------------------------------------------------------------------------------------------------
// Errors and host services
// ---------------------------------------------------------------------------------------------------------

// Throw from any op callback; converted to an oph_status with this code.
class Error : public std::runtime_error {
 public:
  Error(int32_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int32_t code() const noexcept { return code_; }

 private:
  int32_t code_;
};

namespace detail {
inline const oph_host_services*& services_slot() noexcept {
  static const oph_host_services* services = nullptr;
  return services;
}
}  // namespace detail

// The host services given to this plugin at entry (NULL before entry).
inline const oph_host_services* services() noexcept { return detail::services_slot(); }

// Builds a status from the exception in flight. Call only inside a catch block.
inline oph_status* status_from_current_exception(std::string_view where) noexcept {
  const oph_host_services* s = services();
  if (!s || !s->status_create) return nullptr;  // no host: nothing can be reported
  try {
    throw;
  } catch (const Error& e) {
    return s->status_create(e.code(), e.what());
  } catch (const std::invalid_argument& e) {
    return s->status_create(OPH_CODE_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return s->status_create(OPH_CODE_OUT_OF_RANGE, e.what());
  } catch (const std::bad_alloc&) {
    return s->status_create(OPH_CODE_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    std::string msg = std::string("unhandled exception in ") + std::string(where) + ": " + e.what();
    return s->status_create(OPH_CODE_INTERNAL, msg.c_str());
  } catch (...) {
    std::string msg = std::string("unknown exception in ") + std::string(where);
    return s->status_create(OPH_CODE_INTERNAL, msg.c_str());
  }
}

// Runs f() and converts any exception into a status (NULL on success).
template <class F>
oph_status* guarded(std::string_view where, F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (...) {
    return status_from_current_exception(where);
  }
}

inline void log(int32_t level, const std::string& message) noexcept {
  const oph_host_services* s = services();
#ifdef OPH_PLUGIN_NAME
  const char* plugin = OPH_PLUGIN_NAME;
#else
  const char* plugin = nullptr;
#endif
  if (s && s->log) s->log(s->host, level, plugin, message.c_str());
}

}  // namespace ophost::sdk
