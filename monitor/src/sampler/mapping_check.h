// Whether what the maps of a process said a while ago still holds. The sampler keeps what it read
// of a process's files (ReadOnlyMemory's blocks, ProcessImage's unwind tables and symbols) by
// address, and the maps change under it: Open MPI opens and closes dozens of components inside
// MPI_Init, so a library it keeps (mca_coll_tuned) is mapped where a closed one (mca_mtl_psm,
// libnuma) was when the sampler first looked. Served the closed one's unwind rules, every stack
// through the new one was cut short there, and its rank "moved" the moment the maps were read
// again (2026-12-04: a job deadlocked at its first MPI call was taken for one that had shown
// movement). So before what was read of a mapping is used in a sample, the mapping is asked
// again, once per sample: still the same file at exactly the same addresses (os::mapped_file, a
// few microseconds), or the maps are read again.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "os/ids.h"

namespace parastack::sampler {

class MappingCheck {
 public:
  explicit MappingCheck(os::Pid pid) : pid_(pid) {}

  // A new sample: every mapping is asked again before use.
  void begin_sample() { ++sample_; }
  // The maps were just read: all they name is current for the rest of this sample.
  void maps_read() {
    maps_read_in_ = sample_;
    checked_.clear();
  }
  bool maps_read_this_sample() const { return maps_read_in_ == sample_; }
  // Whether [start, end) still maps `path` (as the maps named it), asked of the process at most
  // once per sample and mapping. One that cannot be asked counts as changed: the maps are then
  // read again each sample, slower but never wrong.
  bool still_mapped(std::uint64_t start, std::uint64_t end, const std::string& path);

 private:
  struct Checked {
    std::uint64_t end = 0;
    std::uint64_t sample = 0;
  };
  os::Pid pid_;
  std::uint64_t sample_ = 1;
  std::uint64_t maps_read_in_ = 0;
  std::unordered_map<std::uint64_t, Checked> checked_;  // by start
};

}  // namespace parastack::sampler
