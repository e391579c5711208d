#include "repository.hpp"

#include "request_error.hpp"

#include <ophost/error.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

namespace ophost::serve {

namespace fs = std::filesystem;

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Fills `m.versions` (or m.error) from the model folder.
void scan_model(ServedModel& m, const ModelConfig& config) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(m.dir, ec)) {
    std::string n = e.path().filename().string();
    if (e.is_directory() && all_digits(n) && fs::is_regular_file(e.path() / "model.onnx")) {
      int64_t v = std::stoll(n);
      m.versions[v] = std::make_unique<ServedVersion>(m.name, std::to_string(v), e.path() / "model.onnx", config);
    }
  }
  bool top = fs::is_regular_file(m.dir / "model.onnx");
  if (top && !m.versions.empty()) {
    m.versions.clear();
    m.error = m.dir.string() + " holds both model.onnx and version folders; keep one layout (docs/serving.md)";
  } else if (top) {
    m.versions[1] = std::make_unique<ServedVersion>(m.name, "1", m.dir / "model.onnx", config);
  } else if (m.versions.empty()) {
    m.error = m.dir.string() + " has no model.onnx and no version folder (1/model.onnx, 2/model.onnx, ...)";
  }
}

}  // namespace

Repository::Repository(const fs::path& root) : root_(root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw Error(Code::kNotFound, "--model-repository " + root.string() + " is not a folder");
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory() && e.path().filename().string().front() != '.') dirs.push_back(e.path());
  if (ec) throw Error(Code::kPermissionDenied, "--model-repository " + root.string() + ": " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    ServedModel m;
    m.dir = dir;
    m.name = dir.filename().string();
    try {
      ModelConfig config = read_model_config(dir / "config.json", m.name);
      m.name = config.name;
      if (models_.count(m.name)) throw Error(Code::kAlreadyExists, "two folders name the model '" + m.name + "'");
      scan_model(m, config);
    } catch (const Error& e) {
      m.error = e.what();
    }
    if (!m.error.empty()) spdlog::error("serve: model folder {}: {}", dir.string(), m.error);
    std::string name = m.name;
    models_.try_emplace(name, std::move(m));
  }
  if (models_.empty()) spdlog::warn("serve: the model repository {} holds no model folder", root.string());
}

void Repository::load_all(Runtime& runtime, const SessionOptions& options, int64_t default_timeout_ms) {
  for (auto& [name, m] : models_)
    for (auto& [v, version] : m.versions) version->load(runtime, options, default_timeout_ms);
  done_.store(true, std::memory_order_release);
}

bool Repository::ready() const {
  if (!loading_done()) return false;
  for (const auto& [name, m] : models_)
    for (const auto& [v, version] : m.versions)
      if (version->ready()) return true;
  return false;
}

const ServedModel& Repository::model(std::string_view name) const {
  auto it = models_.find(name);
  if (it == models_.end()) {
    std::string known;
    for (const auto& [n, m] : models_) known += (known.empty() ? "" : ", ") + n;
    throw RequestError(404, "model '" + std::string(name) + "' is not in the repository (models: " +
                                (known.empty() ? "none" : known) + ")");
  }
  return it->second;
}

ServedVersion& Repository::find(std::string_view name, std::string_view version) const {
  const ServedModel& m = model(name);
  if (!m.error.empty()) throw RequestError(503, "model '" + m.name + "' is not ready: " + m.error);
  if (version.empty()) return *m.versions.rbegin()->second;
  for (const auto& [v, served] : m.versions)
    if (served->version() == version) return *served;
  std::string known;
  for (const auto& [v, served] : m.versions) known += (known.empty() ? "" : ", ") + served->version();
  throw RequestError(404, "model '" + m.name + "' has no version '" + std::string(version) + "' (versions: " + known +
                              ")");
}

ServedVersion& Repository::default_version() const {
  if (!default_model_.empty()) return find(default_model_, "");
  if (models_.size() == 1) return find(models_.begin()->first, "");
  throw RequestError(404, "/infer serves the default model, and there is none: the repository holds " +
                              std::to_string(models_.size()) + " models; start with --default-model NAME or use "
                              "/v2/models/NAME/infer");
}

}  // namespace ophost::serve
