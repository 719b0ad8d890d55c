#include "sampler/read_only_memory.h"

#include <algorithm>
#include <cstring>

#include "os/remote_memory.h"

namespace parastack::sampler {

void ReadOnlyMemory::set_mappings(const std::vector<os::Mapping>& mappings) {
  std::vector<Range> ranges;
  for (const auto& m : mappings) {
    if (m.readable && !m.writable && !m.path.empty() && m.path.front() == '/') {
      ranges.push_back({m.start, m.end, m.offset, m.inode, m.path});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  if (ranges == ranges_) return;
  ranges_ = std::move(ranges);
  blocks_.clear();
}

const ReadOnlyMemory::Block* ReadOnlyMemory::block_at(std::uint64_t block) {
  if (auto it = blocks_.find(block); it != blocks_.end()) return it->second.get();
  // Mappings are whole pages, so a block lies wholly inside the one that holds its start.
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), block,
                                [](std::uint64_t address, const Range& r) { return address < r.start; });
  if (after == ranges_.begin() || block >= std::prev(after)->end) return nullptr;
  auto copy = std::make_unique<Block>();
  if (os::read_remote(pid_, block, copy->data(), kBlockSize).bytes != kBlockSize) return nullptr;
  if (blocks_.size() >= kMaxBlocks) blocks_.clear();
  return blocks_.emplace(block, std::move(copy)).first->second.get();
}

bool ReadOnlyMemory::read(std::uint64_t address, void* buffer, std::size_t length) {
  const std::uint64_t block = address & ~(kBlockSize - 1);
  if (length <= kBlockSize && address - block <= kBlockSize - length) {
    if (const Block* kept = block_at(block)) {
      std::memcpy(buffer, kept->data() + (address - block), length);
      return true;
    }
  }
  return os::read_remote(pid_, address, buffer, length).bytes == length;
}

}  // namespace parastack::sampler
