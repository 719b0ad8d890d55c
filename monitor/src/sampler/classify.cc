#include "sampler/classify.h"

namespace parastack::sampler {

Classification classify_by_address(std::span<const std::uint64_t> frames, bool complete,
                                   std::span<const CodeRange> mpi_code) {
  Classification result;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::uint64_t address = i == 0 ? frames[i] : frames[i] - 1;
    for (const auto& range : mpi_code) {
      if (range.contains(address)) result.entry_frame = i;  // keep going: want the outermost
    }
  }
  if (result.entry_frame) {
    result.state = stats::RankState::InMpi;
  } else {
    result.state = complete ? stats::RankState::OutMpi : stats::RankState::Unknown;
  }
  return result;
}

bool is_mpi_name(std::string_view name) {
  return name.starts_with("MPI_") || name.starts_with("PMPI_") || name.starts_with("mpi_") || name.starts_with("pmpi_");
}

stats::RankState classify_by_name(std::span<const std::string_view> names, bool complete) {
  for (auto name : names) {
    if (is_mpi_name(name)) return stats::RankState::InMpi;
  }
  return complete ? stats::RankState::OutMpi : stats::RankState::Unknown;
}

}  // namespace parastack::sampler
