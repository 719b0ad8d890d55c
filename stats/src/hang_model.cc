#include "parastack/stats/hang_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "parastack/stats/binomial.h"

namespace parastack::stats {

std::optional<std::string> config_error(const ModelConfig& c) {
  if (!(c.alarm.alpha > 0 && c.alarm.alpha < 1)) return "alpha must be in (0, 1)";
  if (!(c.alarm.horizon_seconds > 0)) return "the false-alarm horizon must be positive";
  if (c.sets < 1) return "there must be at least one monitored set";
  if (c.observations_per_turn < 1) return "observations per set turn must be at least 1";
  if (!(c.initial_interval > 0)) return "the initial sampling interval must be positive";
  if (c.max_interval < c.initial_interval) return "the maximum interval is below the initial one";
  if (c.runs_test_every < 4) return "the runs test needs at least 4 samples";
  if (c.max_required_streak < 1) return "the longest required streak must be at least 1";
  if (!(c.late_after > 0)) return "the lateness after which an observation is no evidence must be positive";
  if (c.window != 0 && c.window < 2 * static_cast<std::size_t>(c.runs_test_every)) {
    return "the model window is too small to hold two runs-test windows";
  }
  return std::nullopt;
}

std::string_view to_string(ThresholdRule rule) { return rule == ThresholdRule::Paper ? "paper" : "every-value"; }

std::string_view to_string(SuspicionBound bound) { return bound == SuspicionBound::Ladder ? "ladder" : "exact"; }

std::string_view to_string(Evidence evidence) {
  switch (evidence) {
    case Evidence::None:
      return "none";
    case Evidence::Fraction:
      return "fraction";
    case Evidence::Stasis:
      return "stasis";
    case Evidence::EarlyStasis:
      return "early-stasis";
  }
  return "?";
}

double Decision::onset() const {
  double onset = observation.t;
  if (streak > 0) onset = std::min(onset, streak_onset);
  if (stasis.streak > 0) onset = std::min(onset, stasis.streak_onset);
  if (stasis.early_streak > 0) onset = std::min(onset, stasis.early_onset);
  return onset;
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Skipped:
      return "skipped";
    case Verdict::Building:
      return "building";
    case Verdict::Healthy:
      return "healthy";
    case Verdict::Suspicion:
      return "suspicion";
    case Verdict::Hang:
      return "hang";
    case Verdict::Unwatched:
      return "unwatched";
  }
  return "?";
}

namespace {

// With exact bounds or stasis evidence, alpha is split: half for the tests (spent over the job by
// the alarm budget), half for the estimates (each set's S and stasis bounds, over their refreshes).
double estimate_beta(const ModelConfig& c) { return c.alarm.alpha / 2 / (2.0 * c.sets); }

}  // namespace

HangModel::HangModel(ModelConfig config) : config_(config), interval_(config.initial_interval) {
  if (auto error = config_error(config_)) throw std::invalid_argument(*error);
  sets_.assign(config_.sets, SetModel(config_.window, config_.stasis, estimate_beta(config_)));
}

bool HangModel::splits_alpha() const { return config_.bound == SuspicionBound::Exact || config_.stasis.enabled; }

int HangModel::next_set() const {
  return static_cast<int>((observations_ / config_.observations_per_turn) % config_.sets);
}

void HangModel::add_sample(SetModel& set, double sample) {
  set.samples.add(sample);
  ++set.added_since_refresh;
}

void HangModel::end_streak(SetModel& set) {
  for (const auto& held : set.held_back) add_sample(set, held.sample);
  set.held_back.clear();
  set.frozen.clear();
  set.streaks.clear();
}

void HangModel::resume_after_slowdown(int set_index, double progress_at) {
  if (set_index < 0 || set_index >= config_.sets) return;
  SetModel& set = sets_[set_index];
  set.stasis.resume_after_slowdown(progress_at);
  // The streak's samples up to the last movement are dropped; the later ones are tested again
  // against the same frozen thresholds, as the start of new streaks.
  std::vector<Held> recent;
  for (const auto& held : set.held_back) {
    if (held.t > progress_at) recent.push_back(held);
  }
  const auto frozen = set.frozen;
  set.held_back.clear();
  set.frozen.clear();
  set.streaks.clear();
  if (recent.empty() || frozen.empty()) return;
  set.frozen = frozen;
  set.streaks.assign(frozen.size(), 0);
  set.onsets.assign(frozen.size(), recent.front().t);
  for (const auto& held : recent) {
    for (std::size_t j = 0; j < frozen.size(); ++j) {
      if (held.sample <= frozen[j].value + 1e-12) {
        if (set.streaks[j]++ == 0) set.onsets[j] = held.t;
      } else {
        set.streaks[j] = 0;
      }
    }
  }
  set.held_back = std::move(recent);
}

void HangModel::double_interval() {
  // The old samples were taken at half the new interval: keep every second one (§3.1), and start
  // the randomness checks again on samples taken at the new interval.
  interval_ = std::min(interval_ * 2, config_.max_interval);
  for (auto& set : sets_) {
    end_streak(set);
    set.samples.thin_by_half();
    set.runs_window.clear();
    set.thresholds.clear();
    set.samples_at_refresh = 0;
  }
}

std::vector<SuspicionThreshold> HangModel::current_thresholds(SetModel& set) {
  if (config_.thresholds == ThresholdRule::Paper) {
    if (auto tightest = choose_threshold(set.samples)) return {*tightest};
    return {};
  }
  if (config_.bound == SuspicionBound::Ladder) return every_value_thresholds(set.samples);
  // Exact bounds are refreshed at a few points only (the samples grew by a quarter, or a quarter
  // of the window was replaced), so the union bound over refreshes costs little.
  const std::size_t n = set.samples.size();
  const bool due = set.thresholds.empty() || 4 * n >= 5 * set.samples_at_refresh ||
                   (config_.window != 0 && 4 * set.added_since_refresh >= config_.window);
  if (due && n > 0) {
    set.thresholds = exact_thresholds(set.samples, estimate_beta(config_) * refresh_share(set.refreshes++));
    set.samples_at_refresh = n;
    set.added_since_refresh = 0;
  }
  return set.thresholds;
}

std::vector<SuspicionThreshold> HangModel::testable(std::vector<SuspicionThreshold> thresholds, double alpha) const {
  if (config_.thresholds != ThresholdRule::EveryValue || thresholds.empty()) return thresholds;
  // k is taken at alpha split over all of them: dropping some only raises the others' share, so
  // no kept threshold's k can then exceed the cap.
  const double each = (config_.stasis.enabled ? alpha / 2 : alpha) / static_cast<double>(thresholds.size());
  std::erase_if(thresholds, [&](const SuspicionThreshold& threshold) {
    return required_streak(threshold.q, each) > config_.max_required_streak;
  });
  return thresholds;
}

Decision HangModel::observe(const Observation& observation) {
  Decision decision;
  decision.observation = observation;
  decision.interval = interval_;
  if (observation.set < 0 || observation.set >= config_.sets || observation.n <= 0 || observation.n_out < 0 ||
      observation.n_out > observation.n) {
    return decision;  // Skipped
  }
  ++observations_;
  SetModel& set = sets_[observation.set];
  const double sample = static_cast<double>(observation.n_out) / observation.n;
  decision.sample = sample;

  // One significance per observation, for every test run on it: it stands for the time since the
  // set was last tested (at most twice the interval: a gap, such as a verification, is not saved up
  // for one test), and is charged to the budget only if something was tested.
  const double stretch = std::clamp(observation.t - set.last_test.value_or(0.0), 0.0, 2 * interval_);
  auto alpha_now = [&] {
    AlarmPolicy tests_policy = config_.alarm;
    if (splits_alpha()) tests_policy.alpha /= 2;
    return watched_time_alpha(tests_policy, stretch, watched_ + stretch);
  };
  bool tested = false;

  // A late observation is no evidence: its sample may repeat the previous one only because nothing
  // ran in between. Nothing is tested on it or learned from it, and every streak and run of the set
  // ends here unlearned: evidence must be gathered while the job is watched, at the model's pace.
  // Nor is one of the job's serial end (Observation::serial_end): its few ranks outside MPI and its
  // stillness are what a rank summing up alone looks like, in a phase no model has seen.
  if (observation.late_by > config_.late_after || observation.serial_end) {
    if (config_.stasis.enabled) decision.stasis = set.stasis.observe_late(observation);
    set.held_back.clear();
    set.frozen.clear();
    set.streaks.clear();
    decision.verdict = Verdict::Unwatched;
    decision.model_samples = set.samples.size();
    return decision;
  }
  // Stasis needs no randomness check and no built model (its early rule is model-free).
  if (config_.stasis.enabled) {
    decision.stasis = set.stasis.observe(observation, alpha_now() / 2);
    tested = decision.stasis.known;
  }
  auto finish = [&](Verdict verdict) {
    decision.verdict = verdict;
    if (verdict != Verdict::Hang && (decision.stasis.fired || decision.stasis.early_fired)) {
      decision.verdict = Verdict::Hang;
      decision.evidence = decision.stasis.fired ? Evidence::Stasis : Evidence::EarlyStasis;
    }
    if (decision.verdict == Verdict::Hang && decision.evidence == Evidence::None) {
      decision.evidence = Evidence::Fraction;
    }
    if (tested) {
      watched_ += stretch;
      set.last_test = observation.t;
    }
    decision.model_samples = set.samples.size();
    return decision;
  };

  if (!set.random) {
    set.runs_window.push_back(sample);
    if (set.runs_window.size() == static_cast<std::size_t>(config_.runs_test_every)) {
      decision.runs_test = runs_test(set.runs_window);
      // A window where one kind (N1 or N0) is at most 1, such as one repeated value, cannot be
      // judged, and a longer interval would not change it (a code that always polls in MPI, or a
      // hang during model building): with stasis on, I stays, so that stasis keeps its pace, and
      // the set keeps building (the paper doubles I here too).
      const bool constant = decision.runs_test->n_pos <= 1 || decision.runs_test->n_neg <= 1;
      set.runs_window.clear();
      if (decision.runs_test->random) {
        set.random = true;
      } else if (interval_ < config_.max_interval && !(constant && config_.stasis.enabled)) {
        add_sample(set, sample);
        double_interval();
        decision.interval_doubled = true;
        decision.interval = interval_;
        return finish(Verdict::Building);
      }
    }
  }

  std::vector<SuspicionThreshold> thresholds = set.frozen;
  if (thresholds.empty() && set.random) thresholds = testable(current_thresholds(set), alpha_now());
  if (!set.random || thresholds.empty()) {
    add_sample(set, sample);
    return finish(Verdict::Building);
  }

  if (!set.testing_since) {
    set.testing_since = observation.t;
    if (std::all_of(sets_.begin(), sets_.end(), [](const SetModel& s) { return s.testing_since; })) {
      ready_since_ = observation.t;
    }
  }

  tested = true;
  const std::size_t count = thresholds.size();
  decision.thresholds_tested = static_cast<int>(count);
  const double alpha_here = alpha_now();
  decision.test_alpha = (config_.stasis.enabled ? alpha_here / 2 : alpha_here) / static_cast<double>(count);
  if (set.streaks.size() != count) {
    set.streaks.assign(count, 0);
    set.onsets.assign(count, observation.t);
  }
  bool suspicion = false, fired = false;
  std::size_t reported = 0;
  double closest = -1;
  for (std::size_t j = 0; j < count; ++j) {
    // Both sides are n_out/n quotients; the slack only absorbs rounding between different n. A
    // completed MPI call is progress whatever S says (with the progress library): no suspicion.
    if (!observation.progressed && sample <= thresholds[j].value + 1e-12) {
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
    set.held_back.push_back({observation.t, sample});
    decision.streak = set.streaks[reported];
    decision.streak_onset = set.onsets[reported];
    return finish(fired ? Verdict::Hang : Verdict::Suspicion);
  }
  end_streak(set);
  add_sample(set, sample);
  return finish(Verdict::Healthy);
}

}  // namespace parastack::stats
