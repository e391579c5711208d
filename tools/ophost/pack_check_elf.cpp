// A small reader for the dynamic symbol table (.dynsym) and DT_NEEDED entries of ELF64 shared objects, so that
// `ophost pack check` does not depend on nm/readelf being installed.
#include "pack_check.hpp"

#include <ophost/error.hpp>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace ophost::cli {

namespace {

[[noreturn]] void bad(const std::filesystem::path& p, const std::string& why) {
  throw Error(Code::kInvalidArgument, p.string() + " is not a usable ELF shared library: " + why);
}

}  // namespace

uint16_t host_elf_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#elif defined(__riscv)
  return EM_RISCV;
#elif defined(__powerpc64__)
  return EM_PPC64;
#else
  return EM_NONE;
#endif
}

ElfDynamicInfo read_elf_dynamic(const std::filesystem::path& library) {
  std::ifstream in(library, std::ios::binary);
  if (!in) bad(library, "cannot be read");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t size = data.size();
  auto at = [&](uint64_t off, uint64_t len, const char* what) -> const char* {
    if (off > size || len > size - off) bad(library, std::string("truncated (") + what + " out of the file)");
    return data.data() + off;
  };
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0) bad(library, "no ELF header");
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) bad(library, "not a 64-bit ELF file");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) bad(library, "not little-endian");
  if (eh.e_type != ET_DYN) bad(library, "not a shared object (e_type " + std::to_string(eh.e_type) + ")");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) bad(library, "unexpected section header size");

  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (eh.e_shnum) std::memcpy(sections.data(), at(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), "section headers"),
                              sections.size() * sizeof(Elf64_Shdr));
  auto string_at = [&](const Elf64_Shdr& strtab, uint64_t index) -> std::string {
    if (index >= strtab.sh_size) bad(library, "string index out of its table");
    const char* base = at(strtab.sh_offset, strtab.sh_size, "string table");
    size_t max = strtab.sh_size - index;
    return std::string(base + index, strnlen(base + index, max));
  };

  ElfDynamicInfo info;
  info.machine = eh.e_machine;
  bool have_dynsym = false;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_DYNAMIC) continue;
    if (sh.sh_link >= sections.size()) bad(library, "section links to a missing string table");
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (sh.sh_type == SHT_DYNSYM) {
      have_dynsym = true;
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      if (sh.sh_entsize != 0 && sh.sh_entsize != sizeof(Elf64_Sym)) bad(library, "unexpected symbol size");
      const char* base = at(sh.sh_offset, sh.sh_size, ".dynsym");
      for (size_t i = 1; i < n; ++i) {  // entry 0 is the null symbol
        Elf64_Sym s;
        std::memcpy(&s, base + i * sizeof(Elf64_Sym), sizeof s);
        unsigned bind = ELF64_ST_BIND(s.st_info);
        unsigned vis = ELF64_ST_VISIBILITY(s.st_other);
        if (s.st_shndx == SHN_UNDEF) continue;
        if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
        if (vis != STV_DEFAULT && vis != STV_PROTECTED) continue;
        std::string name = string_at(strtab, s.st_name);
        if (!name.empty()) info.exported.push_back(std::move(name));
      }
    } else {
      size_t n = sh.sh_size / sizeof(Elf64_Dyn);
      const char* base = at(sh.sh_offset, sh.sh_size, ".dynamic");
      for (size_t i = 0; i < n; ++i) {
        Elf64_Dyn d;
        std::memcpy(&d, base + i * sizeof(Elf64_Dyn), sizeof d);
        if (d.d_tag == DT_NULL) break;
        if (d.d_tag == DT_NEEDED) info.needed.push_back(string_at(strtab, d.d_un.d_val));
      }
    }
  }
  if (!have_dynsym) bad(library, "no dynamic symbol table (.dynsym)");
  return info;
}

}  // namespace ophost::cli
