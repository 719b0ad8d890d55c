#include "sampler/mapping_check.h"

#include "os/proc.h"

namespace parastack::sampler {

bool MappingCheck::still_mapped(std::uint64_t start, std::uint64_t end, const std::string& path) {
  if (maps_read_in_ == sample_) return true;
  if (auto it = checked_.find(start); it != checked_.end() && it->second.end == end && it->second.sample == sample_) {
    return true;
  }
  if (os::mapped_file(pid_, start, end) != path) return false;
  // Bounded by the mappings a process has (tens of thousands at most): one entry per start.
  checked_[start] = {end, sample_};
  return true;
}

}  // namespace parastack::sampler
