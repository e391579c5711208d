// The model repository (docs/serving.md): one folder per model, holding model.onnx (version 1) or numbered
// version folders 1/, 2/, ... each with model.onnx, and an optional config.json. Scanning never loads; load_all
// loads and warms every version up, in the background while the server already answers liveness probes.
#pragma once

#include "model_config.hpp"
#include "served_model.hpp"

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ophost::serve {

struct ServedModel {
  std::string name;
  std::filesystem::path dir;
  std::string error;  // a folder-level problem (bad config.json, no model.onnx): the model is not ready
  std::map<int64_t, std::unique_ptr<ServedVersion>> versions;  // by number; the last is the default
};

class Repository {
 public:
  // Throws ophost::Error when `root` is not a readable folder; problems of single models are kept per model.
  explicit Repository(const std::filesystem::path& root);

  // Loads every version (sequentially) and runs its warm-up; never throws.
  void load_all(Runtime& runtime, const SessionOptions& options, int64_t default_timeout_ms);
  bool loading_done() const noexcept { return done_.load(std::memory_order_acquire); }
  // Loading is done and at least one model version is ready.
  bool ready() const;

  const std::map<std::string, ServedModel, std::less<>>& models() const noexcept { return models_; }
  // RequestError(404) naming the model (and the models there are) when absent.
  const ServedModel& model(std::string_view name) const;
  // `version` empty: the highest. RequestError(404) naming model or version when absent.
  ServedVersion& find(std::string_view name, std::string_view version) const;
  // The model /infer serves: --default-model, or the only model. RequestError(404) when there is none.
  ServedVersion& default_version() const;
  void set_default_model(std::string name) { default_model_ = std::move(name); }

 private:
  std::filesystem::path root_;
  std::map<std::string, ServedModel, std::less<>> models_;
  std::string default_model_;
  std::atomic<bool> done_{false};
};

}  // namespace ophost::serve
