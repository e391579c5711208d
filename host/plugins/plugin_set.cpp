// Plugin discovery: the roots and their trust (ownership and modes up to "/"), the manifests found in them,
// the checks made before anything is loaded (disabled, shadowed, platform, ABI, CPU features, device probes,
// sha256), then LoadedPlugin::load (plugin_load.cpp) and the reports of what was decided.
#include "plugins/plugin_set.hpp"
#include "plugins/plugin_util.hpp"
#include "plugins/verify_cache.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace ophost {

namespace fs = std::filesystem;
using namespace plugin_util;

namespace {

std::string format_gib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// "cpu:0 Intel(R) Xeon ..., 2 cores, 23.4 GiB, avx2 avx512f" / "cuda: inactive (<reason>)".
std::vector<std::string> describe_devices(const oph_device_backend_def& dev, const std::string& plugin) {
  std::vector<std::string> out;
  std::string type = dev.device_type;
  int32_t count = 0;
  const char* reason = nullptr;
  oph_status* st = dev.enumerate(dev.backend, &count, &reason);
  if (st != nullptr) {
    std::string msg = consume_status(st);
    out.push_back(type + ": inactive (enumerate failed: " + msg + ")");
    return out;
  }
  if (count <= 0) {
    out.push_back(type + ": inactive (" + (reason && *reason ? std::string(reason) : "no device found") + ")");
    return out;
  }
  for (int32_t i = 0; i < count; ++i) {
    oph_device_properties props{};
    props.struct_size = OPH_DEVICE_PROPERTIES_STRUCT_SIZE;
    std::string d = type + ":" + std::to_string(i);
    oph_status* ps = dev.get_properties(dev.backend, i, &props);
    if (ps != nullptr) {
      std::string msg = consume_status(ps);
      spdlog::warn("plugin '{}': get_properties({}) failed: {}", plugin, d, msg);
      out.push_back(d + " (properties unavailable: " + msg + ")");
      continue;
    }
    std::vector<std::string> parts;
    if (props.name && *props.name) parts.emplace_back(props.name);
    if (props.compute_major > 0) {
      parts.push_back("compute " + std::to_string(props.compute_major) + "." + std::to_string(props.compute_minor));
    } else if (props.arch && *props.arch && dev.dl_device_type != OPH_DL_CPU) {
      parts.emplace_back(props.arch);
    }
    if (props.multiprocessors > 0) {
      std::string unit = dev.dl_device_type == OPH_DL_CPU ? " cores" : " multiprocessors";
      std::string p = std::to_string(props.multiprocessors) + unit;
      if (props.threads > 0 && props.threads != props.multiprocessors) p += " / " + std::to_string(props.threads) + " threads";
      parts.push_back(p);
    }
    if (props.total_memory > 0) parts.push_back(format_gib(props.total_memory));
    std::string line = d;
    if (!parts.empty()) line += " " + join(parts, ", ");
    if (props.features && *props.features) line += ", " + std::string(props.features);
    out.push_back(line);
  }
  return out;
}

// True when `inner` is `outer` itself or lies below it (both absolute and normalised).
bool path_within(const fs::path& outer, const fs::path& inner) {
  fs::path rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

// "" when `p` (followed through symbolic links) is not writable by everyone; else the problem, e.g.
// "plugin folder /x is world-writable (mode 0777)". World-writable plugin files or folders would let any local
// user replace code the host runs, so they are refused.
// "0755": the permission bits of a mode, as chmod takes them.
std::string mode_string(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// The same for a file whose mode is known already (from fstat of an open descriptor).
std::string world_writable(const fs::path& p, const char* what, mode_t mode) {
  if ((mode & S_IWOTH) == 0) return {};
  return std::string(what) + " " + p.string() + " is world-writable (mode " + mode_string(mode) +
         "); any local user could replace the plugin, so it is not loaded: chmod o-w " + p.string();
}

std::string world_writable(const fs::path& p, const char* what) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return {};
  return world_writable(p, what, st.st_mode);
}

}  // namespace



std::string plugin_root_problem(const fs::path& root) {
  std::error_code ec;
  const fs::path canon = fs::canonical(root, ec);
  if (ec) return "cannot resolve plugin root " + root.string() + ": " + ec.message();
  const uid_t me = ::geteuid();
  bool is_root = true;
  for (fs::path p = canon;; p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "cannot stat " + p.string() + ": " + std::strerror(errno);
    const std::string which = is_root ? "plugin root " : "folder above plugin root " + canon.string() + ": ";
    if (st.st_uid != 0 && st.st_uid != me) {
      return which + p.string() + " is owned by uid " + std::to_string(st.st_uid) +
             ", neither root nor this user (uid " + std::to_string(me) + "), who could replace the plugins: chown " +
             (me == 0 ? "root" : std::to_string(me)) + " " + p.string();
    }
    const bool writable = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    const bool sticky = (st.st_mode & S_ISVTX) != 0;
    if (writable && (is_root || !sticky)) {
      return which + p.string() + " is writable by " + ((st.st_mode & S_IWOTH) ? "others" : "its group") +
             " (mode " + mode_string(st.st_mode) + "), who could replace the plugins: chmod go-w " + p.string() +
             " (or --insecure-plugin-path)";
    }
    is_root = false;
    if (p == p.parent_path()) break;
  }
  return {};
}

// ------------------------------------------------------------------------------------------------------------
// Discovery
// ------------------------------------------------------------------------------------------------------------

fs::path default_plugin_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  return (exe.parent_path() / ".." / "lib" / "ophost" / "plugins").lexically_normal();
}

std::vector<fs::path> plugin_search_roots(const DiscoveryOptions& options) {
  std::vector<fs::path> roots;
  for (const auto& p : options.plugin_paths) {
    if (!p.empty()) roots.push_back(fs::absolute(p).lexically_normal());
  }
  if (options.use_env_plugin_path) {
    if (const char* env = std::getenv("OPHOST_PLUGIN_PATH")) {
      // Empty entries would mean the current directory in PATH-style lists: they are skipped on purpose.
      for (const auto& p : split(env, ":")) roots.push_back(fs::absolute(p).lexically_normal());
    }
  }
  if (options.use_default_plugin_dir) {
    fs::path d = options.default_plugin_dir.empty() ? default_plugin_dir() : options.default_plugin_dir;
    if (!d.empty()) roots.push_back(fs::absolute(d).lexically_normal());
  }
  return roots;
}

PluginSet::~PluginSet() {
  // Unload in reverse load order.
  while (!loaded_.empty()) loaded_.pop_back();
}

PluginSet& PluginSet::operator=(PluginSet&& other) noexcept {
  if (this != &other) {
    while (!loaded_.empty()) loaded_.pop_back();
    reports_ = std::move(other.reports_);
    loaded_ = std::move(other.loaded_);
    roots_ = std::move(other.roots_);
  }
  return *this;
}

const LoadedPlugin* PluginSet::find(std::string_view name) const noexcept {
  for (const auto& p : loaded_) {
    if (p->name() == name) return p.get();
  }
  return nullptr;
}

namespace {

class Discoverer {
 public:
  explicit Discoverer(const DiscoveryOptions& o) : o_(o) {
    if (const char* env = std::getenv("OPHOST_PLUGINS_DISABLE")) {
      for (auto& p : split(env, ":,")) disable_.push_back({p, "OPHOST_PLUGINS_DISABLE"});
    }
    for (const auto& p : o.disabled_plugins) {
      for (auto& q : split(p, ":,")) disable_.push_back({q, "disabled_plugins option"});
    }
  }

  // Pattern (and its origin) disabling `name`, or nullptr.
  const std::pair<std::string, std::string>* disabled(const std::string& name) const {
    for (const auto& d : disable_) {
      if (fnmatch(d.first.c_str(), name.c_str(), 0) == 0) return &d;
    }
    return nullptr;
  }

  bool required(const std::string& name) const {
    return std::find(o_.required_plugins.begin(), o_.required_plugins.end(), name) != o_.required_plugins.end();
  }

  void reject(PluginReport& r, Code code, const std::string& message, bool keep_copy = true) {
    r.loaded = false;
    r.reason = message;
    spdlog::warn("{} (plugin skipped)", message);
    if (required(r.name)) {
      if (keep_copy) reports_.push_back(r);
      throw Error(code, message + " (the plugin is required, so this is an error)");
    }
  }

  void examine(const fs::path& root, const fs::path& dir) {
    PluginReport r;
    std::string folder = dir.filename().string();
    r.name = folder;
    r.manifest = dir / kManifestFileName;

    if (auto d = disabled(folder)) {
      disable(r, *d);
      return;
    }
    // Path policy, before the manifest is read: the manifest must really live under the root (a plugin folder
    // or manifest that is a symbolic link leading elsewhere is refused), and neither the folder nor the
    // manifest may be world-writable.
    if (std::string problem = path_policy(root, dir, r.manifest); !problem.empty()) {
      reject(r, Code::kPermissionDenied, plugin_message_prefix(folder, r.manifest) + problem);
      reports_.push_back(std::move(r));
      return;
    }
    Manifest m;
    try {
      auto cached = manifests_.find(r.manifest);
      m = cached != manifests_.end() ? cached->second : read_manifest(r.manifest);
    } catch (const Error& e) {
      reject(r, e.code(), e.what());
      reports_.push_back(std::move(r));
      return;
    }
    r.name = m.name;
    r.kind = m.kind;
    r.version = m.version;
    const std::string prefix = plugin_message_prefix(m.name, r.manifest);
    if (auto d = disabled(m.name)) {
      disable(r, *d);
      return;
    }
    if (auto it = claimed_.find(m.name); it != claimed_.end()) {
      r.reason = prefix + "shadowed by " + it->second.string() + ", which was found first";
      spdlog::info("{}", r.reason);
      reports_.push_back(std::move(r));
      return;
    }
    claimed_.emplace(m.name, r.manifest);

    // Cheap probes first: a backend whose device is absent, and a pack that needs only absent devices, are not
    // loaded at all (a machine without a GPU never maps the CUDA or HIP runtime).
    if (std::string why = probe_failure(m); !why.empty()) {
      mark_inactive(r, m, why);
      return;
    }
    for (const std::string& dev : m.requires_.devices) {
      if (auto it = inactive_types_.find(dev); it != inactive_types_.end()) {
        mark_inactive(r, m, needs_inactive_device(dev));
        return;
      }
    }

    try {
      UniqueFd fd = check_before_dlopen(m, dir, r, prefix);
      auto lp = LoadedPlugin::load(r.library, dir, r.manifest, &m, prefix, std::move(fd));
      for (const auto* op : lp->ops()) r.ops.push_back(describe_op(*op));
      for (const auto* dev : lp->devices()) {
        for (auto& line : describe_devices(*dev, m.name)) r.devices.push_back(std::move(line));
      }
      r.loaded = true;
      spdlog::info("plugin '{}' {} ({}) loaded from {}: {} ops{}{}", m.name, m.version, m.kind, dir.string(),
                   r.ops.size(), r.devices.empty() ? "" : "; devices: ", join(r.devices, "; "));
      loaded_.push_back(std::move(lp));
    } catch (const Error& e) {
      // A runtime library the manifest's probe names is not installed: the device cannot be used here, which
      // is information, not a broken plugin.
      const std::string what = e.what();
      for (const std::string& lib : m.probe.libraries) {
        if (what.find(lib + ": cannot open shared object file") != std::string::npos) {
          mark_inactive(r, m, "runtime not installed (" + lib + ": cannot open shared object file)");
          return;
        }
      }
      reject(r, e.code(), what);
    }
    reports_.push_back(std::move(r));
  }

  // Why a pack that needs device type `dev` (one of inactive_types_) is not loaded.
  std::string needs_inactive_device(const std::string& dev) const {
    return "needs device '" + dev + "', which is inactive here (" + inactive_types_.at(dev) + ")";
  }

  // Why a backend's manifest probe says its device is absent ("" when present or when there is no probe).
  static std::string probe_failure(const Manifest& m) {
    if (m.kind != "device-backend" || m.probe.device_files.empty()) return {};
    std::error_code ec;
    for (const std::string& f : m.probe.device_files) {
      if (fs::exists(f, ec)) return {};
    }
    return "no device: none of " + join(m.probe.device_files, ", ") + " exists";
  }

  void mark_inactive(PluginReport& r, const Manifest& m, const std::string& why) {
    r.loaded = false;
    r.inactive = true;
    r.reason = plugin_message_prefix(m.name, r.manifest) + "not loaded: " + why;
    for (const std::string& dev : m.provides.devices) {
      r.devices.push_back(dev + ": inactive (" + why + ")");
      inactive_types_.emplace(dev, why);
    }
    spdlog::info("{}", r.reason);
    reports_.push_back(std::move(r));
  }

  static std::string path_policy(const fs::path& root, const fs::path& dir, const fs::path& manifest) {
    std::error_code ec;
    const fs::path canon_root = fs::canonical(root, ec);
    if (ec) return "cannot resolve the plugin root " + root.string() + ": " + ec.message();
    const fs::path canon_manifest = fs::canonical(manifest, ec);
    if (ec) return "cannot resolve " + manifest.string() + ": " + ec.message();
    if (!path_within(canon_root, canon_manifest.parent_path()) || canon_manifest.parent_path() == canon_root) {
      return "the manifest resolves to " + canon_manifest.string() + ", outside the plugin root " +
             canon_root.string() + " (through a symbolic link); only manifests under the configured plugin roots "
             "are read: install the plugin folder itself under the root";
    }
    if (std::string w = world_writable(canon_manifest.parent_path(), "plugin folder"); !w.empty()) return w;
    if (std::string w = world_writable(canon_manifest, "manifest"); !w.empty()) return w;
    return {};
  }

  void disable(PluginReport& r, const std::pair<std::string, std::string>& d) {
    r.reason = plugin_message_prefix(r.name, r.manifest) + "disabled by pattern '" + d.first + "' (" + d.second + ")";
    spdlog::info("{}", r.reason);
    if (required(r.name)) {
      reports_.push_back(r);
      throw Error(Code::kFailedPrecondition, r.reason + ", but the plugin is required");
    }
    reports_.push_back(std::move(r));
  }

  // The checks before dlopen; returns the open descriptor of the library that was checked and hashed.
  UniqueFd check_before_dlopen(const Manifest& m, const fs::path& dir, PluginReport& r, const std::string& prefix) {
    const std::string host_abi = abi_string(OPH_ABI_MAJOR, OPH_ABI_MINOR);
    if (m.abi.major != OPH_ABI_MAJOR) {
      throw Error(Code::kFailedPrecondition,
                  prefix + "built for ABI " + abi_string(m.abi.major, m.abi.minor_built) + " (major " +
                      std::to_string(m.abi.major) + ") but this host provides ABI " + host_abi +
                      "; majors must be equal: rebuild the plugin against SDK " + host_abi +
                      " or use an ophost with ABI major " + std::to_string(m.abi.major));
    }
    if (m.abi.minor_required > OPH_ABI_MINOR) {
      throw Error(Code::kFailedPrecondition,
                  prefix + "requires ABI " + abi_string(m.abi.major, m.abi.minor_required) +
                      " but this host provides ABI " + host_abi + "; upgrade ophost or rebuild the plugin against SDK " +
                      host_abi);
    }
    if (m.platform.os != host_os() || m.platform.arch != host_arch()) {
      throw Error(Code::kFailedPrecondition, prefix + "built for " + m.platform.os + "/" + m.platform.arch +
                                                 " but this machine is " + host_os() + "/" + host_arch() +
                                                 "; install the plugin built for this platform");
    }
    fs::path rel(m.library);
    if (rel.is_absolute()) {
      throw Error(Code::kInvalidArgument, prefix + "'library' is the absolute path " + m.library +
                                              "; it must be relative to the plugin folder");
    }
    fs::path lib = (dir / rel).lexically_normal();
    r.library = lib;
    std::error_code ec;
    // Escapes first (lexical '..' and symbolic links), so nothing outside the plugin folder is even looked at.
    fs::path canon_dir = fs::canonical(dir, ec);
    fs::path canon_lib = fs::weakly_canonical(lib, ec);
    if (!ec && !path_within(canon_dir, canon_lib)) {
      throw Error(Code::kPermissionDenied, prefix + "library " + lib.string() + " resolves to " + canon_lib.string() +
                                               ", outside the plugin folder " + canon_dir.string() +
                                               "; a plugin's library must live in its own folder");
    }
    if (!fs::exists(lib, ec)) {
      throw Error(Code::kNotFound, prefix + "library " + lib.string() + " (manifest 'library': \"" + m.library +
                                       "\") does not exist; reinstall the plugin");
    }
    canon_lib = fs::canonical(lib, ec);
    fs::path inside = canon_lib.lexically_relative(canon_dir);
    if (ec || inside.empty() || *inside.begin() == "..") {
      throw Error(Code::kPermissionDenied, prefix + "library " + lib.string() + " resolves to " + canon_lib.string() +
                                               ", outside the plugin folder " + canon_dir.string() +
                                               "; a plugin's library must live in its own folder");
    }
    // From here on one descriptor: its file is checked, hashed and then loaded (through /proc/<pid>/fd/N), so a
    // library swapped in after the check is never the one that runs.
    UniqueFd fd(::open(canon_lib.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.get() < 0) {
      throw Error(Code::kNotFound, prefix + "cannot open library " + lib.string() + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      throw Error(Code::kInvalidArgument, prefix + "library " + lib.string() + " is not a regular file");
    }
    if (std::string w = world_writable(canon_lib, "library", st.st_mode); !w.empty()) {
      throw Error(Code::kPermissionDenied, prefix + w);
    }
    r.verified = verify_library_sha256(fd.get(), canon_lib, m.sha256, prefix);
    std::vector<std::string> missing;
    const auto& have = host_cpu_features();
    for (const auto& f : m.requires_.cpu_features) {
      if (!std::binary_search(have.begin(), have.end(), f)) missing.push_back(f);
    }
    if (!missing.empty()) {
      throw Error(Code::kFailedPrecondition, prefix + "requires CPU features this CPU lacks: " + join(missing, " ") +
                                                 "; use a build of the plugin without them");
    }
    return fd;
  }

  // Packs whose required device types no loaded backend provides.
  void check_required_devices() {
    std::set<std::string> types;
    for (const auto& p : loaded_) {
      for (const auto* d : p->devices()) types.insert(d->device_type);
    }
    for (size_t i = 0; i < loaded_.size();) {
      const LoadedPlugin& p = *loaded_[i];
      std::vector<std::string> missing;
      for (const auto& d : p.manifest().requires_.devices) {
        if (!types.count(d)) missing.push_back(d);
      }
      if (missing.empty()) {
        ++i;
        continue;
      }
      auto rep = std::find_if(reports_.begin(), reports_.end(),
                              [&](const PluginReport& r) { return r.loaded && r.manifest == p.manifest_path(); });
      if (std::all_of(missing.begin(), missing.end(), [&](const std::string& d) { return inactive_types_.count(d); })) {
        // Its devices are absent here: information, not a failure.
        if (rep != reports_.end()) {
          rep->loaded = false;
          rep->inactive = true;
          rep->ops.clear();
          rep->reason =
              plugin_message_prefix(p.name(), p.manifest_path()) + "not loaded: " + needs_inactive_device(missing.front());
          spdlog::info("{}", rep->reason);
        }
        loaded_.erase(loaded_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      std::string msg = plugin_message_prefix(p.name(), p.manifest_path()) + "requires device " +
                        join(missing, ", ") + " but no loaded device backend provides it (loaded: " +
                        (types.empty() ? std::string("none") : join({types.begin(), types.end()}, ", ")) +
                        "); install or enable the backend";
      loaded_.erase(loaded_.begin() + static_cast<std::ptrdiff_t>(i));
      if (rep != reports_.end()) {
        rep->ops.clear();
        reject(*rep, Code::kFailedPrecondition, msg, /*keep_copy=*/false);
      }
    }
  }

  void run(std::vector<fs::path>& roots_out) {
    std::vector<fs::path> seen;
    std::vector<std::pair<fs::path, fs::path>> found;  // (root, plugin folder), in search order
    for (const auto& root : plugin_search_roots(o_)) {
      std::error_code ec;
      fs::path canon = fs::weakly_canonical(root, ec);
      if (ec) canon = root;
      if (std::find(seen.begin(), seen.end(), canon) != seen.end()) {
        spdlog::debug("plugin root {} already searched", root.string());
        continue;
      }
      seen.push_back(canon);
      roots_out.push_back(root);
      if (!fs::is_directory(root, ec)) {
        spdlog::debug("plugin root {} does not exist or is not a folder; skipped", root.string());
        continue;
      }
      std::string distrust = plugin_root_problem(root);
      if (!distrust.empty() && o_.insecure_plugin_paths) {
        spdlog::warn("{}; loading its plugins anyway (--insecure-plugin-path)", distrust);
        distrust.clear();
      }
      std::vector<fs::path> dirs;
      for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
           it.increment(ec)) {
        std::error_code e2;
        // Any entry named like a manifest marks a plugin folder: one that is not a regular file (a FIFO) is
        // then rejected with a message instead of being passed over silently.
        if (it->is_directory(e2) && fs::exists(fs::symlink_status(it->path() / kManifestFileName, e2)))
          dirs.push_back(it->path());
      }
      if (ec) spdlog::warn("cannot list plugin root {}: {}", root.string(), ec.message());
      std::sort(dirs.begin(), dirs.end(),
                [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
      spdlog::debug("plugin root {}: {} plugin folder(s)", root.string(), dirs.size());
      for (const auto& d : dirs) {
        if (distrust.empty()) {
          found.emplace_back(root, d);
          continue;
        }
        // Another user could have put these here: nothing of them is read beyond the folder name.
        PluginReport r;
        r.name = d.filename().string();
        r.manifest = d / kManifestFileName;
        reject(r, Code::kPermissionDenied, plugin_message_prefix(r.name, r.manifest) + distrust);
        reports_.push_back(std::move(r));
      }
    }
    // Device types whose every backend's probe fails, before any plugin is examined (a pack may come before
    // its backend in search order). Manifests that cannot be read here are reported by examine().
    std::set<std::string> present;
    for (const auto& [root, dir] : found) {
      try {
        const fs::path mp = dir / kManifestFileName;
        const Manifest& m = manifests_.emplace(mp, read_manifest(mp)).first->second;
        if (m.kind != "device-backend" || disabled(m.name) || disabled(dir.filename().string())) continue;
        std::string why = probe_failure(m);
        for (const std::string& dev : m.provides.devices) {
          if (why.empty()) present.insert(dev);
          else inactive_types_.emplace(dev, why);
        }
      } catch (const Error&) {
      }
    }
    for (const std::string& dev : present) inactive_types_.erase(dev);
    for (const auto& [root, dir] : found) examine(root, dir);
    check_required_devices();
    for (const auto& name : o_.required_plugins) {
      bool ok = std::any_of(loaded_.begin(), loaded_.end(), [&](const auto& p) { return p->name() == name; });
      auto inactive = std::find_if(reports_.begin(), reports_.end(),
                                   [&](const PluginReport& r) { return r.inactive && r.name == name; });
      if (!ok && inactive != reports_.end()) {
        throw Error(Code::kFailedPrecondition, inactive->reason + " (the plugin is required, so this is an error)");
      }
      if (!ok) {
        std::vector<std::string> rs;
        for (const auto& r : roots_out) rs.push_back(r.string());
        throw Error(Code::kNotFound, "plugin '" + name + "' is required but was not found in the plugin roots (" +
                                         (rs.empty() ? std::string("none") : join(rs, ", ")) +
                                         "); add its folder's parent with --plugin-path or OPHOST_PLUGIN_PATH");
      }
    }
  }

  std::vector<PluginReport> reports_;
  std::vector<std::unique_ptr<LoadedPlugin>> loaded_;
  std::map<std::string, std::string> inactive_types_;  // device type -> why it is inactive

 private:
  std::map<fs::path, Manifest> manifests_;  // read once per discovery
  const DiscoveryOptions& o_;
  std::vector<std::pair<std::string, std::string>> disable_;
  std::map<std::string, fs::path> claimed_;
};

}  // namespace

PluginSet PluginSet::discover(const DiscoveryOptions& options) {
  PluginSet set;
  Discoverer d(options);
  d.run(set.roots_);
  set.reports_ = std::move(d.reports_);
  set.loaded_ = std::move(d.loaded_);
  set.inactive_devices_ = std::move(d.inactive_types_);
  return set;
}

}  // namespace ophost
