// ONNX TensorProto -> ophost::Tensor. Internal to the host (pulls in the ONNX protobuf classes).
#pragma once

#include <ophost/tensor.hpp>

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

namespace ophost {

// The DType for an ONNX TensorProto.DataType value, or nullopt when ophost has no such element type
// (complex, float8, int4, ...).
std::optional<DType> dtype_from_onnx(int32_t elem_type) noexcept;

// Name of an ONNX element type for messages ("float32", "complex64", "float8e4m3fn", ... or "type N").
std::string onnx_dtype_name(int32_t elem_type);

// One buffer that the raw_data initializers of a model are carved from, 64-byte aligned each: a single large
// allocation gets transparent huge pages (core/big_buffer.hpp), where one per tensor would page-fault 4 KiB at a
// time. Tensors taken from it share its ownership (the block is freed with the last of them).
class InitializerBlock {
 public:
  explicit InitializerBlock(size_t bytes);
  // `bytes` from the block, or nullptr when they do not fit; the padding to the next 64 bytes is zeroed.
  std::byte* take(size_t bytes);
  const std::shared_ptr<std::byte>& owner() const noexcept { return block_; }

 private:
  std::shared_ptr<std::byte> block_;
  size_t size_ = 0, used_ = 0;
};

// Decodes a TensorProto (raw_data, typed *_data fields, or external data). External data is read from
// `base_dir`, and only from files that resolve inside it: absolute locations, ".." escapes, symlinks leading
// outside, negative or non-numeric offset/length and ranges past the end of the file are rejected before
// anything is opened. Throws ophost::Error naming the tensor; callers add the file name.
// Tensors over `max_bytes` (or of rank above OPH_MAX_NDIM) are rejected before anything is allocated or read.
// raw_data goes into `block` when one is given and has room.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                         uint64_t max_bytes = uint64_t{4} << 30, InitializerBlock* block = nullptr);

}  // namespace ophost
