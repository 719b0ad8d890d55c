// Pure checks run after the model's alarm, on rank states the sampler gathered.
//
// Transient slowdown (§3.3): a slowdown, unlike a hang, has ranks still stepping through the code.
// Given several snapshots of each target rank in time order, progress is seen when a rank
//  (1) is in two different MPI functions, or
//  (2) steps out of, or into, an MPI function other than the polling family
//      (MPI_Test, MPI_Testany, MPI_Testsome, MPI_Testall, MPI_Iprobe).
// A busy-waiting rank alternating between its own loop and MPI_Test, or between two polling
// functions of one loop, is not progress: it is how a rank waits. But a rank found polling at a
// second place (RankSnapshot::path: another loop function, or the same loop reached from another
// call site) left the wait it polled in before: a wait that ends is progress. Without the progress
// library this is what tells a healthy polling code apart, in a phase where it sits in MPI nearly
// all the time, from a hung one, whose pollers each stay at the one place they wait at (a healthy
// 4-rank poller was once confirmed hung after 96 samples with S <= 1/4: docs/statistics.md).
//
// Work counters (not in the paper): a long collective checkpoint (every rank in
// MPI_File_write_all), or one rank writing a file or building a mesh while the others wait in a
// collective, looks exactly like a hang to the model and to the stack rule. A hung job does no
// I/O and fills no new memory, so a rank whose I/O byte count (/proc/PID/io rchar + wchar) or
// resident size (/proc/PID/stat rss), both readable without stopping it, grew enough between two
// looks during verification shows the job is working.
//
// Faulty ranks (§4): over several checks of all ranks, those OUT_MPI in every check where their
// state was known.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parastack::stats {

enum class RankState { InMpi, OutMpi, Unknown };
std::string_view to_string(RankState state);

// The places of the functions one, two and three calls out from a rank's innermost function: a
// loop that calls helpers on every pass stands at one of them (SetSignatures, "A loop through
// helpers"). Three: a loop's helper that calls a library's entry, which calls its kernel
// (`residual()` calling cblas_dnrm2, then OpenBLAS's dnrm2_k), is found three calls in.
inline constexpr std::size_t kEnclosingPlaces = 3;
using EnclosingPlaces = std::array<std::uint64_t, kEnclosingPlaces>;

struct RankSnapshot {
  RankState state = RankState::Unknown;
  std::string mpi_function;  // innermost MPI entry point when InMpi (MPI_x, PMPI_x or mpi_x_)
  // Where the rank is, as a signature of its call path (docs/statistics.md, "Stasis"): two samples
  // of a rank that has not moved have the same path; a rank that moved almost surely not. Polling
  // (a loop around MPI_Test/MPI_Iprobe) has one path whether the rank is seen in MPI or in its own
  // loop code. 0: unknown (the sampler could not tell), which is never taken as "not moved".
  std::uint64_t path = 0;
  // The paths a sample standing in the function one, two and three calls out from the innermost
  // would have, for a rank at work outside MPI (0: none): a loop that calls helpers on every pass
  // is seen in them in turn, and stands still at the loop (SetSignatures, "A loop through helpers").
  EnclosingPlaces enclosing{};
  // MPI calls the rank has completed so far, from its progress page when it runs with the progress
  // library (parastack run --mpi-progress; mpi_progress/include/parastack/mpi_progress/page.h):
  // a blocking call that returned, or a test or probe that found its message. The count growing
  // between two snapshots is the rank moving, whatever its stack shows (a loop around one call
  // site, a polling loop whose tests succeed). nullopt: no library, or its page was not readable.
  std::optional<std::uint64_t> mpi_completed = std::nullopt;
  // With a count: the rank made polls that found nothing (MPI_Test, MPI_Iprobe...) since the
  // monitor last read its page. It is busy-waiting, wherever this sample found it: in the polling
  // call, in its loop, or in the work it does between two polls.
  bool mpi_polled = false;
  // IN_MPI on one thread while another of its threads was running outside MPI (an
  // MPI_THREAD_MULTIPLE rank whose comm thread polls while its main thread computes): IN_MPI in S
  // (§6), but for stillness a rank at work outside MPI, never a busy-waiting one; `path` is then
  // the place of all those threads.
  bool at_work_outside = false;
  // With at_work_outside: the place of its thread in MPI alone (0: unknown). Verification reads a
  // move of that thread (a wait that ended) apart from its working threads going round their work,
  // which is no step through the code, as a single-threaded rank's spin is none.
  std::uint64_t mpi_thread_path = 0;
};

// MPI_Test / PMPI_Test / mpi_test_ / MPI_TESTALL ... and MPI_Iprobe: the calls a waiting loop polls.
bool is_polling_function(std::string_view mpi_function);
// MPI_Init and MPI_Init_thread in any spelling (PMPI_, Fortran mpi_init_, MPI_INIT_THREAD), and Open
// MPI's ompi_mpi_init: a rank there waits for the job's other ranks to start.
bool is_startup_function(std::string_view mpi_function);
// MPI_Finalize in any spelling, and Open MPI's ompi_mpi_finalize, which MPI_Finalize tail-jumps
// into (so no MPI_Finalize frame is left): a rank there has done its part of the job and waits for
// the others to finish theirs. It takes part in no more communication of the application.
bool is_shutdown_function(std::string_view mpi_function);

struct ProgressEvidence {
  std::size_t rank_index;  // index into the series given
  RankSnapshot from;
  RankSnapshot to;
  std::size_t at = 0;  // index of `to` in that rank's series
  // The rank was found polling at another place than at its previous polling snapshot (`from`,
  // with non-polling snapshots between them skipped): the wait it polled in ended.
  bool changed_place = false;
};

// Follows one rank's snapshots as they come, in time order, and says at which ones it moved: the
// rules of find_progress below, one snapshot at a time (Unknown ones are skipped). The evidence's
// rank_index and at are left 0 for the caller to fill in.
class RankMovement {
 public:
  std::optional<ProgressEvidence> step(const RankSnapshot& snapshot);

 private:
  std::optional<RankSnapshot> previous_;  // the last known snapshot
  std::optional<RankSnapshot> polled_;    // the last one in a polling call
};

// series[i] holds the snapshots of target i in time order. Unknown snapshots are skipped. Besides
// (1) and (2) above, a rank in the same (non-polling) MPI call from another call site moved too,
// when both its paths are known (RankSnapshot::path), so did a rank polling at another place than
// at its previous snapshot in a polling call (both paths known, whatever came in between; unless
// both have counts, which then decide), and so did a rank whose count of completed MPI calls grew
// (RankSnapshot::mpi_completed, both known).
std::optional<ProgressEvidence> find_progress(const std::vector<std::vector<RankSnapshot>>& series);
// The same, the latest movement (largest `at`): what a streak after it must be tested from.
std::optional<ProgressEvidence> find_last_progress(const std::vector<std::vector<RankSnapshot>>& series);

// The snapshot indices (ascending, distinct) at which some rank moved: the gaps between them are
// how long the job stood still.
std::vector<std::size_t> progress_columns(const std::vector<std::vector<RankSnapshot>>& series);

// What a rank has done, by what the kernel keeps for it.
struct WorkCounters {
  std::uint64_t io_bytes = 0;        // read and written so far, files and pipes alike
  std::uint64_t resident_bytes = 0;  // its memory in RAM now
  // CPU time of all its threads so far; how long its main thread was runnable but waited for a
  // CPU (the run queue); how long ago the rank started (age_ns 0: not known).
  std::uint64_t cpu_ns = 0;
  std::uint64_t run_delay_ns = 0;
  std::uint64_t age_ns = 0;
  // Which node it runs on (the probe's numbering; ranks of one node share its CPUs).
  int node = 0;
  friend bool operator==(const WorkCounters&, const WorkCounters&) = default;
};

// Default thresholds of work. I/O: well above what an idle MPI runtime reads or writes in an
// interval (heartbeats, a stray log line), well below a checkpoint's rate. Resident growth: hung
// Open MPI ranks (spinning, asleep, deadlocked, polling; sampled or not) mapped not one page in
// 15 s; more than khugepaged adds to a process in one collapse into a huge page (under 2 MiB);
// code filling new arrays adds that in well under a second (verification may look for only a
// few tenths). A rare collapse in a hung job costs one alarm, not the hang: the next alarm comes.
// Not page faults: automatic NUMA balancing makes a loop over old data fault without growing.
inline constexpr std::uint64_t kIoProgressBytes = 1 << 20;
inline constexpr std::uint64_t kResidentGrowthBytes = 2 << 20;

struct WorkProgress {
  enum class Kind { Io, Memory };
  std::size_t rank;  // index into the counters given
  Kind kind;
  std::uint64_t bytes;  // read and written, or resident growth
};

// before[r] and after[r]: rank r's counters at two looks (nullopt: unknown, e.g. the rank exited).
// Returns a rank that did at least min_io bytes of I/O, or whose resident size grew by at least
// min_growth, in between.
std::optional<WorkProgress> find_work(const std::vector<std::optional<WorkCounters>>& before,
                                      const std::vector<std::optional<WorkCounters>>& after,
                                      std::uint64_t min_io = kIoProgressBytes,
                                      std::uint64_t min_growth = kResidentGrowthBytes);
// "rank 3 is doing I/O: 12.0 MiB", "rank 0 is filling new memory: +24.0 MiB resident".
std::string describe_work(const WorkProgress& work);

// CPU starvation: a node loaded for a while (a burst of other processes, a daemon, another job's
// prolog on a shared node) keeps the job's ranks from running at all. The model's observations then
// come from a job frozen by its node, not from the job the model learned: ranks that give the CPU
// away while they wait in MPI (MPI_Test and blocking calls with mpi_yield_when_idle, which Open
// MPI sets on an oversubscribed node) wait their turn inside MPI, and a healthy job is seen all in
// MPI, still, for as long as the load lasts (a real 4-rank polling job under three nice -10 CPU
// hogs: every rank ran 0 % of the time, 100 % in the run queue, and was confirmed hung). No hang is
// judged while a node's ranks, together, ran at most `max_cpu_fraction` of their usual CPU in the
// window while runnable, waiting for a CPU, for at least `min_waiting` of it on average. Together:
// a spinning rank starves its yielding peers on its own (the spin hang of a 4-rank ps_solver on 2
// cores: its peers ran 0 % and waited 100 %), but it runs, so its node's ranks together do not
// starve; nor do a deadlock's (yielding, they run about as much as before: a deadlocked ps_poller
// on 2 cores, 45-53 % each against 34-64 %) or a sleep's (asleep, a rank does not wait).
struct CpuStarvation {
  std::size_t rank;       // the node's first rank (index into the counters given)
  int ranks;              // the node's ranks with known counters
  double ran;             // CPUs they ran on in the window, together
  double usually_ran;     // CPUs they ran on over their lives before it
  double waited;          // share of the window they waited for a CPU, on average
  double window_seconds;  // the window (the first of the node's ranks')
};
inline constexpr double kStarvedCpuFraction = 0.2;
inline constexpr double kStarvedWaiting = 0.5;
inline constexpr double kStarvationWindowSeconds = 0.5;  // shorter windows are too coarse to tell
std::optional<CpuStarvation> find_starvation(const std::vector<std::optional<WorkCounters>>& before,
                                             const std::vector<std::optional<WorkCounters>>& after,
                                             double max_cpu_fraction = kStarvedCpuFraction,
                                             double min_waiting = kStarvedWaiting);
// "the node of rank 0 is short of CPU: its 4 ranks ran on 0.01 CPUs in the last 12.5 s (usually on
// 1.52) and waited for one 98 % of the time".
std::string describe_starvation(const CpuStarvation& starved);

// A rank's state in a check of all ranks: OUT_MPI also for a rank at work outside MPI on another
// thread (RankSnapshot::at_work_outside), whose main thread may be the one spinning for ever while
// its comm thread polls; S, the paper's fraction, keeps it IN_MPI.
inline RankState checked_state(const RankSnapshot& s) { return s.at_work_outside ? RankState::OutMpi : s.state; }

// checks[c][r] is the state of rank r in check c (every check lists the same ranks). Returns the
// ranks OUT_MPI in every check where they were known, and known at least once; empty means a
// communication error when the job has hung.
std::vector<int> persistently_out_ranks(const std::vector<std::vector<RankState>>& checks);

}  // namespace parastack::stats
