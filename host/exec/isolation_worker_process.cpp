#include "exec/isolation_worker_process.hpp"

#include "core/thread_pool.hpp"
#include "plugins/plugin_set.hpp"

#include <spdlog/spdlog.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

extern char** environ;

namespace ophost::isolation {

namespace fs = std::filesystem;

namespace {

// How long a worker may take to load its pack and say hello, and to exit after its socket reached EOF.
constexpr auto kStartTimeout = std::chrono::seconds(60);
constexpr auto kExitGrace = std::chrono::seconds(2);

// <folder of libophost>/ophost/ophost-pack-worker: installed next to the library that starts it.
fs::path worker_executable() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&worker_for), &info) == 0 || info.dli_fname == nullptr)
    throw Error(Code::kNotFound, "pack isolation: cannot tell where libophost is (dladdr failed)");
  std::error_code ec;
  fs::path lib = fs::canonical(info.dli_fname, ec);
  if (ec) lib = info.dli_fname;
  return lib.parent_path() / "ophost" / "ophost-pack-worker";
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return signal_name(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "status " + std::to_string(status);
}

}  // namespace

PackWorker::PackWorker(const LoadedPlugin& pack, bool insecure)
    : pack_(pack.name()), manifest_path_(pack.manifest_path().string()), sha256_(pack.manifest().sha256),
      insecure_(insecure) {}

PackWorker::~PackWorker() {
  if (pid_ > 0) reap(false);
  if (shm_) ::munmap(shm_, shm_size_);
  if (memfd_ >= 0) ::close(memfd_);
}

uint64_t PackWorker::ensure_running() {
  if (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // died between requests (the host's spawning thread ended)
      spdlog::warn("pack '{}': its worker process {} ended while idle ({}); starting a new one", pack_, pid_,
                   describe_status(status));
      pid_ = -1;
      ::close(socket_);
      socket_ = -1;
    }
  }
  if (pid_ <= 0) spawn();
  return generation_;
}

void PackWorker::spawn() {
  const fs::path exe = worker_executable();
  const std::string prefix = "pack '" + pack_ + "' (isolated, --isolate-packs): ";
  if (::access(exe.c_str(), X_OK) != 0)
    throw Error(Code::kNotFound, prefix + "the worker executable " + exe.string() + " is missing (" +
                                     std::strerror(errno) + "); it is installed with libophost");
  if (memfd_ < 0) {
    // Sealed against shrinking (and further seals): a worker that truncated the region under the host's mapping
    // would make the host's next access a SIGBUS.
    memfd_ = ::memfd_create(("ophost-isolate-" + pack_).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memfd_ < 0 || ::fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
      throw Error(Code::kInternal, prefix + "memfd_create: " + std::strerror(errno));
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw Error(Code::kInternal, prefix + "socketpair: " + std::strerror(errno));
  // Above the worker's fixed numbers, so the dup2 file actions never map a descriptor onto itself.
  const int child_sock = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 16), child_shm = ::fcntl(memfd_, F_DUPFD_CLOEXEC, 16);
  ::close(sv[1]);
  auto close_child_ends = [&] {
    if (child_sock >= 0) ::close(child_sock);
    if (child_shm >= 0) ::close(child_shm);
  };
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, 2, 1);  // a pack's prints never reach the host's stdout
  ::posix_spawn_file_actions_adddup2(&fa, child_sock, kSocketFd);
  ::posix_spawn_file_actions_adddup2(&fa, child_shm, kShmFd);
  ::posix_spawn_file_actions_addclosefrom_np(&fa, kShmFd + 1);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = {exe.string(), "--pack", pack_, "--manifest", manifest_path_, "--sha256", sha256_,
                                   "--threads", std::to_string(ThreadPool::global().threads()), "--host-pid",
                                   std::to_string(::getpid()), "--log-level",
                                   std::string(spdlog::level::to_string_view(spdlog::get_level()).data())};
  if (insecure_) args.emplace_back("--insecure-plugin-path");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = (child_sock < 0 || child_shm < 0) ? errno
                                                   : ::posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  close_child_ends();
  if (rc != 0) {
    ::close(sv[0]);
    throw Error(Code::kInternal, prefix + "cannot start " + exe.string() + ": " + std::strerror(rc));
  }
  pid_ = pid;
  socket_ = sv[0];
  ++generation_;
  // The worker's hello: the pack loaded (or why not).
  std::vector<std::byte> hello;
  const auto got = read_frame(socket_, hello, std::chrono::steady_clock::now() + kStartTimeout, kMaxReply);
  if (got != ReadResult::kOk) {
    const std::string how = reap(got == ReadResult::kTimeout);
    throw Error(Code::kInternal, prefix + "its worker process ended while loading the pack (" + how + ")");
  }
  Reader r(hello);
  const auto code = static_cast<Code>(r.i32());
  const std::string msg = r.str();
  if (code != Code::kOk) {
    reap(false);
    throw Error(code, prefix + "the worker process could not load the pack: " + msg);
  }
  spdlog::info("pack '{}': worker process {} started ({} ops)", pack_, pid_, r.u64());
}

std::string PackWorker::reap(bool kill_first) {
  if (socket_ >= 0) ::close(socket_);  // a live worker sees EOF and exits
  socket_ = -1;
  if (kill_first) ::kill(pid_, SIGKILL);
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + kExitGrace;
  pid_t got = 0;
  while ((got = ::waitpid(pid_, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (got == 0) {  // still there: it closed its socket but did not exit
    ::kill(pid_, SIGKILL);
    got = ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return got == -1 ? std::string("not a child any more: ") + std::strerror(errno) : describe_status(status);
}

std::vector<std::byte> PackWorker::call(const Writer& request, const std::string& what,
                                        std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  const std::string restart = "; the pack runs in a worker process (--isolate-packs), so the host keeps serving "
                              "and the next call starts a new worker";
  std::vector<std::byte> reply;
  ReadResult got =
      write_frame(socket_, request.bytes()) ? read_frame(socket_, reply, deadline, kMaxReply) : ReadResult::kEof;
  if (got == ReadResult::kOk) return reply;
  if (got == ReadResult::kTimeout) {
    const pid_t pid = pid_;
    reap(true);
    throw Error(Code::kDeadlineExceeded,
                "pack '" + pack_ + "' did not finish " + what + " within the run's deadline of " +
                    std::to_string(timeout_ms) + " ms (SessionOptions::run_timeout_ms, ophost --run-timeout): its "
                    "worker process " + std::to_string(pid) + " was killed" + restart);
  }
  if (got == ReadResult::kError) {  // a reply too long or not a frame: the worker is not trusted any further
    const int err = errno;
    const pid_t pid = pid_;
    reap(true);
    throw Error(Code::kInternal, "pack '" + pack_ + "' sent a malformed reply in " + what + " (" + std::strerror(err) +
                                     "): its worker process " + std::to_string(pid) + " was killed" + restart);
  }
  const std::string how = reap(false);
  throw Error(Code::kInternal, "pack '" + pack_ + "' crashed (" + how + ") in " + what + restart);
}

std::byte* PackWorker::shm(size_t bytes) {
  if (bytes > shm_size_) {
    size_t grown = std::max({bytes, 2 * shm_size_, size_t{1} << 20});
    if (::ftruncate(memfd_, static_cast<off_t>(grown)) != 0)
      throw Error(Code::kResourceExhausted, "pack '" + pack_ + "': cannot grow the shared region to " +
                                                std::to_string(grown) + " bytes: " + std::strerror(errno));
    remap(grown);
  }
  return shm_;
}

void PackWorker::remap(size_t bytes) {
  if (bytes == shm_size_ && shm_) return;
  if (shm_) ::munmap(shm_, shm_size_);
  shm_ = nullptr;
  shm_size_ = 0;
  struct stat st {};
  if (::fstat(memfd_, &st) != 0 || static_cast<size_t>(st.st_size) < bytes)
    throw Error(Code::kDataLoss, "pack '" + pack_ + "': the shared region is smaller than its worker says");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
  if (p == MAP_FAILED)
    throw Error(Code::kResourceExhausted, "pack '" + pack_ + "': mmap of the shared region: " + std::strerror(errno));
  shm_ = static_cast<std::byte*>(p);
  shm_size_ = bytes;
}

std::shared_ptr<PackWorker> worker_for(const LoadedPlugin& pack, bool insecure) {
  static std::mutex m;
  static std::map<std::string, std::shared_ptr<PackWorker>> workers;  // kept for the process's life
  const std::string key = pack.manifest_path().string() + '\n' + pack.manifest().sha256 + (insecure ? "\ni" : "");
  std::lock_guard lock(m);
  auto& w = workers[key];
  if (!w) w = std::make_shared<PackWorker>(pack, insecure);
  return w;
}

}  // namespace ophost::isolation
