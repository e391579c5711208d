// Helpers for the integration tests: run the real `ophost` command as a child process (stdout, stderr, exit
// status or signal captured), temporary folders, small ONNX models built with the protobuf classes, file I/O.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <ophost/runtime.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#ifndef OPHOST_EXE
#error "OPHOST_EXE (path of the ophost command) must be defined by CMake"
#endif
#ifndef OPHOST_EXAMPLES_DIR
#error "OPHOST_EXAMPLES_DIR must be defined by CMake"
#endif
#ifndef OPHOST_BUILD_PLUGIN_DIR
#error "OPHOST_BUILD_PLUGIN_DIR must be defined by CMake"
#endif

namespace ophost::itest {

namespace fs = std::filesystem;

inline const fs::path kOphost = OPHOST_EXE;
inline const fs::path kExamples = OPHOST_EXAMPLES_DIR;
inline const fs::path kPluginDir = OPHOST_BUILD_PLUGIN_DIR;

// gtest's EXPECT_THAT(HasSubstr) without gmock, with both strings in the failure message.
#define EXPECT_CONTAINS(haystack, needle)                                                               \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                                      \
      << "expected to find: " << (needle) << "\n              in: " << (haystack)
#define EXPECT_NOT_CONTAINS(haystack, needle)                                                           \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos)                                      \
      << "expected NOT to find: " << (needle) << "\n                  in: " << (haystack)

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ophost-itest-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + std::string(strerror(errno)));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ProcResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that ended it, 0 when it exited
  bool timed_out = false;
  std::string out, err;
  std::string all() const { return out + err; }
  // For failure messages.
  std::string describe() const {
    std::ostringstream s;
    s << "exit " << exit_code << (signal ? " signal " + std::to_string(signal) : std::string())
      << (timed_out ? " (timed out)" : "") << "\n--- stdout ---\n" << out << "--- stderr ---\n" << err;
    return s.str();
  }
};

struct RunOptions {
  fs::path cwd;                                      // empty: inherit
  std::map<std::string, std::optional<std::string>> env;  // set (value) or unset (nullopt) on top of environ
  int timeout_s = 30;
};

// Runs `exe args...` with stdout and stderr captured to files, waits (killing it after timeout_s).
inline ProcResult run_process(const fs::path& exe, const std::vector<std::string>& args, const RunOptions& opt = {}) {
  TempDir io;
  const std::string out_path = (io / "stdout").string(), err_path = (io / "stderr").string();

  // Everything the child needs is prepared before fork (only async-signal-safe calls after it).
  std::vector<std::string> argv_s{exe.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (opt.env.count(key) == 0) env_s.push_back(kv);
  }
  for (const auto& [k, v] : opt.env)
    if (v) env_s.push_back(k + "=" + *v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string cwd = opt.cwd.string();

  int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("cannot create capture files");

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);

  ProcResult r;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.timeout_s);
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

inline ProcResult ophost(const std::vector<std::string>& args, const RunOptions& opt = {}) {
  return run_process(kOphost, args, opt);
}

// The exit status of a process that a sanitizer stopped with a report (exitcode=86 in tools/dev/sanitize.sh).
inline constexpr int kSanitizerExitCode = 86;

// A clean failure: exited (no signal, no timeout, no sanitizer report) with a non-zero status.
#define EXPECT_CLEAN_FAILURE(r)                                                \
  do {                                                                         \
    EXPECT_FALSE((r).timed_out) << (r).describe();                             \
    EXPECT_EQ((r).signal, 0) << (r).describe();                                \
    EXPECT_GT((r).exit_code, 0) << (r).describe();                             \
    EXPECT_NE((r).exit_code, kSanitizerExitCode) << (r).describe();            \
  } while (0)

// ---------------------------------------------------------------------------------------------------------------
// A Runtime that loads only this build tree's plugins (no $OPHOST_PLUGIN_PATH, no default folder).
inline std::unique_ptr<Runtime> build_tree_runtime() {
  RuntimeOptions ro;
  ro.use_env_plugin_path = false;
  ro.plugin_paths = {kPluginDir};
  ro.use_default_plugin_dir = false;
  return std::make_unique<Runtime>(ro);
}

// Small ONNX models built with the protobuf classes.

struct ModelBuilder {
  onnx::ModelProto m;

  explicit ModelBuilder(std::initializer_list<std::pair<std::string, int64_t>> opsets = {{"", 13}},
                        int64_t ir_version = 8) {
    m.set_ir_version(ir_version);
    m.set_producer_name("ophost integration tests");
    for (const auto& [d, v] : opsets) {
      auto* o = m.add_opset_import();
      o->set_domain(d);
      o->set_version(v);
    }
    m.mutable_graph()->set_name("g");
  }

  static void set_type(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem,
                       const std::vector<int64_t>& shape) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* sh = tt->mutable_shape();
    for (int64_t d : shape) sh->add_dim()->set_dim_value(d);
  }
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& shape,
                      int32_t elem = onnx::TensorProto::FLOAT) {
    set_type(m.mutable_graph()->add_input(), name, elem, shape);
    return *this;
  }
  ModelBuilder& output(const std::string& name, const std::vector<int64_t>& shape,
                       int32_t elem = onnx::TensorProto::FLOAT) {
    set_type(m.mutable_graph()->add_output(), name, elem, shape);
    return *this;
  }
  // Adds a node and returns it so attributes can be added.
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name,
                        const std::string& domain = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->set_domain(domain);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  static void attr_float(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  fs::path save(const fs::path& file) const {
    std::string bytes;
    if (!m.SerializeToString(&bytes)) throw std::runtime_error("SerializeToString failed");
    write_file(file, bytes);
    return file;
  }
};

// x f32[2,3] -> <domain>::<op> (node "n") -> y f32[2,3], with opset imports as given.
inline ModelBuilder unary_model(const std::string& op, const std::string& domain,
                                std::initializer_list<std::pair<std::string, int64_t>> opsets) {
  ModelBuilder b(opsets);
  b.input("x", {2, 3}).output("y", {2, 3});
  b.node(op, {"x"}, {"y"}, "n", domain);
  return b;
}

}  // namespace ophost::itest
