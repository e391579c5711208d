// Pack isolation in a session (SessionOptions::isolate_packs, ophost --isolate-packs; docs/security.md): the
// nodes of isolated packs keep their registry entry, labels and infer(), but their op definition is replaced by a
// proxy whose create_kernel, compute, destroy_kernel and kernel_impl forward to the pack's worker process
// (isolation/worker_process.hpp). The executor calls the proxy like any kernel, so every run path and hook
// (profiling, deadlines, numerics, dumps) applies unchanged; with the option empty nothing is installed and the
// cost is nil.
//
// compute copies each input into the shared region (except constants, sent once with create_kernel and kept by
// the worker), waits for the worker's reply within the run's deadline, then copies the outputs back (outputs
// whose shape is only known while running come back with their shape and are allocated through the host's
// allocate_output). After a crash the worker is started again at the next call and each kernel is created again
// from its recorded request.
#pragma once

#include <ophost/op_schema.hpp>
#include <ophost/ophost_plugin.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace ophost {

struct SessionOptions;
class PluginSet;
struct PreparedNode;

namespace isolation {

class PackWorker;

// The proxy of one op of an isolated pack: a copy of the pack's definition whose kernel functions are the
// proxy's, and the calls the node is dispatched through (PreparedNode::calls; infer stays the pack's). `def`
// first, so the op pointer the host passes to create_kernel leads back here (a standard-layout struct and its
// first member share their address).
struct ProxyOp {
  oph_op_def def;
  const OpSchema* schema;  // the op's schema (its calls are the pack's own, in the host's copy of the library)
  OpCalls calls;           // def's, read once
  PackWorker* worker;
  uint32_t index;          // in the pack's op table, the same in the worker's copy
};

// The proxies of one session (kept alive as long as its kernels).
class IsolatedPacks {
 public:
  IsolatedPacks();
  ~IsolatedPacks();
  IsolatedPacks(const IsolatedPacks&) = delete;
  IsolatedPacks& operator=(const IsolatedPacks&) = delete;

  std::deque<ProxyOp> ops;
  std::vector<std::shared_ptr<PackWorker>> workers;
};

// Replaces the op definition of every node of an isolated pack by its proxy (before the kernels are created).
// The packs are options.isolate_packs and those $OPHOST_ISOLATE_PACKS names (comma-separated; "*" = every loaded
// operator pack). Returns null when both are empty. Throws Error(kInvalidArgument) for a name that is no loaded
// operator pack (listing those that are), and for an isolated node placed on another device than the CPU.
std::unique_ptr<IsolatedPacks> install_isolation(const PluginSet& plugins, std::vector<PreparedNode>& nodes,
                                                 const SessionOptions& options);

}  // namespace isolation
}  // namespace ophost
