// Buffers for bulk data written once while a model loads (the file's bytes, the initializers).
//
// Why: touching fresh memory is what a load costs on a VM with shadow or paravirtual page tables. Measured on
// the 2-vCPU Zen 5 VM (PVM guest): copying 100 MB into freshly allocated 4 KiB pages took 260 ms, into
// 2 MiB-aligned memory advised MADV_HUGEPAGE 88 ms, into already-touched memory 6 ms. Transparent huge pages are
// "madvise" on Debian's default kernels, so a large buffer asks for them.
#pragma once

#include <cstddef>
#include <memory>

namespace ophost {

// From this size on a buffer is 2 MiB aligned and advised MADV_HUGEPAGE (below, the rounding to 2 MiB would add
// more resident memory than the page faults it saves are worth).
inline constexpr size_t kHugeBufferBytes = size_t{4} << 20;

// `bytes` (at least 1) of uninitialised memory, 64-byte aligned, freed with the last shared_ptr copy; the bytes
// from `bytes` to the end of the last 64-byte block are zero. Throws Error(kResourceExhausted) when there is no
// memory; `what` names the buffer in that message.
std::shared_ptr<std::byte> allocate_for_overwrite(size_t bytes, const char* what);

}  // namespace ophost
