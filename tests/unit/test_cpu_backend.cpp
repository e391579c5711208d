// The CPU device backend, driven directly through the C ABI: dlopen the built plugin, run the handshake with
// the host's services table, and exercise every function of its device table.
#include "plugin_library.hpp"

#include <ophost/ophost_plugin.h>
#include <ophost/services.hpp>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using ophost::testing::plugin_library;

std::string status_text(oph_status* s) {
  if (!s) return "OK";
  return std::to_string(ophost::host_services()->status_code(s)) + " " + ophost::consume_status(s);
}

class CpuBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path lib = plugin_library("cpu");
    ASSERT_TRUE(fs::exists(lib)) << "CPU backend not built: " << lib;
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto entry = reinterpret_cast<oph_plugin_entry_fn>(dlsym(handle_, OPH_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr) << OPH_PLUGIN_ENTRY_SYMBOL << " not exported";

    host_.struct_size = OPH_HOST_INFO_STRUCT_SIZE;
    host_.abi_major = OPH_ABI_MAJOR;
    host_.abi_minor = OPH_ABI_MINOR;
    host_.services = ophost::host_services();
    host_.host_version = "0.0.0-test";
    dir_ = lib.parent_path().string();
    host_.plugin_dir = dir_.c_str();
    oph_status* s = entry(&host_, &info_);
    ASSERT_EQ(s, nullptr) << status_text(s);
    ASSERT_NE(info_, nullptr);
    ASSERT_EQ(info_->num_devices, 1u);
    dev_ = info_->devices[0];
    ASSERT_NE(dev_, nullptr);
  }

  void TearDown() override {
    if (info_ && info_->release) info_->release(info_->plugin_state);
    if (handle_) dlclose(handle_);
  }

  void* handle_ = nullptr;
  std::string dir_;
  oph_host_info host_{};
  const oph_plugin_info* info_ = nullptr;
  const oph_device_backend_def* dev_ = nullptr;
};

TEST_F(CpuBackend, Handshake) {
  EXPECT_EQ(info_->struct_size, OPH_PLUGIN_INFO_STRUCT_SIZE);
  EXPECT_EQ(info_->abi_major, static_cast<uint32_t>(OPH_ABI_MAJOR));
  EXPECT_EQ(info_->minor_built, static_cast<uint32_t>(OPH_ABI_MINOR));
  EXPECT_LE(info_->minor_required, static_cast<uint32_t>(OPH_ABI_MINOR));
  EXPECT_STREQ(info_->name, "cpu");
  EXPECT_NE(info_->version, nullptr);
  EXPECT_EQ(info_->kind, OPH_PLUGIN_KIND_DEVICE_BACKEND);
  EXPECT_EQ(info_->num_ops, 0u);
  EXPECT_EQ(dev_->struct_size, OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE);
  EXPECT_STREQ(dev_->device_type, "cpu");
  EXPECT_EQ(dev_->dl_device_type, OPH_DL_CPU);
  EXPECT_NE(dev_->enumerate, nullptr);
  EXPECT_NE(dev_->get_properties, nullptr);
  EXPECT_NE(dev_->alloc, nullptr);
  EXPECT_NE(dev_->free, nullptr);
  EXPECT_NE(dev_->copy, nullptr);
}

TEST_F(CpuBackend, WrongAbiMajorIsRefusedWithAStatus) {
  auto entry = reinterpret_cast<oph_plugin_entry_fn>(dlsym(handle_, OPH_PLUGIN_ENTRY_SYMBOL));
  oph_host_info other = host_;
  other.abi_major = OPH_ABI_MAJOR + 1;
  const oph_plugin_info* info = nullptr;
  oph_status* s = entry(&other, &info);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(info, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_FAILED_PRECONDITION);
  EXPECT_NE(ophost::consume_status(s).find("ABI major"), std::string::npos);
}

TEST_F(CpuBackend, EnumeratesOneDevice) {
  int32_t count = -1;
  const char* reason = "unset";
  ASSERT_EQ(dev_->enumerate(dev_->backend, &count, &reason), nullptr);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(reason, nullptr);
}

TEST_F(CpuBackend, Properties) {
  oph_device_properties p{};
  p.struct_size = sizeof p;
  oph_status* s = dev_->get_properties(dev_->backend, 0, &p);
  ASSERT_EQ(s, nullptr) << status_text(s);
  EXPECT_EQ(p.struct_size, sizeof p);
  ASSERT_NE(p.name, nullptr);
  EXPECT_GT(std::strlen(p.name), 0u);
  ASSERT_NE(p.vendor, nullptr);
  EXPECT_GT(std::strlen(p.vendor), 0u);
  ASSERT_NE(p.arch, nullptr);
  EXPECT_GT(std::strlen(p.arch), 0u);
  ASSERT_NE(p.features, nullptr);
  EXPECT_GE(p.multiprocessors, 1);
  EXPECT_GE(p.threads, p.multiprocessors);
  EXPECT_GT(p.total_memory, 0u);
  EXPECT_GT(p.free_memory, 0u);
  EXPECT_LE(p.free_memory, p.total_memory);
  EXPECT_EQ(p.alignment, 64u);
#if defined(__x86_64__)
  EXPECT_STREQ(p.arch, "x86_64");
  // Every x86-64 machine this project targets has SSE4.2 (x86-64-v2).
  EXPECT_NE(std::string(p.features).find("sse4_2"), std::string::npos) << p.features;
#endif
  std::string features = p.features;
  EXPECT_EQ(p.bf16, features.find("avx512_bf16") != std::string::npos ||
                        features.find("amx_bf16") != std::string::npos ||
                        (" " + features + " ").find(" bf16 ") != std::string::npos);
  EXPECT_EQ(p.fp16, features.find("avx512_fp16") != std::string::npos ||
                        features.find("asimdhp") != std::string::npos);
  // Free memory is read fresh on each call.
  oph_device_properties again{};
  again.struct_size = sizeof again;
  ASSERT_EQ(dev_->get_properties(dev_->backend, 0, &again), nullptr);
  EXPECT_EQ(again.total_memory, p.total_memory);
  EXPECT_STREQ(again.name, p.name);
}

TEST_F(CpuBackend, PropertiesRespectAnOlderSmallerStruct) {
  // A host built against an older minor passes a smaller struct: nothing past its struct_size is written.
  struct {
    oph_device_properties p;
    unsigned char guard[64];
  } buf;
  std::memset(&buf, 0xAB, sizeof buf);
  buf.p.struct_size = offsetof(oph_device_properties, free_memory);
  ASSERT_EQ(dev_->get_properties(dev_->backend, 0, &buf.p), nullptr);
  EXPECT_EQ(buf.p.struct_size, offsetof(oph_device_properties, free_memory));
  EXPECT_NE(buf.p.name, nullptr);
  EXPECT_GT(buf.p.total_memory, 0u);
  const auto* raw = reinterpret_cast<const unsigned char*>(&buf.p);
  for (size_t i = offsetof(oph_device_properties, free_memory); i < sizeof buf; ++i)
    ASSERT_EQ(raw[i], 0xAB) << "byte " << i << " written past struct_size";
}

TEST_F(CpuBackend, BadDeviceIdIsAnError) {
  oph_device_properties p{};
  p.struct_size = sizeof p;
  oph_status* s = dev_->get_properties(dev_->backend, 1, &p);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_OUT_OF_RANGE);
  ophost::consume_status(s);
  void* ptr = reinterpret_cast<void*>(1);
  s = dev_->alloc(dev_->backend, 3, 16, 0, &ptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ptr, nullptr);
  ophost::consume_status(s);
}

TEST_F(CpuBackend, AllocIsAlignedForEverySize) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{1000},
                       size_t{4096}, size_t{1} << 20, (size_t{1} << 24) + 3}) {
    void* ptr = nullptr;
    oph_status* s = dev_->alloc(dev_->backend, 0, bytes, 0, &ptr);
    ASSERT_EQ(s, nullptr) << bytes << ": " << status_text(s);
    ASSERT_NE(ptr, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 64, 0u) << bytes;
    if (bytes > 0) {
      std::memset(ptr, 0x5A, bytes);  // the whole block is writable (ASan/valgrind would catch overruns)
      EXPECT_EQ(static_cast<unsigned char*>(ptr)[bytes - 1], 0x5A);
    }
    dev_->free(dev_->backend, 0, ptr);
  }
  dev_->free(dev_->backend, 0, nullptr);  // NULL is accepted
}

TEST_F(CpuBackend, AllocHonoursLargerAlignment) {
  void* ptr = nullptr;
  ASSERT_EQ(dev_->alloc(dev_->backend, 0, 100, 4096, &ptr), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 4096, 0u);
  dev_->free(dev_->backend, 0, ptr);

  oph_status* s = dev_->alloc(dev_->backend, 0, 100, 48, &ptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_INVALID_ARGUMENT);
  ophost::consume_status(s);
}

TEST_F(CpuBackend, HugeAllocFailsWithResourceExhausted) {
  void* ptr = reinterpret_cast<void*>(1);
  oph_status* s = dev_->alloc(dev_->backend, 0, SIZE_MAX - 8, 0, &ptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_RESOURCE_EXHAUSTED);
  std::string msg = ophost::consume_status(s);
  EXPECT_EQ(msg.rfind("cpu: ", 0), 0u) << msg;
}

TEST_F(CpuBackend, CopyAllKinds) {
  const size_t n = 4099;
  std::vector<unsigned char> host_src(n), host_dst(n, 0);
  for (size_t i = 0; i < n; ++i) host_src[i] = static_cast<unsigned char>(i * 31 + 7);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(dev_->alloc(dev_->backend, 0, n, 0, &a), nullptr);
  ASSERT_EQ(dev_->alloc(dev_->backend, 0, n, 0, &b), nullptr);

  oph_status* s = dev_->copy(dev_->backend, 0, OPH_COPY_HOST_TO_DEVICE, a, host_src.data(), n, nullptr);
  ASSERT_EQ(s, nullptr) << status_text(s);
  EXPECT_EQ(std::memcmp(a, host_src.data(), n), 0);
  s = dev_->copy(dev_->backend, 0, OPH_COPY_DEVICE_TO_DEVICE, b, a, n, nullptr);
  ASSERT_EQ(s, nullptr) << status_text(s);
  EXPECT_EQ(std::memcmp(b, host_src.data(), n), 0);
  s = dev_->copy(dev_->backend, 0, OPH_COPY_DEVICE_TO_HOST, host_dst.data(), b, n, nullptr);
  ASSERT_EQ(s, nullptr) << status_text(s);
  EXPECT_EQ(host_dst, host_src);

  // Zero bytes is a no-op, even with NULL pointers.
  EXPECT_EQ(dev_->copy(dev_->backend, 0, OPH_COPY_DEVICE_TO_DEVICE, nullptr, nullptr, 0, nullptr), nullptr);
  // Overlapping device-to-device ranges are handled like memmove.
  s = dev_->copy(dev_->backend, 0, OPH_COPY_DEVICE_TO_DEVICE, static_cast<char*>(b) + 1, b, n - 1, nullptr);
  ASSERT_EQ(s, nullptr);
  EXPECT_EQ(std::memcmp(static_cast<char*>(b) + 1, host_src.data(), n - 1), 0);

  // A copy on a stream works too (the CPU is synchronous).
  if (dev_->stream_create) {
    void* stream = nullptr;
    ASSERT_EQ(dev_->stream_create(dev_->backend, 0, &stream), nullptr);
    std::fill(host_dst.begin(), host_dst.end(), 0);
    ASSERT_EQ(dev_->copy(dev_->backend, 0, OPH_COPY_DEVICE_TO_HOST, host_dst.data(), a, n, stream), nullptr);
    ASSERT_EQ(dev_->stream_synchronize(dev_->backend, 0, stream), nullptr);
    EXPECT_EQ(host_dst, host_src);
    dev_->stream_destroy(dev_->backend, 0, stream);
  }

  // Errors: unknown kind and NULL pointers.
  s = dev_->copy(dev_->backend, 0, 7, b, a, n, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_INVALID_ARGUMENT);
  ophost::consume_status(s);
  s = dev_->copy(dev_->backend, 0, OPH_COPY_HOST_TO_DEVICE, nullptr, a, n, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_INVALID_ARGUMENT);
  ophost::consume_status(s);

  dev_->free(dev_->backend, 0, a);
  dev_->free(dev_->backend, 0, b);
}

TEST_F(CpuBackend, EventsTimeWork) {
  ASSERT_NE(dev_->event_create, nullptr);
  ASSERT_NE(dev_->event_record, nullptr);
  ASSERT_NE(dev_->event_elapsed_ms, nullptr);
  void* start = nullptr;
  void* end = nullptr;
  ASSERT_EQ(dev_->event_create(dev_->backend, 0, &start), nullptr);
  ASSERT_EQ(dev_->event_create(dev_->backend, 0, &end), nullptr);

  // Not yet recorded: a clear error, not garbage.
  float ms = -1.0f;
  oph_status* s = dev_->event_elapsed_ms(dev_->backend, 0, start, end, &ms);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_FAILED_PRECONDITION);
  ophost::consume_status(s);

  ASSERT_EQ(dev_->event_record(dev_->backend, 0, start, nullptr), nullptr);
  usleep(2000);
  ASSERT_EQ(dev_->event_record(dev_->backend, 0, end, nullptr), nullptr);
  ASSERT_EQ(dev_->event_synchronize(dev_->backend, 0, end), nullptr);
  s = dev_->event_elapsed_ms(dev_->backend, 0, start, end, &ms);
  ASSERT_EQ(s, nullptr) << status_text(s);
  EXPECT_GE(ms, 1.5f);
  EXPECT_LT(ms, 5000.0f);
  ASSERT_EQ(dev_->event_elapsed_ms(dev_->backend, 0, start, start, &ms), nullptr);
  EXPECT_GE(ms, 0.0f);

  dev_->event_destroy(dev_->backend, 0, start);
  dev_->event_destroy(dev_->backend, 0, end);
}

TEST_F(CpuBackend, OnlyTheEntrySymbolIsExported) {
  // The SDK's version script hides everything else.
  EXPECT_EQ(dlsym(handle_, "cpu_entry"), nullptr);
  EXPECT_NE(dlsym(handle_, OPH_PLUGIN_ENTRY_SYMBOL), nullptr);
}

}  // namespace
