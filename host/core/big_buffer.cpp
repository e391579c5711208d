// ophost::allocate_for_overwrite (big_buffer.hpp).
#include "core/big_buffer.hpp"

#include <sys/mman.h>

#include <ophost/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ophost {

std::shared_ptr<std::byte> allocate_for_overwrite(size_t bytes, const char* what) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t align = bytes >= kHugeBufferBytes ? kHuge : 64;
  const size_t alloc = std::max((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, alloc);
  if (p == nullptr) {
    throw Error(Code::kResourceExhausted,
                "out of memory allocating " + std::to_string(alloc) + " bytes for " + std::string(what));
  }
  // Advice only: a kernel without transparent huge pages refuses it, and 4 KiB pages serve as before.
  if (align == kHuge) (void)::madvise(p, alloc, MADV_HUGEPAGE);
  const size_t block_end = (bytes + 63) / 64 * 64;
  std::memset(static_cast<char*>(p) + bytes, 0, std::max(block_end, size_t{64}) - bytes);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

}  // namespace ophost
