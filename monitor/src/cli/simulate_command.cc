// parastack simulate: Monte Carlo campaigns of synthetic jobs watched by the real model, or one
// synthetic job's sample trace for `parastack replay`.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "parastack/sim/campaign.h"
#include "parastack/stats/trace.h"

namespace parastack::cli {
namespace {

struct SimulateOptions {
  sim::CampaignConfig campaign;
  std::vector<std::string> shapes;  // empty: all standard shapes
  std::vector<std::string> modes{"default"};
  int job_ranks = 0;  // overrides every selected shape's rank count when set
  // Single-job trace mode.
  std::string trace_out;
  double duration = 3600;
  double hang_at = -1;
  std::string fault = "computation";
  std::vector<int> faulty_ranks{0};
};

std::vector<sim::WorkloadShape> named_shapes(const std::vector<std::string>& names) {
  auto all = sim::standard_shapes();
  if (names.empty()) return all;
  std::vector<sim::WorkloadShape> chosen;
  for (const auto& name : names) {
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& s) { return s.name == name; });
    if (it == all.end()) {
      std::string known;
      for (const auto& s : all) known += " " + s.name;
      throw std::invalid_argument("unknown workload shape '" + name + "'; known:" + known);
    }
    chosen.push_back(*it);
  }
  return chosen;
}

std::vector<sim::WorkloadShape> selected_shapes(const SimulateOptions& options) {
  auto shapes = named_shapes(options.shapes);
  if (options.job_ranks > 0) {
    for (auto& shape : shapes) shape.ranks = options.job_ranks;
  }
  return shapes;
}

int emit_trace(const SimulateOptions& options) {
  const auto shapes = selected_shapes(options);
  if (shapes.size() != 1) {
    std::cerr << "parastack simulate: --trace-out needs exactly one --shape\n";
    return kExitUsage;
  }
  sim::Fault fault;
  if (options.hang_at >= 0) {
    fault.onset = options.hang_at;
    fault.kind = options.fault == "deadlock" ? sim::FaultKind::Deadlock : sim::FaultKind::Computation;
    if (fault.kind == sim::FaultKind::Computation) fault.faulty_ranks = options.faulty_ranks;
  }
  const auto trace =
      sim::record_trace(shapes.front(), options.campaign, options.campaign.seed, options.duration, fault);
  std::ofstream out(options.trace_out);
  if (!out) {
    std::cerr << "parastack simulate: cannot write " << options.trace_out << "\n";
    return kExitUsage;
  }
  for (const auto& observation : trace) out << stats::format_trace_line(observation) << "\n";
  out.flush();
  if (!out) {
    std::cerr << "parastack simulate: writing " << options.trace_out << " failed\n";
    return kExitUsage;
  }
  const std::string hang =
      options.hang_at >= 0 ? ", " + options.fault + " hang at " + std::to_string(options.hang_at) + " s" : "";
  std::printf("wrote %zu observations (%s, %.0f s%s) to %s\n", trace.size(), shapes.front().name.c_str(),
              options.duration, hang.c_str(), options.trace_out.c_str());
  return kExitOk;
}

// Every job the campaign got wrong, each with the command that records it alone as a trace, so a
// miss or a false alarm can be replayed decision by decision (`parastack replay --json`). Only the
// default mode's jobs can be recorded so: trace mode watches with the default evidence.
std::string format_failures(const std::vector<sim::ShapeSummary>& summaries, const SimulateOptions& options,
                            bool recordable) {
  std::string out;
  for (const auto& summary : summaries) {
    for (const auto& job : summary.failures) {
      const auto& fault = job.fault;
      std::string what = job.false_alarm ? fmt::format("false alarm at {:.1f} s", job.at) : "missed";
      std::string record = fmt::format("--shape {} --seed {} --duration {:.17g}", summary.name, job.seed, job.duration);
      if (options.job_ranks > 0) record += fmt::format(" --job-ranks {}", options.job_ranks);
      if (fault.kind != sim::FaultKind::None) {
        const bool deadlock = fault.kind == sim::FaultKind::Deadlock;
        what += fmt::format(": {} hang at {:.1f} s", deadlock ? "deadlock" : "computation", fault.onset);
        if (!deadlock) what += fmt::format(" (rank {})", fmt::join(fault.faulty_ranks, ", "));
        record += fmt::format(" --hang-at {:.17g} --fault {}", fault.onset, deadlock ? "deadlock" : "computation");
        for (int rank : fault.faulty_ranks) record += fmt::format(" --faulty-rank {}", rank);
      }
      out += fmt::format("- {} {}", summary.name, what);
      out += recordable ? fmt::format("; record it: parastack simulate {} --trace-out job.jsonl\n", record) : "\n";
    }
  }
  return out.empty() ? out
                     : "\njobs the watchdog got wrong (to record one, repeat the campaign's model options, if it "
                       "had any):\n" +
                           out;
}

// The model variants a campaign can compare: the default, the paper's rule, the model before
// stasis evidence and exact bounds ("s-only": what parastack did until then), and the two halfway
// points that isolate what the per-job budget and the every-value thresholds each change.
struct Mode {
  const char* name;
  stats::AlarmBudget budget;
  stats::ThresholdRule thresholds;
  bool evidence_of_today = true;  // exact bounds, stasis, 0.1 s, every set at each sample
};
constexpr Mode kModes[] = {
    {"default", stats::AlarmBudget::PerJob, stats::ThresholdRule::EveryValue},
    {"s-only", stats::AlarmBudget::PerJob, stats::ThresholdRule::EveryValue, false},
    {"paper", stats::AlarmBudget::PerTest, stats::ThresholdRule::Paper, false},
    {"per-job+paper-thresholds", stats::AlarmBudget::PerJob, stats::ThresholdRule::Paper, false},
    {"per-test+every-value", stats::AlarmBudget::PerTest, stats::ThresholdRule::EveryValue, false},
};

int run_campaigns(const SimulateOptions& options) {
  const auto shapes = selected_shapes(options);
  for (const auto& name : options.modes) {
    const auto* mode =
        std::find_if(std::begin(kModes), std::end(kModes), [&](const Mode& m) { return name == m.name; });
    auto config = options.campaign;
    config.model.alarm.budget = mode->budget;
    config.model.thresholds = mode->thresholds;
    if (!mode->evidence_of_today) {
      // The paper's evidence: S alone, the ladder's q, one set per turn, I from 0.4 s.
      config.model.bound = stats::SuspicionBound::Ladder;
      config.model.stasis.enabled = false;
      config.model.initial_interval = 0.4;
      config.every_set_each_time = false;
      config.sample_every_rank_up_to = 0;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto summaries = sim::run_campaign(shapes, config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "\n## mode %s: alpha = %g %s (horizon %.0f h), thresholds %s, q bound %s, stasis %s, "
        "I from %g s, C = %d per set, %d sets, seed %llu\n\n",
        mode->name, config.model.alarm.alpha, std::string(stats::to_string(mode->budget)).c_str(),
        config.model.alarm.horizon_seconds / 3600, std::string(stats::to_string(mode->thresholds)).c_str(),
        std::string(stats::to_string(config.model.bound)).c_str(), config.model.stasis.enabled ? "on" : "off",
        config.model.initial_interval, config.sampled_ranks, config.model.sets,
        static_cast<unsigned long long>(config.seed));
    std::fputs(sim::format_summary_table(summaries).c_str(), stdout);
    std::fputs(("\nwhere the delay goes (per hang the three parts add up to its delay; their medians need not):\n\n" +
                sim::format_delay_table(summaries))
                   .c_str(),
               stdout);
    std::fputs(format_failures(summaries, options, mode->evidence_of_today).c_str(), stdout);
    std::printf("\n(simulated in %.1f s of wall time)\n", seconds);
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

std::function<int()> add_simulate_command(CLI::App& app) {
  auto options = std::make_shared<SimulateOptions>();
  auto* command =
      app.add_subcommand("simulate",
                         "Monte Carlo campaign: synthetic MPI jobs (healthy and with injected hangs) watched by the "
                         "real model and verification; prints false alarms, accuracy, detection delay and faulty-rank "
                         "identification per workload. With --trace-out, writes one synthetic job's sample trace.");
  auto& c = options->campaign;
  command->add_option("--seed", c.seed, "Random seed (a campaign is reproducible)")->capture_default_str();
  command->add_option("--healthy-hours", c.healthy_hours_per_shape, "Healthy job-hours per workload")
      ->check(number_from(0, std::numeric_limits<double>::max()))
      ->capture_default_str();
  command->add_option("--hangs", c.hangs_per_shape, "Injected hangs per workload")
      ->check(whole_number_from(0, 1'000'000))
      ->capture_default_str();
  command->add_option("--ranks-sampled", c.sampled_ranks, "C: ranks per monitored set")
      ->check(whole_number_from(1, 1000))
      ->capture_default_str();
  command
      ->add_option("--job-ranks", options->job_ranks,
                   "N: ranks of every simulated job (default: each shape's own, up to 1,000,000)")
      ->check(whole_number_from(2, 10'000'000));
  command
      ->add_option("--max-faulty-ranks", c.max_faulty_ranks, "A computation hang freezes 1 to this many random ranks")
      ->check(whole_number_from(1, 1000))
      ->capture_default_str();
  command->add_option("--threads", c.threads, "Worker threads (0: one per core)")->capture_default_str();
  command->add_option("--shape", options->shapes, "Workload shape(s) to run (default: all)");
  command
      ->add_option("--modes", options->modes,
                   "Model variants to compare: default (per-job budget, every-value "
                   "thresholds, exact bounds, stasis), s-only (the same without exact bounds "
                   "and stasis, I from 0.4 s), paper (per-test, one threshold), "
                   "per-job+paper-thresholds, per-test+every-value")
      ->delimiter(',')
      ->check(CLI::IsMember({"default", "s-only", "paper", "per-job+paper-thresholds", "per-test+every-value"}))
      ->capture_default_str();
  command->add_option("--trace-out", options->trace_out,
                      "Write one synthetic job's trace (JSON Lines) instead of running a campaign");
  command->add_option("--duration", options->duration, "Trace mode: job length, seconds")
      ->check(positive_number())
      ->capture_default_str();
  command->add_option("--hang-at", options->hang_at, "Trace mode: hang onset, seconds (default: none)");
  command->add_option("--fault", options->fault, "Trace mode: computation or deadlock")
      ->check(CLI::IsMember({"computation", "deadlock"}))
      ->capture_default_str();
  command->add_option("--faulty-rank", options->faulty_ranks, "Trace mode: faulty rank(s)");
  add_model_options(*command, c.model);
  return [options] {
    if (auto error = stats::config_error(options->campaign.model)) {
      std::cerr << "parastack simulate: " << *error << "\n";
      return kExitUsage;
    }
    return options->trace_out.empty() ? run_campaigns(*options) : emit_trace(*options);
  };
}

}  // namespace parastack::cli
