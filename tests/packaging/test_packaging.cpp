// `ophost pack check` on clean and broken plugin folders, and ABI compatibility through the real loader and the
// real `ophost` command: a pack whose boundary structs are smaller than the host's (older producer) loads and
// runs; a pack requiring a newer minor is rejected naming both versions.
#include "integration_support.hpp"

#include "plugins/plugin_set.hpp"

#include <ophost/manifest.hpp>
#include <ophost/npy.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace {

using namespace ophost;
using namespace ophost::itest;

const fs::path kPackCheckDirs = PACKAGING_TEST_PACKS;  // misbehaving/ (ophost_add_pack), leaky/ (no visibility)

// Copies `lib` into <root>/<name>/ and writes its manifest with `ophost pack manifest` (the author workflow).
fs::path install_with_manifest(const fs::path& root, const std::string& name, const fs::path& lib) {
  fs::path dir = root / name;
  fs::create_directories(dir);
  fs::copy_file(lib, dir / lib.filename(), fs::copy_options::overwrite_existing);
  ProcResult r = itest::ophost({"pack", "manifest", "--library", (dir / lib.filename()).string(), "--kind", "operator-pack",
                         "--out", (dir / kManifestFileName).string()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return dir;
}

ProcResult pack_check(const fs::path& dir) { return itest::ophost({"pack", "check", dir.string()}); }

TEST(PackCheck, BundledMyopsIsClean) {
  ProcResult r = pack_check(kPluginDir / "myops");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "exported symbols: oph_plugin_entry_v1 only");
  EXPECT_CONTAINS(r.out, "myops::gelu [1+] on cpu: run check");
  EXPECT_CONTAINS(r.out, "MAY_INPLACE holds");
  // relu6_scale's samples (plugins/myops/make_samples.py) hold NumPy's outputs: NaN in, NaN out, as np.clip.
  EXPECT_CONTAINS(r.out, "ophost-samples.json: 2 of 2 sample(s) read, for 1 op(s)");
  EXPECT_CONTAINS(r.out, "ok       myops::relu6_scale [1+] on cpu, sample 2 (\"NaN and infinities\") of "
                         "ophost-samples.json: run check (the sample's inputs, outputs equal the expected ones)");
  EXPECT_CONTAINS(r.out, "note     myops::relu6_scale [1+] on cpu, sample 1 (\"finite\") of ophost-samples.json: "
                         "NaN/Inf probe at input 0 ('X') [0,0]: NaN -> Y[0,0] nan; +inf -> Y[0,0] 6; -inf -> Y[0,0] 0");
  EXPECT_CONTAINS(r.out, "result: clean");
}

TEST(PackCheck, RunCheckFindsWhatEachMisbehavingOpDoes) {
  ProcResult r = pack_check(kPackCheckDirs / "misbehaving");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  // The manifest, symbols and definitions are clean (ophost_add_pack); only the runs find problems.
  EXPECT_CONTAINS(r.out, "exported symbols: oph_plugin_entry_v1 only");
  EXPECT_CONTAINS(r.out, "bad::scribble [1+] on cpu (float32 []): compute modified input 0 ('input_0'), which is "
                         "declared read-only");
  EXPECT_CONTAINS(r.out, "OPH_ALIAS_MUTATES_INPUT");
  EXPECT_CONTAINS(r.out, "bad::reverse [1+] on cpu (float32 [7]): MAY_INPLACE input 0 -> output 0 does not hold");
  EXPECT_CONTAINS(r.out, "drop .may_inplace(0, 0)");
  EXPECT_CONTAINS(r.out, "bad::overrun [1+] on cpu (float32 []): compute wrote 4 bytes past the end of output 0 "
                         "('output_0') (first corrupted byte at end+0; the buffer holds 4 bytes: float32 [1])");
  EXPECT_CONTAINS(r.out, "ok       bad::twice [1+] on cpu: run check");
  EXPECT_CONTAINS(r.out, "result: 3 finding(s)");
}

TEST(PackCheck, ExportedSymbolsBesidesTheEntry) {
  ProcResult r = pack_check(kPackCheckDirs / "leaky");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  symbols: the library exports ");
  EXPECT_CONTAINS(r.out, "symbol(s) besides oph_plugin_entry_v1: ");
  EXPECT_CONTAINS(r.out, "build with -fvisibility=hidden and a version script");
}

TEST(PackCheck, LoaderRejectionsAreFindings) {
  TempDir tmp;
  fs::path noentry = tmp.path() / "fakenoentry";  // no manifest: `ophost pack manifest` refuses the library
  fs::create_directories(noentry);
  fs::copy_file(FAKE_PLUGIN_fakenoentry, noentry / "libfakenoentry.so");
  ProcResult r = pack_check(noentry);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  symbols: the library does not export oph_plugin_entry_v1");

  fs::path dir = tmp.path() / "fakebadop";
  fs::create_directories(dir);
  fs::copy_file(FAKE_PLUGIN_fakebadop, dir / "libfakebadop.so");
  r = pack_check(dir);  // no manifest: `ophost pack manifest` refuses this library, so there is none
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "write it with `ophost pack manifest --library LIB");
  EXPECT_CONTAINS(r.out, "op table entry 0 (fake::echo): compute is NULL");
}

TEST(PackCheck, ManifestProblems) {
  TempDir tmp;
  fs::path dir = install_with_manifest(tmp.path(), "fakeold", FAKE_PLUGIN_fakeold);
  ASSERT_EQ(pack_check(dir).exit_code, 0) << pack_check(dir).describe();

  Manifest m = read_manifest(dir / kManifestFileName);
  m.sha256 = std::string(64, '0');
  write_manifest(m, dir / kManifestFileName);
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.out, "but the manifest says 0000");
  EXPECT_CONTAINS(r.out, "regenerate the manifest after every build");

  std::string text = read_file(dir / kManifestFileName);
  text.insert(text.find('{') + 1, "\n  \"colour\": \"blue\",");
  write_file(dir / kManifestFileName, text);
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.out, "FINDING  manifest: ");
  EXPECT_CONTAINS(r.out, "colour");
}

// ---- broken packs: one op with one mistake each (broken_pack.cpp) -----------------------------------------

ProcResult check_broken(const std::string& variant, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"pack", "check", (kPackCheckDirs / ("broken_" + variant)).string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return itest::ophost(args);
}

TEST(PackCheckBroken, CleanPackExitsZero) {
  ProcResult r = check_broken("clean");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::scale [1+] on cpu: run check (6 runs, float32, 6 in place): infer agrees "
                         "with compute, every output element written, no writes outside the buffers");
  EXPECT_CONTAINS(r.out, "result: clean");
}

TEST(PackCheckBroken, InferBiggerThanWhatComputeWrites) {
  ProcResult r = check_broken("unwritten");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  // infer says n + 2 elements; compute writes n (n = 1 for the first probe, a scalar).
  EXPECT_CONTAINS(r.out, "FINDING  broken::unwritten [1+] on cpu (float32 []): output 0 'output_0': 2 of 3 elements "
                         "never written (first at index 1; infer gave float32 [3])");
  EXPECT_CONTAINS(r.out, "result: 1 finding(s)");
}

TEST(PackCheckBroken, OneElementPastTheEnd) {
  ProcResult r = check_broken("past_one");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::past_one [1+] on cpu (float32 []): compute wrote 4 bytes past the end of "
                         "output 0 ('output_0') (first corrupted byte at end+0; the buffer holds 4 bytes: float32 [])");
}

TEST(PackCheckBroken, TwoHundredFiftySixBytesPastTheEnd) {
  ProcResult r = check_broken("past_256");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::past_256 [1+] on cpu (float32 []): compute wrote 256 bytes past the end of "
                         "output 0 ('output_0')");
  EXPECT_NOT_CONTAINS(r.out, "crashed");  // the guard zone takes the write; nothing is corrupted
}

TEST(PackCheckBroken, WrongInPlace) {
  ProcResult r = check_broken("inplace");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::reverse [1+] on cpu (float32 [7]): MAY_INPLACE input 0 -> output 0 does not "
                         "hold: with the output in the input's buffer, element 4 differs");
  EXPECT_CONTAINS(r.out, "drop .may_inplace(0, 0)");
}

TEST(PackCheckBroken, WritesIntoAnUndeclaredInput) {
  ProcResult r = check_broken("scribble");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::scribble [1+] on cpu (float32 []): compute modified input 0 ('input_0'), "
                         "which is declared read-only (first changed element: 0, byte 0)");
  EXPECT_CONTAINS(r.out, "OPH_ALIAS_MUTATES_INPUT");
}

TEST(PackCheckBroken, ComputeThrowsIsAComputeFailureNotAnInferRejection) {
  ProcResult r = check_broken("throw");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::throws [1+] on cpu (float32 []): compute failed: ");
  EXPECT_CONTAINS(r.out, "broken::throws does not support this layout (infer had accepted these inputs)");
  EXPECT_NOT_CONTAINS(r.out, "infer rejected");
  EXPECT_NOT_CONTAINS(r.out, "not run");
}

TEST(PackCheckBroken, ComputeReturnsAnError) {
  ProcResult r = check_broken("error");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::fails [1+] on cpu (float32 []): compute failed: broken::fails: not "
                         "implemented for these inputs");
  EXPECT_NOT_CONTAINS(r.out, "infer rejected");
}

TEST(PackCheckBroken, SegfaultIsReportedAndTheCheckGoesOn) {
  ProcResult r = check_broken("segv");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_EQ(r.signal, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::segv [1+] on cpu: op broken::segv crashed (SIGSEGV) on sample float32 [] "
                         "(in compute)");
  // Lines before the crash are out (line-buffered), and the next op is still checked.
  EXPECT_CONTAINS(r.out, "ok       broken::segv [1+] on cpu: definition");
  EXPECT_CONTAINS(r.out, "ok       broken::scale [1+] on cpu: run check (6 runs");
  EXPECT_CONTAINS(r.out, "result: 1 finding(s)");
}

TEST(PackCheckBroken, HangIsKilledAfterTheTimeout) {
  ProcResult r = check_broken("hang", {"--timeout", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::hang [1+] on cpu: op broken::hang did not finish within 1 s on sample "
                         "float32 [] (in compute); killed");
}

TEST(PackCheckBroken, RequiredAttribute) {
  ProcResult r = check_broken("req_attr");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "note     broken::scale_by [1+] on cpu: not run: attribute 'k' is required; pass "
                         "--attr k=VALUE (with --op broken::scale_by)");
  EXPECT_CONTAINS(r.out, "result: incomplete: 1 op(s) not run");

  r = check_broken("req_attr", {"--attr", "k=3"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::scale_by [1+] on cpu: run check (6 runs, float32)");
  EXPECT_CONTAINS(r.out, "result: clean");

  r = check_broken("req_attr", {"--op", "broken::scale_by", "--attr", "k=three"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "--attr k=three: attribute 'k' of broken::scale_by is an int (e.g. 3); 'three' is not one");

  r = check_broken("req_attr", {"--attr", "q=1"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "--attr q=1: broken::scale_by has no attribute 'q' (its attributes: k)");

  r = check_broken("req_attr", {"--op", "broken::nope"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "--op broken::nope: the pack has no such op (its ops: broken::scale_by)");
}

TEST(PackCheckBroken, RankTwoOnlyOpRunsWithTheAuthorsInputs) {
  ProcResult r = check_broken("rank2");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "note     broken::bias_rows [1+] on cpu: not run: infer rejected every probe (float32 []: "
                         "x must be rank 2, got rank 0; ...); pass inputs of shapes the op accepts with --input "
                         "NAME=FILE.npy");

  TempDir tmp;
  Tensor x(DType::kFloat32, {3, 4}), bias(DType::kFloat32, {4});
  for (int i = 0; i < 12; ++i) x.data_as<float>()[i] = 0.25f * static_cast<float>(i);
  for (int i = 0; i < 4; ++i) bias.data_as<float>()[i] = static_cast<float>(i);
  write_npy(tmp.path() / "x.npy", x);
  write_npy(tmp.path() / "bias.npy", bias);
  r = check_broken("rank2", {"--input", "x=" + (tmp.path() / "x.npy").string(), "--input",
                             "1=" + (tmp.path() / "bias.npy").string()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::bias_rows [1+] on cpu: run check (the given inputs): infer agrees with "
                         "compute");
  EXPECT_CONTAINS(r.out, "result: clean");

  // The author's inputs reach infer as given: x alone (bias made up with x's shape) is rejected.
  r = check_broken("rank2", {"--input", "x=" + (tmp.path() / "x.npy").string()});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "not run: infer rejected the given inputs (float32 [3,4]: bias must be [C]");

  r = check_broken("rank2", {"--input", "z=" + (tmp.path() / "x.npy").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "broken::bias_rows has no input 'z' (its inputs: 0 'x', 1 'bias'; give the name or the index)");
}

// ---- the pack's samples file (ophost-samples.json) ---------------------------------------------------------

// A copy of packs/broken_<variant>/ in `tmp` with `samples` as its ophost-samples.json (none when empty).
fs::path with_samples(const TempDir& tmp, const std::string& variant, const std::string& samples) {
  fs::path src = kPackCheckDirs / ("broken_" + variant), dir = tmp.path() / ("broken_" + variant);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(src))
    if (e.is_regular_file()) fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
  if (!samples.empty()) write_file(dir / "ophost-samples.json", samples);
  return dir;
}

TEST(PackCheckSamples, RequiredAttributeFromTheSamplesFile) {
  TempDir tmp;
  fs::path dir = with_samples(tmp, "req_attr", R"({"samples": [{"op": "broken::scale_by", "attrs": {"k": 3}}]})");
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       samples " + (dir / "ophost-samples.json").string() +
                             ": 1 of 1 sample(s) read, for 1 op(s)");
  EXPECT_CONTAINS(r.out, "ok       broken::scale_by [1+] on cpu, sample 1 of ophost-samples.json: run check (6 runs, "
                         "float32, the sample's attributes)");
  EXPECT_CONTAINS(r.out, "result: clean");

  // --no-samples: back to "not run"; --attr on the command line replaces the sample.
  r = itest::ophost({"pack", "check", dir.string(), "--no-samples"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "not run: attribute 'k' is required; pass --attr k=VALUE (with --op broken::scale_by), or "
                         "give it in the pack's ophost-samples.json");
  r = itest::ophost({"pack", "check", dir.string(), "--attr", "k=2"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::scale_by [1+] on cpu: run check (6 runs, float32)");
  EXPECT_NOT_CONTAINS(r.out, "sample 1 of");
}

TEST(PackCheckSamples, InputsGivenAsValuesRandomOrNpy) {
  TempDir tmp;
  Tensor x(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  fs::path dir = with_samples(tmp, "rank2", R"({"samples": [
      {"op": "broken::bias_rows", "inputs": {"x": {"dtype": "float32", "shape": [3, 4]},
                                             "bias": {"shape": [4], "values": [1, 2, 3, 4.5]}}},
      {"op": "broken::bias_rows", "inputs": {"0": {"npy": "x.npy"}, "1": {"dtype": "float32", "shape": [3]}}}]})");
  write_npy(dir / "x.npy", x);
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::bias_rows [1+] on cpu, sample 1 of ophost-samples.json: run check (the "
                         "sample's inputs): infer agrees with compute");
  EXPECT_CONTAINS(r.out, "ok       broken::bias_rows [1+] on cpu, sample 2 of ophost-samples.json: run check (the "
                         "sample's inputs)");
  EXPECT_CONTAINS(r.out, "result: clean");

  // A sample infer rejects is "not run", naming the sample.
  dir = with_samples(tmp, "rank2", "");
  write_file(dir / "ophost-samples.json", R"({"samples": [{"op": "broken::bias_rows",
      "inputs": {"x": {"shape": [3, 4]}, "bias": {"shape": [5]}}}]})");
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "broken::bias_rows [1+] on cpu, sample 1 of ophost-samples.json: not run: infer rejected the "
                         "sample's inputs (");
}

TEST(PackCheckSamples, MistakesInTheFileNameTheSampleAndTheField) {
  TempDir tmp;
  fs::path dir = with_samples(tmp, "rank2", R"({"samples": [
      {"op": "broken::nope"},
      {"op": "broken::bias_rows", "attrs": {"k": 1}},
      {"op": "broken::bias_rows", "inputs": {"x": {"shape": [2, 2], "values": [1, 2, 3]}}},
      {"op": "broken::bias_rows", "inputs": {"x": {"dtype": "int64", "shape": [2]}}},
      {"op": "broken::bias_rows", "inputs": {"z": {"shape": [2]}}},
      {"op": "broken::bias_rows", "inputs": {"x": {"npy": "missing.npy"}}},
      {"op": "broken::bias_rows", "colour": 1}]})");
  const std::string file = (dir / "ophost-samples.json").string();
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  samples: " + file + ": samples[0].op: the pack has no op 'broken::nope' (its ops: "
                         "broken::bias_rows)");
  EXPECT_CONTAINS(r.out, file + ": samples[1].attrs.k: broken::bias_rows has no attribute 'k' (it has none)");
  EXPECT_CONTAINS(r.out, file + ": samples[2].inputs.x.values: 3 values for shape [2,2], which holds 4");
  EXPECT_CONTAINS(r.out, file + ": samples[3].inputs.x.dtype: dtype 'int64' is not allowed (input 'x' of "
                         "broken::bias_rows allows float32)");
  EXPECT_CONTAINS(r.out, file + ": samples[4].inputs.z: broken::bias_rows has no input 'z' (its inputs: 0 'x', 1 "
                         "'bias'; give the name or the index)");
  EXPECT_CONTAINS(r.out, file + ": samples[5].inputs.x.npy: ");
  EXPECT_CONTAINS(r.out, file + ": samples[6]: unknown key 'colour' (allowed: op, name, attrs, inputs, outputs, "
                         "atol, rtol)");
  EXPECT_CONTAINS(r.out, "0 of 7 sample(s) read");

  write_file(dir / "ophost-samples.json", "{\"samples\": [");
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  samples: " + file + " is not valid JSON: ");

  r = itest::ophost({"pack", "check", dir.string(), "--samples", (tmp.path() / "none.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "--samples " + (tmp.path() / "none.json").string() + ": no such file");
}

TEST(PackCheckSamples, IntegerAttributeGivenAsAFloatIsAMistake) {
  TempDir tmp;
  fs::path dir = with_samples(tmp, "req_attr", R"({"samples": [{"op": "broken::scale_by", "attrs": {"k": 2.5}}]})");
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "samples[0].attrs.k: attribute 'k' of broken::scale_by is an int (e.g. 3), not 2.5");
  EXPECT_CONTAINS(r.out, "not run: attribute 'k' is required");
}

// ---- expected outputs and the NaN/Inf probe ---------------------------------------------------------------

// broken::relu maps NaN to 0; the pack's reference (a sample's expected outputs) keeps NaN, as ONNX Relu does.
TEST(PackCheckValues, NanToZeroAgainstANanKeepingReferenceIsAFinding) {
  TempDir tmp;
  fs::path dir = with_samples(tmp, "nan_zero", R"({"samples": [{"op": "broken::relu", "name": "NaN stays NaN",
      "inputs": {"x": {"shape": [2, 3], "values": [1, "nan", -2, "inf", "-inf", 0.5]}},
      "outputs": {"y": {"shape": [2, 3], "values": [1, "nan", 0, "inf", 0, 0.5]}}}]})");
  const std::string file = (dir / "ophost-samples.json").string();
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::relu [1+] on cpu, sample 1 (\"NaN stays NaN\") of ophost-samples.json "
                         "(float32 [2,3]): output 0 ('y') at [0,1] (element 1 of 6): got 0, expected nan; 1 of 6 "
                         "elements differ (atol 1e-06, rtol 1e-05; NaN matches only NaN, an infinity only the same "
                         "one) (pack broken_nan_zero, samples[0] (\"NaN stays NaN\") of " + file + ")");
  EXPECT_CONTAINS(r.out, "make compute give the pack's reference");
  // The sample already holds NaN and infinities: no probe on it. count_nan (no samples) is probed.
  EXPECT_NOT_CONTAINS(r.out, "broken::relu [1+] on cpu, sample 1 (\"NaN stays NaN\") of ophost-samples.json: NaN/Inf");
  EXPECT_CONTAINS(r.out, "note     broken::count_nan [1+] on cpu: NaN/Inf probe at input 0 ('x') []: NaN -> y[] 1; "
                         "+inf -> y[] 0; -inf -> y[] 0");
  EXPECT_CONTAINS(r.out, "result: 1 finding(s)");

  // Without the reference the same op is clean: what it does with NaN is a note of the probe, not a finding.
  r = pack_check(kPackCheckDirs / "broken_nan_zero");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "note     broken::relu [1+] on cpu: NaN/Inf probe at input 0 ('x') []: NaN -> y[] 0; +inf "
                         "-> y[] inf; -inf -> y[] 0");
  EXPECT_CONTAINS(r.out, "result: clean");
}

TEST(PackCheckValues, WrongValueBeyondTheToleranceNamesTheElement) {
  TempDir tmp;  // broken::scale: y = 2 x
  fs::path dir = with_samples(tmp, "clean", R"({"samples": [{"op": "broken::scale",
      "inputs": {"0": {"shape": [2, 2], "values": [1, 2, 3, 4]}},
      "outputs": {"0": {"shape": [2, 2], "values": [2, 4, 6.001, 8]}}}]})");
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "FINDING  broken::scale [1+] on cpu, sample 1 of ophost-samples.json (float32 [2,2]): output 0 "
                         "('output_0') at [1,0] (element 2 of 4): got 6, expected 6.00099993; 1 of 4 elements differ "
                         "(atol 1e-06, rtol 1e-05; ");
  EXPECT_CONTAINS(r.out, "(pack broken_clean, samples[0] of " + (dir / "ophost-samples.json").string() + ")");

  // The sample's own tolerance; then the default float32 tolerance holds a rounding-sized difference.
  write_file(dir / "ophost-samples.json", R"({"samples": [{"op": "broken::scale", "atol": 0.01,
      "inputs": {"0": {"shape": [2, 2], "values": [1, 2, 3, 4]}},
      "outputs": {"0": {"shape": [2, 2], "values": [2, 4, 6.001, 8]}}}]})");
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::scale [1+] on cpu, sample 1 of ophost-samples.json: run check (the sample's "
                         "inputs, outputs equal the expected ones, 1 in place)");
  write_file(dir / "ophost-samples.json", R"({"samples": [{"op": "broken::scale",
      "inputs": {"0": {"shape": [2, 2], "values": [1, 2, 3, 4]}},
      "outputs": {"0": {"shape": [2, 2], "values": [2, 4.00003, 6, 8]}}}]})");
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "outputs equal the expected ones");
  EXPECT_CONTAINS(r.out, "note     broken::scale [1+] on cpu, sample 1 of ophost-samples.json: NaN/Inf probe at "
                         "input 0 ('input_0') [0,0]: NaN -> output_0[0,0] nan; +inf -> output_0[0,0] inf; -inf -> "
                         "output_0[0,0] -inf");
  EXPECT_CONTAINS(r.out, "result: clean");

  // An infinity matches only the same infinity, whatever the tolerance.
  write_file(dir / "ophost-samples.json", R"({"samples": [{"op": "broken::scale", "atol": 1e30,
      "inputs": {"0": {"shape": [2], "values": ["inf", 1]}}, "outputs": {"0": {"shape": [2], "values": ["-inf", 2]}}}]})");
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "at [0] (element 0 of 2): got inf, expected -inf; 1 of 2 elements differ (atol 1e+30");
}

TEST(PackCheckValues, IntegersCompareExactlyAndShapesMustAgree) {
  TempDir tmp;  // broken::count_nan: the number of NaNs in x, int64 []
  fs::path dir = with_samples(tmp, "nan_zero", R"({"samples": [
      {"op": "broken::count_nan", "inputs": {"x": {"shape": [3], "values": ["nan", 1, "nan"]}},
       "outputs": {"y": {"dtype": "int64", "shape": [], "values": [2]}}},
      {"op": "broken::count_nan", "name": "off by one", "atol": 5,
       "inputs": {"x": {"shape": [3], "values": ["nan", 1, 2]}},
       "outputs": {"y": {"dtype": "int64", "shape": [], "values": [2]}}},
      {"op": "broken::relu", "inputs": {"x": {"shape": [3], "values": [1, 2, 3]}},
       "outputs": {"y": {"shape": [1, 3], "values": [1, 2, 3]}}}]})");
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "ok       broken::count_nan [1+] on cpu, sample 1 of ophost-samples.json: run check (the "
                         "sample's inputs, outputs equal the expected ones)");
  EXPECT_CONTAINS(r.out, "FINDING  broken::count_nan [1+] on cpu, sample 2 (\"off by one\") of ophost-samples.json "
                         "(float32 [3]): output 0 ('y') at [] (element 0 of 1): got 1, expected 2; 1 of 1 elements "
                         "differ (int64: exact)");
  EXPECT_CONTAINS(r.out, "FINDING  broken::relu [1+] on cpu, sample 1 of ophost-samples.json (float32 [3]): output 0 "
                         "('y') is float32 [3] but the sample expects float32 [1,3]");
  EXPECT_CONTAINS(r.out, "result: 2 finding(s)");
}

TEST(PackCheckValues, MistakesInExpectedOutputsNameTheFileAndTheField) {
  TempDir tmp;
  fs::path dir = with_samples(tmp, "nan_zero", R"({"samples": [
      {"op": "broken::relu", "inputs": {"x": {"shape": [2], "values": [1, 2]}}, "outputs": {"z": {"shape": [2], "values": [1, 2]}}},
      {"op": "broken::count_nan", "inputs": {"x": {"shape": [2], "values": [1, "nan"]}},
       "outputs": {"y": {"dtype": "int64", "shape": [], "values": ["nan"]}}},
      {"op": "broken::relu", "inputs": {"x": {"shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]}},
       "outputs": {"y": {"shape": [2, 3], "values": [1, 2, 3, 4, 5]}}},
      {"op": "broken::relu", "inputs": {"x": {"shape": [2], "values": [1, "NaN"]}}},
      {"op": "broken::relu", "inputs": {"x": {"shape": [2]}}, "outputs": {"y": {"shape": [2], "values": [1, 2]}}},
      {"op": "broken::relu", "inputs": {"x": {"shape": [2], "values": [1, 2]}}, "outputs": {"y": {"shape": [2]}}},
      {"op": "broken::relu", "attrs": {}, "rtol": 0.1},
      {"op": "broken::relu", "inputs": {"x": {"shape": [1], "values": [1]}}, "outputs": {"y": {"shape": [1], "values": [1]}}, "atol": -1},
      {"op": "broken::relu", "inputs": {"x": {"shape": [1], "values": [1]}}, "outputs": {"y": {"dtype": "int64", "shape": [1], "values": [1]}}}]})");
  const std::string file = (dir / "ophost-samples.json").string();
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  const char* const mistakes[] = {
      "samples[0].outputs.z: broken::relu has no output 'z' (its outputs: 0 'y'; give the name or the index)",
      "samples[1].outputs.y.values: values[0] = \"nan\" is not an integer (\"nan\", \"inf\" and \"-inf\" are for "
      "float tensors)",
      "samples[2].outputs.y.values: 5 values for shape [2,3], which holds 6",
      "samples[3].inputs.x.values: values[1] = \"NaN\" is not a number (JSON has no NaN or infinity: write \"nan\", "
      "\"inf\" or \"-inf\")",
      "samples[4].outputs: expected outputs need every input given with its values, and input 0 'x' is random (no "
      "\"values\")",
      "samples[5].outputs.y: an expected output needs its \"values\" (or {\"npy\": FILE})",
      "samples[6].rtol: a tolerance is for the sample's expected \"outputs\", and it has none",
      "samples[7].atol: expected a number >= 0 (e.g. 1e-5), not -1",
      "samples[8].outputs.y.dtype: dtype 'int64' is not allowed (output 'y' of broken::relu allows float32)"};
  for (const char* mistake : mistakes) EXPECT_CONTAINS(r.out, "FINDING  samples: " + file + ": " + mistake);
  EXPECT_CONTAINS(r.out, "0 of 9 sample(s) read");
}

TEST(PackCheckValues, ExpectedOutputsFromNpy) {
  TempDir tmp;
  Tensor x(DType::kFloat32, {4}), y(DType::kFloat32, {4});
  const float xs[] = {-1.0f, 0.5f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  for (int i = 0; i < 4; ++i) {
    x.data_as<float>()[i] = xs[i];
    y.data_as<float>()[i] = 2.0f * xs[i];
  }
  fs::path dir = with_samples(tmp, "clean", R"({"samples": [{"op": "broken::scale", "name": "npy",
      "inputs": {"0": {"npy": "x.npy"}}, "outputs": {"output_0": {"npy": "y.npy"}}}]})");
  write_npy(dir / "x.npy", x);
  write_npy(dir / "y.npy", y);
  ProcResult r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "sample 1 (\"npy\") of ophost-samples.json: run check (the sample's inputs, outputs equal the "
                         "expected ones");

  y.data_as<float>()[2] = 0.0f;  // a reference without the NaN
  write_npy(dir / "y.npy", y);
  r = pack_check(dir);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_CONTAINS(r.out, "output 0 ('output_0') at [2] (element 2 of 4): got nan, expected 0; 1 of 4 elements differ");
}

// ---- ABI compatibility -------------------------------------------------------------------------------------

TEST(AbiCompat, SmallerStructSizeOfAnOlderProducerLoadsAndRuns) {
  TempDir tmp;
  fs::path root = tmp.path() / "plugins";
  install_with_manifest(root, "fakeold", FAKE_PLUGIN_fakeold);

  // In process: the loader accepts it; its op def is a 1.0 one (no kernel_impl, smaller than this host's) and its
  // io/alias defs end at their last field, inside this host's sizeof (tail padding is never claimed).
  DiscoveryOptions opt;
  opt.plugin_paths = {root};
  opt.use_env_plugin_path = false;
  opt.use_default_plugin_dir = false;
  {
    PluginSet set = PluginSet::discover(opt);
    ASSERT_EQ(set.loaded().size(), 1u) << (set.reports().empty() ? "" : set.reports()[0].reason);
    const oph_op_def* op = set.loaded()[0]->ops().at(0);
    EXPECT_EQ(op->struct_size, OPH_OP_DEF_STRUCT_SIZE_1_0);
    EXPECT_LT(op->struct_size, OPH_OP_DEF_STRUCT_SIZE);
    EXPECT_FALSE(OPH_HAS_FIELD(oph_op_def, op, kernel_impl));
    EXPECT_LT(op->inputs[0]->struct_size, sizeof(oph_io_def));
    EXPECT_LT(op->outputs[0]->struct_size, sizeof(oph_io_def));
    EXPECT_LT(op->aliases[0]->struct_size, sizeof(oph_alias_def));
  }

  // Through the command: a model using fake::echo runs and gives its input back.
  ModelBuilder b({{"", 13}, {"fake", 1}});
  b.input("x", {2, 3}).output("y", {2, 3});
  b.node("echo", {"x"}, {"y"}, "echo", "fake");
  fs::path model = b.save(tmp.path() / "echo.onnx");
  Tensor x(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  write_npy(tmp.path() / "x.npy", x);
  ProcResult r = itest::ophost({"run", model.string(), "--plugin-path", root.string(), "--input",
                         "x=" + (tmp.path() / "x.npy").string(), "--output-dir", (tmp.path() / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  Tensor y = read_npy(tmp.path() / "out" / "y.npy");
  ASSERT_EQ(y.numel(), 6);
  EXPECT_EQ(std::memcmp(y.data(), x.data(), 6 * sizeof(float)), 0);
}

TEST(AbiCompat, MinorRequiredAboveTheHostIsRejectedNamingBothVersions) {
  TempDir tmp;
  fs::path root = tmp.path() / "plugins";
  // The manifest claims the host's ABI (so the pre-dlopen check passes); the handshake says the next minor.
  Manifest m = manifest_from_library(FAKE_PLUGIN_fakegood, "operator-pack");
  fs::path lib = FAKE_PLUGIN_fakeminor;
  fs::create_directories(root / "fakeminor");
  fs::copy_file(lib, root / "fakeminor" / lib.filename());
  m.name = "fakeminor";
  m.library = lib.filename().string();
  m.sha256 = sha256_file(lib);
  write_manifest(m, root / "fakeminor" / kManifestFileName);
  ProcResult r = itest::ophost({"plugins", "-v", "--plugin-path", root.string()});
  EXPECT_CONTAINS(r.out + r.err, "the library requires ABI 1." + std::to_string(OPH_ABI_MINOR + 1) +
                                     " but this host provides ABI 1." + std::to_string(OPH_ABI_MINOR));
}

}  // namespace
