// One observation of the monitored ranks, the unit the model consumes and the sample trace stores.
#pragma once

#include <cstdint>

namespace parastack::stats {

// Observation::active_path of a set whose known ranks all busy-waited (no hash is ever 2).
inline constexpr std::uint64_t kEveryoneWaiting = 2;

struct Observation {
  double t = 0;   // seconds since monitoring started
  int set = 0;    // which disjoint monitored set was sampled
  int n_out = 0;  // ranks of that set found OUT_MPI
  int n = 0;      // ranks of that set classified (unknown states are not counted)
  // Stasis evidence (docs/statistics.md): a signature of the set's call paths, equal between two
  // observations when no sampled rank moved; 0 when some rank's path was unknown, or a rank was
  // starting or ending MPI. Traces without it replay with 0: no stasis evidence.
  std::uint64_t path = 0;
  bool polling = false;  // some rank was seen in a polling call (MPI_Test, MPI_Iprobe...)
  // The same signature over the ranks that are not busy-waiting (set_signature.h), and how many of
  // them are OUT_MPI; kEveryoneWaiting when every known rank busy-waited, 0 when too few ranks
  // were known. Traces without it replay with `path` and n_out when nobody polled (the two are the
  // same then), else with 0.
  std::uint64_t active_path = 0;
  int active_out = 0;
  int active_ranks = 0;  // how many ranks active_path covers (0 where unknown, as in old traces)
  // Busy-waiting ranks of the set that were OUT_MPI: seen in their polling loop's own code. They
  // wait as surely as the ones seen in MPI_Test (§3.3 reads busy-waiting as IN_MPI), so they do
  // not make a set "many outside" (few_outside). 0 in traces without it.
  int waiting_out = 0;
  // Ranks counted IN_MPI (n - n_out) that were at work outside MPI on another thread
  // (RankSnapshot::at_work_outside): for stillness they are outside, as a computing rank is; a
  // healthy code with a comm thread is "many outside" through a long computation. 0 in traces
  // without it.
  int at_work_outside = 0;
  // Ranks of the set in MPI_Finalize (set_signature.h): they have done their part of the job and
  // take part in no more communication. Beside ranks that all wait in MPI they count as known for
  // active_path, and none of them can be working unseen. 0 in traces without it.
  int finished = 0;
  // The job's serial end (rank 0 summing up its results while the others wait to finish), a phase
  // no model has learned, which may be long and still: some rank of the set finished beside one at
  // work outside MPI, or the watchdog has found the job there (Watchdog: ranks at work in every
  // check of all ranks beside finished ones). Such an observation is no evidence and is not
  // learned (HangModel). False in old traces.
  bool serial_end = false;
  // The progress library's counts were read (RankSnapshot::mpi_completed) and every rank that could
  // be placed had one: no rank of the set waits where its stack cannot say whether it works, so
  // the active ranks are all there is to watch, and a rank that completes MPI calls moves even at
  // one call site. False in traces without it.
  bool counted = false;
  // Some rank of the set completed an MPI call since the set's previous observation (the progress
  // library's counts): the job progressed, so this observation is no suspicion whatever S is.
  // False in traces without it.
  bool progressed = false;
  // Seconds this observation came after the time it was planned for: the monitor, or a rank it had
  // to stop, was kept off the CPU that long (a loaded node, a virtual machine whose host took its
  // CPUs away). A very late observation is no evidence either way (ModelConfig::late_after): the
  // time since the previous one was not watched, and the job may not have run in it at all. 0 in
  // traces without it, and in the simulator's virtual time.
  double late_by = 0;
};

// At most max(1, n / 4) of the set's ranks outside MPI, busy-waiting ones not counted: the paper's
// picture of a hang. (Counted, a hung spinner beside pollers of which one was seen in its loop
// code was "many outside" at 4 ranks; the cut run was learned as healthy stillness and its place
// could never fire again.)
inline bool few_outside(const Observation& o) {
  return o.n > 0 && o.n_out - o.waiting_out + o.at_work_outside <= (o.n / 4 > 1 ? o.n / 4 : 1);
}
inline bool has_active_rank(std::uint64_t active_path) { return active_path != 0 && active_path != kEveryoneWaiting; }
inline bool has_active_rank(const Observation& o) { return has_active_rank(o.active_path); }

// The same count of the active ranks only: a busy-waiting rank seen in its loop code waits.
inline bool few_active_outside(const Observation& o) {
  return o.n > 0 && o.active_out + o.at_work_outside <= (o.n / 4 > 1 ? o.n / 4 : 1);
}

}  // namespace parastack::stats
