#include "sampler/read_only_pages.h"

#include <algorithm>
#include <cstring>

#include "os/remote_memory.h"

namespace parastack::sampler {

void ReadOnlyPages::set_mappings(const std::vector<os::Mapping>& mappings) {
  std::vector<Range> ranges;
  for (const auto& m : mappings) {
    if (m.readable && !m.writable && !m.path.empty() && m.path.front() == '/') {
      ranges.push_back({m.start, m.end, m.offset, m.inode, m.path});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  if (ranges == ranges_) return;
  ranges_ = std::move(ranges);
  pages_.clear();
}

const ReadOnlyPages::Page* ReadOnlyPages::page_at(std::uint64_t page) {
  if (auto it = pages_.find(page); it != pages_.end()) return it->second.get();
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), page,
                                [](std::uint64_t address, const Range& r) { return address < r.start; });
  if (after == ranges_.begin() || page >= std::prev(after)->end) return nullptr;
  auto copy = std::make_unique<Page>();
  if (os::read_remote(pid_, page, copy->data(), kPageSize).bytes != kPageSize) return nullptr;
  if (pages_.size() >= kMaxPages) pages_.clear();
  return pages_.emplace(page, std::move(copy)).first->second.get();
}

bool ReadOnlyPages::read(std::uint64_t address, void* buffer, std::size_t length) {
  const std::uint64_t page = address & ~(kPageSize - 1);
  if (length <= kPageSize && address - page <= kPageSize - length) {
    if (const Page* kept = page_at(page)) {
      std::memcpy(buffer, kept->data() + (address - page), length);
      return true;
    }
  }
  return os::read_remote(pid_, address, buffer, length).bytes == length;
}

}  // namespace parastack::sampler
