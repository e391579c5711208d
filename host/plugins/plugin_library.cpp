// The pack-author API of <ophost/pack.hpp>: PluginLibrary (a LoadedPlugin behind the public header) and
// `ophost pack manifest`'s manifest generated from a library.
#include "plugins/plugin_set.hpp"
#include "plugins/plugin_util.hpp"

#include <ophost/pack.hpp>

namespace ophost {

namespace fs = std::filesystem;
using namespace plugin_util;

struct OPHOST_LOCAL PluginLibrary::Impl {
  std::unique_ptr<LoadedPlugin> plugin;
};

PluginLibrary::PluginLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PluginLibrary::~PluginLibrary() = default;

std::unique_ptr<PluginLibrary> PluginLibrary::load(const fs::path& library, const fs::path& manifest_path,
                                                   const Manifest* manifest, const std::string& prefix) {
  auto impl = std::make_unique<Impl>();
  // The plugin's folder (oph_host_info.plugin_dir): the manifest's, or the library's when there is none.
  const fs::path dir = manifest_path.empty() ? library.parent_path() : manifest_path.parent_path();
  impl->plugin = LoadedPlugin::load(library, dir, manifest_path, manifest, prefix);
  return std::make_unique<PluginLibrary>(std::move(impl));
}

const std::vector<const oph_op_def*>& PluginLibrary::ops() const noexcept { return impl_->plugin->ops(); }
const std::vector<const oph_device_backend_def*>& PluginLibrary::devices() const noexcept {
  return impl_->plugin->devices();
}

Manifest manifest_from_library(const fs::path& library, std::string_view kind, const ManifestExtras& extras) {
  fs::path lib = fs::absolute(library).lexically_normal();
  const std::string prefix = "plugin library " + lib.string() + ": ";
  std::error_code ec;
  if (!fs::is_regular_file(lib, ec)) throw Error(Code::kNotFound, prefix + "no such file");
  if (!kind.empty() && kind != "operator-pack" && kind != "device-backend") {
    throw Error(Code::kInvalidArgument, prefix + "kind '" + std::string(kind) +
                                            "' is not valid; use operator-pack or device-backend");
  }
  auto lp = LoadedPlugin::load(lib, lib.parent_path(), {}, nullptr, prefix);
  const oph_plugin_info* info = lp->info();
  Manifest m;
  m.name = info->name;
  m.version = info->version;
  m.kind = kind_name(info->kind);
  if (!kind.empty() && m.kind != kind) {
    throw Error(Code::kInvalidArgument, prefix + "the library is a " + m.kind + " but --kind says " +
                                            std::string(kind));
  }
  if (!is_semver(m.version)) {
    throw Error(Code::kInvalidArgument,
                prefix + "the library reports version '" + m.version + "', which is not a semantic version");
  }
  m.library = lib.filename().string();
  m.sha256 = sha256_file(lib);
  m.abi = {info->abi_major, info->minor_built, info->minor_required};
  m.platform = {host_os(), host_arch()};
  m.requires_.devices = extras.requires_devices;
  m.requires_.cpu_features = extras.cpu_features;
  m.probe.device_files = extras.probe_device_files;
  m.probe.libraries = extras.probe_libraries;
  for (const auto* op : lp->ops()) {
    m.provides.ops.push_back(ManifestOp{normalize_domain(op->domain), op->name, op->since_version, op->end_version,
                                        op->device});
  }
  for (const auto* dev : lp->devices()) m.provides.devices.emplace_back(dev->device_type);
  m.description = extras.description;
  m.license = extras.license;
  return m;
}

}  // namespace ophost
