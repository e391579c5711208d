// Cheap verification of plugin libraries: the sha256 a manifest pins is computed once per file version and
// remembered in a per-user cache keyed by what changes whenever the file's bytes can have changed (device, inode,
// size, mtime and ctime in nanoseconds; ctime cannot be set back by anyone but the kernel's clock, and changes on
// every write, rename into place, chmod or chown).
//
//   std::string how = verify_library_sha256("/opt/p/libx.so", manifest.sha256, "plugin 'x' (...): ");
//   // how: "sha256 computed (12.3 ms), cached" or "sha256 from the verification cache (file unchanged)"
//
// The cache lives in $OPHOST_VERIFY_CACHE_DIR, else $XDG_CACHE_HOME/ophost, else $HOME/.cache/ophost, in a folder
// of mode 0700 that this user owns; a cache file or folder that another user owns or that others can write is
// ignored (and said so at debug level). OPHOST_VERIFY_CACHE=0 turns the cache off (every start rehashes).
#pragma once

#include <filesystem>
#include <string>

namespace ophost {

// Checks that `library` has the lowercase hex sha256 `expected`; returns how it was checked. Throws
// Error(kDataLoss) naming both digests when they differ (message starts with `prefix`), Error(kNotFound) when
// the file cannot be read.
std::string verify_library_sha256(const std::filesystem::path& library, const std::string& expected,
                                  const std::string& prefix);
// The same for an open file: the identity is fstat's and the bytes hashed are read from `fd` (so what was checked
// is exactly the file that is then loaded from that descriptor). `library` names it in messages.
std::string verify_library_sha256(int fd, const std::filesystem::path& library, const std::string& expected,
                                  const std::string& prefix);

// The cache file in use ("" when the cache is off or unusable).
std::filesystem::path verify_cache_file();

}  // namespace ophost
