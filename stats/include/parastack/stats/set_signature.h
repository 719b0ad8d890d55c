// One observation from a set's rank snapshots: S (§3), and the set's call-path signatures for
// stasis evidence (docs/statistics.md, "Detection from the first second"). Pure.
//
// Two signatures. `path` covers every known rank: two equal ones mean no sampled rank moved. The
// stasis model tests it. `active_path` covers only the ranks that are not busy-waiting: a rank in
// a polling call (MPI_Test, MPI_Iprobe...), or seen in its own code at a place where some rank was
// once seen polling (the loop around the polling call), waits as surely as one blocked in MPI_Recv,
// the paper's reading of busy-waiting (§3.3), but unlike a blocked rank it may hop between the
// polling calls of its loop in a hang. So in a code whose ranks poll while they wait (hpcc's
// RandomAccess, task farms), a hang shows as the *active* ranks standing still (the spinning rank,
// the one blocked in a receive nobody sends), whatever the waiting ones do. The model-free stasis
// rule tests `active_path`; with no polling at all the two signatures are the same.
//
// A loop through helpers. A rank at work outside MPI has its innermost function as its place, so
// a loop that calls a helper (or two) on every pass is seen in the loop, then in a helper, then in
// the loop again: moving, though it never leaves the loop. Such a rank, once it has gone back to a
// place it left while every sample of it stood in one function's loop or its helpers (one to three
// calls in: RankSnapshot::enclosing), stands at that function's place until a sample finds it
// elsewhere: as a loop with its helpers inlined does. Phases called one after the other never
// come back, so they still move; a loop around a polling call is the poller's wait, judged by the
// rules above, never a loop of this kind (RankLoop).
//
// With the progress library (RankSnapshot::mpi_completed) each rank's place also holds its count of
// completed MPI calls: a rank that completed one between two samples moved, even back at the same
// call site. A busy-waiting rank with a count is active: its count alone says whether its wait
// ended (it counts as in MPI), so a code whose ranks all poll is watched like one whose ranks block.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "parastack/stats/observation.h"
#include "parastack/stats/verification.h"

namespace parastack::stats {

// One rank's place for stillness, sample after sample: its path, or the place of the loop it goes
// round through helpers (above).
class RankLoop {
 public:
  // Samples of the loop and its helpers needed, in a row, with a return to a place left.
  static constexpr std::size_t kSamples = 4;

  // The place of this snapshot (its path, or its loop's). `at_work`: a rank outside MPI that is not
  // busy-waiting, or one at work outside MPI on another thread; any other snapshot ends the loop.
  // `polling_places`: where ranks of the job were seen polling.
  std::uint64_t step(const RankSnapshot& snapshot, bool at_work,
                     const std::unordered_set<std::uint64_t>& polling_places);

 private:
  struct Seen {
    std::uint64_t path;
    EnclosingPlaces enclosing;
  };
  std::array<Seen, kSamples> recent_{};  // the last samples at work, oldest first
  std::size_t count_ = 0;
  std::uint64_t loop_ = 0;  // the place of the loop it goes round; 0: none
};

class SetSignatures {
 public:
  // Polling places remembered at most (a job has a handful; the cap bounds memory).
  static constexpr std::size_t kMaxPollingPlaces = 4096;

  // The observation of `set` at t from its ranks' snapshots (in the set's rank order). Learns the
  // polling places these snapshots show.
  Observation observe(double t, int set, const std::vector<RankSnapshot>& targets);

  bool is_polling_place(std::uint64_t path) const { return polling_places_.contains(path); }
  // Whether this snapshot is of a rank waiting in a polling loop (after observe() has seen it).
  bool busy_waiting(const RankSnapshot& snapshot) const;

 private:
  std::unordered_set<std::uint64_t> polling_places_;
  // Each set's ranks' counts of completed MPI calls at its previous observation (Observation::progressed).
  std::unordered_map<int, std::vector<std::optional<std::uint64_t>>> previous_completed_;
  // Each set's ranks' loops through helpers.
  std::unordered_map<int, std::vector<RankLoop>> loops_;
};

}  // namespace parastack::stats
