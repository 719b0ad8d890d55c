// Pages of a process's read-only file mappings (the unwind tables of its program and libraries),
// read from the process once and kept. libunwind reads a remote process's unwind tables a word at
// a time, each read a system call: a 4-rank cp2k (stacks 20-40 frames deep through a dozen
// libraries) cost about 3,000 reads per sample, 15 % of a core for the monitor. The same tables
// are read in every sample, and a page of a read-only file mapping does not change while it stays
// mapped, so the unwinder reads it from here. Any other memory is read from the process each time.
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

class ReadOnlyPages {
 public:
  static constexpr std::uint64_t kPageSize = 4096;
  // 16 MiB per process at most: more than the unwind tables of any program, a bound against a
  // corrupt stack that sends the unwinder through all of its files.
  static constexpr std::size_t kMaxPages = 4096;

  explicit ReadOnlyPages(os::Pid pid) : pid_(pid) {}

  // The process's mappings now (/proc/PID/maps): pages are kept only in its readable, unwritable
  // mappings of files. If those changed (a library closed, another mapped), every kept page goes.
  void set_mappings(const std::vector<os::Mapping>& mappings);
  // Reads `length` bytes at `address` (from a kept page when they lie in one); false if the
  // process has nothing mapped there.
  bool read(std::uint64_t address, void* buffer, std::size_t length);
  std::size_t kept() const { return pages_.size(); }

 private:
  // A mapping as the maps name it: the path too, because a freed inode number is soon reused (a
  // deleted file's mapping, then another file's at the same address, seen in this class's test).
  struct Range {
    std::uint64_t start, end, offset, inode;
    std::string path;
    bool operator==(const Range&) const = default;
  };
  using Page = std::array<std::uint8_t, kPageSize>;
  const Page* page_at(std::uint64_t page);

  os::Pid pid_;
  std::vector<Range> ranges_;  // sorted by start
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
};

}  // namespace parastack::sampler
