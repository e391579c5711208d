// ophost-pack-worker: one isolated operator pack in a process of its own (see worker.hpp).
#include "exec/isolation_worker.hpp"

#include "exec/abi_calls.hpp"
#include "core/thread_pool.hpp"
#include "exec/isolation_protocol.hpp"
#include <ophost/manifest.hpp>
#include "plugins/plugin_set.hpp"
#include "plugins/verify_cache.hpp"

#include <ophost/op_schema.hpp>
#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ophost {
namespace {

namespace fs = std::filesystem;
using isolation::Place;
using isolation::Reader;
using isolation::Writer;

struct Args {
  std::string pack, manifest, sha256, log_level = "warn";
  int threads = 0;
  long host_pid = 0;
  bool insecure = false;
};

bool parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--insecure-plugin-path") {
      a.insecure = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (k == "--pack") a.pack = v;
    else if (k == "--manifest") a.manifest = v;
    else if (k == "--sha256") a.sha256 = v;
    else if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--host-pid") a.host_pid = std::atol(v.c_str());
    else if (k == "--log-level") a.log_level = v;
    else return false;
  }
  return !a.pack.empty() && !a.manifest.empty() && !a.sha256.empty();
}

// The loader's checks for one plugin folder, in the same order (Discoverer in plugins/plugin_set.cpp): the root
// and the folders above it, the manifest, the library inside the folder, opened once, hashed from that
// descriptor and loaded from it.
std::unique_ptr<LoadedPlugin> load_verified(const Args& a) {
  const fs::path manifest_path(a.manifest);
  const fs::path dir = manifest_path.parent_path();
  const std::string prefix = plugin_message_prefix(a.pack, manifest_path);
  if (!a.insecure) {
    if (std::string problem = plugin_root_problem(dir.parent_path()); !problem.empty())
      throw Error(Code::kPermissionDenied, prefix + problem);
  }
  const Manifest m = read_manifest(manifest_path);
  if (m.name != a.pack || m.kind != "operator-pack")
    throw Error(Code::kFailedPrecondition, prefix + "the manifest now names " + m.kind + " '" + m.name +
                                               "', not the operator pack the host loaded");
  if (m.sha256 != a.sha256)
    throw Error(Code::kDataLoss, prefix + "the manifest's sha256 changed since the host loaded the pack (" +
                                     a.sha256 + " then, " + m.sha256 + " now); restart the host");
  const fs::path lib = (dir / m.library).lexically_normal();
  std::error_code ec;
  const fs::path canon_dir = fs::canonical(dir, ec);
  const fs::path canon_lib = fs::canonical(lib, ec);
  const fs::path inside = canon_lib.lexically_relative(canon_dir);
  if (ec || inside.empty() || *inside.begin() == "..")
    throw Error(Code::kPermissionDenied, prefix + "library " + lib.string() + " does not resolve inside " +
                                             canon_dir.string());
  UniqueFd fd(::open(canon_lib.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(Code::kNotFound, prefix + "cannot open library " + lib.string() + " as a regular file");
  if (!a.insecure && (st.st_mode & (S_IWGRP | S_IWOTH)))
    throw Error(Code::kPermissionDenied, prefix + "library " + lib.string() + " is writable by group or others");
  verify_library_sha256(fd.get(), canon_lib, m.sha256, prefix);
  return LoadedPlugin::load(lib, dir, manifest_path, &m, prefix, std::move(fd));
}

// A tensor with its own 64-byte aligned storage.
struct OwnedTensor {
  std::unique_ptr<std::byte, decltype(&std::free)> data{nullptr, &std::free};
  std::vector<int64_t> shape;
  oph_tensor view{};

  OwnedTensor(oph_dtype dtype, std::vector<int64_t> dims) : shape(std::move(dims)) {
    const size_t bytes = isolation::tensor_bytes(dtype, shape);
    data.reset(static_cast<std::byte*>(std::aligned_alloc(isolation::kShmAlign, isolation::align_up(bytes ? bytes : 1))));
    if (!data) throw Error(Code::kResourceExhausted, "worker: out of memory for " + std::to_string(bytes) + " bytes");
    view.data = data.get();
    view.device = {OPH_DL_CPU, 0};
    view.ndim = static_cast<int32_t>(shape.size());
    view.dtype = dtype;
    view.shape = shape.data();
  }
  size_t bytes() const { return isolation::tensor_bytes(view.dtype, shape); }
};

std::unique_ptr<OwnedTensor> read_tensor(Reader& r) {
  const oph_dtype dtype = r.dtype();
  auto t = std::make_unique<OwnedTensor>(dtype, r.shape());
  auto bytes = r.raw(r.u64());
  if (bytes.size() != t->bytes()) throw Error(Code::kDataLoss, "worker: a tensor's bytes do not match its shape");
  if (!bytes.empty()) std::memcpy(t->data.get(), bytes.data(), bytes.size());
  return t;
}

oph_value_info read_value_info(Reader& r) {
  oph_value_info v{};
  v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
  v.present = r.u32() != 0;
  if (!v.present) return v;
  v.dtype = r.dtype();
  v.ndim = r.i32();
  if (v.ndim > OPH_MAX_NDIM) throw Error(Code::kDataLoss, "worker: value info of rank above OPH_MAX_NDIM");
  for (int32_t k = 0; k < v.ndim; ++k) v.shape[k] = r.i64();
  return v;
}

// One kernel the host asked for, with everything its create arguments pointed to.
struct Kernel {
  OpCalls calls;  // of the pack's op
  void* state = nullptr;
  std::vector<std::unique_ptr<OwnedTensor>> constants;  // per input (null when not a constant)
  std::string impl;
  ~Kernel() {
    if (state && calls.destroy_kernel) calls.destroy_kernel(state);
  }
};

class Worker {
 public:
  explicit Worker(std::unique_ptr<LoadedPlugin> pack) : pack_(std::move(pack)) {}
  ~Worker() {
    if (base_) ::munmap(base_, size_);
  }

  // Serves requests until the host closes the socket.
  void serve() {
    std::vector<std::byte> msg;
    for (;;) {
      const auto got = isolation::read_frame(isolation::kSocketFd, msg);
      if (got == isolation::ReadResult::kEof) return;
      if (got != isolation::ReadResult::kOk) throw Error(Code::kInternal, std::string("worker: read: ") + std::strerror(errno));
      Reader r(msg);
      Writer reply;
      try {
        handle(r, reply);
      } catch (const std::exception& e) {
        reply.clear();
        reply.i32(static_cast<int32_t>(Code::kInternal));
        reply.str(std::string("worker: ") + e.what());
      }
      if (!isolation::write_frame(isolation::kSocketFd, reply.bytes())) return;  // the host is gone
    }
  }

 private:
  void handle(Reader& r, Writer& out) {
    const auto type = static_cast<isolation::Request>(r.u32());
    const uint64_t id = r.u64();
    switch (type) {
      case isolation::Request::kCreate: return create(id, r, out);
      case isolation::Request::kCompute: return compute(id, r, out);
      case isolation::Request::kImpl: return impl(id, out);
      case isolation::Request::kDestroy:
        kernels_.erase(id);
        out.i32(0);
        out.str("");
        return;
    }
    throw Error(Code::kDataLoss, "unknown request " + std::to_string(static_cast<uint32_t>(type)));
  }

  Kernel& kernel(uint64_t id) {
    auto it = kernels_.find(id);
    if (it == kernels_.end()) throw Error(Code::kNotFound, "no kernel " + std::to_string(id));
    return *it->second;
  }

  static void put_status(Writer& out, oph_status* st) {
    Code code = Code::kOk;
    std::string msg = consume_status(st, &code);
    out.i32(static_cast<int32_t>(code));
    out.str(msg);
  }

  void create(uint64_t id, Reader& r, Writer& out) {
    const uint32_t index = r.u32();
    const std::string desc = r.str();
    const std::string node = r.str();
    const auto& ops = pack_->ops();
    if (index >= ops.size() || describe_op(*ops[index]) != desc)
      throw Error(Code::kFailedPrecondition, "the pack's op " + std::to_string(index) + " is not " + desc);
    auto k = std::make_unique<Kernel>();
    k->calls = OpCalls::of(*ops[index]);
    std::vector<oph_value_info> ins(r.u32()), outs;
    k->constants.resize(ins.size());
    for (size_t i = 0; i < ins.size(); ++i) {
      ins[i] = read_value_info(r);
      if (r.u32() != 0) {
        k->constants[i] = read_tensor(r);
        ins[i].constant = &k->constants[i]->view;
      }
    }
    outs.resize(r.u32());
    for (auto& o : outs) o = read_value_info(r);
    // Attributes, with the storage their pointers need.
    const uint32_t nattr = r.u32();
    std::vector<oph_attr_value> attrs(nattr);
    std::vector<std::string> strings;
    std::vector<std::vector<std::string>> string_lists;
    std::vector<std::vector<const char*>> string_ptrs;
    std::vector<std::vector<float>> floats;
    std::vector<std::vector<int64_t>> ints;
    std::vector<std::unique_ptr<OwnedTensor>> tensors;
    strings.reserve(nattr);
    string_lists.reserve(nattr);
    string_ptrs.reserve(nattr);
    for (oph_attr_value& a : attrs) {
      a.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
      a.type = r.i32();
      a.f = r.f32();
      a.i = r.i64();
      a.count = r.u64();
      switch (a.type) {
        case OPH_ATTR_STRING: a.s = strings.emplace_back(r.str()).c_str(); break;
        case OPH_ATTR_FLOATS: {
          auto b = r.raw(a.count * sizeof(float));
          a.floats = floats.emplace_back(a.count).data();
          if (a.count) std::memcpy(floats.back().data(), b.data(), b.size());
          break;
        }
        case OPH_ATTR_INTS: {
          auto b = r.raw(a.count * sizeof(int64_t));
          a.ints = ints.emplace_back(a.count).data();
          if (a.count) std::memcpy(ints.back().data(), b.data(), b.size());
          break;
        }
        case OPH_ATTR_STRINGS: {
          auto& list = string_lists.emplace_back();
          for (size_t s = 0; s < a.count; ++s) list.push_back(r.str());
          auto& ptrs = string_ptrs.emplace_back();
          for (const auto& s : list) ptrs.push_back(s.c_str());
          a.strings = ptrs.data();
          break;
        }
        case OPH_ATTR_TENSOR: a.tensor = &tensors.emplace_back(read_tensor(r))->view; break;
        default: break;
      }
    }
    std::vector<const oph_value_info*> in_ptrs, out_ptrs;
    std::vector<const oph_attr_value*> attr_ptrs;
    for (auto& v : ins) in_ptrs.push_back(&v);
    for (auto& v : outs) out_ptrs.push_back(&v);
    for (auto& v : attrs) attr_ptrs.push_back(&v);
    const oph_kernel_create_args a = kernel_create_args(k->calls.def, in_ptrs, out_ptrs, attr_ptrs, node.c_str());
    oph_status* st = nullptr;
    if (k->calls.create_kernel) {
      try {
        st = k->calls.create_kernel(&a, &k->state);
      } catch (...) {
        st = make_status(Code::kInternal, "create_kernel threw a C++ exception across the C ABI (the pack must "
                                          "catch it and return a status)");
      }
    }
    if (!st) kernels_[id] = std::move(k);
    put_status(out, st);
  }

  // The shared region, mapped at the size the host says it has now.
  void map(size_t size) {
    if (size == size_ && base_) return;
    if (base_) ::munmap(base_, size_);
    base_ = nullptr;
    size_ = 0;
    if (size == 0) return;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, isolation::kShmFd, 0);
    if (p == MAP_FAILED) throw Error(Code::kResourceExhausted, std::string("mmap of the shared region: ") + std::strerror(errno));
    base_ = static_cast<std::byte*>(p);
    size_ = size;
  }

  std::byte* at(uint64_t offset, size_t bytes) const {
    if (offset > size_ || bytes > size_ - offset) throw Error(Code::kDataLoss, "a tensor lies outside the shared region");
    return base_ + offset;
  }

  struct Call {
    std::vector<oph_tensor> out;  // per output
    std::vector<Place> out_place;
    std::vector<std::unique_ptr<OwnedTensor>> run_time;  // per output, allocated by allocate_output
  };

  static oph_status* allocate_output(const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape) {
    auto* call = static_cast<Call*>(ctx->host_data);
    if (index >= call->out.size() || call->out_place[index] != Place::kRunTime)
      return make_status(Code::kOutOfRange, "allocate_output: output " + std::to_string(index) +
                                                " does not exist or was allocated by the host");
    if (ndim < 0 || ndim > OPH_MAX_NDIM || (ndim > 0 && !shape))
      return make_status(Code::kInvalidArgument, "allocate_output: bad rank " + std::to_string(ndim));
    try {
      auto t = std::make_unique<OwnedTensor>(call->out[index].dtype, std::vector<int64_t>(shape, shape + ndim));
      std::memset(t->data.get(), 0, t->bytes());
      call->out[index] = t->view;
      call->run_time[index] = std::move(t);
      return nullptr;
    } catch (const std::exception& e) {
      return make_status(Code::kResourceExhausted, std::string("allocate_output: ") + e.what());
    }
  }

  void compute(uint64_t id, Reader& r, Writer& out) {
    Kernel& k = kernel(id);
    map(r.u64());
    uint64_t used = r.u64();
    std::vector<oph_tensor> in(r.u32());
    std::vector<const oph_tensor*> in_ptrs(in.size(), nullptr);
    if (in.size() != k.constants.size()) throw Error(Code::kDataLoss, "input count differs from create_kernel's");
    std::vector<std::vector<int64_t>> in_shapes(in.size()), out_shapes;
    for (size_t i = 0; i < in.size(); ++i) {
      const auto place = static_cast<Place>(r.u32());
      if (place == Place::kConstant) {
        if (!k.constants[i]) throw Error(Code::kDataLoss, "input " + std::to_string(i) + " was not a constant");
        in_ptrs[i] = &k.constants[i]->view;
      } else if (place == Place::kShm) {
        in[i].dtype = r.dtype();
        in_shapes[i] = r.shape();
        in[i].device = {OPH_DL_CPU, 0};
        in[i].ndim = static_cast<int32_t>(in_shapes[i].size());
        in[i].shape = in_shapes[i].data();
        in[i].data = at(r.u64(), isolation::tensor_bytes(in[i].dtype, in_shapes[i]));
        in_ptrs[i] = &in[i];
      }
    }
    Call call;
    const uint32_t nout = r.u32();
    call.out.resize(nout);
    call.out_place.resize(nout);
    call.run_time.resize(nout);
    out_shapes.resize(nout);
    std::vector<oph_tensor*> out_ptrs(nout, nullptr);
    for (size_t o = 0; o < nout; ++o) {
      call.out_place[o] = static_cast<Place>(r.u32());
      oph_tensor& t = call.out[o];
      t.device = {OPH_DL_CPU, 0};
      if (call.out_place[o] == Place::kAbsent) continue;
      t.dtype = r.dtype();
      out_ptrs[o] = &t;
      if (call.out_place[o] != Place::kShm) continue;
      out_shapes[o] = r.shape();
      t.ndim = static_cast<int32_t>(out_shapes[o].size());
      t.shape = out_shapes[o].data();
      t.data = at(r.u64(), isolation::tensor_bytes(t.dtype, out_shapes[o]));
    }
    const oph_compute_context ctx = cpu_compute_context(in_ptrs, out_ptrs, &Worker::allocate_output, &call);
    oph_status* st = nullptr;
    try {
      st = k.calls.compute(k.state, &ctx);
    } catch (...) {
      st = make_status(Code::kInternal, "compute threw a C++ exception across the C ABI (the pack must catch it "
                                        "and return a status)");
    }
    if (st) {
      put_status(out, st);
      return;
    }
    // Outputs allocated while running go after everything the host placed; the region grows when needed.
    size_t need = used;
    for (const auto& t : call.run_time) {
      if (t) need += isolation::align_up(t->bytes());
    }
    if (need > size_) {
      if (::ftruncate(isolation::kShmFd, static_cast<off_t>(need)) != 0)
        throw Error(Code::kResourceExhausted, std::string("growing the shared region: ") + std::strerror(errno));
      map(need);
    }
    out.i32(0);
    out.str("");
    out.u64(size_);
    for (size_t o = 0; o < nout; ++o) {
      if (call.out_place[o] != Place::kRunTime) continue;
      const auto& t = call.run_time[o];
      out.u32(t ? 1 : 0);
      if (!t) continue;
      out.shape(t->shape);
      out.u64(used);
      if (t->bytes()) std::memcpy(at(used, t->bytes()), t->data.get(), t->bytes());
      used += isolation::align_up(t->bytes());
    }
  }

  void impl(uint64_t id, Writer& out) {
    Kernel& k = kernel(id);
    bool reference = false;
    const char* name = nullptr;
    if (k.state && k.calls.kernel_impl) name = k.calls.kernel_impl(k.state, &reference);
    out.i32(0);
    out.str("");
    out.u32(name ? 1 : 0);
    out.u32(reference ? 1 : 0);
    out.str(name ? name : "");
  }

  std::unique_ptr<LoadedPlugin> pack_;
  std::map<uint64_t, std::unique_ptr<Kernel>> kernels_;
  std::byte* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

int run_pack_worker(int argc, char** argv) noexcept {
  Args a;
  if (!parse_args(argc, argv, a)) {
    std::fprintf(stderr, "ophost-pack-worker: started by the host only (see `ophost run --help`, --isolate-packs)\n");
    return 2;
  }
  // Dies with the host (and exits at once when the host is already gone).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (a.host_pid != 0 && ::getppid() != a.host_pid) return 0;
  std::signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::from_str(a.log_level));
  spdlog::set_pattern("[ophost-pack-worker " + a.pack + "] [%^%l%$] %v");
  if (a.threads > 0) ThreadPool::set_global_threads(a.threads);
  try {
    std::unique_ptr<LoadedPlugin> pack;
    Writer hello;
    try {
      pack = load_verified(a);
      hello.i32(0);
      hello.str("");
      hello.u64(pack->ops().size());
    } catch (const Error& e) {
      hello.i32(static_cast<int32_t>(e.code()));
      hello.str(e.what());
      hello.u64(0);
    }
    if (!isolation::write_frame(isolation::kSocketFd, hello.bytes()) || !pack) return 3;
    Worker(std::move(pack)).serve();
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 4;
  }
}

}  // namespace ophost
