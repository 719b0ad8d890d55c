// What the unwinder reads of a process's read-only file mappings (the unwind tables of its program
// and libraries), read from the process once and kept. libunwind reads a remote process's unwind
// tables a word at a time, each read a system call: a 4-rank cp2k (stacks 20-40 frames deep
// through a dozen libraries) cost about 3,000 reads per sample, 15 % of a core for the monitor.
// The same tables are read in every sample, and a read-only file mapping does not change while it
// stays mapped. Kept in small blocks, not pages: the unwinder touches a few words here and there
// (a binary search, an FDE, a CIE): cp2k's ranks each kept about 1,100 blocks of 256 bytes, and
// the monitor grew by 375 KiB per rank where 4-KiB pages made it 880 KiB, for the same CPU. Any
// other memory is read from the process each time. A mapping's kept blocks are used in a sample
// only once it has been checked to map the same file still (MappingCheck).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "os/ids.h"
#include "os/proc.h"
#include "sampler/mapping_check.h"

namespace parastack::sampler {

class ReadOnlyMemory {
 public:
  static constexpr std::uint64_t kBlockSize = 256;
  // 2 MiB per process at most: several times what cp2k needs, a bound against a corrupt stack that
  // sends the unwinder through all of its files. Past it everything kept goes, and is read again.
  static constexpr std::size_t kMaxBlocks = 8192;

  ReadOnlyMemory(os::Pid pid, MappingCheck& check) : pid_(pid), check_(check) {}

  // The process's mappings now (/proc/PID/maps): blocks are kept only in its readable, unwritable
  // mappings of files. If those changed (a library closed, another mapped), every kept block goes.
  void set_mappings(const std::vector<os::Mapping>& mappings);
  // Reads `length` bytes at `address` (from a kept block when they lie in one); false if the
  // process has nothing mapped there. A mapping found changed (MappingCheck) makes everything kept
  // go, and the read is made from the process; maps_changed() then says so, once.
  bool read(std::uint64_t address, void* buffer, std::size_t length);
  bool maps_changed() { return std::exchange(maps_changed_, false); }
  std::size_t kept() const { return blocks_.size(); }

 private:
  // A mapping as the maps name it: the path too, because a freed inode number is soon reused (a
  // deleted file's mapping, then another file's at the same address, seen in this class's test).
  struct Range {
    std::uint64_t start, end, offset, inode;
    std::string path;
    bool operator==(const Range&) const = default;
  };
  using Block = std::array<std::uint8_t, kBlockSize>;
  struct Kept {
    Block bytes;
    std::size_t range;  // in ranges_
  };
  const Block* block_at(std::uint64_t block);
  std::optional<std::size_t> range_holding(std::uint64_t block) const;

  os::Pid pid_;
  MappingCheck& check_;
  std::vector<Range> ranges_;  // sorted by start
  std::unordered_map<std::uint64_t, std::unique_ptr<Kept>> blocks_;
  bool maps_changed_ = false;
};

}  // namespace parastack::sampler
