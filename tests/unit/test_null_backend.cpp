// The "null" skeleton backend: it loads and hands back a full device table, reports itself inactive with a
// reason, and every device function answers UNAVAILABLE instead of pretending to work.
#include "plugin_library.hpp"

#include <ophost/ophost_plugin.h>
#include <ophost/services.hpp>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

using ophost::testing::plugin_library;

class NullBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path lib = plugin_library("null");
    ASSERT_TRUE(fs::exists(lib)) << "null backend not built: " << lib;
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto entry = reinterpret_cast<oph_plugin_entry_fn>(dlsym(handle_, OPH_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    host_.struct_size = OPH_HOST_INFO_STRUCT_SIZE;
    host_.abi_major = OPH_ABI_MAJOR;
    host_.abi_minor = OPH_ABI_MINOR;
    host_.services = ophost::host_services();
    host_.host_version = "0.0.0-test";
    dir_ = lib.parent_path().string();
    host_.plugin_dir = dir_.c_str();
    oph_status* s = entry(&host_, &info_);
    ASSERT_EQ(s, nullptr) << ophost::consume_status(s);
    ASSERT_NE(info_, nullptr);
    ASSERT_EQ(info_->num_devices, 1u);
    dev_ = info_->devices[0];
    ASSERT_NE(dev_, nullptr);
  }

  void TearDown() override {
    if (info_ && info_->release) info_->release(info_->plugin_state);
    if (handle_) dlclose(handle_);
  }

  // Consumes `s`, expecting an UNAVAILABLE status that names the null backend.
  static void expect_unavailable(oph_status* s, const char* what) {
    ASSERT_NE(s, nullptr) << what << " should fail";
    EXPECT_EQ(ophost::host_services()->status_code(s), OPH_CODE_UNAVAILABLE) << what;
    std::string msg = ophost::consume_status(s);
    EXPECT_EQ(msg.rfind("null backend: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }

  void* handle_ = nullptr;
  std::string dir_;
  oph_host_info host_{};
  const oph_plugin_info* info_ = nullptr;
  const oph_device_backend_def* dev_ = nullptr;
};

TEST_F(NullBackend, Handshake) {
  EXPECT_EQ(info_->abi_major, static_cast<uint32_t>(OPH_ABI_MAJOR));
  EXPECT_STREQ(info_->name, "null");
  EXPECT_EQ(info_->kind, OPH_PLUGIN_KIND_DEVICE_BACKEND);
  EXPECT_EQ(info_->num_ops, 0u);
  EXPECT_STREQ(dev_->device_type, "null");
  EXPECT_EQ(dev_->dl_device_type, OPH_DL_EXT_DEV);
  // The skeleton fills every slot, so a copy starts from a complete table.
  EXPECT_NE(dev_->enumerate, nullptr);
  EXPECT_NE(dev_->get_properties, nullptr);
  EXPECT_NE(dev_->alloc, nullptr);
  EXPECT_NE(dev_->free, nullptr);
  EXPECT_NE(dev_->copy, nullptr);
  EXPECT_NE(dev_->stream_create, nullptr);
  EXPECT_NE(dev_->stream_destroy, nullptr);
  EXPECT_NE(dev_->stream_synchronize, nullptr);
  EXPECT_NE(dev_->event_create, nullptr);
  EXPECT_NE(dev_->event_destroy, nullptr);
  EXPECT_NE(dev_->event_record, nullptr);
  EXPECT_NE(dev_->event_synchronize, nullptr);
  EXPECT_NE(dev_->event_elapsed_ms, nullptr);
}

TEST_F(NullBackend, IsInactiveWithAReason) {
  int32_t count = -1;
  const char* reason = nullptr;
  ASSERT_EQ(dev_->enumerate(dev_->backend, &count, &reason), nullptr);
  EXPECT_EQ(count, 0);
  ASSERT_NE(reason, nullptr);
  EXPECT_STREQ(reason, "null backend: a skeleton for backend authors; it has no device");
}

TEST_F(NullBackend, EveryDeviceFunctionIsUnavailable) {
  oph_device_properties p{};
  p.struct_size = sizeof p;
  expect_unavailable(dev_->get_properties(dev_->backend, 0, &p), "get_properties");

  void* ptr = reinterpret_cast<void*>(1);
  expect_unavailable(dev_->alloc(dev_->backend, 0, 64, 64, &ptr), "alloc");
  EXPECT_EQ(ptr, nullptr);
  dev_->free(dev_->backend, 0, nullptr);

  char a[8] = {}, b[8] = {};
  expect_unavailable(dev_->copy(dev_->backend, 0, OPH_COPY_HOST_TO_DEVICE, a, b, sizeof a, nullptr), "copy");

  void* stream = reinterpret_cast<void*>(1);
  expect_unavailable(dev_->stream_create(dev_->backend, 0, &stream), "stream_create");
  EXPECT_EQ(stream, nullptr);
  expect_unavailable(dev_->stream_synchronize(dev_->backend, 0, nullptr), "stream_synchronize");
  dev_->stream_destroy(dev_->backend, 0, nullptr);

  void* event = reinterpret_cast<void*>(1);
  expect_unavailable(dev_->event_create(dev_->backend, 0, &event), "event_create");
  EXPECT_EQ(event, nullptr);
  expect_unavailable(dev_->event_record(dev_->backend, 0, nullptr, nullptr), "event_record");
  expect_unavailable(dev_->event_synchronize(dev_->backend, 0, nullptr), "event_synchronize");
  float ms = -1.0f;
  expect_unavailable(dev_->event_elapsed_ms(dev_->backend, 0, nullptr, nullptr, &ms), "event_elapsed_ms");
  dev_->event_destroy(dev_->backend, 0, nullptr);
}

}  // namespace
