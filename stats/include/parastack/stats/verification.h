// Pure checks run after the model's alarm, on rank states the sampler gathered.
//
// Transient slowdown (§3.3): a slowdown, unlike a hang, has ranks still stepping through the code.
// Given several snapshots of each target rank in time order, progress is seen when a rank
//  (1) is in two different MPI functions, or
//  (2) steps out of, or into, an MPI function other than the polling family
//      (MPI_Test, MPI_Testany, MPI_Testsome, MPI_Testall, MPI_Iprobe).
// A busy-waiting rank alternating between its own loop and MPI_Test, or between two polling
// functions, is not progress: it is how a rank waits.
//
// Faulty ranks (§4): over several checks of all ranks, those OUT_MPI in every check where their
// state was known.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parastack::stats {

enum class RankState { InMpi, OutMpi, Unknown };
std::string_view to_string(RankState state);

struct RankSnapshot {
  RankState state = RankState::Unknown;
  std::string mpi_function;  // innermost MPI entry point when InMpi (MPI_x, PMPI_x or mpi_x_)
};

// MPI_Test / PMPI_Test / mpi_test_ / MPI_TESTALL ... and MPI_Iprobe: the calls a waiting loop polls.
bool is_polling_function(std::string_view mpi_function);

struct ProgressEvidence {
  std::size_t rank_index;  // index into the series given
  RankSnapshot from;
  RankSnapshot to;
};

// series[i] holds the snapshots of target i in time order. Unknown snapshots are skipped.
std::optional<ProgressEvidence> find_progress(const std::vector<std::vector<RankSnapshot>>& series);

// checks[c][r] is the state of rank r in check c (every check lists the same ranks). Returns the
// ranks OUT_MPI in every check where they were known, and known at least once; empty means a
// communication error when the job has hung.
std::vector<int> persistently_out_ranks(const std::vector<std::vector<RankState>>& checks);

}  // namespace parastack::stats
