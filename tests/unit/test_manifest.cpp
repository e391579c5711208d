// Manifest parsing, schema checks and the writer.
#include "fake_plugin/test_support.hpp"

#include <ophost/manifest.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ophost {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

const fs::path kPath = "/x/lib/ophost/plugins/myops/ophost-plugin.json";

std::string good_text() {
  return R"({
  "manifest_version": 1,
  "name": "myops",
  "version": "1.2.3-rc.1+build.5",
  "kind": "operator-pack",
  "library": "libmyops.so",
  "sha256": "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
  "abi": {"major": 1, "minor_built": 0, "minor_required": 0},
  "platform": {"os": "linux", "arch": "x86_64"},
  "requires": {"devices": ["cpu"], "cpu_features": ["avx2"]},
  "provides": {
    "devices": [],
    "ops": [
      {"domain": "myops", "name": "relu6_scale", "since_version": 1, "end_version": 2147483647, "device": "cpu"},
      {"domain": "ai.onnx", "name": "Relu", "since_version": 6, "end_version": 13, "device": "cuda"},
      {"domain": "", "name": "Gelu", "since_version": 20, "device": "cpu"}
    ]
  },
  "description": "custom ops",
  "license": "MIT"
})";
}

// Replaces the first occurrence of `from` in the good manifest.
std::string good_with(const std::string& from, const std::string& to) {
  std::string t = good_text();
  auto pos = t.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return t.replace(pos, from.size(), to);
}

std::string parse_error(const std::string& text, const std::string& folder = "myops") {
  try {
    parse_manifest(text, kPath, folder);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "manifest was accepted";
  return "";
}

TEST(Manifest, ParsesEveryField) {
  Manifest m = parse_manifest(good_text(), kPath, "folder");
  EXPECT_EQ(m.manifest_version, 1);
  EXPECT_EQ(m.name, "myops");
  EXPECT_EQ(m.version, "1.2.3-rc.1+build.5");
  EXPECT_EQ(m.kind, "operator-pack");
  EXPECT_EQ(m.library, "libmyops.so");
  EXPECT_EQ(m.sha256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");  // lowercased
  EXPECT_EQ(m.abi.major, 1u);
  EXPECT_EQ(m.platform.arch, "x86_64");
  EXPECT_EQ(m.requires_.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(m.requires_.cpu_features, std::vector<std::string>{"avx2"});
  ASSERT_EQ(m.provides.ops.size(), 3u);
  EXPECT_EQ(m.provides.ops[0], (ManifestOp{"myops", "relu6_scale", 1, OPH_OPSET_MAX, "cpu"}));
  EXPECT_EQ(m.provides.ops[1], (ManifestOp{"", "Relu", 6, 13, "cuda"}));  // ai.onnx normalized to ""
  EXPECT_EQ(m.provides.ops[2].end_version, OPH_OPSET_MAX);                 // end_version defaults to open
  EXPECT_EQ(m.description, "custom ops");
  EXPECT_EQ(m.license, "MIT");
}

TEST(Manifest, SyntaxErrorReportsLineAndColumn) {
  std::string text = "{\n  \"manifest_version\": 1,\n  \"name\": \"myops\"\n  \"version\": \"1.0.0\"\n}\n";
  std::string msg = parse_error(text, "folderName");
  // The name is not known (the document did not parse): the folder name is used.
  EXPECT_THAT(msg, StartsWith("plugin 'folderName' (" + kPath.string() + "): "));
  // The position where the parser noticed the error: the end of the unexpected "version" token.
  EXPECT_THAT(msg, HasSubstr("not valid JSON at line 4:11"));
  EXPECT_THAT(msg, HasSubstr("unexpected string literal"));
}

TEST(Manifest, SyntaxErrorOnFirstLine) {
  EXPECT_THAT(parse_error("not json"), HasSubstr("line 1:2"));
  EXPECT_THAT(parse_error(""), HasSubstr("line 1:1"));
}

TEST(Manifest, RejectsUnknownKeysAtEveryLevel) {
  std::string msg = parse_error(good_with("\"ops\": [", "\"opz\": [], \"ops\": ["));
  EXPECT_EQ(msg, "plugin 'myops' (" + kPath.string() + "): unknown key 'provides.opz'; allowed keys: devices, ops");

  msg = parse_error(good_with("\"license\": \"MIT\"", "\"license\": \"MIT\", \"licence\": \"MIT\""));
  EXPECT_THAT(msg, HasSubstr("unknown key 'licence'"));
  EXPECT_THAT(msg, HasSubstr("allowed keys: manifest_version, name, version"));

  msg = parse_error(good_with("\"minor_required\": 0", "\"minor_required\": 0, \"patch\": 1"));
  EXPECT_THAT(msg, HasSubstr("unknown key 'abi.patch'"));

  msg = parse_error(good_with("\"device\": \"cuda\"", "\"device\": \"cuda\", \"color\": \"red\""));
  EXPECT_THAT(msg, HasSubstr("unknown key 'provides.ops[1].color'"));

  msg = parse_error(good_with("\"arch\": \"x86_64\"", "\"arch\": \"x86_64\", \"libc\": \"glibc\""));
  EXPECT_THAT(msg, HasSubstr("unknown key 'platform.libc'; allowed keys: os, arch"));

  msg = parse_error(good_with("\"cpu_features\"", "\"gpu\": 1, \"cpu_features\""));
  EXPECT_THAT(msg, HasSubstr("unknown key 'requires.gpu'"));
}

TEST(Manifest, SchemaErrorsNameTheKey) {
  EXPECT_THAT(parse_error(good_with("\"major\": 1", "\"major\": \"1\"")),
              HasSubstr("'abi.major' must be an integer, got string"));
  EXPECT_THAT(parse_error(good_with("\"sha256\": \"ABCDEF", "\"sha\": \"ABCDEF")),
              HasSubstr("unknown key 'sha'"));
  EXPECT_THAT(parse_error(good_with("\"library\": \"libmyops.so\",", "")), HasSubstr("missing required key 'library'"));
  EXPECT_THAT(parse_error(good_with("\"1.2.3-rc.1+build.5\"", "\"1.2\"")), HasSubstr("not a semantic version"));
  EXPECT_THAT(parse_error(good_with("\"operator-pack\"", "\"ops-pack\"")),
              HasSubstr("'kind' is 'ops-pack'; it must be 'operator-pack' or 'device-backend'"));
  EXPECT_THAT(parse_error(good_with("\"ABCDEF01", "\"XYZDEF01")), HasSubstr("'sha256' must be 64 hexadecimal digits"));
  EXPECT_THAT(parse_error(good_with("\"since_version\": 6, \"end_version\": 13", "\"since_version\": 6, \"end_version\": 5")),
              HasSubstr("'provides.ops[1]': end_version 5 is below since_version 6"));
  EXPECT_THAT(parse_error(good_with("\"manifest_version\": 1", "\"manifest_version\": 2")),
              HasSubstr("manifest_version 2 is not supported"));
  EXPECT_THAT(parse_error(good_with("[\"avx2\"]", "[\"avx2\", \"avx2\"]")),
              HasSubstr("'requires.cpu_features[1]': duplicate entry 'avx2'"));
  EXPECT_THAT(parse_error(good_with("\"platform\": {\"os\": \"linux\", \"arch\": \"x86_64\"}", "\"platform\": []")),
              HasSubstr("'platform' must be an object, got array"));
  EXPECT_THAT(parse_error("[1, 2]"), HasSubstr("must be a JSON object"));
}

TEST(Manifest, WriterRoundTrips) {
  Manifest m = parse_manifest(good_text(), kPath, "myops");
  test::TempDir tmp;
  fs::path out = tmp / "sub" / "ophost-plugin.json";
  write_manifest(m, out);
  Manifest back = read_manifest(out);
  EXPECT_EQ(back.name, m.name);
  EXPECT_EQ(back.version, m.version);
  EXPECT_EQ(back.sha256, m.sha256);
  EXPECT_EQ(back.provides.ops, m.provides.ops);
  EXPECT_EQ(back.requires_.cpu_features, m.requires_.cpu_features);
  std::string text = test::read_text(out);
  EXPECT_THAT(text, HasSubstr("\n  \"name\": \"myops\",\n"));  // pretty, documented order
  EXPECT_LT(text.find("manifest_version"), text.find("provides"));
  EXPECT_FALSE(fs::exists(tmp / "sub" / "ophost-plugin.json.tmp"));
}

TEST(Manifest, ReadMissingFileNamesFolder) {
  try {
    read_manifest("/nonexistent/somefolder/ophost-plugin.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kNotFound);
    EXPECT_THAT(e.what(), StartsWith("plugin 'somefolder' (/nonexistent/somefolder/ophost-plugin.json): "));
  }
}

TEST(Manifest, Semver) {
  EXPECT_TRUE(is_semver("0.1.0"));
  EXPECT_TRUE(is_semver("10.20.30-alpha.1+meta"));
  EXPECT_FALSE(is_semver("1.0"));
  EXPECT_FALSE(is_semver("01.0.0"));
  EXPECT_FALSE(is_semver("v1.0.0"));
}

}  // namespace
}  // namespace ophost
