// LoadedPlugin: one plugin library mapped (the very file that was checked, through its descriptor), its
// handshake run and its plugin info, op and device tables validated against the ABI and its manifest.
#include "plugins/plugin_set.hpp"
#include "plugins/plugin_util.hpp"

#include <ophost/services.hpp>

#include <boost/dll/shared_library_load_mode.hpp>
#include <spdlog/spdlog.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#ifndef OPHOST_VERSION
#define OPHOST_VERSION "0.0.0"
#endif

namespace ophost {

namespace fs = std::filesystem;
using namespace plugin_util;

namespace {

std::atomic<std::size_t> g_dlopen_count{0};

// What a producer of ABI 1.0 writes (pinned here if a minor ever appends to oph_plugin_info).
constexpr size_t kPluginInfoV10 = OPH_PLUGIN_INFO_STRUCT_SIZE;
static_assert(kPluginInfoV10 == OPH_STRUCT_SIZE(oph_plugin_info, release), "oph_plugin_info grew: pin its 1.0 size");

std::string dlerror_text(const std::string& boost_message, const fs::path& library) {
  const std::string marker = "(dlerror system message: ";
  if (auto pos = boost_message.find(marker); pos != std::string::npos) {
    // "<what> (dlerror system message: <text>)[: <error_code message>]"
    std::string text = boost_message.substr(pos + marker.size());
    if (auto close = text.rfind(')'); close != std::string::npos) text.resize(close);
    return text;
  }
  ++g_dlopen_count;
  dlerror();
  void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) {
    ::dlclose(h);
    return boost_message;
  }
  const char* e = dlerror();
  return e ? std::string(e) : boost_message;
}

// Why `library` cannot be a shared library for this process, from its ELF header ("" when the header fits): a
// library built for another architecture makes dlopen say only "wrong ELF class" or "No such file or directory".
std::string elf_mismatch(const std::string& library) {
  const UniqueFd fd(::open(library.c_str(), O_RDONLY | O_CLOEXEC));
  Elf64_Ehdr h{};
  if (fd.get() < 0 || ::pread(fd.get(), &h, sizeof h, 0) < static_cast<ssize_t>(EI_NIDENT)) return "";
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) return "it is not an ELF file (no ELF header)";
#if defined(__x86_64__)
  constexpr uint16_t kMachine = EM_X86_64;
  const char* host = "x86-64";
#elif defined(__aarch64__)
  constexpr uint16_t kMachine = EM_AARCH64;
  const char* host = "aarch64";
#else
  return "";
#endif
  static const std::map<uint16_t, const char*> names = {{EM_X86_64, "x86-64"}, {EM_AARCH64, "aarch64"},
                                                        {EM_386, "i386"},     {EM_ARM, "32-bit ARM"},
                                                        {EM_RISCV, "RISC-V"}, {EM_PPC64, "ppc64"},
                                                        {EM_S390, "s390x"}};
  const bool elf64 = h.e_ident[EI_CLASS] == ELFCLASS64;
  uint16_t machine = h.e_machine;
  if (h.e_ident[EI_DATA] != ELFDATA2LSB) machine = static_cast<uint16_t>((machine >> 8) | (machine << 8));
  if (elf64 && machine == kMachine) return "";
  auto it = names.find(machine);
  return std::string("it is built for ") + (it != names.end() ? it->second : "another architecture") +
         " (ELF machine " + std::to_string(machine) + (elf64 ? "" : ", 32-bit") + ") but this host runs " + host +
         "; install the plugin built for " + host;
}

}  // namespace

std::size_t dlopen_count() noexcept { return g_dlopen_count.load(); }

namespace {
// Descriptors of the library files loaded through /proc/<pid>/fd/N, one per file (device, inode), kept open for
// the process's life: that name is how the dynamic loader knows the library (debuggers and symbolizers read it
// too), and glibc matches later dlopen calls by name first, so the number must never be reused for another
// file while the library may be mapped (never, by default: libraries are not unmapped; C++ libraries with
// unique symbols are not unmapped by dlclose either). A second load of the same file reuses its name and
// descriptor: the set stays as small as the number of distinct library files.
struct LoadedFiles {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, int> fds;
};
LoadedFiles& loaded_files() {
  static auto* f = new LoadedFiles();  // never destroyed: libraries outlive static destructors
  return *f;
}
std::string proc_fd_name(int fd) { return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd); }

// The name to dlopen for the open file `fd`: that of an earlier descriptor of the same file, else its own.
std::string loaded_file_name(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    LoadedFiles& lf = loaded_files();
    std::lock_guard lock(lf.mu);
    if (auto it = lf.fds.find({st.st_dev, st.st_ino}); it != lf.fds.end()) return proc_fd_name(it->second);
  }
  return proc_fd_name(fd);
}

// After a successful dlopen: keeps `file` open for good unless the same file is kept already.
void keep_loaded_file(UniqueFd file) {
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) {
    (void)file.release();  // cannot tell which file: keep it open rather than risk a reused name
    return;
  }
  LoadedFiles& lf = loaded_files();
  std::lock_guard lock(lf.mu);
  if (lf.fds.emplace(std::make_pair(st.st_dev, st.st_ino), file.get()).second) (void)file.release();
}
}  // namespace

// OPHOST_PLUGINS_UNLOAD=1: unmap plugin libraries when they are released (default: keep them mapped).
namespace {
bool plugins_unload_requested() {
  const char* v = std::getenv("OPHOST_PLUGINS_UNLOAD");
  return v != nullptr && std::string_view(v) == "1";
}
}  // namespace

// ------------------------------------------------------------------------------------------------------------
// LoadedPlugin
// ------------------------------------------------------------------------------------------------------------

LoadedPlugin::~LoadedPlugin() {
  release();
  // library_'s destructor unloads the library after release has returned (a no-op unless
  // OPHOST_PLUGINS_UNLOAD=1).
}

void LoadedPlugin::release() noexcept {
  if (released_ || info_ == nullptr) return;
  released_ = true;
  if (OPH_HAS_FIELD(oph_plugin_info, info_, release) && info_->release != nullptr) {
    info_->release(OPH_HAS_FIELD(oph_plugin_info, info_, plugin_state) ? info_->plugin_state : nullptr);
  }
}

std::unique_ptr<LoadedPlugin> LoadedPlugin::load(const fs::path& library, const fs::path& dir,
                                                 const fs::path& manifest_path, const Manifest* manifest,
                                                 const std::string& prefix, UniqueFd file) {
  // With a descriptor, the file loaded is the one it refers to (the inode that was checked), whatever the path
  // names by now; /proc/<pid>/fd/N rather than /proc/self: debuggers and symbolizers read that name too.
  const std::string load_path = file.get() >= 0 ? loaded_file_name(file.get()) : library.string();
  std::unique_ptr<LoadedPlugin> lp(new LoadedPlugin());
  lp->dir_ = dir;
  lp->manifest_path_ = manifest_path;
  lp->library_path_ = library;
  lp->dir_string_ = dir.string();
  if (manifest) lp->manifest_ = *manifest;

  auto fail = [&](Code code, const std::string& what) -> Error { return Error(code, prefix + what); };

  // dlopen (RTLD_NOW: unresolved symbols fail here, not in the middle of a run; RTLD_LOCAL: packs never see
  // each other's symbols).
  ++g_dlopen_count;
  try {
    lp->library_.load(boost::dll::fs::path(load_path),
                      boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    if (const std::string why = elf_mismatch(load_path); !why.empty())
      throw fail(Code::kFailedPrecondition, "cannot load " + library.string() + ": " + why);
    throw fail(Code::kFailedPrecondition,
               "cannot load " + library.string() + ": " + dlerror_text(e.what(), fs::path(load_path)));
  }

  // A loaded library stays mapped until the process exits (RTLD_NODELETE on the copy just loaded): a pack may
  // have started threads that outlive its release (oneDNN's OpenMP team, a CUDA runtime's helper threads), and
  // unmapping code under a running thread crashes the process at exit (SIGSEGV in _dl_close_worker's wake).
  // It also lets LeakSanitizer symbolize allocations of plugin code at exit. release() is still called exactly
  // once; only the unmapping is skipped. OPHOST_PLUGINS_UNLOAD=1 unmaps libraries at release instead (for pack
  // authors checking that their pack survives being unloaded).
  if (!plugins_unload_requested()) {
    ::dlopen(load_path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);  // pins the loaded copy; not a new load
  }

  if (file.get() >= 0) keep_loaded_file(std::move(file));

  // Entry symbol.
  if (!lp->library_.has(OPH_PLUGIN_ENTRY_SYMBOL)) {
    throw fail(Code::kFailedPrecondition,
               library.string() + " does not export the entry symbol '" OPH_PLUGIN_ENTRY_SYMBOL
               "' (use OPH_DEFINE_PLUGIN_ENTRY in exactly one source file of the plugin, and build it with "
               "ophost_add_plugin so the symbol is exported)");
  }
  auto& entry = lp->library_.get<std::remove_pointer_t<oph_plugin_entry_fn>>(OPH_PLUGIN_ENTRY_SYMBOL);

  // Handshake.
  lp->host_info_ = oph_host_info{OPH_HOST_INFO_STRUCT_SIZE, OPH_ABI_MAJOR, OPH_ABI_MINOR, host_services(),
                                 OPHOST_VERSION, lp->dir_string_.c_str()};
  const oph_plugin_info* info = nullptr;
  oph_status* st = nullptr;
  try {
    st = entry(&lp->host_info_, &info);
  } catch (...) {
    throw fail(Code::kInternal, "the plugin's entry function threw a C++ exception across the C ABI (catch it "
                                "and return a status instead)");
  }
  if (st != nullptr) {
    Code code = Code::kOk;
    std::string msg = consume_status(st, &code);
    throw fail(code == Code::kOk ? Code::kUnknown : code, "the plugin's entry function failed: " + msg);
  }
  if (info == nullptr) throw fail(Code::kInternal, "the plugin's entry function returned OK but no plugin info");
  lp->info_ = info;  // from here on release() is called when lp goes away

  // Plugin info.
  if (!OPH_HAS_FIELD(oph_plugin_info, info, abi_major) || info->struct_size > (1u << 16)) {
    throw fail(Code::kFailedPrecondition,
               "oph_plugin_info.struct_size is " + std::to_string(info->struct_size) + ", which is not valid");
  }
  if (info->abi_major != OPH_ABI_MAJOR) {
    throw fail(Code::kFailedPrecondition,
               "the library reports ABI major " + std::to_string(info->abi_major) + " but this host provides ABI " +
                   abi_string(OPH_ABI_MAJOR, OPH_ABI_MINOR) + "; rebuild the plugin against SDK " +
                   abi_string(OPH_ABI_MAJOR, OPH_ABI_MINOR));
  }
  if (info->struct_size < kPluginInfoV10) {
    throw fail(Code::kFailedPrecondition, "oph_plugin_info.struct_size is " + std::to_string(info->struct_size) +
                                              "; ABI 1.0 needs at least " + std::to_string(kPluginInfoV10));
  }
  if (info->minor_required > OPH_ABI_MINOR) {
    throw fail(Code::kFailedPrecondition,
               "the library requires ABI " + abi_string(info->abi_major, info->minor_required) +
                   " but this host provides ABI " + abi_string(OPH_ABI_MAJOR, OPH_ABI_MINOR) +
                   "; upgrade ophost or rebuild the plugin against SDK " + abi_string(OPH_ABI_MAJOR, OPH_ABI_MINOR));
  }
  if (info->minor_required > info->minor_built) {
    throw fail(Code::kFailedPrecondition, "the library says it requires ABI minor " +
                                              std::to_string(info->minor_required) + " but was built with minor " +
                                              std::to_string(info->minor_built));
  }
  if (info->name == nullptr || info->name[0] == '\0') throw fail(Code::kFailedPrecondition, "the library reports no name");
  if (info->version == nullptr || info->version[0] == '\0') {
    throw fail(Code::kFailedPrecondition, "the library reports no version");
  }
  const char* kind = kind_name(info->kind);
  if (kind == nullptr) {
    throw fail(Code::kFailedPrecondition, "the library reports kind " + std::to_string(info->kind) +
                                              "; it must be OPH_PLUGIN_KIND_OPERATOR_PACK or _DEVICE_BACKEND");
  }
  if (manifest) {
    const std::string regen = "; rebuild the plugin or regenerate the manifest with `ophost pack manifest`";
    if (manifest->name != info->name) {
      throw fail(Code::kFailedPrecondition, "the library is named '" + std::string(info->name) +
                                                "' but the manifest says '" + manifest->name + "'" + regen);
    }
    if (manifest->version != info->version) {
      throw fail(Code::kFailedPrecondition, "the library is version " + std::string(info->version) +
                                                " but the manifest says " + manifest->version + regen);
    }
    if (manifest->kind != kind) {
      throw fail(Code::kFailedPrecondition,
                 "the library is a " + std::string(kind) + " but the manifest says " + manifest->kind + regen);
    }
    if (manifest->abi.major != info->abi_major || manifest->abi.minor_built != info->minor_built ||
        manifest->abi.minor_required != info->minor_required) {
      throw fail(Code::kFailedPrecondition,
                 "the library reports ABI " + abi_string(info->abi_major, info->minor_built) + " (requires " +
                     abi_string(info->abi_major, info->minor_required) + ") but the manifest says ABI " +
                     abi_string(manifest->abi.major, manifest->abi.minor_built) + " (requires " +
                     abi_string(manifest->abi.major, manifest->abi.minor_required) + ")" + regen);
    }
  } else {
    lp->manifest_.name = info->name;
    lp->manifest_.version = info->version;
    lp->manifest_.kind = kind;
  }

  // Op table.
  if (info->num_ops > 0 && info->ops == nullptr) {
    throw fail(Code::kFailedPrecondition, "the op table is NULL but num_ops is " + std::to_string(info->num_ops));
  }
  for (size_t i = 0; i < info->num_ops; ++i) {
    const oph_op_def* op = info->ops[i];
    std::string problem = validate_op_def(op);
    if (!problem.empty()) {
      std::string which = "op table entry " + std::to_string(i);
      if (op && OPH_HAS_FIELD(oph_op_def, op, device) && op->name) {
        which += " (" + std::string(op->domain ? op->domain : "") + "::" + op->name + ")";
      }
      throw fail(Code::kFailedPrecondition, which + ": " + problem);
    }
    // No two entries for one (domain, name, device) with overlapping ranges inside one pack.
    for (const oph_op_def* prev : lp->ops_) {
      if (normalize_domain(prev->domain) == normalize_domain(op->domain) && std::string(prev->name) == op->name &&
          std::string(prev->device) == op->device && prev->since_version <= op->end_version &&
          op->since_version <= prev->end_version) {
        throw fail(Code::kFailedPrecondition, "op table entry " + std::to_string(i) + " (" + describe_op(*op) +
                                                  ") overlaps " + describe_op(*prev) + " of the same plugin");
      }
    }
    lp->ops_.push_back(op);
  }

  // Device table.
  if (info->num_devices > 0 && info->devices == nullptr) {
    throw fail(Code::kFailedPrecondition,
               "the device table is NULL but num_devices is " + std::to_string(info->num_devices));
  }
  std::set<std::string> device_types;
  for (size_t i = 0; i < info->num_devices; ++i) {
    const oph_device_backend_def* dev = info->devices[i];
    std::string problem = validate_device_def(dev);
    if (!problem.empty()) {
      throw fail(Code::kFailedPrecondition, "device table entry " + std::to_string(i) + ": " + problem);
    }
    if (!device_types.insert(dev->device_type).second) {
      throw fail(Code::kFailedPrecondition, "device table lists device type '" + std::string(dev->device_type) +
                                                "' twice");
    }
    lp->devices_.push_back(dev);
  }

  // Tables equal to the manifest's `provides`.
  if (manifest) {
    std::multiset<std::string> want, have;
    for (const auto& op : manifest->provides.ops) want.insert(describe_op(op));
    for (const auto* op : lp->ops_) have.insert(describe_op(*op));
    std::vector<std::string> missing, extra;
    std::set_difference(want.begin(), want.end(), have.begin(), have.end(), std::back_inserter(missing));
    std::set_difference(have.begin(), have.end(), want.begin(), want.end(), std::back_inserter(extra));
    std::multiset<std::string> want_dev(manifest->provides.devices.begin(), manifest->provides.devices.end());
    std::multiset<std::string> have_dev(device_types.begin(), device_types.end());
    std::vector<std::string> missing_dev, extra_dev;
    std::set_difference(want_dev.begin(), want_dev.end(), have_dev.begin(), have_dev.end(),
                        std::back_inserter(missing_dev));
    std::set_difference(have_dev.begin(), have_dev.end(), want_dev.begin(), want_dev.end(),
                        std::back_inserter(extra_dev));
    if (!missing.empty() || !extra.empty() || !missing_dev.empty() || !extra_dev.empty()) {
      std::vector<std::string> parts;
      if (!missing.empty()) parts.push_back("ops in the manifest but not in the library: " + join(missing, ", "));
      if (!extra.empty()) parts.push_back("ops in the library but not in the manifest: " + join(extra, ", "));
      if (!missing_dev.empty()) {
        parts.push_back("devices in the manifest but not in the library: " + join(missing_dev, ", "));
      }
      if (!extra_dev.empty()) parts.push_back("devices in the library but not in the manifest: " + join(extra_dev, ", "));
      throw fail(Code::kFailedPrecondition, "the library's tables differ from the manifest's 'provides' (" +
                                                join(parts, "; ") +
                                                "); regenerate the manifest with `ophost pack manifest`");
    }
  }
  return lp;
}


}  // namespace ophost
