#include "sampler/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "os/scoped_fd.h"

namespace parastack::sampler {
namespace {

// A bounds-checked view of an ELF image: a mapped file, or a copy of a process's vdso.
class ElfBytes {
 public:
  explicit ElfBytes(std::span<const unsigned char> bytes) : bytes_(bytes) {}

  template <typename T>
  const T* at(std::uint64_t offset, std::uint64_t count = 1) const {
    if (offset > bytes_.size() || count * sizeof(T) > bytes_.size() - offset) return nullptr;
    return reinterpret_cast<const T*>(bytes_.data() + offset);
  }

 private:
  std::span<const unsigned char> bytes_;
};

// A read-only mapping of the whole file, unmapped on scope exit.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    os::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) return;
    void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (data == MAP_FAILED) return;
    data_ = static_cast<const unsigned char*>(data);
    size_ = static_cast<std::size_t>(st.st_size);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const unsigned char> bytes() const { return {data_, size_}; }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

bool mpi_name(std::string_view name) { return name.starts_with("MPI_"); }

// .eh_frame_hdr's binary search table (found through PT_GNU_EH_FRAME). Only the layout every x86-64
// toolchain writes is read (counts as udata4, entries as datarel sdata4); any other gives nothing.
std::optional<ElfSymbols::UnwindTable> find_unwind_table(const ElfBytes& file, const Elf64_Phdr& eh_frame_hdr) {
  constexpr unsigned char kUdata4 = 0x03, kSdata4 = 0x0b, kPcrel = 0x10, kDatarelSdata4 = 0x3b;
  constexpr unsigned char kOmit = 0xff;
  constexpr std::uint64_t kTableOffset = 12;  // version and encodings, frame pointer, count
  const auto* header = file.at<unsigned char>(eh_frame_hdr.p_offset, 4);
  if (!header || header[0] != 1 || header[2] != kUdata4 || header[3] != kDatarelSdata4) return std::nullopt;
  const unsigned char frame_pointer_format = header[1] & static_cast<unsigned char>(~kPcrel);
  if (header[1] == kOmit || (frame_pointer_format != kUdata4 && frame_pointer_format != kSdata4)) return std::nullopt;
  const auto* count = file.at<std::uint32_t>(eh_frame_hdr.p_offset + 8);
  if (!count || !file.at<std::int32_t>(eh_frame_hdr.p_offset + kTableOffset, 2 * static_cast<std::uint64_t>(*count))) {
    return std::nullopt;
  }
  return ElfSymbols::UnwindTable{eh_frame_hdr.p_vaddr, eh_frame_hdr.p_vaddr + kTableOffset, *count};
}

// The function starts listed in the unwind table, sorted: every function with unwind information,
// named or not, so a stripped file's functions still have identities.
std::vector<std::uint64_t> unwind_table_starts(const ElfBytes& file, const Elf64_Phdr& eh_frame_hdr,
                                               const ElfSymbols::UnwindTable& table) {
  const auto* entries =
      file.at<std::int32_t>(eh_frame_hdr.p_offset + (table.entries_vaddr - table.header_vaddr), 2 * table.count);
  std::vector<std::uint64_t> starts;
  starts.reserve(table.count);
  for (std::uint64_t i = 0; i < table.count; ++i) {
    starts.push_back(table.header_vaddr + static_cast<std::uint64_t>(static_cast<std::int64_t>(entries[2 * i])));
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

}  // namespace

std::shared_ptr<const ElfSymbols> ElfSymbols::load(const std::string& path) {
  const MappedFile mapped(path);
  return parse(mapped.bytes());
}

std::shared_ptr<const ElfSymbols> ElfSymbols::parse(std::span<const unsigned char> image) {
  const ElfBytes file(image);
  const auto* header = file.at<Elf64_Ehdr>(0);
  if (!header || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_ident[EI_CLASS] != ELFCLASS64) {
    return nullptr;
  }
  auto symbols = std::make_shared<ElfSymbols>();
  symbols->fixed_address_ = header->e_type == ET_EXEC;
  if (const auto* phdrs = file.at<Elf64_Phdr>(header->e_phoff, header->e_phnum)) {
    for (int i = 0; i < header->e_phnum; ++i) {
      if (phdrs[i].p_type == PT_LOAD) symbols->loads_.push_back({phdrs[i].p_offset, phdrs[i].p_vaddr});
      if (phdrs[i].p_type != PT_GNU_EH_FRAME) continue;
      symbols->unwind_table_ = find_unwind_table(file, phdrs[i]);
      if (symbols->unwind_table_)
        symbols->unwind_starts_ = unwind_table_starts(file, phdrs[i], *symbols->unwind_table_);
    }
  }
  const auto* sections = file.at<Elf64_Shdr>(header->e_shoff, header->e_shnum);
  if (!sections) return symbols;
  bool have_symtab = false;
  for (int i = 0; i < header->e_shnum; ++i) have_symtab |= sections[i].sh_type == SHT_SYMTAB;
  if (header->e_shstrndx < header->e_shnum) {
    const Elf64_Shdr& strings = sections[header->e_shstrndx];
    if (const auto* names = file.at<char>(strings.sh_offset, strings.sh_size)) {
      for (int i = 0; i < header->e_shnum; ++i) {
        const Elf64_Shdr& section = sections[i];
        if (section.sh_name >= strings.sh_size || !(section.sh_flags & SHF_EXECINSTR)) continue;
        const std::string_view name(names + section.sh_name,
                                    strnlen(names + section.sh_name, strings.sh_size - section.sh_name));
        if (name == ".plt" || name == ".plt.sec" || name == ".plt.got" || name == ".iplt") {
          symbols->plt_.emplace_back(section.sh_addr, section.sh_addr + section.sh_size);
        }
      }
    }
  }
  for (int i = 0; i < header->e_shnum; ++i) {
    const Elf64_Shdr& section = sections[i];
    const bool dynamic = section.sh_type == SHT_DYNSYM;
    if (!dynamic && section.sh_type != SHT_SYMTAB) continue;
    if (section.sh_link >= header->e_shnum) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    const auto count = section.sh_entsize ? section.sh_size / section.sh_entsize : 0;
    const auto* entries = file.at<Elf64_Sym>(section.sh_offset, count);
    const auto* names = file.at<char>(strings.sh_offset, strings.sh_size);
    if (!entries || !names) continue;
    for (std::uint64_t s = 0; s < count; ++s) {
      const Elf64_Sym& sym = entries[s];
      if (sym.st_name >= strings.sh_size || sym.st_shndx == SHN_UNDEF) continue;
      const std::string_view name(names + sym.st_name, strnlen(names + sym.st_name, strings.sh_size - sym.st_name));
      if (name.empty()) continue;
      if (dynamic) symbols->defined_.emplace_back(std::string(name), sym.st_value);
      // Functions from .symtab when there is one (it is a superset), else from .dynsym.
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value != 0 && dynamic != have_symtab) {
        symbols->functions_.push_back({sym.st_value, sym.st_size, std::string(name)});
      }
    }
  }
  std::sort(symbols->functions_.begin(), symbols->functions_.end(), [](const Symbol& a, const Symbol& b) {
    if (a.start != b.start) return a.start < b.start;
    return mpi_name(a.name) && !mpi_name(b.name);  // MPI_Recv before its alias PMPI_Recv
  });
  std::sort(symbols->defined_.begin(), symbols->defined_.end());
  return symbols;
}

const ElfSymbols::Symbol* ElfSymbols::symbol_at(std::uint64_t vaddr) const {
  // The symbols starting at or below vaddr, nearest first: the first that contains vaddr names it
  // (a few steps back covers aliases and nested local symbols; further away nothing can contain it).
  auto it = std::upper_bound(functions_.begin(), functions_.end(), vaddr,
                             [](std::uint64_t v, const Symbol& s) { return v < s.start; });
  for (int steps = 0; it != functions_.begin() && steps < 16; ++steps) {
    --it;
    if (vaddr < it->start + std::max<std::uint64_t>(it->size, 1)) {
      while (it != functions_.begin() && std::prev(it)->start == it->start) --it;  // MPI_ alias
      return &*it;
    }
  }
  return nullptr;
}

std::optional<std::string_view> ElfSymbols::function_at(std::uint64_t vaddr) const {
  if (const Symbol* symbol = symbol_at(vaddr)) return std::string_view(symbol->name);
  return std::nullopt;
}

std::optional<std::uint64_t> ElfSymbols::function_start_at(std::uint64_t vaddr) const {
  if (const Symbol* symbol = symbol_at(vaddr)) return symbol->start;
  // No symbol: the unwind table entry at or below it. Its end is not read, so an address past the
  // last entry is only believed within kLastEntryReach of it.
  constexpr std::uint64_t kLastEntryReach = 1 << 20;
  auto it = std::upper_bound(unwind_starts_.begin(), unwind_starts_.end(), vaddr);
  if (it == unwind_starts_.begin()) return std::nullopt;
  if (it == unwind_starts_.end() && vaddr - unwind_starts_.back() >= kLastEntryReach) return std::nullopt;
  return *std::prev(it);
}

bool ElfSymbols::in_plt(std::uint64_t vaddr) const {
  return std::any_of(plt_.begin(), plt_.end(),
                     [&](const auto& range) { return range.first <= vaddr && vaddr < range.second; });
}

bool ElfSymbols::defines(std::string_view name) const { return address_of(name).has_value(); }

std::optional<std::uint64_t> ElfSymbols::address_of(std::string_view name) const {
  auto it = std::lower_bound(defined_.begin(), defined_.end(), name,
                             [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it == defined_.end() || it->first != name) return std::nullopt;
  return it->second;
}

std::uint64_t ElfSymbols::to_vaddr(std::uint64_t address, std::uint64_t map_start, std::uint64_t map_offset) const {
  if (fixed_address_) return address;
  const std::uint64_t file_offset = address - map_start + map_offset;
  // The PT_LOAD segment holding this file offset gives the offset-to-vaddr shift.
  const Segment* best = nullptr;
  for (const auto& segment : loads_) {
    if (segment.offset <= file_offset && (!best || segment.offset > best->offset)) best = &segment;
  }
  return best ? file_offset - best->offset + best->vaddr : file_offset;
}

}  // namespace parastack::sampler
