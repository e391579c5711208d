// Per-user cache of verified plugin library digests (see verify_cache.hpp).
#include "plugins/verify_cache.hpp"

#include "plugins/plugin_set.hpp"

#include <ophost/error.hpp>

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>

namespace ophost {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxEntries = 512;  // oldest dropped first; a cache, not a record
constexpr const char* kCacheName = "verified-libraries-v1";

// Identity of one version of a file: any change to its bytes changes at least one of these.
std::string file_key(const struct stat& st) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%llx:%llx:%lld:%lld.%09ld:%lld.%09ld", static_cast<unsigned long long>(st.st_dev),
                static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  return buf;
}

// Only this user may have written it: owned by the effective user, not writable by group or others.
bool trusted(const fs::path& p, bool dir) {
  struct stat st{};
  if (::lstat(p.c_str(), &st) != 0) return false;
  if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) return false;
  return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

fs::path cache_dir() {
  if (const char* v = std::getenv("OPHOST_VERIFY_CACHE"); v && std::string_view(v) == "0") return {};
  if (const char* d = std::getenv("OPHOST_VERIFY_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && x[0] == '/') return fs::path(x) / "ophost";
  if (const char* h = std::getenv("HOME"); h && *h && h[0] == '/') return fs::path(h) / ".cache" / "ophost";
  return {};
}

struct Cache {
  std::mutex mu;
  fs::path dir;                                  // the folder `file` was looked up in
  fs::path file;                                 // "" = cache off or unusable
  std::vector<std::pair<std::string, std::string>> entries;  // (key, sha256), oldest first

  // Reads the cache file (under mu): at most kMaxEntries short lines, read at every check so that the folder
  // follows the environment, its ownership and mode are checked each time, and other processes' entries count.
  void load() {
    dir = cache_dir();
    file.clear();
    entries.clear();
    if (dir.empty()) return;
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (!ec) ::chmod(dir.c_str(), 0700);
    }
    if (!trusted(dir, true)) {
      spdlog::debug("verification cache: {} is not a folder owned by this user and closed to others; not used",
                    dir.string());
      return;
    }
    file = dir / kCacheName;
    if (!fs::exists(file, ec)) return;
    if (!trusted(file, false)) {
      spdlog::debug("verification cache: {} is not owned by this user or is writable by others; not used",
                    file.string());
      file.clear();
      return;
    }
    std::ifstream in(file);
    std::string key, digest;
    while (in >> key >> digest) {
      if (digest.size() == 64) entries.emplace_back(key, digest);
    }
  }

  const std::string* find(const std::string& key) const {
    for (const auto& [k, d] : entries)
      if (k == key) return &d;
    return nullptr;
  }

  // Adds an entry and rewrites the file atomically (temp file in the same folder, then rename).
  void add(const std::string& key, const std::string& digest) {
    if (file.empty()) return;
    entries.emplace_back(key, digest);
    if (entries.size() > kMaxEntries) entries.erase(entries.begin(), entries.begin() + (entries.size() - kMaxEntries));
    const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    std::string text;
    for (const auto& [k, d] : entries) text += k + " " + d + "\n";
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = ::close(fd) == 0 && ok;
    std::error_code ec;
    if (ok) fs::rename(tmp, file, ec);
    if (!ok || ec) fs::remove(tmp, ec);
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: plugins may be examined from static destructors' time
  return *c;
}

}  // namespace

fs::path verify_cache_file() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  c.load();
  return c.file;
}

std::string verify_library_sha256(const fs::path& library, const std::string& expected, const std::string& prefix) {
  UniqueFd fd(::open(library.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error(Code::kNotFound, prefix + "cannot read " + library.string() + " to compute its sha256");
  return verify_library_sha256(fd.get(), library, expected, prefix);
}

std::string verify_library_sha256(int fd, const fs::path& library, const std::string& expected,
                                  const std::string& prefix) {
  struct stat before{};
  if (::fstat(fd, &before) != 0) {
    throw Error(Code::kNotFound, prefix + "cannot read " + library.string() + " to compute its sha256");
  }
  const std::string key = file_key(before);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mu);
    c.load();
    if (const std::string* d = c.find(key); d && *d == expected) {
      return "sha256 matches, from the verification cache (" + c.file.string() +
             "; device, inode, size, mtime and ctime unchanged since it was hashed)";
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string actual = sha256_fd(fd, library);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (actual != expected) {
    throw Error(Code::kDataLoss, prefix + "sha256 of " + library.string() + " does not match the manifest: expected " +
                                     expected + ", actual " + actual +
                                     "; rebuild or regenerate the manifest with `ophost pack manifest`");
  }
  // Cache only when the file did not change while it was read.
  struct stat after{};
  std::lock_guard lock(c.mu);
  char took[64];
  std::snprintf(took, sizeof took, "%.1f ms", ms);
  if (::fstat(fd, &after) == 0 && file_key(after) == key && !c.file.empty()) {
    c.add(key, actual);
    return std::string("sha256 matches, computed (") + took + "); remembered in " + c.file.string();
  }
  return std::string("sha256 matches, computed (") + took + ")";
}

}  // namespace ophost
