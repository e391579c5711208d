// A model folder's optional config.json (docs/serving.md, "config keys"): strict, every key checked, an unknown
// key is an error naming the file and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ophost::serve {

struct ModelConfig {
  std::string name;                  // default: the folder's name
  int instances = 1;                 // sessions loaded, each with its own planned arena
  int max_queue = 64;                // requests waiting for a free instance; one more is answered 503
  int threads = 0;                   // inter-op threads; > 1 runs independent nodes in parallel (0: sequential)
  std::vector<std::string> devices;  // device preference (empty: the server's --device)
  int64_t max_batch = 0;             // > 0: dim 0 of every input may not exceed it (requests checked)
  int64_t max_queue_delay_us = 0;    // > 0 (with max_batch): dynamic batching along dim 0, waiting this long
  int64_t request_timeout_ms = -1;   // -1: the server's --request-timeout
  // Shapes of the warm-up input per graph input with unknown dims (declared dims are used otherwise).
  std::map<std::string, std::vector<int64_t>> warmup_shapes;
};

// Reads `file` (absent: defaults with name = folder_name). Throws ophost::Error naming the file and key.
ModelConfig read_model_config(const std::filesystem::path& file, const std::string& folder_name);

}  // namespace ophost::serve
