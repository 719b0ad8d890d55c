// The ParaStack loop (§3-4) as one pure driver: it decides when to sample and which ranks, feeds the
// model, verifies an alarm (§3.3) and identifies the faulty ranks (§4). It never touches a process:
// a JobProbe does the sampling. The simulator's probe is synthetic ranks in virtual time; the
// monitor's (network::ClusterProbe) is real ranks in real time, on one node or on every node of
// the job through the monitors. Both run this code, so what the simulator measures is what the
// monitor does.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parastack/stats/hang_model.h"
#include "parastack/stats/random.h"
#include "parastack/stats/set_signature.h"
#include "parastack/stats/verification.h"

namespace parastack::stats {

// What the watchdog needs from a job. Ranks are indices 0..rank_count-1 of the job's rank table.
// A rank held by someone other than the monitors: a debugger (its TracerPid), or a stop signal
// (kill -STOP, Ctrl-Z, a suspended job).
struct HeldRank {
  int rank = 0;          // index in the job's rank table
  int tracer = 0;        // the pid that traces it; 0: free now, but held at a sample of the window asked about
  bool stopped = false;  // stopped by a signal, not traced (tracer is 0); now or in that window
  // Waiting uninterruptibly in the kernel (state D; tracer is 0): a stalled file system or device
  // holds it, now or at a sample in that window. Its peers wait for it, as for a debugger's.
  bool in_kernel = false;
};

class JobProbe {
 public:
  virtual ~JobProbe() = default;
  // Seconds since monitoring started, on the probe's clock.
  virtual double now() = 0;
  // Returns at time t (real: sleeps; virtual: advances the clock); false once the job has ended.
  virtual bool wait_until(double t) = 0;
  // The state of each of these ranks now.
  virtual std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) = 0;
  // The state of every rank 0..rank_count-1 now, for faulty-rank identification (checked_state: a
  // rank at work outside MPI on another thread is OUT_MPI). By default from snapshot(); a probe of
  // a million ranks can do it without building a million snapshots.
  virtual std::vector<RankState> all_states(int rank_count);
  // Every rank's work counters now (nullopt where unknown); empty when the probe cannot tell, and
  // then work is not part of verification.
  virtual std::vector<std::optional<WorkCounters>> work_counters() = 0;
  // The ranks a debugger holds now, or that a sample of the last `within_seconds` found held,
  // read without stopping anybody. A job that a person holds is not hung by itself: no alarm is
  // confirmed on samples taken while a rank was held. A hold before those samples (a rank's
  // start-up reads in state D, a debugger let go before the hang) says nothing about them. Empty
  // when none, or when the probe cannot tell (synthetic ranks).
  virtual std::vector<HeldRank> held_ranks(double /*within_seconds*/) { return {}; }
};

struct WatchdogConfig {
  ModelConfig model;
  int sampled_ranks = 10;  // C, per set
  // Jobs of at most this many ranks are sampled whole at every observation, as one set: a sample
  // stops a rank for about 20 us, and S over every rank says far more than S over sets of 2.
  int sample_every_rank_up_to = 20;
  // Sample every set at each observation time, rather than one set per turn (§3.3): the set that
  // does not hold a faulty rank then sees a hang at once, without waiting for its turn.
  bool every_set_each_time = true;
  // After an alarm, fresh snapshots are taken for max(I, this x the evidence's duration) more.
  double verification_fraction = 0.5;
  // ... and for at least this many times the longest freeze that verification has seen end in this
  // job (a straggler that stalls everyone for 20 s once will do it again), or that a set whose ranks
  // all busy-waited showed between ordinary observations before it moved (a sample finds a polling
  // rank where it yields, and on a busy node that is its longest wait, iteration after iteration:
  // a healthy 4-rank poller's set looked still for 1.4 s while it ran 2,500 iterations a second).
  double freeze_margin = 1.5;
  int identification_rounds = 5;        // checks of all ranks after a confirmed hang (§4)
  double identification_spacing = 0.2;  // seconds between those checks
};

// Empty when usable, otherwise what is wrong, for the user.
std::optional<std::string> config_error(const WatchdogConfig& config);

// A model alarm and what verification made of it.
struct Alarm {
  Decision decision;      // the observation that completed the streak: t, q, k, I, onset
  bool slowdown = false;  // not a hang: the job moved (or a debugger holds a rank)
  bool held = false;      // a debugger holds a rank: the job is not judged while it does
  // The same alarm again, confirmed and then taken back while all ranks were being checked: a
  // debugger took ranks (held is then set), or the job moved. It is not a new alarm.
  bool withdrawn = false;
  // Not a slowdown either: the job's serial end (Watchdog::serial_end_), not judged from now on.
  // slowdown is set too (it is no hang).
  bool serial_end = false;
  std::string evidence;  // why it was judged a slowdown ("rank 12: MPI_Wait -> MPI_Allreduce")
};

// What kind of hang (§4): some ranks stuck outside MPI (a computation error, they are named), or
// every rank waiting inside MPI (a communication error: a deadlock or a lost message); or not known,
// because the job ended (someone killed it, or it ended by itself) before all the checks were taken.
enum class HangType { Computation, Communication, Undetermined };
// "computation", "communication" or "undetermined": the report's JSON word, and the first word of its text.
std::string_view to_string(HangType type);

struct HangFinding {
  Decision decision;                           // the alarm that was confirmed
  double confirmed_at = 0;                     // probe time at the end of verification
  std::vector<int> faulty_ranks;               // persistently OUT_MPI (§4); empty: no computation error
  std::vector<std::vector<RankState>> checks;  // checks[c][rank]
  // The job ended before the checks were done (the probe said so, or a check could sample none of
  // its ranks): ranks dying under the checks look out of MPI (in a signal handler, at exit) or
  // gone, so the checks taken tell nothing (faulty_ranks stays empty).
  bool ended_during_checks = false;
  HangType type() const {
    if (ended_during_checks) return HangType::Undetermined;
    return faulty_ranks.empty() ? HangType::Communication : HangType::Computation;
  }
  bool computation_error() const { return type() == HangType::Computation; }
};

struct WatchdogHooks {
  std::function<void(const Decision&)> on_decision;  // every observation: traces, logs
  std::function<void(const Alarm&)> on_alarm;        // every model alarm, before acting
};

class Watchdog {
 public:
  // rank_count >= 1. Fewer ranks than sets means fewer sets; fewer than C per set, smaller sets.
  Watchdog(const WatchdogConfig& config, int rank_count, std::uint64_t seed);

  // Watches until a hang is confirmed (returned), or the job ends or `until` passes (nullopt).
  std::optional<HangFinding> watch(JobProbe& probe, const WatchdogHooks& hooks = {},
                                   double until = std::numeric_limits<double>::infinity());

  // After a confirmed hang the caller chose to report but not act on: carry on watching. The
  // streak restarts and its samples are not learned (a hung S must never become normal).
  void resume_after_hang();

  const HangModel& model() const { return model_; }
  const std::vector<std::vector<int>>& sets() const { return sets_; }
  std::uint64_t observations() const { return observations_; }
  const WatchdogConfig& config() const { return config_; }

 private:
  struct Sampled {
    double t;
    std::vector<RankSnapshot> targets;
  };
  // What verification concluded, and when the job was last seen moving (for resuming).
  struct Verified {
    Alarm alarm;
    double progress_at = std::numeric_limits<double>::infinity();
    // Whether some rank was seen moving. Not when only this set's fraction outside MPI rose again:
    // the other sets' evidence is then judged on its own.
    bool job_moved = true;
    // Every sampled rank (all sets, the alarming set's first) at the last fresh snapshot, and when.
    std::vector<int> targets;
    std::vector<RankSnapshot> last;
    double last_t = 0;
  };

  // Feeds one set's snapshots to the model; a confirmed hang ends the watch.
  // late_by: how long after its planned time the snapshot was taken (Observation::late_by).
  std::optional<std::optional<HangFinding>> observe_set(JobProbe& probe, const WatchdogHooks& hooks, int set, double t,
                                                        double late_by, std::vector<RankSnapshot> targets);
  // The model's side of an observation: its decision, and the set's streak snapshots kept or dropped.
  Decision record(const WatchdogHooks& hooks, int set, double t, double late_by, std::vector<RankSnapshot> targets);
  std::optional<Verified> verify(JobProbe& probe, const WatchdogHooks& hooks, const Decision& decision);
  // When the evidence that fired first sufficed: the decision's own time, unless its run had
  // grown past what the test needs (a streak kept from before a slowdown, then extended).
  double evidence_complete_at(const Decision& decision) const;
  // The checks of all ranks (§4), which also look at the sampled ranks once more: a job that moves
  // while it is checked was not hung (a rank held up for seconds by a slow file system, let go just
  // now). Then `moved` says so and the finding is not one.
  HangFinding identify(JobProbe& probe, const Verified& verified, std::optional<Verified>& moved);

  WatchdogConfig config_;
  int rank_count_;
  SplitMix rng_;
  std::vector<std::vector<int>> sets_;
  HangModel model_;
  SetSignatures signatures_;                          // S and the path signatures of each observation
  std::vector<std::vector<Sampled>> streak_samples_;  // per set: its running streak's snapshots
  std::optional<int> last_alarm_set_;
  double last_t_ = 0;
  double longest_healthy_freeze_ = 0;  // seconds, from alarms that verification saw end, and below
  // Each set's ranks followed across observations, for the freezes of busy-waiting sets.
  struct Standstill {
    std::vector<RankMovement> ranks;
    double since = -1;  // when the set was last seen moving, or when this unbroken watch of it began
    double last_t = 0;
    int standing = 0;           // observations after `since` (none moved)
    bool busy_waiting = false;  // every known rank busy-waited at each of them
  };
  std::vector<Standstill> standstills_;
  // Learns the freeze a set whose ranks all busy-waited came out of (WatchdogConfig::freeze_margin).
  void follow_standstill(int set, const Observation& observation, const std::vector<RankSnapshot>& targets);
  double job_moved_at_ = -1;  // the latest movement a verification saw
  // Work counters read while streaks run (at most one read a second) and at verifications' first
  // fresh snapshots, oldest first: a verification measures work from the earliest read since its
  // evidence began, not only over its own look (a few tenths of a second after early stasis).
  struct WorkMark {
    double t;
    std::vector<std::optional<WorkCounters>> counters;
  };
  std::deque<WorkMark> work_marks_;
  void mark_work(JobProbe& probe);
  std::uint64_t observations_ = 0;
  // The job's serial end (Observation::serial_end), recognised across the job: the checks of all
  // ranks found ranks at work outside MPI while sampled ranks waited in MPI_Finalize. From then on
  // every observation is one of the serial end. A set that holds no rank at work sees only
  // finished ranks there (S = 0), which the model takes for a hang; only those checks, which see
  // every rank, can tell.
  bool serial_end_ = false;
  double finished_seen_at_ = -std::numeric_limits<double>::infinity();  // the latest observation with finished ranks
};

}  // namespace parastack::stats
