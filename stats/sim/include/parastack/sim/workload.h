// Synthetic MPI jobs for the detection simulator: what each rank is doing at any instant, computed
// in O(1) from hashes so that million-rank jobs and thousands of job-hours stay cheap.
//
// A job runs cycles of length T (per phase): at the start of a cycle every rank is still finishing
// the previous collective (a random global offset), then computes for its own time (mean
// compute_fraction * T, with per-rank imbalance and per-iteration jitter), then waits in MPI: first
// in the call that waits for the slowest rank, then through the cycle's remaining MPI calls.
// Transient slowdowns stretch the job's timeline: a straggler node computes `factor` times slower
// while everybody else waits for it; system noise briefly slows the whole job. A hang freezes the
// faulty ranks in computation (or, for a deadlock, nobody) and blocks the others at their next MPI
// call, where busy-waiting codes keep polling MPI_Test. Codes whose work runs inside a polling loop
// (WorkloadShape::work_polls) poll while they work and block while they wait.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "parastack/stats/verification.h"

namespace parastack::sim {

struct Phase {
  double cycle_seconds;
  double compute_fraction;
};

struct WorkloadShape {
  std::string name;
  std::string description;
  int ranks = 1024;
  int ranks_per_node = 32;
  std::vector<Phase> phases{{0.1, 0.6}};
  double phase_seconds = 0;         // length of each phase before the next; 0: one phase
  double cycle_offset = 0.1;        // max global start offset of a cycle, fraction of T
  double rank_jitter = 0.1;         // per-iteration compute noise, relative, uniform +-
  double imbalance = 0.0;           // fixed per-rank compute offset, relative, uniform +-
  int mpi_calls_per_cycle = 3;      // distinct MPI calls a rank goes through per cycle
  bool busy_wait = false;           // waits are MPI_Test polling loops
  double poll_out_fraction = 0.05;  // chance a polling rank is seen in its own loop code
  double slowdowns_per_hour = 0;    // straggler-node transient slowdowns
  double slowdown_min_seconds = 10, slowdown_max_seconds = 120;
  double slowdown_min_factor = 3, slowdown_max_factor = 20;
  double noise_per_hour = 0;  // short whole-job slowdowns (system noise)
  // Collective checkpoints: every rank inside MPI_File_write_all, the job's timeline paused. A
  // long one is indistinguishable from a hang by stack sampling (docs/statistics.md, limits).
  double checkpoints_per_hour = 0;
  double checkpoint_min_seconds = 10, checkpoint_max_seconds = 120;
  double checkpoint_bytes_per_second = 200e6;  // per aggregator (one per node)
  bool poll_every_call = false;                // every MPI call is a polling loop (all-polling codes)
  // The work runs inside a polling loop and the waits block (hpcc's RandomAccess: a rank applies
  // updates between MPI_Testany polls, and once done blocks in MPI_Waitany for the slowest). While
  // it works a rank is seen polling (MPI_Test, or its loop code with poll_out_fraction) or, for
  // step_out_fraction of its time in stretches of step_out_seconds, in the code it calls between
  // two polls; ranks done with their work wait, blocked in MPI, beside the ones still polling. In a
  // hang nothing arrives to work on: the faulty rank spins in its own code, or for a deadlock one
  // rank waits in a receive nobody sends, and everybody else polls for ever.
  bool work_polls = false;
  double step_out_fraction = 0, step_out_seconds = 0.5;
  // Ranks wait for the cycle's actual slowest rank, whose work ends collective_seconds before the
  // cycle does (every rank's work is scaled so; the phase's compute_fraction is not used). Without
  // it the early ones wait for the slowest rank possible, a stretch in which every rank of the job
  // waits in MPI and nobody works: in a job whose every rank is sampled, and with the progress
  // library's counts, that is rightly a hang. O(ranks) per snapshot: small jobs only.
  bool wait_for_actual_slowest = false;
  double collective_seconds = 0.05;
  // The ranks run with the progress library (parastack run --mpi-progress): each snapshot carries the
  // rank's count of completed MPI calls (the cycle's calls, and with work_polls the polls that found
  // work: work_messages_per_cycle of them, spread over its work) and whether it polled in vain
  // (while it polls). In a hang every count stands still.
  bool progress_counts = false;
  int work_messages_per_cycle = 1000;
  // Hang onsets for this shape, uniform in [min, max) seconds; negative: the campaign's default.
  double onset_min_seconds = -1, onset_max_seconds = -1;
  // A job's end (docs/statistics.md, "A job's end"): a healthy job's last seconds, uniform in
  // [min, max), are its serial end, rank 0 computing alone at one place while every other rank
  // waits in MPI_Finalize (no I/O: the pessimistic side). 0: jobs end without one.
  double serial_end_min_seconds = 0, serial_end_max_seconds = 0;
  // Deadlocks are the last message never sent: from the onset every rank but 0 waits in
  // MPI_Finalize and rank 0 in an MPI_Recv, for good.
  bool last_message_deadlocks = false;
  // Healthy job lengths, hours, log-uniform between them; 0: the campaign's.
  double min_job_hours = 0, max_job_hours = 0;
};

enum class FaultKind { None, Computation, Deadlock };
std::string_view to_string(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::None;
  double onset = 0;               // seconds since start
  std::vector<int> faulty_ranks;  // computation faults only
};

// One job: a shape, a seed, its slowdown schedule and optional fault.
class SyntheticJob {
 public:
  SyntheticJob(const WorkloadShape& shape, std::uint64_t seed, double duration_seconds, Fault fault);

  // State of one rank at wall time t (seconds since start), with its innermost MPI call.
  stats::RankSnapshot snapshot(int rank, double t) const;
  bool is_out(int rank, double t) const;
  // The rank's I/O byte counter (rchar + wchar) at t: checkpoints are written by one aggregator
  // rank per node; nothing else in these jobs does I/O.
  std::uint64_t io_bytes(int rank, double t) const;

  const WorkloadShape& shape() const { return shape_; }
  const Fault& fault() const { return fault_; }
  double duration() const { return duration_; }
  std::size_t slowdown_count() const { return slowdowns_.size(); }

 private:
  // A stretch of wall time in which the job's own timeline runs slower (or not at all).
  struct Slowdown {
    enum class Kind { Straggler, Noise, Checkpoint };
    double start, end;
    double factor;  // timeline speed is 1/factor (infinite for a checkpoint)
    Kind kind;
    int node;  // the straggler node
  };
  // Where the job's own timeline is at wall time t, and which slowdown (if any) is active.
  struct Moment {
    double app_time;
    const Slowdown* slowdown;
  };
  struct Position {
    bool computing;
    int call;                     // index of the MPI call when not computing
    double compute_left;          // timeline seconds until the computation ends, when computing
    std::uint64_t completed = 0;  // MPI calls completed so far (progress_counts)
  };

  Moment moment(double t) const;
  Position position(int rank, double app_time, const Slowdown* slowdown) const;
  stats::RankSnapshot hung_snapshot(int rank, double t) const;
  stats::RankSnapshot uncounted_snapshot(int rank, double t) const;
  std::uint64_t completed_calls(int rank, double t) const;
  stats::RankSnapshot waiting_snapshot(int rank, int call, double t) const;
  stats::RankSnapshot polling_work_snapshot(int rank, double t, bool may_step_out) const;
  int deadlocked_rank() const;
  double uniform(std::uint64_t a, std::uint64_t b, std::uint64_t c) const;

  WorkloadShape shape_;
  std::uint64_t seed_;
  double duration_;
  Fault fault_;
  std::vector<Slowdown> slowdowns_;
  std::vector<double> warp_before_;        // app-time lost before each slowdown starts
  std::vector<double> checkpoint_before_;  // checkpoint seconds before each slowdown starts
  double serial_end_at_;                   // when a healthy job's serial end begins (infinity: none)
};

// The workload shapes of the benchmark campaign (docs/statistics.md describes each).
std::vector<WorkloadShape> standard_shapes();

}  // namespace parastack::sim
