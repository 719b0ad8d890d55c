// Stasis evidence: in a hang nothing moves. A deadlocked rank sits at the same MPI call site, a
// spinning one in the same loop, a sleeping one in nanosleep; in a healthy job the sampled ranks'
// call paths change from one sample to the next. Pure: it consumes observations (each carries a
// signature of its set's call paths) and says how unlikely the current run of "nothing moved" is.
//
// An observation is *still* when its set's path signature equals the one of the set's previous
// observation (both known) and few of its ranks are outside MPI (few_outside). Two tests:
//
// 1. The model (§3.1's geometric test, on a new event). From the job's own healthy observations,
//    c = P(still), and for the place v the run sits at (its path signature) s_v = P(still | the
//    previous observation was at v): how sticky v is. Under health a run of L still observations
//    at v has probability at most c s_v^(L-1) (a Markov chain on the set's places, which also
//    covers samples that are not independent). s_v is bounded above by the larger of the exact
//    binomial bound (binomial.h) of v's own transitions and that of all still pairs pooled: a
//    place never seen in health (a deadlock), or seen but never stayed at, gets the pooled bound,
//    which in a job of independent samples is a weighted mean of the places' stickiness and so
//    above a rare one's; a place seen often gets its own. (A single pooled s, a first-order chain
//    on the still indicator alone, would be wrong: a job that is often at one sticky place and
//    sometimes at others has long runs at the sticky one far more often than the pooled s
//    predicts; a unit test checks this against the exact probabilities.) The run is a hang when
//    c+ s_v+^(L-1) <= alpha_i. The chain also remembers how long the run has lasted (run_memory):
//    a healthy set leaves a call site after a few observations, so s_v,d = P(still | d still
//    observations at v already) is learned for d = 1 and d >= 2 apart, and the run is bounded by
//    c+ s_v,1+ s_v,2+^(L-2). A depth at which v was never seen is judged by the first-order s_v+.
// 2. The model-free rule, for the first seconds of a job (before any model can be built) and for
//    codes that never build one. It watches the set's *active* ranks (set_signature.h: those not
//    busy-waiting in a polling loop): a run of observations in which the active ranks' paths stay
//    the same (at least one active rank, at most a quarter of the set outside MPI among them),
//    lasting at least early_min_observations and max(early_min_seconds, early_age_fraction x the
//    job's age when it began, early_run_factor x the longest such run this job has shown and
//    ended), with early_waiting_factor x early_min_seconds as the minimum when other ranks
//    busy-wait beside the active ones (they may be the ones working), early_blocked_factor times
//    all that when every active rank is then blocked in MPI at a place the job never saw its ranks
//    leave (they wait for the busy-waiting ones, which may work inside their loops for a while; at
//    a place they did leave, never: only the models can judge that), and
//    early_habit_factor times that when more than early_max_still_share of the job's links (an
//    observation with active ranks after another, others between allowed) were still and the run
//    sits at a place whose ranks the job has seen leave it for real: long runs there are this
//    job's habit, whereas a place never left (a deadlock's receive, a spin) is not. It
//    applies in full only once the job has shown that it moves: at least early_min_pairs
//    observations whose ranks' status was known (active ranks, or everyone busy-waiting), those of
//    a run still under way not counted (a run that ended by itself counts). A
//    code that always looks still (one MPI call site in a loop around a tiny computation) holds
//    every observation after its first in a run, so never has them. Before that, only a run that
//    holds an active rank outside MPI, or ranks in MPI_Finalize in every observation, is judged, at
//    early_unshown_factor times the length: a rank at one place outside MPI for that long, the
//    others waiting in MPI, is no loop around an MPI call (a job spinning from its first MPI call
//    would otherwise never be watched), nor are ranks blocked in MPI beside finished ones (a
//    receive nobody sends, the others gone on to MPI_Finalize: the classic first test). A run whose
//    observations are all counted (Observation::counted: every rank's count of completed MPI calls
//    is part of its place) needs no such past: such a code's counts move. Its
//    false-alarm bound is an assumption, stated and tested: a healthy job that has shown movement
//    never keeps every sampled rank that is not busy-waiting at one call path, at most a quarter
//    of them outside MPI, none in MPI_Init or MPI_Finalize, for that long (and verification then
//    also sees no I/O and no progress); nor does one that has not, with a rank outside MPI among
//    them or beside ranks in MPI_Finalize, for four times that long. See docs/statistics.md.
//
// The observations of a running run are held back from the model, as the S model's are: the model
// learns from the past and tests the present, and a hang never teaches it that stasis is normal.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "parastack/stats/observation.h"

namespace parastack::stats {

struct StasisConfig {
  bool enabled = true;
  double early_min_seconds = 5;
  double early_age_fraction = 0.125;
  int early_min_observations = 8;
  double early_run_factor = 3;
  // ... and this many times early_min_seconds when other ranks busy-wait beside the active ones
  // (they may be working inside their polling loops).
  double early_waiting_factor = 4;
  // ... and this many times all of it when, beside busy-waiting ranks, every active rank is blocked
  // in MPI at a place never left (at one the job has left: never enough).
  double early_blocked_factor = 4;
  // ... and this many times more when the job's active ranks mostly stood still (more than
  // early_max_still_share of the links) and the run is at a place it had shown before.
  double early_habit_factor = 4;
  // ... and this many times all of it before the job has shown its ranks moving, for a run with an
  // active rank outside MPI or beside ranks in MPI_Finalize (one whose active ranks are all in MPI,
  // with no rank finished, is not judged then at all).
  double early_unshown_factor = 4;
  std::uint64_t early_min_pairs = 16;
  double early_max_still_share = 0.5;
  std::size_t window = 2048;  // most recent observation pairs the model keeps
  // How long a run the chain remembers: P(still) at a place is learned separately after 1, 2, ...
  // run_memory - 1 still observations there, and deeper ones pooled (1: one P(still | at v)).
  int run_memory = 3;
};

// The deepest run_memory a StasisConfig may ask for.
inline constexpr int kMaxRunMemory = 4;

struct StasisDecision {
  bool known = false;         // this observation and the set's previous one both had known paths
  bool still = false;         // known, the same path, few ranks outside MPI
  int streak = 0;             // consecutive still observations, this one included
  double streak_onset = 0;    // t of the observation before the first still one: when it stopped
  double first_bound = 1;     // c+, upper bound of P(still) in health
  double continue_bound = 1;  // s_v+, upper bound of P(still | at v, run as deep as remembered) in health
  // s_v,d+ for the run's still observations after d = 1 .. steps ones at v (run_memory > 2), then
  // continue_bound for every deeper one.
  std::array<double, kMaxRunMemory> step_bounds{};
  int steps = 0;
  double streak_bound = 1;  // c+ s_v,1+ ... s+^(streak-1-steps)
  int required_streak = 0;  // the shortest run at this place that fires at this alpha (0: none, or > 1e9)
  std::uint64_t pairs = 0;  // known pairs in the model
  int early_streak = 0;     // consecutive observations whose active ranks stood still
  double early_onset = 0;   // when that run stopped
  double early_needed = 0;  // how long the model-free rule needs it to last
  // The job has shown that its paths move, or its ranks are counted, or (early_before_movement)
  // the running run holds a rank outside MPI or is beside finished ones (see above).
  bool early_applies = false;
  bool early_before_movement = false;  // it applies only to this run, at early_unshown_factor
  bool fired = false;                  // the model's test fired
  bool early_fired = false;            // the model-free rule fired
  // The shortest run at a place never seen in health that fires at this alpha (0: none, or > 1e9):
  // how far the model can see. A model of a few pairs, mostly still, has c+ and s+ near 1 and
  // would need millions of observations: it watches nothing yet.
  int new_place_streak = 0;
};

// The run's bound as a product, "c x s_1 x s^(L-1-steps)", for reports and replay.
std::string bound_formula(const StasisDecision& decision);

class StasisModel {
 public:
  // beta: the error budget of this set's estimates, spent over their refreshes (refresh_share).
  StasisModel(StasisConfig config, double beta);

  StasisDecision observe(const Observation& observation, double test_alpha);
  // An observation that came too late to be evidence (ModelConfig::late_after): the time since the
  // previous one was not watched, and the job may not have run in it. Every run ends here and is
  // not learned (a hang that stood through the gap must show itself again while watched; a job
  // its node did not run must not teach the model that standing still is normal); the next run
  // may start from this observation. Nothing fires on it. observe() treats an observation of the
  // job's serial end (Observation::serial_end) so too.
  StasisDecision observe_late(const Observation& observation);
  // The caller's verification saw the job move at progress_at (or found I/O: +infinity). The still
  // observations up to then are dropped, not learned; the later ones start the run again.
  void resume_after_slowdown(double progress_at);

 private:
  struct Pair {
    double t;
    bool still;
    std::optional<bool> previous_still;  // the pair before it in an unbroken chain
    std::uint64_t from = 0;              // the previous observation's path (known)
    int depth = 0;                       // still pairs in a row just before it (at `from`)
  };
  struct Counts {
    std::uint64_t trials = 0, hits = 0;
    int bound_refresh = -1;  // the refresh its cached bound belongs to
    double bound = 1;
  };
  // One place's transitions in the model, by how deep into a run at it they came (depth_class):
  // how often the next observation was known, and still.
  struct Place {
    Counts all;  // at any depth: the first-order chain's
    std::array<Counts, kMaxRunMemory> by_depth;
  };
  int depth_class(int depth) const;
  double own_bound(Counts& counts);
  double first_order_bound(Place* place);
  void commit(const Pair& pair);
  void commit_held();
  void maybe_refresh();
  double place_bound(std::uint64_t path, int depth_class);
  void describe_run(const Observation& observation, double test_alpha, StasisDecision& decision);
  void observe_active(const Observation& observation, StasisDecision& decision);
  void describe_active_run(const Observation& observation, StasisDecision& decision);
  void step_active(const Observation& observation);
  void add_link(bool still);

  StasisConfig config_;
  double beta_;
  std::uint64_t previous_path_ = 0;
  double previous_t_ = 0;
  std::optional<bool> previous_still_;  // last known pair's stillness, while the chain is unbroken
  int depth_ = 0;                       // still pairs in a row at the end of the unbroken chain
  std::vector<Pair> held_;              // the running still run
  double held_onset_ = 0;
  std::deque<Pair> committed_;
  std::uint64_t first_trials_ = 0, first_hits_ = 0, next_trials_ = 0, next_hits_ = 0;
  std::uint64_t added_since_refresh_ = 0, trials_at_refresh_ = 0;
  int refreshes_ = 0;
  double first_bound_ = 1, continue_bound_ = 1;
  // All places pooled, by depth class (1 .. run_memory - 1; unused when run_memory is 1).
  std::array<std::uint64_t, kMaxRunMemory> class_trials_{}, class_hits_{};
  std::array<double, kMaxRunMemory> class_bound_{};
  std::unordered_map<std::uint64_t, Place> places_;

  // The model-free rule, over the active signature (Observation::active_path).
  std::uint64_t previous_active_ = 0, last_active_ = 0;
  std::uint64_t known_observations_ = 0;  // with active ranks or everyone waiting, committed
  double previous_active_t_ = 0;
  std::vector<double> active_run_;  // times of the running still run's observations (held back)
  double active_onset_ = 0;
  double longest_active_run_ = 0;  // seconds, of the runs that ended (by themselves or verified)
  std::deque<bool> links_;         // observation with active ranks after another: still or not
  std::uint64_t still_links_ = 0;
  static constexpr std::size_t kMaxActivePlaces = 4096;
  std::unordered_set<std::uint64_t> left_places_;  // active signatures whose ranks left them for real
  int previous_active_ranks_ = 0;
  int active_run_ranks_ = 0;                // how many active ranks the running run has
  bool active_run_beside_waiters_ = false;  // some ranks busy-waited beside its active ones
  bool active_run_all_in_mpi_ = true;       // none of its active ranks was outside MPI
  bool active_run_beside_finished_ = true;  // every observation of it had ranks in MPI_Finalize
  bool active_run_counted_ = false;         // it and the observation it began after were counted
  int active_run_readable_ = 0;             // the fewest ranks classified in one of its observations
  bool previous_active_counted_ = false;
  // Observations in a row that may have been other ranks' steps out of their loops (observe_active).
  static constexpr std::size_t kMostExcursions = 3;
  std::vector<Observation> excursions_;
};

}  // namespace parastack::stats
