#include "parastack/stats/hang_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace parastack::stats {

std::optional<std::string> config_error(const ModelConfig& c) {
  if (!(c.alarm.alpha > 0 && c.alarm.alpha < 1)) return "alpha must be in (0, 1)";
  if (!(c.alarm.horizon_seconds > 0)) return "the false-alarm horizon must be positive";
  if (c.sets < 1) return "there must be at least one monitored set";
  if (c.observations_per_turn < 1) return "observations per set turn must be at least 1";
  if (!(c.initial_interval > 0)) return "the initial sampling interval must be positive";
  if (c.max_interval < c.initial_interval) return "the maximum interval is below the initial one";
  if (c.runs_test_every < 4) return "the runs test needs at least 4 samples";
  if (c.window != 0 && c.window < 2 * static_cast<std::size_t>(c.runs_test_every)) {
    return "the model window is too small to hold two runs-test windows";
  }
  return std::nullopt;
}

std::string_view to_string(ThresholdRule rule) {
  return rule == ThresholdRule::Paper ? "paper" : "every-value";
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Skipped: return "skipped";
    case Verdict::Building: return "building";
    case Verdict::Healthy: return "healthy";
    case Verdict::Suspicion: return "suspicion";
    case Verdict::Hang: return "hang";
  }
  return "?";
}

HangModel::HangModel(ModelConfig config) : config_(config), interval_(config.initial_interval) {
  if (auto error = config_error(config_)) throw std::invalid_argument(*error);
  sets_.assign(config_.sets, SetModel(config_.window));
}

int HangModel::next_set() const {
  return static_cast<int>((observations_ / config_.observations_per_turn) % config_.sets);
}

void HangModel::end_streak(SetModel& set) {
  for (double sample : set.held_back) set.samples.add(sample);
  set.held_back.clear();
  set.frozen.clear();
  set.streaks.clear();
}

void HangModel::resume_after_slowdown(int set) {
  if (set < 0 || set >= config_.sets) return;
  sets_[set].held_back.clear();
  end_streak(sets_[set]);
}

void HangModel::double_interval() {
  // The old samples were taken at half the new interval: keep every second one (§3.1), and start
  // the randomness checks again on samples taken at the new interval.
  interval_ = std::min(interval_ * 2, config_.max_interval);
  for (auto& set : sets_) {
    end_streak(set);
    set.samples.thin_by_half();
    set.runs_window.clear();
  }
}

Decision HangModel::observe(const Observation& observation) {
  Decision decision;
  decision.observation = observation;
  decision.interval = interval_;
  if (observation.set < 0 || observation.set >= config_.sets || observation.n <= 0 ||
      observation.n_out < 0 || observation.n_out > observation.n) {
    return decision;  // Skipped
  }
  ++observations_;
  SetModel& set = sets_[observation.set];
  const double sample = static_cast<double>(observation.n_out) / observation.n;
  decision.sample = sample;

  if (!set.random) {
    set.runs_window.push_back(sample);
    if (set.runs_window.size() == static_cast<std::size_t>(config_.runs_test_every)) {
      decision.runs_test = runs_test(set.runs_window);
      set.runs_window.clear();
      if (decision.runs_test->random) {
        set.random = true;
      } else if (interval_ < config_.max_interval) {
        set.samples.add(sample);
        double_interval();
        decision.interval_doubled = true;
        decision.interval = interval_;
        decision.model_samples = set.samples.size();
        decision.verdict = Verdict::Building;
        return decision;
      }
    }
  }

  std::vector<SuspicionThreshold> thresholds = set.frozen;
  if (thresholds.empty()) {
    if (config_.thresholds == ThresholdRule::EveryValue) {
      thresholds = every_value_thresholds(set.samples);
    } else if (auto tightest = choose_threshold(set.samples)) {
      thresholds.push_back(*tightest);
    }
  }
  if (!set.random || thresholds.empty()) {
    set.samples.add(sample);
    decision.model_samples = set.samples.size();
    decision.verdict = Verdict::Building;
    return decision;
  }

  if (!set.testing_since) {
    set.testing_since = observation.t;
    if (tests_per_horizon_ == 0) {
      tests_per_horizon_ = static_cast<std::uint64_t>(
          std::ceil(config_.alarm.horizon_seconds / interval_));
    }
    if (std::all_of(sets_.begin(), sets_.end(), [](const SetModel& s) { return s.testing_since; })) {
      ready_since_ = observation.t;
    }
  }

  const std::size_t count = thresholds.size();
  decision.thresholds_tested = static_cast<int>(count);
  decision.test_alpha =
      test_alpha(config_.alarm, tests_++, tests_per_horizon_) / static_cast<double>(count);
  if (set.streaks.size() != count) {
    set.streaks.assign(count, 0);
    set.onsets.assign(count, observation.t);
  }
  bool suspicion = false, fired = false;
  std::size_t reported = 0;
  double closest = -1;
  for (std::size_t j = 0; j < count; ++j) {
    // Both sides are n_out/n quotients; the slack only absorbs rounding between different n.
    if (sample <= thresholds[j].value + 1e-12) {
      if (set.streaks[j]++ == 0) set.onsets[j] = observation.t;
      suspicion = true;
    } else {
      set.streaks[j] = 0;
    }
    const int k = required_streak(thresholds[j].q, decision.test_alpha);
    const double progress = static_cast<double>(set.streaks[j]) / k;
    if (!fired && (set.streaks[j] >= k || progress > closest)) {
      reported = j;
      closest = progress;
      fired = set.streaks[j] >= k;
      decision.required_streak = k;
    }
  }
  decision.threshold = thresholds[reported];
  if (suspicion) {
    if (set.frozen.empty()) set.frozen = thresholds;
    set.held_back.push_back(sample);
    decision.streak = set.streaks[reported];
    decision.streak_onset = set.onsets[reported];
    decision.verdict = fired ? Verdict::Hang : Verdict::Suspicion;
  } else {
    end_streak(set);
    set.samples.add(sample);
    decision.verdict = Verdict::Healthy;
  }
  decision.model_samples = set.samples.size();
  return decision;
}

}  // namespace parastack::stats
