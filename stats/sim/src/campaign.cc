#include "parastack/sim/campaign.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>

#include "parastack/stats/random.h"
#include "parastack/stats/verification.h"
#include "parastack/stats/watchdog.h"

namespace parastack::sim {

using stats::mix64;
using stats::SplitMix;
using stats::to_unit;
namespace {

// Two (or more) disjoint random sets of `size` ranks each.
struct PlannedJob {
  int shape;
  std::uint64_t seed;
  double duration;
  Fault fault;
};

std::vector<PlannedJob> plan_jobs(const std::vector<WorkloadShape>& shapes, const CampaignConfig& config) {
  std::vector<PlannedJob> jobs;
  for (int s = 0; s < static_cast<int>(shapes.size()); ++s) {
    SplitMix rng(mix64(config.seed) ^ mix64(static_cast<std::uint64_t>(s) + 1));
    double planned = 0;
    const double min_hours = shapes[s].min_job_hours > 0 ? shapes[s].min_job_hours : config.min_job_hours;
    const double max_hours = shapes[s].max_job_hours > 0 ? shapes[s].max_job_hours : config.max_job_hours;
    while (planned < config.healthy_hours_per_shape * 3600) {
      const double hours = min_hours * std::exp(rng.uniform() * std::log(max_hours / min_hours));
      const double seconds = std::min(hours * 3600, config.healthy_hours_per_shape * 3600 - planned + 1);
      jobs.push_back({s, rng.next(), std::max(seconds, 60.0), Fault{}});
      planned += jobs.back().duration;
    }
    for (int h = 0; h < config.hangs_per_shape; ++h) {
      Fault fault;
      const auto& shape = shapes[s];
      fault.onset = shape.onset_max_seconds > 0
                        ? rng.uniform(std::max(0.0, shape.onset_min_seconds), shape.onset_max_seconds)
                        : rng.uniform() * config.latest_onset_seconds;
      if (rng.uniform() < config.computation_fault_share) {
        fault.kind = FaultKind::Computation;
        const int count = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(config.max_faulty_ranks)));
        while (static_cast<int>(fault.faulty_ranks.size()) < std::min(count, shapes[s].ranks)) {
          const int r = static_cast<int>(rng.below(static_cast<std::uint64_t>(shapes[s].ranks)));
          if (std::find(fault.faulty_ranks.begin(), fault.faulty_ranks.end(), r) == fault.faulty_ranks.end()) {
            fault.faulty_ranks.push_back(r);
          }
        }
      } else {
        fault.kind = FaultKind::Deadlock;
      }
      jobs.push_back({s, rng.next(), fault.onset + config.max_detection_wait_seconds, fault});
    }
  }
  return jobs;
}

}  // namespace

namespace {

// The synthetic job seen through the watchdog's probe: states and I/O counters at virtual time.
class SyntheticProbe : public stats::JobProbe {
 public:
  SyntheticProbe(const SyntheticJob& job, double duration_seconds, bool tracks_io)
      : job_(job), duration_(duration_seconds), tracks_io_(tracks_io) {}

  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < duration_;
  }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<stats::RankSnapshot> states;
    states.reserve(ranks.size());
    for (int rank : ranks) states.push_back(job_.snapshot(rank, t_));
    return states;
  }
  std::vector<stats::RankState> all_states(int rank_count) override {
    std::vector<stats::RankState> states(static_cast<std::size_t>(rank_count));
    for (int r = 0; r < rank_count; ++r) {
      states[r] = job_.is_out(r, t_) ? stats::RankState::OutMpi : stats::RankState::InMpi;
    }
    return states;
  }
  // Only shapes with checkpoints do I/O; for the others the scan would find nothing, slowly. No
  // shape models memory: page faults stay 0, and only I/O can show work.
  std::vector<std::optional<stats::WorkCounters>> work_counters() override {
    if (!tracks_io_) return {};
    std::vector<std::optional<stats::WorkCounters>> counters(static_cast<std::size_t>(job_.shape().ranks));
    for (int r = 0; r < job_.shape().ranks; ++r) counters[r] = stats::WorkCounters{job_.io_bytes(r, t_), 0};
    return counters;
  }

 private:
  const SyntheticJob& job_;
  double duration_;
  bool tracks_io_;
  double t_ = 0;
};

stats::WatchdogConfig watchdog_config(const CampaignConfig& config) {
  stats::WatchdogConfig watchdog;
  watchdog.model = config.model;
  watchdog.sampled_ranks = config.sampled_ranks;
  watchdog.every_set_each_time = config.every_set_each_time;
  watchdog.sample_every_rank_up_to = config.sample_every_rank_up_to;
  watchdog.identification_rounds = config.identification_rounds;
  watchdog.identification_spacing = config.identification_spacing_seconds;
  return watchdog;
}

// When the evidence that fired began (Decision::onset is the earliest of every test running).
double evidence_onset(const stats::Decision& d) {
  switch (d.evidence) {
    case stats::Evidence::Fraction:
      return d.streak_onset;
    case stats::Evidence::Stasis:
      return d.stasis.streak_onset;
    case stats::Evidence::EarlyStasis:
      return d.stasis.early_onset;
    case stats::Evidence::None:
      break;
  }
  return d.onset();
}

JobOutcome watch_job(const WorkloadShape& shape, int shape_index, const CampaignConfig& config, std::uint64_t job_seed,
                     double duration_seconds, Fault fault, std::vector<stats::Observation>* trace) {
  JobOutcome outcome;
  outcome.shape = shape_index;
  outcome.fault = fault.kind;
  outcome.hang_job = fault.kind != FaultKind::None;
  const SyntheticJob job(shape, job_seed, duration_seconds, fault);
  SyntheticProbe probe(job, duration_seconds, shape.checkpoints_per_hour > 0);
  stats::Watchdog watchdog(watchdog_config(config), shape.ranks, mix64(job_seed ^ 0xa5a5a5a5ULL));

  stats::WatchdogHooks hooks;
  hooks.on_decision = [&](const stats::Decision& decision) {
    if (trace) trace->push_back(decision.observation);
    if (!outcome.ready_at && watchdog.model().ready()) outcome.ready_at = watchdog.model().ready_since();
  };
  // Score each alarm against the truth the simulator knows.
  hooks.on_alarm = [&](const stats::Alarm& alarm) {
    const bool hung = outcome.hang_job && alarm.decision.observation.t >= fault.onset;
    if (hung) {
      outcome.hang_rejected += alarm.slowdown ? 1 : 0;
    } else {
      if (!alarm.withdrawn) ++outcome.healthy_alarms;  // counted when it was raised
      outcome.healthy_rejected += alarm.slowdown ? 1 : 0;
    }
  };

  if (trace) {  // recording only: carry on after every confirmation, as the `report` action does
    while (watchdog.watch(probe, hooks)) watchdog.resume_after_hang();
    return outcome;
  }
  const auto finding = watchdog.watch(probe, hooks);
  outcome.observations = watchdog.observations();
  if (finding) {
    const double confirmed_at = finding->confirmed_at;
    if (!outcome.hang_job || confirmed_at < fault.onset) {
      outcome.false_alarm = true;
      outcome.false_alarm_at = confirmed_at;
      outcome.healthy_seconds = confirmed_at;
      return outcome;
    }
    outcome.detected = true;
    outcome.delay = confirmed_at - fault.onset;
    const stats::Decision& fired = finding->decision;
    outcome.evidence = fired.evidence;
    outcome.evidence_began = evidence_onset(fired) - fault.onset;
    outcome.evidence_seconds = fired.observation.t - evidence_onset(fired);
    outcome.checks_seconds = confirmed_at - fired.observation.t;
    const auto& reported = finding->faulty_ranks;
    outcome.type_correct = finding->type() == (fault.kind == FaultKind::Computation ? stats::HangType::Computation
                                                                                    : stats::HangType::Communication);
    if (fault.kind == FaultKind::Computation) {
      int hits = 0;
      for (int f : fault.faulty_ranks) {
        hits += std::find(reported.begin(), reported.end(), f) != reported.end() ? 1 : 0;
      }
      outcome.faulty_found = hits == static_cast<int>(fault.faulty_ranks.size());
      outcome.faulty_precision =
          reported.empty() ? 0 : static_cast<double>(hits) / static_cast<double>(reported.size());
    }
  }
  const double t = finding ? finding->decision.observation.t : probe.now();
  outcome.healthy_seconds = outcome.hang_job ? std::min(fault.onset, t) : std::min(t, duration_seconds);
  outcome.hang_after_ready = outcome.hang_job && outcome.ready_at && *outcome.ready_at <= fault.onset;
  return outcome;
}

}  // namespace

JobOutcome run_job(const WorkloadShape& shape, int shape_index, const CampaignConfig& config, std::uint64_t job_seed,
                   double duration_seconds, Fault fault) {
  return watch_job(shape, shape_index, config, job_seed, duration_seconds, std::move(fault), nullptr);
}

std::vector<stats::Observation> record_trace(const WorkloadShape& shape, const CampaignConfig& config,
                                             std::uint64_t job_seed, double duration_seconds, Fault fault) {
  std::vector<stats::Observation> trace;
  watch_job(shape, 0, config, job_seed, duration_seconds, std::move(fault), &trace);
  return trace;
}

std::vector<ShapeSummary> run_campaign(const std::vector<WorkloadShape>& shapes, const CampaignConfig& config) {
  const auto jobs = plan_jobs(shapes, config);
  std::vector<JobOutcome> outcomes(jobs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      const auto& job = jobs[i];
      outcomes[i] = run_job(shapes[job.shape], job.shape, config, job.seed, job.duration, job.fault);
    }
  };
  const int threads =
      config.threads > 0 ? config.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (auto& thread : pool) thread.join();

  std::vector<ShapeSummary> summaries(shapes.size());
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    summaries[s].name = shapes[s].name;
    summaries[s].description = shapes[s].description;
    summaries[s].ranks = shapes[s].ranks;
  }
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& o = outcomes[i];
    auto& s = summaries[o.shape];
    if (o.false_alarm || (o.hang_job && !o.detected)) {
      s.failures.push_back({jobs[i].seed, jobs[i].duration, jobs[i].fault, o.false_alarm, o.false_alarm_at});
    }
    s.healthy_hours += o.healthy_seconds / 3600;
    s.false_alarms += o.false_alarm ? 1 : 0;
    s.healthy_alarms += o.healthy_alarms;
    s.healthy_rejected += o.healthy_rejected;
    s.hang_rejected += o.hang_rejected;
    if (o.ready_at) s.ready_times.push_back(*o.ready_at);
    if (!o.hang_job) continue;
    ++s.hangs;
    s.detected += o.detected ? 1 : 0;
    if (o.hang_after_ready) {
      ++s.hangs_after_ready;
      if (o.detected) {
        ++s.detected_after_ready;
        s.delays.push_back(o.delay);
      }
    }
    if (o.detected) {
      s.all_delays.push_back(o.delay);
      s.evidence_began.push_back(o.evidence_began);
      s.evidence_seconds.push_back(o.evidence_seconds);
      s.checks_seconds.push_back(o.checks_seconds);
      s.fired_by_fraction += o.evidence == stats::Evidence::Fraction ? 1 : 0;
      s.fired_by_stasis += o.evidence == stats::Evidence::Stasis ? 1 : 0;
      s.fired_by_early_stasis += o.evidence == stats::Evidence::EarlyStasis ? 1 : 0;
      s.type_correct += o.type_correct ? 1 : 0;
      if (o.fault == FaultKind::Computation) {
        ++s.computation_detected;
        s.faulty_found += o.faulty_found ? 1 : 0;
        s.precision_sum += o.faulty_precision;
      }
    }
  }
  return summaries;
}

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double position = fraction * static_cast<double>(values.size() - 1);
  const auto lower = static_cast<std::size_t>(position);
  const std::size_t upper = std::min(lower + 1, values.size() - 1);
  return values[lower] + (position - static_cast<double>(lower)) * (values[upper] - values[lower]);
}

void ShapeSummary::merge(const ShapeSummary& o) {
  healthy_hours += o.healthy_hours;
  false_alarms += o.false_alarms;
  healthy_alarms += o.healthy_alarms;
  healthy_rejected += o.healthy_rejected;
  hang_rejected += o.hang_rejected;
  hangs += o.hangs;
  hangs_after_ready += o.hangs_after_ready;
  detected_after_ready += o.detected_after_ready;
  detected += o.detected;
  type_correct += o.type_correct;
  computation_detected += o.computation_detected;
  faulty_found += o.faulty_found;
  precision_sum += o.precision_sum;
  delays.insert(delays.end(), o.delays.begin(), o.delays.end());
  all_delays.insert(all_delays.end(), o.all_delays.begin(), o.all_delays.end());
  evidence_began.insert(evidence_began.end(), o.evidence_began.begin(), o.evidence_began.end());
  evidence_seconds.insert(evidence_seconds.end(), o.evidence_seconds.begin(), o.evidence_seconds.end());
  checks_seconds.insert(checks_seconds.end(), o.checks_seconds.begin(), o.checks_seconds.end());
  fired_by_fraction += o.fired_by_fraction;
  fired_by_stasis += o.fired_by_stasis;
  fired_by_early_stasis += o.fired_by_early_stasis;
  ready_times.insert(ready_times.end(), o.ready_times.begin(), o.ready_times.end());
  failures.insert(failures.end(), o.failures.begin(), o.failures.end());
}

namespace {

std::string format_row(const ShapeSummary& r, bool is_total) {
  const double nan = std::nan("");
  const double accuracy = r.hangs ? 100.0 * r.detected / r.hangs : nan;
  const double accuracy_after = r.hangs_after_ready ? 100.0 * r.detected_after_ready / r.hangs_after_ready : nan;
  const double ac_f = r.computation_detected ? static_cast<double>(r.faulty_found) / r.computation_detected : nan;
  const double pr_f = r.computation_detected ? r.precision_sum / r.computation_detected : nan;
  char line[512];
  std::snprintf(line, sizeof line,
                "| %s | %s | %.0f | %d | %d | %d | %.3f | %d | %d | %d | %.2f%% | %.1f | %.1f | %.2f%% | %d "
                "| %.0f | %d/%d | %.3f | %.3f |\n",
                r.name.c_str(), is_total ? "" : std::to_string(r.ranks).c_str(), r.healthy_hours, r.healthy_alarms,
                r.healthy_rejected, r.false_alarms, 1000.0 * r.false_alarms / std::max(r.healthy_hours, 1e-9), r.hangs,
                r.hangs - r.hangs_after_ready, r.detected, accuracy, percentile(r.all_delays, 0.5),
                percentile(r.all_delays, 0.95), accuracy_after, r.hang_rejected, percentile(r.ready_times, 0.5),
                r.type_correct, r.detected, ac_f, pr_f);
  return line;
}

}  // namespace

std::string format_summary_table(const std::vector<ShapeSummary>& summaries) {
  std::string out =
      "| workload | ranks | healthy job-h | model alarms | of which slowdowns | false alarms | per 1000 "
      "h | hangs | before S model | detected | accuracy | delay p50 s | delay p95 s | accuracy after S "
      "model | hang alarms judged slowdown | S model built p50 s | hang type ok | AC_f | PR_f |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  ShapeSummary total;
  total.name = "**all**";
  for (const auto& s : summaries) {
    out += format_row(s, false);
    total.merge(s);
  }
  return out + format_row(total, true);
}

std::string format_delay_table(const std::vector<ShapeSummary>& summaries) {
  std::string out =
      "| workload | detected | evidence began after the fault p50 / p95 s | evidence p50 / p95 s | verification "
      "and checks p50 / p95 s | delay p50 / p95 s | fired by S / stasis model / model-free rule |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n";
  auto row = [](const ShapeSummary& r) {
    auto pair = [](const std::vector<double>& v) {
      char text[64];
      std::snprintf(text, sizeof text, "%.1f / %.1f", percentile(v, 0.5), percentile(v, 0.95));
      return std::string(text);
    };
    char line[512];
    std::snprintf(line, sizeof line, "| %s | %d | %s | %s | %s | %s | %d / %d / %d |\n", r.name.c_str(), r.detected,
                  pair(r.evidence_began).c_str(), pair(r.evidence_seconds).c_str(), pair(r.checks_seconds).c_str(),
                  pair(r.all_delays).c_str(), r.fired_by_fraction, r.fired_by_stasis, r.fired_by_early_stasis);
    return std::string(line);
  };
  ShapeSummary total;
  total.name = "**all**";
  for (const auto& s : summaries) {
    out += row(s);
    total.merge(s);
  }
  return out + row(total);
}

}  // namespace parastack::sim
