#include "parastack/stats/watchdog.h"

#include <algorithm>
#include <cmath>
#include <limits>
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
  std::string text = "rank " + std::to_string(targets[evidence.rank_index]) + " moved from " + name(evidence.from) +
                     " to " + name(evidence.to);
  if (evidence.changed_place) text += " at another place (the wait it polled in ended)";
  return text;
}

// Which rank a debugger, a stop signal or the kernel holds now, or held at a sample since the
// evidence of `decision` began (one interval before it, to be sure); nullopt if none.
std::optional<std::string> held_by_someone(JobProbe& probe, const Decision& decision, double interval) {
  const auto held = probe.held_ranks(probe.now() - decision.onset() + interval);
  if (held.empty()) return std::nullopt;
  const HeldRank& first = held.front();
  std::string evidence = "rank " + std::to_string(first.rank);
  if (first.stopped) {
    evidence += " was found stopped by a signal (kill -STOP, Ctrl-Z or a suspended job; kill -CONT resumes it)";
  } else if (first.in_kernel) {
    evidence += " was found waiting in the kernel (state D: a stalled file system or device, not the application)";
  } else if (first.tracer != 0) {
    evidence += " is held by a debugger (traced by pid " + std::to_string(first.tracer) + ")";
  } else {
    evidence += " was held by a debugger during the samples";
  }
  if (held.size() > 1) evidence += " and " + std::to_string(held.size() - 1) + " more";
  return evidence;
}

// The last fresh look (after the streak's own observations) at the alarming set, its first `size`
// targets, in which the fraction outside MPI was above the threshold that fired. A hang is a
// *persistent* low fraction (§3): one that rises again while verification watches was a stretch of
// the job, however unlikely under the model. The model assumes independent observations; a node
// loaded for a few seconds breaks that (ranks that yield in MPI_Test wait in the run queue inside
// MPI, so a polling code is seen all in MPI far more often, for as long as the load lasts: a real
// 4-rank job was once confirmed hung so), and the stacks of busy-waiting ranks cannot tell.
struct Rise {
  double t;
  std::string evidence;
};
std::optional<Rise> last_rise_above(const std::vector<std::vector<RankSnapshot>>& series,
                                    const std::vector<double>& times, std::size_t size, double threshold,
                                    std::size_t first_fresh) {
  std::optional<Rise> last;
  for (std::size_t at = first_fresh; at < times.size(); ++at) {
    int out = 0, known = 0;
    for (std::size_t i = 0; i < size && i < series.size(); ++i) {
      const RankState state = at < series[i].size() ? series[i][at].state : RankState::Unknown;
      known += state != RankState::Unknown ? 1 : 0;
      out += state == RankState::OutMpi ? 1 : 0;
    }
    // Both sides are n_out/n quotients, as in the model's own comparison.
    if (known > 0 && static_cast<double>(out) / known > threshold + 1e-12) {
      last = Rise{times[at], "the fraction of sampled ranks outside MPI rose again to " + std::to_string(out) + "/" +
                                 std::to_string(known) + ": the low fraction did not persist"};
    }
  }
  return last;
}

}  // namespace

std::vector<RankState> JobProbe::all_states(int rank_count) {
  std::vector<int> everyone(static_cast<std::size_t>(rank_count));
  std::iota(everyone.begin(), everyone.end(), 0);
  const auto snapshots = snapshot(everyone);
  std::vector<RankState> states(snapshots.size());
  for (std::size_t r = 0; r < snapshots.size(); ++r) states[r] = checked_state(snapshots[r]);
  return states;
}

std::string_view to_string(HangType type) {
  switch (type) {
    case HangType::Computation:
      return "computation";
    case HangType::Communication:
      return "communication";
    case HangType::Undetermined:
      return "undetermined";
  }
  return "?";
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
      sets_(rank_count_ <= config.sample_every_rank_up_to
                ? choose_sets(rank_count_, 1, rank_count_, rng_)
                : choose_sets(rank_count_, config.model.sets, config.sampled_ranks, rng_)),
      model_(with_sets(config.model, sets_.size())),
      streak_samples_(sets_.size()),
      standstills_(sets_.size()) {}

std::optional<HangFinding> Watchdog::watch(JobProbe& probe, const WatchdogHooks& hooks, double until) {
  while (true) {
    const double t_next = last_t_ + model_.next_delay(rng_.uniform());
    const double ready = probe.now();  // the watchdog's own work since the last observation is not lateness
    if (t_next >= until || !probe.wait_until(t_next)) return std::nullopt;
    std::vector<int> sampled_sets;
    if (config_.every_set_each_time) {
      for (int s = 0; s < static_cast<int>(sets_.size()); ++s) sampled_sets.push_back(s);
    } else {
      sampled_sets.push_back(model_.next_set());
    }
    // One snapshot of every rank sampled now, split by set afterwards.
    std::vector<int> ranks;
    for (int s : sampled_sets) ranks.insert(ranks.end(), sets_[s].begin(), sets_[s].end());
    auto all = probe.snapshot(ranks);
    const double t = probe.now();
    last_t_ = t;
    // How late the snapshot came: the probe's sleep overran, or a rank it had to stop was not
    // running. Either way the time before it was not watched as planned (ModelConfig::late_after).
    // Not the first: there is no time before it to watch, and it reads the ranks' symbols.
    const double late_by = observations_ == 0 ? 0.0 : std::max(0.0, t - std::max(t_next, ready));
    std::size_t from = 0;
    for (int s : sampled_sets) {
      const std::size_t size = sets_[s].size();
      std::vector<RankSnapshot> targets;
      for (std::size_t i = from; i < from + size && i < all.size(); ++i) targets.push_back(std::move(all[i]));
      targets.resize(size);
      from += size;
      const std::uint64_t observed = observations_;
      if (auto ended = observe_set(probe, hooks, s, t, late_by, std::move(targets))) return *ended;
      // A verification fed the model later snapshots of every set: these, from t, are stale.
      if (observations_ > observed + 1) break;
    }
  }
}

Decision Watchdog::record(const WatchdogHooks& hooks, int set, double t, double late_by,
                          std::vector<RankSnapshot> targets) {
  Observation observation = signatures_.observe(t, set, targets);
  observation.late_by = late_by;
  if (observation.finished > 0) finished_seen_at_ = t;
  observation.serial_end |= serial_end_;
  follow_standstill(set, observation, targets);
  const Decision decision = model_.observe(observation);
  ++observations_;
  if (hooks.on_decision) hooks.on_decision(decision);

  // Keep the targets' snapshots for as long as a streak of the set runs: verification looks at the
  // stacks the sampler took anyway, not only at fresh ones (docs/statistics.md).
  auto& streak = streak_samples_[set];
  if (decision.streak > 0 || decision.stasis.streak > 0 || decision.stasis.early_streak > 0) {
    streak.push_back({observation.t, std::move(targets)});
  } else {
    streak.clear();
  }
  return decision;
}

void Watchdog::follow_standstill(int set, const Observation& observation, const std::vector<RankSnapshot>& targets) {
  Standstill& watch = standstills_[static_cast<std::size_t>(set)];
  watch.ranks.resize(targets.size());
  bool moved = false;
  for (std::size_t i = 0; i < targets.size(); ++i) moved |= watch.ranks[i].step(targets[i]).has_value();
  // A late observation, or a gap in the watch, ends the measure: the set was not looked at.
  const bool unbroken = watch.since >= 0 && observation.late_by <= config_.model.late_after &&
                        observation.t - watch.last_t <= 2 * model_.interval() && !observation.serial_end;
  if (unbroken && moved && watch.busy_waiting && watch.standing > 0) {
    longest_healthy_freeze_ = std::max(longest_healthy_freeze_, observation.t - watch.since);
  }
  if (!unbroken || moved) {
    watch.since = observation.t;
    watch.busy_waiting = true;  // so far: no observation stood still since
    watch.standing = 0;
    watch.last_t = observation.t;
    return;
  }
  ++watch.standing;
  // SetSignatures' own verdict: every known rank busy-waited (a counted poller is active: its
  // count, not its stack, shows it moving).
  watch.busy_waiting = watch.busy_waiting && observation.active_path == kEveryoneWaiting;
  watch.last_t = observation.t;
}

std::optional<std::optional<HangFinding>> Watchdog::observe_set(JobProbe& probe, const WatchdogHooks& hooks, int set,
                                                                double t, double late_by,
                                                                std::vector<RankSnapshot> targets) {
  const Decision decision = record(hooks, set, t, late_by, std::move(targets));
  auto& streak = streak_samples_[set];
  mark_work(probe);
  if (decision.verdict != Verdict::Hang) return std::nullopt;

  // Another set's verification has just seen the job move, after this streak began: the job was
  // not hung then, whatever this set's stale evidence says.
  if (job_moved_at_ > decision.onset()) {
    Alarm alarm{.decision = decision,
                .slowdown = true,
                .evidence = "the job moved at " + std::to_string(job_moved_at_) + " s (another set)"};
    if (hooks.on_alarm) hooks.on_alarm(alarm);
    model_.resume_after_slowdown(set, job_moved_at_);
    std::erase_if(streak, [&](const Sampled& s) { return s.t <= job_moved_at_; });
    return std::nullopt;
  }
  auto verified = verify(probe, hooks, decision);
  if (!verified) return std::optional<HangFinding>{};  // the job ended during verification
  if (hooks.on_alarm) hooks.on_alarm(verified->alarm);
  if (verified->alarm.slowdown) {
    // A held job did not move: the other sets' alarms are judged on their own (held, too, or not).
    if (!verified->alarm.held && verified->job_moved) job_moved_at_ = std::min(verified->progress_at, probe.now());
    model_.resume_after_slowdown(set, verified->progress_at);
    std::erase_if(streak, [&](const Sampled& s) { return s.t <= verified->progress_at; });
    return std::nullopt;
  }
  std::optional<Verified> moved;
  HangFinding finding = identify(probe, *verified, moved);
  last_t_ = std::max(last_t_, probe.now());  // the checks took their time: the next sample is planned from now
  if (moved) {
    if (hooks.on_alarm) hooks.on_alarm(moved->alarm);
    job_moved_at_ = std::min(moved->progress_at, probe.now());
    model_.resume_after_slowdown(set, moved->progress_at);
    std::erase_if(streak, [&](const Sampled& s) { return s.t <= moved->progress_at; });
    return std::nullopt;
  }
  // Someone took ranks into a debugger, or stopped them, while they were checked (a person looking
  // at the hung job): as in verification, a held job is not judged and nothing is done to it. A
  // hang that is still there once they are let go is found again.
  if (auto held = held_by_someone(probe, decision, model_.interval())) {
    Alarm alarm{.decision = decision,
                .slowdown = true,
                .held = true,
                .withdrawn = true,
                .evidence = *held + " (taken while all ranks were checked)"};
    if (hooks.on_alarm) hooks.on_alarm(alarm);
    model_.resume_after_slowdown(set);
    streak.clear();
    return std::nullopt;
  }
  last_alarm_set_ = set;
  return std::optional<HangFinding>{std::move(finding)};
}

void Watchdog::mark_work(JobProbe& probe) {
  // Reads older than every running streak's first kept observation measure work from before any
  // evidence that can still fire: dropped. With no streak running, none is kept.
  double oldest = std::numeric_limits<double>::infinity();
  for (const auto& streak : streak_samples_) {
    if (!streak.empty()) oldest = std::min(oldest, streak.front().t);
  }
  while (!work_marks_.empty() && work_marks_.front().t < oldest) work_marks_.pop_front();
  if (oldest == std::numeric_limits<double>::infinity()) return;
  // A streak may run for minutes (a job held by a debugger): its first reads are the ones kept.
  constexpr std::size_t kMostMarks = 600;
  constexpr double kMarkSpacing = 1.0;  // seconds: a rank's counters cost two /proc reads
  const double now = probe.now();
  if (work_marks_.size() < kMostMarks && (work_marks_.empty() || now - work_marks_.back().t >= kMarkSpacing)) {
    auto counters = probe.work_counters();
    work_marks_.push_back(WorkMark{probe.now(), std::move(counters)});
  }
}

double Watchdog::evidence_complete_at(const Decision& decision) const {
  const double t = decision.observation.t;
  const auto& streak = streak_samples_[static_cast<std::size_t>(decision.observation.set)];
  // The n-th of the set's kept observations after `from` (inclusive or not), or t.
  auto nth_after = [&](double from, bool inclusive, int n) {
    for (const auto& sampled : streak) {
      if ((inclusive ? sampled.t >= from : sampled.t > from) && --n <= 0) return std::min(t, sampled.t);
    }
    return t;
  };
  switch (decision.evidence) {
    case Evidence::Fraction:
      if (decision.required_streak > 0 && decision.streak > decision.required_streak) {
        return nth_after(decision.streak_onset, true, decision.required_streak);
      }
      return t;
    case Evidence::Stasis:
      // The run's onset is the observation before its first still one.
      if (decision.stasis.required_streak > 0 && decision.stasis.streak > decision.stasis.required_streak) {
        return nth_after(decision.stasis.streak_onset, false, decision.stasis.required_streak);
      }
      return t;
    case Evidence::EarlyStasis:
    case Evidence::None:
      return t;
  }
  return t;
}

std::optional<Watchdog::Verified> Watchdog::verify(JobProbe& probe, const WatchdogHooks& hooks,
                                                   const Decision& decision) {
  Verified result;
  result.alarm.decision = decision;
  Alarm& alarm = result.alarm;
  const int set = decision.observation.set;
  const auto& streak = streak_samples_[set];
  // The alarming set's states since the evidence that fired began, then fresh snapshots of every
  // sampled rank (all sets: a hang stops them all) about I/2 apart (§3.3), until a window that
  // grows with that evidence has passed since it sufficed: a short streak is checked for at least
  // I, a long one for a share of its length more, so a slowdown whose stretched cycle outlasts the
  // streak still shows its movement. Work counters at the first and last fresh snapshot.
  std::vector<int> targets = sets_[set];
  std::vector<std::size_t> first_target(sets_.size());  // where each set's ranks sit in `targets`
  for (int other = 0; other < static_cast<int>(sets_.size()); ++other) {
    if (other == set) continue;
    first_target[other] = targets.size();
    targets.insert(targets.end(), sets_[other].begin(), sets_[other].end());
  }
  std::vector<std::vector<RankSnapshot>> series(targets.size());
  std::vector<double> times;
  const double onset = decision.onset();
  for (const auto& sampled : streak) {
    if (sampled.t < onset) continue;
    times.push_back(sampled.t);
    for (std::size_t i = 0; i < targets.size(); ++i) {
      series[i].push_back(i < sampled.targets.size() ? sampled.targets[i] : RankSnapshot{});
    }
  }
  const std::size_t first_fresh = times.size();
  const double interval = model_.interval();
  const double t = decision.observation.t;
  // Another set's verification may already have moved the clock past t: the fresh window starts now.
  const double fresh_start = std::max(t, probe.now());
  // The window runs from when the evidence sufficed: a streak kept from before a slowdown's last
  // movement and extended since has already been watched standing still past that point. The
  // job's longest freeze that verification has already seen end (a slowdown) sets a floor: a
  // streak must then outlast it by half before it can be a hang.
  const double complete = evidence_complete_at(decision);
  const double end = decision.evidence == Evidence::EarlyStasis
                         ? fresh_start + interval
                         : std::max({complete + interval, complete + config_.verification_fraction * (complete - onset),
                                     onset + config_.freeze_margin * longest_healthy_freeze_});
  double fresh_end = std::max(end, fresh_start + interval);
  // Every fresh snapshot is also an observation of the model (of every set), at the model's own
  // randomised pace: a hang whose streak verification cuts at a movement just before its onset
  // has then kept growing meanwhile, and is judged again at once rather than after a new streak.
  double fed_at = std::max(t, last_t_), feed_gap = model_.next_delay(rng_.uniform());
  std::vector<std::optional<WorkCounters>> work_before, work_after;
  double at = fresh_start, previous_taken = fresh_start;
  for (int fresh = 0; fresh < 2 || at < fresh_end; ++fresh) {
    const double step = model_.next_delay(rng_.uniform()) / 2;  // at most 3I/4: the first never passes fresh_end
    at = at < fresh_end ? std::min(at + step, fresh_end) : at + step;
    const double ready = probe.now();
    if (!probe.wait_until(at)) return std::nullopt;
    auto now = probe.snapshot(targets);
    const double taken = probe.now();
    const double late_by = std::max(0.0, taken - std::max(at, ready));
    // A late snapshot watched nothing since the one before: verification watches that much longer,
    // so that it sees the job for as long as it meant to.
    if (late_by > config_.model.late_after) fresh_end += taken - previous_taken;
    previous_taken = taken;
    at = std::max(at, taken);  // the next snapshot is planned from this one, not from a plan it missed
    times.push_back(taken);
    for (std::size_t i = 0; i < targets.size(); ++i) series[i].push_back(i < now.size() ? now[i] : RankSnapshot{});
    if (fresh == 0) {
      work_before = probe.work_counters();
      work_marks_.push_back(WorkMark{taken, work_before});
    }
    if (taken - fed_at >= feed_gap) {
      now.resize(targets.size());
      for (int s = 0; s < static_cast<int>(sets_.size()); ++s) {
        const std::size_t from = s == set ? 0 : first_target[s];
        record(hooks, s, taken, late_by,
               std::vector<RankSnapshot>(now.begin() + static_cast<std::ptrdiff_t>(from),
                                         now.begin() + static_cast<std::ptrdiff_t>(from + sets_[s].size())));
      }
      fed_at = taken;
      feed_gap = model_.next_delay(rng_.uniform());
    }
  }
  work_after = probe.work_counters();
  last_t_ = probe.now();
  result.targets = targets;
  result.last.reserve(targets.size());
  for (const auto& rank_series : series) result.last.push_back(rank_series.back());
  result.last_t = times.back();
  // A rank under a debugger, or stopped by a signal, stops its peers too, and looks exactly like a
  // hang: someone is looking at the job, or paused it. Never kill it for that; the model starts
  // again once the rank is released.
  if (auto held = held_by_someone(probe, decision, interval)) {
    alarm.slowdown = alarm.held = true;
    alarm.evidence = std::move(*held);
    return result;
  }
  // The earliest counters read since the evidence began: the longest span to see work in.
  for (const auto& mark : work_marks_) {
    if (mark.t >= onset && mark.counters.size() == work_after.size()) {
      work_before = mark.counters;
      break;
    }
  }
  if (!work_before.empty() && work_before.size() == work_after.size()) {
    if (const auto work = find_work(work_before, work_after)) {
      alarm.slowdown = true;
      alarm.evidence = describe_work(*work);
      return result;  // the job is working now: nothing of the streak is kept
    }
    // A job its node does not let run is not judged, as one a debugger holds: its observations
    // are the node's, not the job's (verification.h, CpuStarvation).
    if (const auto starved = find_starvation(work_before, work_after)) {
      alarm.slowdown = alarm.held = true;
      alarm.evidence = describe_starvation(*starved);
      return result;
    }
  }
  if (const auto progress = find_last_progress(series)) {
    alarm.slowdown = true;
    alarm.evidence = describe_progress(targets, *progress);
    result.progress_at = times[progress->at];
    // How long the job stood still between movements: healthy behaviour, now known. A stretch in
    // which this set was not looked at (another set's verification) says nothing: it restarts.
    const auto moves = progress_columns(series);
    double since = times.front();
    for (std::size_t c = 1, m = 0; c < times.size(); ++c) {
      if (times[c] - times[c - 1] > 2 * interval) since = times[c];
      if (m < moves.size() && moves[m] == c) {
        longest_healthy_freeze_ = std::max(longest_healthy_freeze_, times[c] - since);
        since = times[c];
        ++m;
      }
    }
    return result;
  }
  if (decision.evidence == Evidence::Fraction && decision.threshold) {
    if (const auto rose = last_rise_above(series, times, sets_[set].size(), decision.threshold->value, first_fresh)) {
      alarm.slowdown = true;
      alarm.evidence = rose->evidence;
      result.progress_at = rose->t;
      result.job_moved = false;
      // A stretch this long of a low fraction was healthy: the next alarm must outlast it by half.
      longest_healthy_freeze_ = std::max(longest_healthy_freeze_, rose->t - onset);
    }
  }
  return result;
}

HangFinding Watchdog::identify(JobProbe& probe, const Verified& verified, std::optional<Verified>& moved) {
  HangFinding finding;
  finding.decision = verified.alarm.decision;
  finding.confirmed_at = last_t_;
  const std::vector<int>& targets = verified.targets;
  // The sampled ranks from verification's last look on, one column per check.
  std::vector<std::vector<RankSnapshot>> series(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    series[i].push_back(i < verified.last.size() ? verified.last[i] : RankSnapshot{});
  }
  std::vector<double> times{verified.last_t};
  // Ranks at work outside MPI in every check while sampled ranks waited in MPI_Finalize during
  // the evidence: the job's serial end (rank 0 summing up while the others wait to finish), which
  // stacks cannot tell from a spin. Not judged, from now to the job's end. A rank blocked in MPI
  // beside finished ones (a message never sent) is no rank at work, and stays a hang.
  const auto at_serial_end = [&](const std::vector<int>& working_ranks) {
    if (working_ranks.empty() || finished_seen_at_ < finding.decision.onset()) return;
    serial_end_ = true;
    std::string working;
    for (std::size_t i = 0; i < working_ranks.size() && i < 3; ++i) {
      working += (i > 0 ? ", " : "") + std::to_string(working_ranks[i]);
    }
    if (working_ranks.size() > 3) working += " and " + std::to_string(working_ranks.size() - 3) + " more";
    moved.emplace();
    moved->alarm = Alarm{.decision = finding.decision,
                         .slowdown = true,
                         .withdrawn = true,
                         .serial_end = true,
                         .evidence = "sampled ranks wait in MPI_Finalize while rank(s) " + working +
                                     " work outside MPI in every check of all ranks"};
    moved->progress_at = times.back();
  };
  for (int c = 0; c < config_.identification_rounds; ++c) {
    if (!probe.wait_until(finding.confirmed_at + (c + 1) * config_.identification_spacing)) {
      finding.ended_during_checks = true;  // e.g. a second watchdog on the job acted first
      // Or the job's serial end finished by itself under the checks: judged on the checks taken,
      // not reported as a hang of a job that completed (a false alarm the simulator found).
      at_serial_end(persistently_out_ranks(finding.checks));
      return finding;
    }
    auto states = probe.all_states(rank_count_);
    // The sampled ranks once more, whole snapshots (a small job's are its every rank, twice: a
    // check is about 20 us a rank).
    auto now = probe.snapshot(targets);
    times.push_back(probe.now());
    now.resize(targets.size());
    for (std::size_t i = 0; i < targets.size(); ++i) series[i].push_back(std::move(now[i]));
    // Not one rank could be sampled: they have all ended (a probe may notice that a little later:
    // `parastack run` looks once a second), and the checks taken were of dying ranks.
    if (std::all_of(states.begin(), states.end(), [](RankState s) { return s == RankState::Unknown; })) {
      finding.ended_during_checks = true;
      at_serial_end(persistently_out_ranks(finding.checks));
      return finding;
    }
    finding.checks.push_back(std::move(states));
  }
  if (const auto progress = find_last_progress(series)) {
    moved.emplace();
    moved->alarm = Alarm{.decision = finding.decision,
                         .slowdown = true,
                         .withdrawn = true,
                         .evidence = describe_progress(targets, *progress) + " (while all ranks were checked)"};
    moved->progress_at = times[progress->at];
    // It stood still from the evidence's onset at least: a freeze it came out of, which the next
    // alarm's verification must outlast (WatchdogConfig::freeze_margin).
    longest_healthy_freeze_ = std::max(longest_healthy_freeze_, moved->progress_at - finding.decision.onset());
    return finding;
  }
  finding.faulty_ranks = persistently_out_ranks(finding.checks);
  // Every rank at work outside MPI in every check: nobody waits for anybody. Only ranks that also
  // have a thread in MPI (a comm thread polling beside the computation: IN_MPI for S, §6) make such
  // a picture follow a low S; it is the job computing, and a hang in which every rank spins is one
  // S never sees in a single-threaded code either.
  if (rank_count_ > 0 && finding.faulty_ranks.size() == static_cast<std::size_t>(rank_count_)) {
    finding.faulty_ranks.clear();
    moved.emplace();
    moved->alarm = Alarm{.decision = finding.decision,
                         .slowdown = true,
                         .withdrawn = true,
                         .evidence =
                             "every rank works outside MPI in every check of all ranks (beside a thread in "
                             "MPI): the job computes"};
    moved->progress_at = times.back();  // no freeze learned: the checks, not its length, tell it
    return finding;
  }
  at_serial_end(finding.faulty_ranks);
  return finding;
}

void Watchdog::resume_after_hang() {
  if (!last_alarm_set_) return;
  model_.resume_after_slowdown(*last_alarm_set_);  // nothing of the streak is kept
  streak_samples_[*last_alarm_set_].clear();
  last_alarm_set_.reset();
}

}  // namespace parastack::stats
