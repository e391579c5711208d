// `ophost pack check DIR`: validates a plugin folder for its author (manifest, ABI, exported symbols, every op
// definition, and an opcheck-style run of every CPU op). Each finding says what to change.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ophost::cli {

// Dynamic symbols and dependencies of an ELF shared library (read from .dynsym / .dynamic, no tools needed).
struct ElfDynamicInfo {
  std::vector<std::string> exported;  // defined, global or weak, default or protected visibility
  std::vector<std::string> needed;    // DT_NEEDED entries
  uint16_t machine = 0;               // e_machine
};

// Reads an ELF64 little-endian shared object. Throws ophost::Error(kInvalidArgument) with the reason when the
// file is not one (or is truncated).
ElfDynamicInfo read_elf_dynamic(const std::filesystem::path& library);

// `ophost pack check DIR` (argv[0] is "check"). Exit 0 when clean, 1 with findings.
int cmd_pack_check(int argc, char** argv);

// e_machine of the running host ("what this ophost was built for").
uint16_t host_elf_machine();

}  // namespace ophost::cli
