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
//   by their number (a union bound); the paper tests one threshold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parastack/stats/alarm_budget.h"
#include "parastack/stats/empirical_distribution.h"
#include "parastack/stats/observation.h"
#include "parastack/stats/runs_test.h"
#include "parastack/stats/tolerance_ladder.h"

namespace parastack::stats {

// Which suspicion thresholds the geometric test runs on.
enum class ThresholdRule {
  Paper,       // the tightest justified ladder step's sub-optimal point only (§3.2)
  EveryValue,  // every sample value, alpha split between them (default; docs/statistics.md)
};
std::string_view to_string(ThresholdRule rule);

struct ModelConfig {
  AlarmPolicy alarm;
  ThresholdRule thresholds = ThresholdRule::EveryValue;
  int sets = 2;                     // disjoint monitored sets (§3.3, corner case)
  int observations_per_turn = 30;   // a set is sampled this many times before the next one
  double initial_interval = 0.4;    // I, seconds (§3.3)
  double max_interval = 0.4 * 64;   // I stops doubling here
  int runs_test_every = 16;         // samples per runs test (§3.3)
  std::size_t window = 2048;        // samples kept per set
};

// Empty when the configuration is usable, otherwise what is wrong, for the user.
std::optional<std::string> config_error(const ModelConfig& config);

enum class Verdict {
  Skipped,    // observation carried no classified rank, or named an unknown set
  Building,   // this set's model cannot test yet
  Healthy,    // tested: not a suspicion
  Suspicion,  // tested: a suspicion, the streak is still short of k
  Hang,       // k consecutive suspicions: the model's alarm (to be verified by the caller)
};
std::string_view to_string(Verdict verdict);

struct Decision {
  Observation observation;
  double sample = 0;                          // S = n_out / n
  Verdict verdict = Verdict::Skipped;
  double interval = 0;                        // I after this observation
  std::size_t model_samples = 0;              // committed samples in this set's model
  // The threshold reported: the one that fired, else the one closest to firing (streak / k).
  std::optional<SuspicionThreshold> threshold;
  int thresholds_tested = 0;                  // thresholds under test (alpha is split over them)
  double test_alpha = 0;                      // significance of each threshold's test
  int required_streak = 0;                    // k for the reported threshold (0 when no test ran)
  int streak = 0;                             // consecutive suspicions below that threshold
  double streak_onset = 0;                    // t of that streak's first suspicion
  std::optional<RunsTestResult> runs_test;    // when a runs test ran on this observation
  bool interval_doubled = false;
};

class HangModel {
 public:
  explicit HangModel(ModelConfig config);

  Decision observe(const Observation& observation);

  // After a Hang decision that the caller's verification judged a transient slowdown: the streak
  // restarts, and its held-back samples are dropped, so that a hang wrongly judged a slowdown can
  // never teach the model that a hung S is normal.
  void resume_after_slowdown(int set);

  double interval() const { return interval_; }
  // The randomised step before the next sample: uniform over [I/2, 3I/2] given u in [0, 1).
  double next_delay(double uniform01) const { return interval_ / 2 + uniform01 * interval_; }
  // The set to sample next, alternating every observations_per_turn observations.
  int next_set() const;
  // Every set can test (the model is built); the time it first became so.
  bool ready() const { return ready_since_.has_value(); }
  std::optional<double> ready_since() const { return ready_since_; }
  const ModelConfig& config() const { return config_; }

 private:
  struct SetModel {
    explicit SetModel(std::size_t window) : samples(window) {}
    EmpiricalDistribution samples;
    std::vector<double> runs_window;
    bool random = false;
    std::optional<double> testing_since;
    std::vector<SuspicionThreshold> frozen;  // thresholds of the running streak
    std::vector<int> streaks;                // consecutive samples <= each frozen threshold
    std::vector<double> onsets;              // when each of those streaks began
    std::vector<double> held_back;           // the running streak's samples
  };

  void end_streak(SetModel& set);
  void double_interval();

  ModelConfig config_;
  std::vector<SetModel> sets_;
  double interval_;
  std::uint64_t observations_ = 0;
  std::uint64_t tests_ = 0;
  std::uint64_t tests_per_horizon_ = 0;  // fixed when the first set starts testing
  std::optional<double> ready_since_;
};

}  // namespace parastack::stats
