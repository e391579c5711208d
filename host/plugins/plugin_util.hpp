// Small string helpers shared by the plugin layer's files (loading, discovery, host facts).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ophost::plugin_util {

inline std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

inline const char* kind_name(int32_t kind) {
  switch (kind) {
    case OPH_PLUGIN_KIND_OPERATOR_PACK: return "operator-pack";
    case OPH_PLUGIN_KIND_DEVICE_BACKEND: return "device-backend";
    default: return nullptr;
  }
}

inline std::vector<std::string> split(std::string_view s, std::string_view seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (seps.find(c) != std::string_view::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

inline std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

// The text dlerror() gave for a failed load: Boost.DLL appends "(dlerror system message: <text>)" to its
// exception message; when it is not there, load once more with plain dlopen and the same flags to obtain it.

}  // namespace ophost::plugin_util
