// Function symbols of one ELF file (.symtab when present, else .dynsym), looked up by the
// file-relative virtual address. Unlike unw_get_proc_name it checks symbol sizes, so an address in
// an internal function is not named after the nearest exported one, and where MPI_x and PMPI_x
// alias one address it can prefer the MPI_ name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parastack::sampler {

class ElfSymbols {
 public:
  // Reads the file; nullptr if it is not a readable ELF file.
  static std::shared_ptr<const ElfSymbols> load(const std::string& path);
  // Reads an image held in memory (a process's vdso, which has no file); nullptr if it is not ELF.
  static std::shared_ptr<const ElfSymbols> parse(std::span<const unsigned char> image);

  // Where .eh_frame_hdr's binary search table lies (file-relative virtual addresses): what an
  // unwinder needs to find a function's unwind rules.
  struct UnwindTable {
    std::uint64_t header_vaddr = 0;   // .eh_frame_hdr; the table's entries are relative to it
    std::uint64_t entries_vaddr = 0;  // the (start, FDE) pairs, two 32-bit words each
    std::uint64_t count = 0;
  };
  const std::optional<UnwindTable>& unwind_table() const { return unwind_table_; }

  // The function containing the file-relative virtual address, if any.
  std::optional<std::string_view> function_at(std::uint64_t vaddr) const;
  // Where that function starts (file-relative): its identity, found without copying a name. In a
  // stripped file, where its unwind table entry (.eh_frame_hdr) starts.
  std::optional<std::uint64_t> function_start_at(std::uint64_t vaddr) const;
  // Whether the file-relative virtual address lies in a PLT stub (.plt, .plt.sec, .plt.got, .iplt): the
  // jump a call to another library's function goes through, no function of the file's own.
  bool in_plt(std::uint64_t vaddr) const;
  // Whether the file defines (not merely imports) this dynamic symbol.
  bool defines(std::string_view name) const;
  // File-relative virtual address of a defined symbol.
  std::optional<std::uint64_t> address_of(std::string_view name) const;

  // Translate an address in a mapping (start, file offset) to the file's virtual address space.
  std::uint64_t to_vaddr(std::uint64_t address, std::uint64_t map_start, std::uint64_t map_offset) const;
  // The difference between run-time and file virtual addresses for a mapping of this file.
  std::uint64_t load_bias(std::uint64_t map_start, std::uint64_t map_offset) const {
    return map_start - to_vaddr(map_start, map_start, map_offset);
  }

 private:
  struct Symbol {
    std::uint64_t start, size;
    std::string name;
  };
  struct Segment {
    std::uint64_t offset, vaddr;
  };
  const Symbol* symbol_at(std::uint64_t vaddr) const;

  std::vector<Symbol> functions_;                               // sorted by start; MPI_ names first among equal starts
  std::vector<std::pair<std::string, std::uint64_t>> defined_;  // sorted by name
  std::vector<Segment> loads_;
  std::optional<UnwindTable> unwind_table_;
  std::vector<std::uint64_t> unwind_starts_;                  // sorted, from .eh_frame_hdr
  std::vector<std::pair<std::uint64_t, std::uint64_t>> plt_;  // [start, end) of the PLT sections
  bool fixed_address_ = false;                                // ET_EXEC: addresses are absolute
};

}  // namespace parastack::sampler
