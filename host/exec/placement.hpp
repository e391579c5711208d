// Device placement: which devices are usable, and explicit Copy nodes at device boundaries.
#pragma once

#include "exec/session_impl.hpp"

#include <map>
#include <string>
#include <vector>

namespace ophost {

struct DeviceTarget {
  std::string type;                                 // "cpu", "cuda", ...
  const oph_device_backend_def* backend = nullptr;  // NULL for "cpu" without a cpu backend (host memory)
  int32_t dl_type = OPH_DL_CPU;
  bool usable = false;
  std::string reason;  // why not usable
};

// Every device type the loaded backends provide ("cpu" is always usable: host memory).
std::map<std::string, DeviceTarget> device_targets(const PluginSet* plugins);

// The preference list to resolve against: `requested` (empty = {"cpu"}). A requested device that is not usable is
// an error naming the backend's reason.
std::vector<std::string> placement_order(const std::vector<std::string>& requested,
                                         const std::map<std::string, DeviceTarget>& targets);

// Inserts Copy nodes where a node reads a value living on another device (shared by all consumers on that
// device), uploads constants a device node reads once (at load), and copies device graph outputs back to host.
// Recomputes producers, consumers and last uses. Returns the number of Copy nodes inserted.
size_t insert_copies(Session::Impl& s, const std::map<std::string, DeviceTarget>& targets);

// Frees constants uploaded by insert_copies.
void free_device_constants(Session::Impl& s, const std::map<std::string, DeviceTarget>& targets);

}  // namespace ophost
