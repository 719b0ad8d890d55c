// What the unwinder reads of a process's read-only file mappings (the unwind tables of its program
// and libraries), read from the process once and kept. libunwind reads a remote process's unwind
// tables a word at a time, each read a system call: a 4-rank cp2k (stacks 20-40 frames deep
// through a dozen libraries) cost about 3,000 reads per sample, 15 % of a core for the monitor.
// The same tables are read in every sample, and a read-only file mapping does not change while it
// stays mapped. Kept in small blocks, not pages: the unwinder touches a few words here and there
// (a binary search, an FDE, a CIE): cp2k's ranks each kept about 1,100 blocks of 256 bytes, and
// the monitor grew by 375 KiB per rank where 4-KiB pages made it 880 KiB, for the same CPU. Any
// other memory is read from the process each time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "os/ids.h"
#include "os/proc.h"

namespace parastack::sampler {

class ReadOnlyMemory {
 public:
  static constexpr std::uint64_t kBlockSize = 256;
  // 2 MiB per process at most: several times what cp2k needs, a bound against a corrupt stack that
  // sends the unwinder through all of its files. Past it everything kept goes, and is read again.
  static constexpr std::size_t kMaxBlocks = 8192;

  explicit ReadOnlyMemory(os::Pid pid) : pid_(pid) {}

  // The process's mappings now (/proc/PID/maps): blocks are kept only in its readable, unwritable
  // mappings of files. If those changed (a library closed, another mapped), every kept block goes.
  void set_mappings(const std::vector<os::Mapping>& mappings);
  // Reads `length` bytes at `address` (from a kept block when they lie in one); false if the
  // process has nothing mapped there.
  bool read(std::uint64_t address, void* buffer, std::size_t length);
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
  const Block* block_at(std::uint64_t block);

  os::Pid pid_;
  std::vector<Range> ranges_;  // sorted by start
  std::unordered_map<std::uint64_t, std::unique_ptr<Block>> blocks_;
};

}  // namespace parastack::sampler
