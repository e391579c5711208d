// Peak resident set of the test process, for tests that bound how much memory an operation may touch.
// Linux only: VmHWM from /proc/self/status, reset by writing 5 to /proc/self/clear_refs (Linux >= 4.0).
//
//   ophost::testing::reset_peak_rss();
//   const long before = ophost::testing::peak_rss_kib();
//   ... work ...
//   EXPECT_LT(ophost::testing::peak_rss_kib() - before, 256 * 1024);
#pragma once

#include <fstream>
#include <string>

namespace ophost::testing {

// A "Key:" line of /proc/self/status in KiB (VmHWM:, VmRSS:, ...); -1 when absent.
inline long status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  return -1;
}

inline long peak_rss_kib() { return status_kib("VmHWM:"); }

// Starts a new peak measurement; false when the kernel refuses (then the peak is the process's whole life).
inline bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out);
}

}  // namespace ophost::testing
