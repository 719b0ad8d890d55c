// Which ranks are behind, from their stacks alone (always on; the progress library, when loaded,
// says more: progress.h). At a communication hang the ranks are grouped by where they wait: the
// call path down to the MPI call, with each frame's call site. The stacks order two groups only
// where code order does:
//   - ranks outside MPI while the others wait in it are the suspects (everyone waits on them);
//   - ranks in MPI_Finalize have done their part: those that still wait elsewhere are behind them
//     (a receive nobody sends while the others finished), and only they are ordered below;
//   - two groups whose paths part inside one function at two call sites: the group at the earlier
//     call site (the lower address) has not reached the later one, provided no loop takes it back
//     (a stack cannot show loops: STAT-TO needs loop-order variables for that), so the report says
//     "in code order".
// Everything else cannot be ordered from stacks, and the result says so.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parastack/diagnosis/rank_set.h"

namespace parastack::diagnosis {

// One rank's stack at the hang: function names from the outermost frame down to its first MPI
// frame (inclusive; the whole stack when outside MPI), and each frame's call site: the return
// address's offset in its function (0 when unknown; the innermost frame's is its pc's).
struct RankStack {
  Rank rank = 0;
  bool in_mpi = false;
  std::vector<std::string> path;
  std::vector<std::uint64_t> call_sites;
  bool finished = false;  // in MPI_Finalize (in any spelling: the caller knows MPI's names)
};

struct StackGroup {
  RankSet ranks;
  bool in_mpi = false;
  bool finished = false;
  std::vector<std::string> path;
  std::vector<std::uint64_t> call_sites;
  std::string where;  // "main > solve > MPI_Allreduce" (the last three frames)
};

struct StackOrder {
  std::vector<StackGroup> groups;             // largest first, then by lowest rank
  std::vector<std::size_t> least_progressed;  // indices into groups; empty: the stacks cannot tell
  std::string why;                            // in words, whichever way it went
};

StackOrder order_by_stacks(std::span<const RankStack> ranks);

}  // namespace parastack::diagnosis
