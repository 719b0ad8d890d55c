// The ParaStack hang model (§3): adaptive sampling interval, per-set empirical model, geometric
// significance test. Pure: it consumes observations and returns decisions; the caller samples,
// sleeps, verifies and acts.
//
// Decisions taken where the paper is silent or rough (reasons in docs/statistics.md):
// - Each disjoint set has its own model, randomness check and streak. A streak of set A continues
//   across the other set's turns, so k may exceed the alternation window.
// - The samples of a running suspicion streak are held back from the model and its threshold is
//   frozen at the streak's start: the model is built from the past, the test runs on the present,
//   and a hang cannot drag the threshold after itself. They join the model once the streak breaks.
// - The model keeps the most recent `window` samples per set, so it follows phase changes.
// - Detection needs the set's sampling to have passed the runs test at the current interval.
// - By default every sample value is a threshold, each with its own streak, tested at alpha divided
//   by their number (a union bound); the paper tests one threshold. A threshold that would need a
//   streak longer than max_required_streak is not tested (nor counted in that number).
// - By default a threshold's suspicion probability is bounded by an exact binomial bound
//   (binomial.h), not by the ladder's p̂ + e, and the observations also carry stasis evidence
//   (stasis.h). alpha then bounds everything together: half for the tests, half for the chance that
//   an estimated bound is below the truth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parastack/stats/alarm_budget.h"
#include "parastack/stats/empirical_distribution.h"
#include "parastack/stats/observation.h"
#include "parastack/stats/runs_test.h"
#include "parastack/stats/stasis.h"
#include "parastack/stats/tolerance_ladder.h"

namespace parastack::stats {

// Which suspicion thresholds the geometric test runs on.
enum class ThresholdRule {
  Paper,       // the tightest justified ladder step's sub-optimal point only (§3.2)
  EveryValue,  // every sample value, alpha split between them (default; docs/statistics.md)
};
std::string_view to_string(ThresholdRule rule);

// How a threshold's suspicion probability q is bounded from the samples.
enum class SuspicionBound {
  Ladder,  // p̂ + e with the paper's tolerance ladder (§3.2)
  Exact,   // the exact binomial (Clopper-Pearson) upper bound, spent under alpha (default)
};
std::string_view to_string(SuspicionBound bound);

struct ModelConfig {
  AlarmPolicy alarm;
  ThresholdRule thresholds = ThresholdRule::EveryValue;
  SuspicionBound bound = SuspicionBound::Exact;
  StasisConfig stasis;             // stasis evidence; stasis.enabled = false tests S alone
  int sets = 2;                    // disjoint monitored sets (§3.3, corner case)
  int observations_per_turn = 30;  // a set is sampled this many times before the next one
  // I, seconds. The paper starts at 0.4 s because its sample (a full unwind through ptrace) costs
  // milliseconds; ours stops a rank for about 20 us, so 0.1 s costs a rank 0.02 % and gives four
  // times the evidence per second (docs/statistics.md). The runs test still doubles it as needed.
  double initial_interval = 0.1;
  double max_interval = 25.6;  // I stops doubling here
  int runs_test_every = 16;    // samples per runs test (§3.3)
  std::size_t window = 2048;   // samples kept per set
  // With every value a threshold, one whose k exceeds this is not tested. Values that nearly every
  // healthy sample reaches (q within 1e-4 of 1 after one rare higher sample) need tens of thousands
  // of suspicions, which no hang waits for, and while their streak runs the set learns nothing: on
  // a polling code nearly every sample then extends it, and the model stood still for good (CI).
  // Default: the window, so a streak holds back about as many samples as the model keeps at most
  // (a frozen threshold's k can still creep up a little as alpha is spent).
  int max_required_streak = 2048;
  // An observation that came more than this many seconds after the time it was planned for
  // (Observation::late_by) is no evidence, and ends the set's streaks and runs unlearned: the
  // monitor, or a rank it had to stop, was kept off the CPU, and the job may not have run since the
  // previous observation either. A hang is a job that stands still while it is watched, not one
  // that stood still while nobody looked (a CI node's healthy job was once confirmed hung after
  // samples 20 s apart that found it where it was).
  double late_after = 0.5;
};

// Empty when the configuration is usable, otherwise what is wrong, for the user.
std::optional<std::string> config_error(const ModelConfig& config);

enum class Verdict {
  Skipped,    // observation carried no classified rank, or named an unknown set
  Building,   // this set's model cannot test yet
  Healthy,    // tested: not a suspicion
  Suspicion,  // tested: a suspicion, the streak is still short of k
  Hang,       // the model's alarm (to be verified by the caller): see Decision::evidence
  // Came too late to be evidence (ModelConfig::late_after), or in the job's serial end
  // (Observation::serial_end): not tested, not learned, streaks end.
  Unwatched,
};
std::string_view to_string(Verdict verdict);

// Which test raised a Hang.
enum class Evidence {
  None,
  Fraction,     // k consecutive suspicions of S = n_out / n (the paper's test)
  Stasis,       // a run of still observations too unlikely under the job's stasis model
  EarlyStasis,  // the model-free stasis rule
};
std::string_view to_string(Evidence evidence);

struct Decision {
  Observation observation;
  double sample = 0;  // S = n_out / n
  Verdict verdict = Verdict::Skipped;
  double interval = 0;            // I after this observation
  std::size_t model_samples = 0;  // committed samples in this set's model
  // The threshold reported: the one that fired, else the one closest to firing (streak / k).
  std::optional<SuspicionThreshold> threshold;
  int thresholds_tested = 0;                // thresholds under test (alpha is split over them)
  double test_alpha = 0;                    // significance of each threshold's test
  int required_streak = 0;                  // k for the reported threshold (0 when no test ran)
  int streak = 0;                           // consecutive suspicions below that threshold
  double streak_onset = 0;                  // t of that streak's first suspicion
  std::optional<RunsTestResult> runs_test;  // when a runs test ran on this observation
  bool interval_doubled = false;
  Evidence evidence = Evidence::None;  // what raised the Hang
  StasisDecision stasis;               // the stasis tests on this observation
  // When the set's current run of evidence began (the earliest onset among the tests running):
  // what verification looks back to.
  double onset() const;
};

class HangModel {
 public:
  explicit HangModel(ModelConfig config);

  Decision observe(const Observation& observation);

  // After a Hang decision that the caller's verification judged a transient slowdown, with the last
  // movement it saw at progress_at: the streaks' observations up to then are dropped (a hang wrongly
  // judged a slowdown must never teach the model that a hung S is normal), and the ones after it
  // are tested again as the start of new streaks, so progress *before* a hang cannot hide it.
  void resume_after_slowdown(int set, double progress_at = std::numeric_limits<double>::infinity());

  double interval() const { return interval_; }
  // The randomised step before the next sample: uniform over [I/2, 3I/2] given u in [0, 1).
  double next_delay(double uniform01) const { return interval_ / 2 + uniform01 * interval_; }
  // The set to sample next, alternating every observations_per_turn observations.
  int next_set() const;
  // Every set can test S (the S model is built); the time it first became so. Stasis needs no
  // built model: its model-free rule watches from the first observation.
  bool ready() const { return ready_since_.has_value(); }
  std::optional<double> ready_since() const { return ready_since_; }
  const ModelConfig& config() const { return config_; }

 private:
  struct Held {
    double t;
    double sample;
  };
  struct SetModel {
    SetModel(std::size_t window, const StasisConfig& stasis_config, double stasis_beta)
        : samples(window), stasis(stasis_config, stasis_beta) {}
    EmpiricalDistribution samples;
    std::vector<double> runs_window;
    bool random = false;
    std::optional<double> testing_since;
    std::vector<SuspicionThreshold> thresholds;  // Exact: as of the last refresh
    int refreshes = 0;
    std::size_t samples_at_refresh = 0, added_since_refresh = 0;
    std::vector<SuspicionThreshold> frozen;  // thresholds of the running streak
    std::vector<int> streaks;                // consecutive samples <= each frozen threshold
    std::vector<double> onsets;              // when each of those streaks began
    std::vector<Held> held_back;             // the running streak's samples
    std::optional<double> last_test;         // when the set was last tested (alarm budget)
    StasisModel stasis;
  };

  void end_streak(SetModel& set);
  void add_sample(SetModel& set, double sample);
  std::vector<SuspicionThreshold> current_thresholds(SetModel& set);
  // The thresholds worth a streak at this alpha: those whose k is within max_required_streak.
  std::vector<SuspicionThreshold> testable(std::vector<SuspicionThreshold> thresholds, double alpha) const;
  void double_interval();
  bool splits_alpha() const;

  ModelConfig config_;
  std::vector<SetModel> sets_;
  double interval_;
  std::uint64_t observations_ = 0;
  double watched_ = 0;  // seconds the tests so far stand for, summed over the sets (alarm_budget.h)
  std::optional<double> ready_since_;
};

}  // namespace parastack::stats
