// The host's end of one isolated pack (SessionOptions::isolate_packs): the `ophost-pack-worker` child process
// that runs the pack's kernels, started with posix_spawn (never a bare fork of the multithreaded host), the
// socket its requests go over and the memfd region both processes map for tensor bytes (isolation/protocol.hpp).
//
// One worker per pack (and manifest) per process, shared by every session that isolates the pack, started by the
// first kernel created and kept until the process exits; requests are serialised by mutex(). When the worker dies
// (a signal, exit(), a protocol violation) or overruns the run's deadline (it is killed), the request fails with a
// message naming the pack, the node and the op, and the next request starts a new worker (generation() grows, so
// kernels know to be created again).
#pragma once

#include "exec/isolation_protocol.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/types.h>

namespace ophost {

class LoadedPlugin;

namespace isolation {

class PackWorker {
 public:
  // `insecure`: the host loaded the pack from a root that fails the ownership walk (the worker is told to accept
  // it as well).
  PackWorker(const LoadedPlugin& pack, bool insecure);
  ~PackWorker();
  PackWorker(const PackWorker&) = delete;
  PackWorker& operator=(const PackWorker&) = delete;

  const std::string& pack() const noexcept { return pack_; }
  // Held around every use of the calls below.
  std::mutex& mutex() noexcept { return mutex_; }

  // Starts the worker when none is running (the first time, or after one died); returns its generation.
  // Throws Error naming the pack when it cannot be started or cannot load the pack.
  uint64_t ensure_running();
  uint64_t generation() const noexcept { return generation_; }
  bool running() const noexcept { return pid_ > 0; }

  // Sends one request and returns the reply. `what` names the call in messages ("node 'n' (op d::o)"). When the
  // worker dies meanwhile, or the deadline passes (the worker is then killed), throws Error: kInternal "pack 'P'
  // crashed (SIGSEGV) in <what>; ..." or kDeadlineExceeded. `timeout_ms` is the run's budget, for the message.
  std::vector<std::byte> call(const Writer& request, const std::string& what,
                              std::chrono::steady_clock::time_point deadline, int64_t timeout_ms = 0);

  // The shared region, at least `bytes` long (grown as needed); valid until the next call to shm() or remap().
  std::byte* shm(size_t bytes);
  size_t shm_size() const noexcept { return shm_size_; }
  // Maps the region again at `bytes` (after the worker grew it for outputs allocated while running).
  void remap(size_t bytes);

 private:
  void spawn();
  // Kills (when asked) and reaps the worker; returns how it ended ("SIGSEGV", "exited with status 42").
  std::string reap(bool kill_first);

  std::string pack_;
  std::string manifest_path_, sha256_;
  bool insecure_ = false;
  std::mutex mutex_;
  pid_t pid_ = -1;
  int socket_ = -1;
  int memfd_ = -1;
  std::byte* shm_ = nullptr;
  size_t shm_size_ = 0;
  uint64_t generation_ = 0;
};

// The worker of `pack` for this process (started lazily by ensure_running()).
std::shared_ptr<PackWorker> worker_for(const LoadedPlugin& pack, bool insecure);

}  // namespace isolation
}  // namespace ophost
