#include <ophost/manifest.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace ophost {

namespace fs = std::filesystem;
using nlohmann::json;

std::string plugin_message_prefix(std::string_view name, const fs::path& manifest_path) {
  std::string out = "plugin '";
  out += name;
  out += "' (";
  out += manifest_path.string();
  out += "): ";
  return out;
}

bool is_semver(std::string_view version) {
  static const std::regex re(
      R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))"
      R"((?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?)"
      R"((?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$)");
  return std::regex_match(version.begin(), version.end(), re);
}

std::string normalize_domain(std::string_view domain) {
  if (domain == "ai.onnx") return "";
  return std::string(domain);
}

namespace {

// Parsing context: knows how to prefix messages.
class Parser {
 public:
  Parser(const fs::path& path, std::string_view fallback_name) : path_(path), name_(fallback_name) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(Code::kInvalidArgument, plugin_message_prefix(name_, path_) + what);
  }

  void set_name(std::string name) { name_ = std::move(name); }

  static std::string type_name(const json& j) {
    if (j.is_number_integer()) return "integer";
    if (j.is_number_float()) return "number";
    return j.type_name();
  }

  // Rejects unknown keys of `obj` (at JSON path `where`, "" for the top level).
  void check_keys(const json& obj, const std::string& where, const std::vector<std::string>& allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail("unknown key '" + join(where, it.key()) + "'; allowed keys: " + list);
      }
    }
  }

  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  const json& need(const json& obj, const std::string& where, const std::string& key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail("missing required key '" + join(where, key) + "'");
    return *it;
  }

  const json& object(const json& j, const std::string& path) const {
    if (!j.is_object()) fail("'" + path + "' must be an object, got " + type_name(j));
    return j;
  }

  std::string string(const json& j, const std::string& path, bool allow_empty = false) const {
    if (!j.is_string()) fail("'" + path + "' must be a string, got " + type_name(j));
    std::string s = j.get<std::string>();
    if (!allow_empty && s.empty()) fail("'" + path + "' must not be empty");
    return s;
  }

  int64_t integer(const json& j, const std::string& path, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) fail("'" + path + "' must be an integer, got " + type_name(j));
    int64_t v = 0;
    if (j.is_number_unsigned()) {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) fail("'" + path + "' is " + std::to_string(u) + ", out of range");
      v = static_cast<int64_t>(u);
    } else {
      v = j.get<int64_t>();
    }
    if (v < lo || v > hi) {
      fail("'" + path + "' is " + std::to_string(v) + "; it must be in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]");
    }
    return v;
  }

  std::vector<std::string> strings(const json& j, const std::string& path) const {
    if (!j.is_array()) fail("'" + path + "' must be an array of strings, got " + type_name(j));
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (size_t i = 0; i < j.size(); ++i) {
      std::string p = path + "[" + std::to_string(i) + "]";
      std::string s = string(j[i], p);
      if (!seen.insert(s).second) fail("'" + p + "': duplicate entry '" + s + "'");
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  fs::path path_;
  std::string name_;
};

// 1-based line and column of byte offset `byte` (nlohmann reports the 1-based position of the offending byte).
std::pair<size_t, size_t> line_col(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

bool valid_plugin_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  if (s == "." || s == "..") return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

Manifest parse_manifest(std::string_view text, const fs::path& path, std::string_view fallback_name) {
  Parser p(path, fallback_name);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    auto [line, col] = line_col(text, e.byte);
    std::string detail = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line L, column C: " prefix.
    if (auto pos = detail.find(": "); pos != std::string::npos && detail.rfind("[json.exception", 0) == 0) {
      detail = detail.substr(pos + 2);
    }
    p.fail("manifest is not valid JSON at line " + std::to_string(line) + ":" + std::to_string(col) + ": " +
           detail);
  } catch (const json::exception& e) {
    // e.g. out_of_range.406 "number overflow parsing '2147483647e8767'" (found by the manifest fuzz target)
    std::string detail = e.what();
    if (auto pos = detail.find("] "); pos != std::string::npos && detail.rfind("[json.exception", 0) == 0) {
      detail = detail.substr(pos + 2);
    }
    p.fail("manifest is not valid JSON: " + detail);
  }
  if (!doc.is_object()) p.fail("the manifest must be a JSON object, got " + Parser::type_name(doc));

  // The name first, so that every later message carries it.
  Manifest m;
  if (auto it = doc.find("name"); it != doc.end() && it->is_string() && valid_plugin_name(it->get<std::string>())) {
    p.set_name(it->get<std::string>());
  }

  p.check_keys(doc, "",
               {"manifest_version", "name", "version", "kind", "library", "sha256", "abi", "platform", "requires",
                "provides", "probe", "description", "license"});

  m.manifest_version = static_cast<int>(p.integer(p.need(doc, "", "manifest_version"), "manifest_version", 0,
                                                  1 << 30));
  if (m.manifest_version != kManifestVersion) {
    p.fail("manifest_version " + std::to_string(m.manifest_version) + " is not supported; this host reads " +
           "manifest_version " + std::to_string(kManifestVersion) + " (upgrade ophost or regenerate the manifest " +
           "with `ophost pack manifest`)");
  }

  m.name = p.string(p.need(doc, "", "name"), "name");
  if (!valid_plugin_name(m.name)) {
    p.fail("'name' is '" + m.name + "'; a plugin name may contain only letters, digits, '_', '-' and '.'");
  }
  m.version = p.string(p.need(doc, "", "version"), "version");
  if (!is_semver(m.version)) p.fail("'version' is '" + m.version + "', which is not a semantic version (e.g. 1.2.0)");
  m.kind = p.string(p.need(doc, "", "kind"), "kind");
  if (m.kind != "operator-pack" && m.kind != "device-backend") {
    p.fail("'kind' is '" + m.kind + "'; it must be 'operator-pack' or 'device-backend'");
  }
  m.library = p.string(p.need(doc, "", "library"), "library");
  m.sha256 = p.string(p.need(doc, "", "sha256"), "sha256");
  if (!is_hex64(m.sha256)) p.fail("'sha256' must be 64 hexadecimal digits, got '" + m.sha256 + "'");
  for (auto& c : m.sha256) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));

  {
    const json& abi = p.object(p.need(doc, "", "abi"), "abi");
    p.check_keys(abi, "abi", {"major", "minor_built", "minor_required"});
    constexpr int64_t kMax = 0xffffffffLL;
    m.abi.major = static_cast<uint32_t>(p.integer(p.need(abi, "abi", "major"), "abi.major", 0, kMax));
    m.abi.minor_built =
        static_cast<uint32_t>(p.integer(p.need(abi, "abi", "minor_built"), "abi.minor_built", 0, kMax));
    m.abi.minor_required =
        static_cast<uint32_t>(p.integer(p.need(abi, "abi", "minor_required"), "abi.minor_required", 0, kMax));
    if (m.abi.minor_required > m.abi.minor_built) {
      p.fail("'abi.minor_required' (" + std::to_string(m.abi.minor_required) + ") is greater than 'abi.minor_built' (" +
             std::to_string(m.abi.minor_built) + ")");
    }
  }
  {
    const json& plat = p.object(p.need(doc, "", "platform"), "platform");
    p.check_keys(plat, "platform", {"os", "arch"});
    m.platform.os = p.string(p.need(plat, "platform", "os"), "platform.os");
    m.platform.arch = p.string(p.need(plat, "platform", "arch"), "platform.arch");
  }
  if (auto it = doc.find("requires"); it != doc.end()) {
    const json& req = p.object(*it, "requires");
    p.check_keys(req, "requires", {"devices", "cpu_features"});
    if (auto d = req.find("devices"); d != req.end()) m.requires_.devices = p.strings(*d, "requires.devices");
    if (auto f = req.find("cpu_features"); f != req.end()) {
      m.requires_.cpu_features = p.strings(*f, "requires.cpu_features");
    }
  }
  if (auto it = doc.find("probe"); it != doc.end()) {
    const json& pr = p.object(*it, "probe");
    p.check_keys(pr, "probe", {"device_files", "libraries"});
    if (auto d = pr.find("device_files"); d != pr.end()) {
      m.probe.device_files = p.strings(*d, "probe.device_files");
      for (const auto& f : m.probe.device_files)
        if (f.empty() || f[0] != '/') p.fail("'probe.device_files' entries must be absolute paths, got '" + f + "'");
    }
    if (auto l = pr.find("libraries"); l != pr.end()) m.probe.libraries = p.strings(*l, "probe.libraries");
    if (m.kind != "device-backend" && !m.probe.device_files.empty())
      p.fail("'probe.device_files' is for device backends; an operator pack names its devices in 'requires.devices'");
  }
  if (auto it = doc.find("provides"); it != doc.end()) {
    const json& prov = p.object(*it, "provides");
    p.check_keys(prov, "provides", {"devices", "ops"});
    if (auto d = prov.find("devices"); d != prov.end()) m.provides.devices = p.strings(*d, "provides.devices");
    if (auto o = prov.find("ops"); o != prov.end()) {
      if (!o->is_array()) p.fail("'provides.ops' must be an array, got " + Parser::type_name(*o));
      for (size_t i = 0; i < o->size(); ++i) {
        std::string where = "provides.ops[" + std::to_string(i) + "]";
        const json& op = p.object((*o)[i], where);
        p.check_keys(op, where, {"domain", "name", "since_version", "end_version", "device"});
        ManifestOp mo;
        mo.domain = normalize_domain(p.string(p.need(op, where, "domain"), where + ".domain", /*allow_empty=*/true));
        mo.name = p.string(p.need(op, where, "name"), where + ".name");
        mo.since_version =
            static_cast<int32_t>(p.integer(p.need(op, where, "since_version"), where + ".since_version", 1,
                                           2147483647));
        if (auto e = op.find("end_version"); e != op.end()) {
          mo.end_version = static_cast<int32_t>(p.integer(*e, where + ".end_version", 1, 2147483647));
        }
        if (mo.end_version < mo.since_version) {
          p.fail("'" + where + "': end_version " + std::to_string(mo.end_version) + " is below since_version " +
                 std::to_string(mo.since_version));
        }
        mo.device = p.string(p.need(op, where, "device"), where + ".device");
        m.provides.ops.push_back(std::move(mo));
      }
    }
  }
  if (auto it = doc.find("description"); it != doc.end()) {
    m.description = p.string(*it, "description", /*allow_empty=*/true);
  }
  if (auto it = doc.find("license"); it != doc.end()) m.license = p.string(*it, "license", /*allow_empty=*/true);
  return m;
}

Manifest read_manifest(const fs::path& path) {
  std::string folder = path.parent_path().filename().string();
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    // A FIFO would block discovery; a device or folder is not a manifest.
    throw Error(Code::kInvalidArgument, plugin_message_prefix(folder, path) +
                                            "the manifest is not a regular file (a FIFO, device, socket or folder)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(Code::kNotFound, plugin_message_prefix(folder, path) + "cannot read the manifest: " +
                                     std::error_code(errno, std::generic_category()).message());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_manifest(ss.str(), path, folder);
}

std::string manifest_to_json(const Manifest& m) {
  nlohmann::ordered_json j;
  j["manifest_version"] = m.manifest_version;
  j["name"] = m.name;
  j["version"] = m.version;
  j["kind"] = m.kind;
  j["library"] = m.library;
  j["sha256"] = m.sha256;
  j["abi"] = {{"major", m.abi.major}, {"minor_built", m.abi.minor_built}, {"minor_required", m.abi.minor_required}};
  j["platform"] = {{"os", m.platform.os}, {"arch", m.platform.arch}};
  j["requires"] = {{"devices", m.requires_.devices}, {"cpu_features", m.requires_.cpu_features}};
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const auto& op : m.provides.ops) {
    ops.push_back({{"domain", op.domain},
                   {"name", op.name},
                   {"since_version", op.since_version},
                   {"end_version", op.end_version},
                   {"device", op.device}});
  }
  j["provides"] = {{"devices", m.provides.devices}, {"ops", ops}};
  if (!m.probe.device_files.empty() || !m.probe.libraries.empty())
    j["probe"] = {{"device_files", m.probe.device_files}, {"libraries", m.probe.libraries}};
  j["description"] = m.description;
  j["license"] = m.license;
  return j.dump(2) + "\n";
}

void write_manifest(const Manifest& manifest, const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::string text = manifest_to_json(manifest);
  // Write next to the target and rename, so a reader never sees a half-written manifest.
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw Error(Code::kPermissionDenied, plugin_message_prefix(manifest.name, path) +
                                               "cannot write the manifest: " +
                                               std::error_code(errno, std::generic_category()).message());
    }
    out << text;
    out.flush();
    if (!out) throw Error(Code::kInternal, plugin_message_prefix(manifest.name, path) + "writing the manifest failed");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(Code::kInternal,
                plugin_message_prefix(manifest.name, path) + "cannot write the manifest: " + ec.message());
  }
}

}  // namespace ophost
