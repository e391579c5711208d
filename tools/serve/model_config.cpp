#include "model_config.hpp"

#include <ophost/error.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace ophost::serve {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::filesystem::path& file, const std::string& what) {
  throw Error(Code::kInvalidArgument, file.string() + ": " + what + " (keys: docs/serving.md)");
}

int64_t int_key(const std::filesystem::path& file, const json& v, const char* key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) bad(file, std::string("'") + key + "' must be an integer");
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    bad(file, std::string("'") + key + "' is " + std::to_string(x) + "; it must be in [" + std::to_string(lo) +
                  ", " + std::to_string(hi) + "]");
  }
  return x;
}

}  // namespace

ModelConfig read_model_config(const std::filesystem::path& file, const std::string& folder_name) {
  ModelConfig c;
  c.name = folder_name;
  if (!std::filesystem::exists(file)) return c;
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) bad(file, "cannot be read");
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) bad(file, "is not valid JSON");
  if (!j.is_object()) bad(file, "must hold a JSON object");
  for (const auto& [key, v] : j.items()) {
    if (key == "name") {
      if (!v.is_string() || v.get<std::string>().empty()) bad(file, "'name' must be a non-empty string");
      c.name = v.get<std::string>();
    } else if (key == "instances") {
      c.instances = static_cast<int>(int_key(file, v, "instances", 1, 256));
    } else if (key == "max_queue") {
      c.max_queue = static_cast<int>(int_key(file, v, "max_queue", 0, 1 << 20));
    } else if (key == "threads") {
      c.threads = static_cast<int>(int_key(file, v, "threads", 0, 1024));
    } else if (key == "max_batch") {
      c.max_batch = int_key(file, v, "max_batch", 0, int64_t{1} << 31);
    } else if (key == "max_queue_delay_us") {
      c.max_queue_delay_us = int_key(file, v, "max_queue_delay_us", 0, int64_t{10} * 1000 * 1000);
    } else if (key == "request_timeout_ms") {
      c.request_timeout_ms = int_key(file, v, "request_timeout_ms", 0, int64_t{24} * 3600 * 1000);
    } else if (key == "device") {
      json list = v.is_string() ? json::array({v}) : v;
      if (!list.is_array() || list.empty()) bad(file, "'device' must be a device name or a list of them, e.g. [\"cpu\"]");
      for (const json& d : list) {
        if (!d.is_string() || d.get<std::string>().empty()) bad(file, "'device' entries must be non-empty strings");
        c.devices.push_back(d.get<std::string>());
      }
    } else if (key == "warmup") {
      if (!v.is_object()) bad(file, "'warmup' must map input names to shapes, e.g. {\"x\": [1, 3, 640, 640]}");
      for (const auto& [input, shape] : v.items()) {
        if (!shape.is_array()) bad(file, "'warmup." + input + "' must be a list of dims");
        std::vector<int64_t> dims;
        for (const json& d : shape) dims.push_back(int_key(file, d, ("warmup." + input).c_str(), 0, INT32_MAX));
        c.warmup_shapes[input] = std::move(dims);
      }
    } else {
      bad(file, "unknown key '" + key +
                    "' (known: name, instances, max_queue, threads, device, max_batch, max_queue_delay_us, "
                    "request_timeout_ms, warmup)");
    }
  }
  if (c.max_queue_delay_us > 0 && c.max_batch == 0) {
    bad(file, "'max_queue_delay_us' batches requests along dim 0 up to 'max_batch' rows: give 'max_batch' too");
  }
  return c;
}

}  // namespace ophost::serve
