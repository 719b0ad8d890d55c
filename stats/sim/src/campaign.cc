#include "parastack/sim/campaign.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>

#include "parastack/sim/random.h"
#include "parastack/stats/verification.h"

namespace parastack::sim {
namespace {

// Two (or more) disjoint random sets of `size` ranks each.
std::vector<std::vector<int>> choose_sets(int ranks, int sets, int size, SplitMix& rng) {
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

struct PlannedJob {
  int shape;
  std::uint64_t seed;
  double duration;
  Fault fault;
};

std::vector<PlannedJob> plan_jobs(const std::vector<WorkloadShape>& shapes,
                                  const CampaignConfig& config) {
  std::vector<PlannedJob> jobs;
  for (int s = 0; s < static_cast<int>(shapes.size()); ++s) {
    SplitMix rng(mix64(config.seed) ^ mix64(static_cast<std::uint64_t>(s) + 1));
    double planned = 0;
    while (planned < config.healthy_hours_per_shape * 3600) {
      const double hours = config.min_job_hours *
          std::exp(rng.uniform() * std::log(config.max_job_hours / config.min_job_hours));
      const double seconds =
          std::min(hours * 3600, config.healthy_hours_per_shape * 3600 - planned + 1);
      jobs.push_back({s, rng.next(), std::max(seconds, 60.0), Fault{}});
      planned += jobs.back().duration;
    }
    for (int h = 0; h < config.hangs_per_shape; ++h) {
      Fault fault;
      fault.onset = rng.uniform() * config.latest_onset_seconds;
      if (rng.uniform() < config.computation_fault_share) {
        fault.kind = FaultKind::Computation;
        const int count = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(config.max_faulty_ranks)));
        while (static_cast<int>(fault.faulty_ranks.size()) < std::min(count, shapes[s].ranks)) {
          const int r = static_cast<int>(rng.below(static_cast<std::uint64_t>(shapes[s].ranks)));
          if (std::find(fault.faulty_ranks.begin(), fault.faulty_ranks.end(), r) ==
              fault.faulty_ranks.end()) {
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

JobOutcome watch_job(const WorkloadShape& shape, int shape_index, const CampaignConfig& config,
                     std::uint64_t job_seed, double duration_seconds, Fault fault,
                     std::vector<stats::Observation>* trace) {
  JobOutcome outcome;
  outcome.shape = shape_index;
  outcome.fault = fault.kind;
  outcome.hang_job = fault.kind != FaultKind::None;
  const SyntheticJob job(shape, job_seed, duration_seconds, fault);
  stats::HangModel model(config.model);
  SplitMix rng(mix64(job_seed ^ 0xa5a5a5a5ULL));
  const auto sets = choose_sets(shape.ranks, config.model.sets, config.sampled_ranks, rng);
  // Sample times of each set's running streak (all suspicious samples since the last healthy one).
  std::vector<std::vector<double>> streak_times(sets.size());

  double t = 0;
  while (true) {
    t += model.next_delay(rng.uniform());
    if (t >= duration_seconds) break;
    const int set = model.next_set();
    int out = 0;
    for (int rank : sets[set]) out += job.is_out(rank, t) ? 1 : 0;
    const stats::Observation observation{t, set, out, static_cast<int>(sets[set].size())};
    if (trace) trace->push_back(observation);
    const auto decision = model.observe(observation);
    ++outcome.observations;
    if (!outcome.ready_at && model.ready()) outcome.ready_at = model.ready_since();
    auto& times = streak_times[set];
    if (decision.verdict == stats::Verdict::Suspicion || decision.verdict == stats::Verdict::Hang) {
      times.push_back(t);
    } else {
      times.clear();
    }
    if (decision.verdict != stats::Verdict::Hang) continue;
    if (trace) {  // recording only: carry on as the `report` action would
      model.resume_after_slowdown(set);
      continue;
    }

    const bool hung = outcome.hang_job && t >= fault.onset;
    ++(hung ? outcome.hang_rejected : outcome.healthy_alarms);
    // Verification (§3.3): the targets' states at every sample of the streak that fired (the
    // stacks the monitor took anyway), then two fresh snapshots half an interval apart; any
    // progress means a transient slowdown.
    const double half = model.interval() / 2;
    const auto fired_from = std::lower_bound(times.begin(), times.end(), decision.streak_onset);
    std::vector<std::vector<stats::RankSnapshot>> series;
    for (int rank : sets[set]) {
      auto& s = series.emplace_back();
      for (auto when = fired_from; when != times.end(); ++when) s.push_back(job.snapshot(rank, *when));
      s.push_back(job.snapshot(rank, t + half));
      s.push_back(job.snapshot(rank, t + 2 * half));
    }
    const double confirmed_at = t + 2 * half;
    // I/O progress of any rank between the two fresh snapshots (the monitor reads /proc/PID/io of
    // every rank; jobs of shapes without checkpoints do no I/O, so the scan is skipped for them).
    bool io_progress = false;
    if (shape.checkpoints_per_hour > 0) {
      std::vector<std::optional<std::uint64_t>> before(shape.ranks), after(shape.ranks);
      for (int r = 0; r < shape.ranks; ++r) {
        before[r] = job.io_bytes(r, t + half);
        after[r] = job.io_bytes(r, confirmed_at);
      }
      io_progress = stats::find_io_progress(before, after).has_value();
    }
    if (io_progress || stats::find_progress(series)) {
      if (!hung) ++outcome.healthy_rejected;
      model.resume_after_slowdown(set);
      times.clear();
      t = confirmed_at;
      continue;
    }
    if (!outcome.hang_job || confirmed_at < fault.onset) {
      outcome.false_alarm = true;
      outcome.healthy_seconds = confirmed_at;
      return outcome;
    }
    --outcome.hang_rejected;  // this alarm was confirmed, not rejected
    outcome.detected = true;
    outcome.delay = confirmed_at - fault.onset;
    // Faulty-rank identification (§4): all ranks, several checks, persistently OUT_MPI.
    std::vector<std::vector<stats::RankState>> checks(config.identification_rounds);
    for (int c = 0; c < config.identification_rounds; ++c) {
      const double when = confirmed_at + (c + 1) * config.identification_spacing_seconds;
      checks[c].resize(shape.ranks);
      for (int r = 0; r < shape.ranks; ++r) checks[c][r] = job.snapshot(r, when).state;
    }
    const auto reported = stats::persistently_out_ranks(checks);
    const bool computation = !reported.empty();
    outcome.type_correct = computation == (fault.kind == FaultKind::Computation);
    if (fault.kind == FaultKind::Computation) {
      int hits = 0;
      for (int f : fault.faulty_ranks) {
        hits += std::find(reported.begin(), reported.end(), f) != reported.end() ? 1 : 0;
      }
      outcome.faulty_found = hits == static_cast<int>(fault.faulty_ranks.size());
      outcome.faulty_precision = reported.empty() ? 0 : static_cast<double>(hits) / static_cast<double>(reported.size());
    }
    break;
  }
  outcome.healthy_seconds = outcome.hang_job ? std::min(fault.onset, t) : std::min(t, duration_seconds);
  outcome.hang_after_ready = outcome.hang_job && outcome.ready_at && *outcome.ready_at <= fault.onset;
  return outcome;
}

}  // namespace

JobOutcome run_job(const WorkloadShape& shape, int shape_index, const CampaignConfig& config,
                   std::uint64_t job_seed, double duration_seconds, Fault fault) {
  return watch_job(shape, shape_index, config, job_seed, duration_seconds, std::move(fault), nullptr);
}

std::vector<stats::Observation> record_trace(const WorkloadShape& shape, const CampaignConfig& config,
                                             std::uint64_t job_seed, double duration_seconds,
                                             Fault fault) {
  std::vector<stats::Observation> trace;
  watch_job(shape, 0, config, job_seed, duration_seconds, std::move(fault), &trace);
  return trace;
}

std::vector<ShapeSummary> run_campaign(const std::vector<WorkloadShape>& shapes,
                                       const CampaignConfig& config) {
  const auto jobs = plan_jobs(shapes, config);
  std::vector<JobOutcome> outcomes(jobs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      const auto& job = jobs[i];
      outcomes[i] = run_job(shapes[job.shape], job.shape, config, job.seed, job.duration, job.fault);
    }
  };
  const int threads = config.threads > 0 ? config.threads
                                         : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (auto& thread : pool) thread.join();

  std::vector<ShapeSummary> summaries(shapes.size());
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    summaries[s].name = shapes[s].name;
    summaries[s].description = shapes[s].description;
    summaries[s].ranks = shapes[s].ranks;
  }
  for (const auto& o : outcomes) {
    auto& s = summaries[o.shape];
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
  ready_times.insert(ready_times.end(), o.ready_times.begin(), o.ready_times.end());
}

namespace {

std::string format_row(const ShapeSummary& r, bool is_total) {
  const double nan = std::nan("");
  const double accuracy =
      r.hangs_after_ready ? 100.0 * r.detected_after_ready / r.hangs_after_ready : nan;
  const double ac_f =
      r.computation_detected ? static_cast<double>(r.faulty_found) / r.computation_detected : nan;
  const double pr_f = r.computation_detected ? r.precision_sum / r.computation_detected : nan;
  char line[512];
  std::snprintf(line, sizeof line,
                "| %s | %s | %.0f | %d | %d | %d | %.3f | %d | %d | %d | %.2f%% | %.1f | %.1f | %d "
                "| %.0f | %d/%d | %.3f | %.3f |\n",
                r.name.c_str(), is_total ? "" : std::to_string(r.ranks).c_str(), r.healthy_hours,
                r.healthy_alarms, r.healthy_rejected, r.false_alarms,
                1000.0 * r.false_alarms / std::max(r.healthy_hours, 1e-9), r.hangs,
                r.hangs_after_ready, r.detected_after_ready, accuracy, percentile(r.delays, 0.5),
                percentile(r.delays, 0.95), r.hang_rejected, percentile(r.ready_times, 0.5),
                r.type_correct, r.detected, ac_f, pr_f);
  return line;
}

}  // namespace

std::string format_summary_table(const std::vector<ShapeSummary>& summaries) {
  std::string out =
      "| workload | ranks | healthy job-h | model alarms | of which slowdowns | false alarms | per 1000 "
      "h | hangs | after model | detected | accuracy | delay p50 s | delay p95 s | hang alarms "
      "judged slowdown | model built p50 s | hang type ok | AC_f | PR_f |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  ShapeSummary total;
  total.name = "**all**";
  for (const auto& s : summaries) {
    out += format_row(s, false);
    total.merge(s);
  }
  return out + format_row(total, true);
}

}  // namespace parastack::sim
