// Manifest fuzz finds (tests/fuzz/regressions) replayed through parse_manifest: each must parse or fail with an
// ophost::Error, never with another exception.
#include <ophost/manifest.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ophost {
namespace {

namespace fs = std::filesystem;

TEST(HostileManifest, FuzzRegressionsFailCleanly) {
  // From CMake, not __FILE__: ccache (base_dir) compiles with relative paths, which __FILE__ then holds.
  const fs::path dir = OPHOST_FUZZ_REGRESSIONS;
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    ++n;
    try {
      parse_manifest(ss.str(), e.path(), "plugin");
    } catch (const Error&) {
    } catch (const std::exception& ex) {
      ADD_FAILURE() << e.path() << ": a non-ophost exception escaped: " << ex.what();
    }
  }
  EXPECT_GE(n, 1u);
}

TEST(HostileManifest, NumberOverflowIsAnError) {
  try {
    parse_manifest(R"({"manifest_version": 2147483647e8767})", "/x/ophost-plugin.json", "x");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("manifest is not valid JSON: number overflow"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ophost
