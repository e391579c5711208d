// The attribute sweep's runner (attr_sweep.py): loads the plugins once, then runs each model named on stdin in a
// child process forked from that state, exactly as `ophost run MODEL --random --threads 1 --max-tensor-bytes B`
// would (same Runtime/Session options, the same deterministic --random fill), and prints one line per model:
//
//     ok PATH          the model ran
//     error PATH       a clean error (an exception reached the top: ophost::Error or std::exception)
//     crash:SIG PATH   the child died by a signal (SIGALRM: it ran past --timeout)
//     exit:N PATH      the child exited otherwise: a sanitizer report (86 under tools/dev/sanitize.sh, whose
//                      exitcode=86 the ASan/UBSan default of 1 would otherwise be) or an exit() in a kernel
//
// Why a runner: one `ophost run` process per model costs ~0.85 s of start-up and exit under ASan (dynamic
// relocation of ~70 instrumented libraries, plugin loading, LeakSanitizer's scan at exit); the sweep's 1112
// models took over 600 s there. A fork from the loaded state costs milliseconds. The children leave with _exit:
// no LeakSanitizer scan per model (leaks are checked by every other test under ASan).
//
//     ophost_sweep_runner MAX_TENSOR_BYTES TIMEOUT_S PLUGIN_DIR... < paths
#include "common.hpp"  // tools/ophost: prepare_inputs, the --random fill of `ophost run`

#include <ophost/runtime.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

namespace {

constexpr int kChildRan = 0;
constexpr int kChildCleanError = 3;  // not 1: ASan and UBSan exit with 1 after a report unless told otherwise

[[noreturn]] void run_child(ophost::Runtime& rt, const std::string& path, uint64_t max_tensor_bytes,
                            unsigned timeout_s) {
  alarm(timeout_s);  // a hang ends as SIGALRM, which the parent reports
  int code = kChildRan;
  try {
    ophost::SessionOptions so;
    so.max_tensor_bytes = max_tensor_bytes;
    auto session = rt.load(path, so);
    auto feeds = ophost::cli::prepare_inputs(*session, {}, /*random=*/true, {}, max_tensor_bytes);
    auto out = session->run(feeds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
    code = kChildCleanError;
  }
  std::fflush(stderr);
  _exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: ophost_sweep_runner MAX_TENSOR_BYTES TIMEOUT_S PLUGIN_DIR... < model paths\n");
    return 2;
  }
  const uint64_t max_tensor_bytes = std::strtoull(argv[1], nullptr, 10);
  const unsigned timeout_s = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  ophost::cli::setup_logging("", "warn");  // as `ophost run`: $OPHOST_LOG_LEVEL, else warnings
  ophost::RuntimeOptions ro;
  ro.use_env_plugin_path = false;
  ro.use_default_plugin_dir = false;
  ro.plugin_paths.assign(argv + 3, argv + argc);
  ro.intra_op_threads = 1;  // --threads 1; and no pool thread exists when the children are forked
  ophost::Runtime rt(ro);
  std::string path;
  while (std::getline(std::cin, path)) {
    if (path.empty()) continue;
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("ophost_sweep_runner: fork");
      return 2;
    }
    if (pid == 0) run_child(rt, path, max_tensor_bytes, timeout_s);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) {
        std::perror("ophost_sweep_runner: waitpid");
        return 2;
      }
    }
    if (WIFSIGNALED(status)) {
      const char* sig = sigabbrev_np(WTERMSIG(status));
      std::printf("crash:%s %s\n", sig ? sig : "?", path.c_str());
    } else if (WEXITSTATUS(status) == kChildRan) {
      std::printf("ok %s\n", path.c_str());
    } else if (WEXITSTATUS(status) == kChildCleanError) {
      std::printf("error %s\n", path.c_str());
    } else {
      std::printf("exit:%d %s\n", WEXITSTATUS(status), path.c_str());
    }
  }
  return 0;
}
