// libFuzzer: manifest text -> parse_manifest. Success or ophost::Error are the only acceptable outcomes.
#include <ophost/manifest.hpp>

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ophost::parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size),
                           "/fuzz/plugin/ophost-plugin.json", "plugin");
  } catch (const ophost::Error&) {
  }
  return 0;
}
