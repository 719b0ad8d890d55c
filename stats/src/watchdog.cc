#include "parastack/stats/watchdog.h"

#include <algorithm>
#include <numeric>

namespace parastack::stats {
namespace {

// Two disjoint sets of C distinct random ranks (§3.3): a faulty rank inside one set cannot mask a
// hang, because the other set, without it, sees the hang too.
std::vector<std::vector<int>> choose_sets(int ranks, int sets, int size, SplitMix& rng) {
  sets = std::max(1, std::min(sets, ranks));
  size = std::max(1, std::min(size, ranks / sets));
  std::vector<int> chosen;
  while (static_cast<int>(chosen.size()) < sets * size) {
    const int r = static_cast<int>(rng.below(static_cast<std::uint64_t>(ranks)));
    if (std::find(chosen.begin(), chosen.end(), r) == chosen.end()) chosen.push_back(r);
  }
  std::vector<std::vector<int>> result(sets);
  for (int i = 0; i < sets * size; ++i) result[i / size].push_back(chosen[i]);
  return result;
}

ModelConfig with_sets(ModelConfig model, std::size_t sets) {
  model.sets = static_cast<int>(sets);
  return model;
}

std::string describe_progress(const std::vector<int>& targets, const ProgressEvidence& evidence) {
  auto name = [](const RankSnapshot& s) {
    return s.state == RankState::InMpi ? s.mpi_function : std::string(to_string(s.state));
  };
  return "rank " + std::to_string(targets[evidence.rank_index]) + " moved from " + name(evidence.from) +
         " to " + name(evidence.to);
}

}  // namespace

std::vector<RankState> JobProbe::all_states(int rank_count) {
  std::vector<int> everyone(static_cast<std::size_t>(rank_count));
  std::iota(everyone.begin(), everyone.end(), 0);
  const auto snapshots = snapshot(everyone);
  std::vector<RankState> states(snapshots.size());
  for (std::size_t r = 0; r < snapshots.size(); ++r) states[r] = snapshots[r].state;
  return states;
}

std::optional<std::string> config_error(const WatchdogConfig& config) {
  if (auto error = config_error(config.model)) return error;
  if (config.sampled_ranks < 1) return "the number of sampled ranks must be at least 1";
  if (config.identification_rounds < 1) return "identification needs at least one check";
  if (!(config.identification_spacing >= 0)) return "the identification spacing must be >= 0";
  return std::nullopt;
}

Watchdog::Watchdog(const WatchdogConfig& config, int rank_count, std::uint64_t seed)
    : config_(config),
      rank_count_(std::max(1, rank_count)),
      rng_(seed),
      sets_(choose_sets(rank_count_, config.model.sets, config.sampled_ranks, rng_)),
      model_(with_sets(config.model, sets_.size())),
      streak_samples_(sets_.size()) {}

std::optional<HangFinding> Watchdog::watch(JobProbe& probe, const WatchdogHooks& hooks, double until) {
  while (true) {
    const double t_next = last_t_ + model_.next_delay(rng_.uniform());
    if (t_next >= until || !probe.wait_until(t_next)) return std::nullopt;
    const int set = model_.next_set();
    auto targets = probe.snapshot(sets_[set]);
    Observation observation{probe.now(), set, 0, 0};
    for (const auto& s : targets) {
      observation.n_out += s.state == RankState::OutMpi ? 1 : 0;
      observation.n += s.state != RankState::Unknown ? 1 : 0;
    }
    last_t_ = observation.t;
    const Decision decision = model_.observe(observation);
    ++observations_;
    if (hooks.on_decision) hooks.on_decision(decision);

    // Keep the targets' snapshots for as long as the set's streak runs: verification looks at the
    // stacks the sampler took anyway, not only at two fresh ones (docs/statistics.md).
    auto& streak = streak_samples_[set];
    if (decision.verdict == Verdict::Suspicion || decision.verdict == Verdict::Hang) {
      streak.push_back({observation.t, std::move(targets)});
    } else {
      streak.clear();
    }
    if (decision.verdict != Verdict::Hang) continue;

    auto alarm = verify(probe, decision);
    if (!alarm) return std::nullopt;  // the job ended during verification
    if (hooks.on_alarm) hooks.on_alarm(*alarm);
    if (alarm->slowdown) {
      model_.resume_after_slowdown(set);
      streak.clear();
      continue;
    }
    last_alarm_set_ = set;
    return identify(probe, decision);
  }
}

std::optional<Alarm> Watchdog::verify(JobProbe& probe, const Decision& decision) {
  Alarm alarm{decision, false, {}};
  const int set = decision.observation.set;
  const auto& targets = sets_[set];
  const auto& streak = streak_samples_[set];
  // Every target's states since the streak that fired began, then two fresh snapshots I/2 apart
  // (§3.3); I/O counters at the fresh ones.
  std::vector<std::vector<RankSnapshot>> series(targets.size());
  for (const auto& sampled : streak) {
    if (sampled.t < decision.streak_onset) continue;
    for (std::size_t i = 0; i < targets.size(); ++i) series[i].push_back(sampled.targets[i]);
  }
  const double half = model_.interval() / 2;
  const double t = decision.observation.t;
  std::vector<std::optional<std::uint64_t>> io_before, io_after;
  for (int fresh = 1; fresh <= 2; ++fresh) {
    if (!probe.wait_until(t + fresh * half)) return std::nullopt;
    const auto now = probe.snapshot(targets);
    for (std::size_t i = 0; i < targets.size(); ++i) series[i].push_back(now[i]);
    (fresh == 1 ? io_before : io_after) = probe.io_bytes();
  }
  last_t_ = probe.now();
  if (!io_before.empty() && io_before.size() == io_after.size()) {
    if (const auto writer = find_io_progress(io_before, io_after)) {
      alarm.slowdown = true;
      alarm.evidence = "rank " + std::to_string(*writer) + " is doing I/O";
      return alarm;
    }
  }
  if (const auto progress = find_progress(series)) {
    alarm.slowdown = true;
    alarm.evidence = describe_progress(targets, *progress);
  }
  return alarm;
}

HangFinding Watchdog::identify(JobProbe& probe, const Decision& decision) {
  HangFinding finding;
  finding.decision = decision;
  finding.confirmed_at = last_t_;
  for (int c = 0; c < config_.identification_rounds; ++c) {
    probe.wait_until(finding.confirmed_at + (c + 1) * config_.identification_spacing);
    finding.checks.push_back(probe.all_states(rank_count_));
  }
  finding.faulty_ranks = persistently_out_ranks(finding.checks);
  return finding;
}

void Watchdog::resume_after_hang() {
  if (!last_alarm_set_) return;
  model_.resume_after_slowdown(*last_alarm_set_);
  streak_samples_[*last_alarm_set_].clear();
  last_alarm_set_.reset();
}

}  // namespace parastack::stats
