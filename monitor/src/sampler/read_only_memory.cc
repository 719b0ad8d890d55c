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

std::optional<std::size_t> ReadOnlyMemory::range_holding(std::uint64_t block) const {
  // Mappings are whole pages, so a block lies wholly inside the one that holds its start.
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), block,
                                [](std::uint64_t address, const Range& r) { return address < r.start; });
  if (after == ranges_.begin() || block >= std::prev(after)->end) return std::nullopt;
  return static_cast<std::size_t>(std::prev(after) - ranges_.begin());
}

const ReadOnlyMemory::Block* ReadOnlyMemory::block_at(std::uint64_t block) {
  auto kept = blocks_.find(block);
  const auto range = kept != blocks_.end() ? std::optional(kept->second->range) : range_holding(block);
  if (!range) return nullptr;
  const Range& r = ranges_[*range];
  if (!check_.still_mapped(r.start, r.end, r.path)) {
    // Closed, or another file there: nothing kept can be trusted until the maps are read again.
    ranges_.clear();
    blocks_.clear();
    maps_changed_ = true;
    return nullptr;
  }
  if (kept != blocks_.end()) return &kept->second->bytes;
  auto copy = std::make_unique<Kept>();
  copy->range = *range;
  if (os::read_remote(pid_, block, copy->bytes.data(), kBlockSize).bytes != kBlockSize) return nullptr;
  if (blocks_.size() >= kMaxBlocks) blocks_.clear();
  return &blocks_.emplace(block, std::move(copy)).first->second->bytes;
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
