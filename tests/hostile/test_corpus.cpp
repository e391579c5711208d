// Runs every model of tests/hostile/corpus through Runtime::load (parse, resolve, infer, plan, create kernels):
// each must fail with an ophost::Error holding its .expect text (any clean result when there is no .expect
// file: fuzzer finds), in under one second, with the peak resident memory growing by less than 64 MiB.
#include "../peak_rss.hpp"

#include <ophost/runtime.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = OPHOST_HOSTILE_CORPUS;
const fs::path kPluginDir = OPHOST_BUILD_PLUGIN_DIR;

ophost::Runtime& runtime() {
  static ophost::Runtime rt([] {
    ophost::RuntimeOptions o;
    o.use_env_plugin_path = false;
    o.use_default_plugin_dir = false;
    o.plugin_paths = {kPluginDir};
    return o;
  }());
  return rt;
}

std::vector<std::string> corpus_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kCorpus, ec)) {
    if (e.path().extension() != ".expect") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class HostileModel : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileModel, FailsCleanlyFastAndSmall) {
  const fs::path model = kCorpus / GetParam();
  fs::path expect_file = model;
  expect_file.replace_extension(".expect");
  std::string expect;
  if (std::ifstream in(expect_file); in) std::getline(in, expect);

  ophost::Runtime& rt = runtime();
  const bool peak_ok = ophost::testing::reset_peak_rss();
  const long rss_before = ophost::testing::status_kib("VmRSS:");
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  bool loaded = false;
  try {
    auto session = rt.load(model);
    loaded = true;
  } catch (const ophost::Error& e) {
    error = e.what();
  } catch (const std::exception& e) {
    FAIL() << "a non-ophost exception escaped: " << e.what();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long peak = ophost::testing::peak_rss_kib();
  EXPECT_LT(secs, 1.0) << model;
  if (peak_ok && peak > 0 && rss_before > 0) {
    EXPECT_LT(peak - rss_before, 64 * 1024) << "peak RSS grew by " << (peak - rss_before) << " KiB";
  }
  if (!expect.empty()) {
    EXPECT_FALSE(loaded) << model << " loaded but should fail with: " << expect;
    EXPECT_NE(error.find(expect), std::string::npos) << "expected: " << expect << "\n     got: " << error;
  }
  if (!error.empty()) {
    EXPECT_NE(error.find(model.string()), std::string::npos) << "the message names the file: " << error;
  }
  std::cout << "  " << GetParam() << ": " << (loaded ? "loaded" : error) << " (" << secs * 1000 << " ms)\n";
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileModel, ::testing::ValuesIn(corpus_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(HostileCorpus, IsNotEmpty) { EXPECT_GE(corpus_files().size(), 10u); }

}  // namespace
