// Facts about this machine that manifests are checked against (platform, CPU features) and the SHA-256 of
// plugin library files.
#include "plugins/plugin_set.hpp"
#include "plugins/plugin_util.hpp"

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

namespace ophost {

namespace fs = std::filesystem;
using namespace plugin_util;

// ------------------------------------------------------------------------------------------------------------
// Machine facts
// ------------------------------------------------------------------------------------------------------------

std::string host_os() { return "linux"; }

std::string host_arch() {
  struct utsname u {};
  if (uname(&u) == 0) return u.machine;
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

const std::vector<std::string>& host_cpu_features() {
  static const std::vector<std::string> features = [] {
    std::set<std::string> set;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon);
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
      if (key != "flags" && key != "Features") continue;
      for (auto& f : split(line.substr(colon + 1), " \t")) set.insert(f);
      break;  // every core lists the same flags
    }
    return std::vector<std::string>(set.begin(), set.end());
  }();
  return features;
}

std::string sha256_fd(int fd, const fs::path& path) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw Error(Code::kInternal, "OpenSSL: cannot initialize SHA-256");
  }
  std::vector<char> buf(1 << 16);
  off_t off = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(Code::kDataLoss, "error while reading " + path.string() + ": " + std::strerror(errno));
    if (n == 0) break;
    if (EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n)) != 1) {
      throw Error(Code::kInternal, "OpenSSL: SHA-256 update failed");
    }
    off += n;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) throw Error(Code::kInternal, "OpenSSL: SHA-256 final failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string sha256_file(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error(Code::kNotFound, "cannot read " + path.string() + " to compute its sha256");
  return sha256_fd(fd.get(), path);
}

}  // namespace ophost
