// Options shared by parastack and parastack-monitor.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <limits>

#include "cli/commands.h"
#include "cli/path_patterns.h"

namespace parastack::cli {

const CLI::Validator& finite_number() {
  static const CLI::Validator finite(
      [](std::string& text) {
        double value = 0;
        // What is not a number at all is the option's own conversion's to refuse.
        if (CLI::detail::lexical_cast(text, value) && !std::isfinite(value)) {
          return "Value " + text + " is not a finite number";
        }
        return std::string();
      },
      "FINITE");
  return finite;
}

namespace {

bool is_number(const std::string& text, double& value) {
  return CLI::detail::lexical_cast(text, value) && std::isfinite(value);
}

}  // namespace

CLI::Option* add_monitor_timeout_option(CLI::App& command, double& seconds) {
  return command
      .add_option("--monitor-timeout", seconds,
                  "Seconds a monitor may take to answer before its node counts as lost (monitoring then "
                  "stops; the job runs on)")
      ->check(number_from(0.1, 86400.0))
      ->capture_default_str();
}

CLI::Validator number_from(double min, double max) {
  return {[min, max](std::string& text) {
            double value = 0;
            if (!is_number(text, value)) return "'" + text + "' is not a number";
            if (value < min || value > max) {
              return max == std::numeric_limits<double>::max() ? fmt::format("{} is below {}", text, min)
                                                               : fmt::format("{} is outside [{}, {}]", text, min, max);
            }
            return std::string();
          },
          max == std::numeric_limits<double>::max() ? fmt::format(">= {}", min) : fmt::format("in [{}, {}]", min, max)};
}

CLI::Validator positive_number() {
  return {[](std::string& text) {
            double value = 0;
            if (!is_number(text, value)) return "'" + text + "' is not a number";
            if (value <= 0) return text + " is not above 0";
            return std::string();
          },
          "> 0"};
}

CLI::Validator whole_number_from(long long min, long long max) {
  return {[min, max](std::string& text) {
            long long value = 0;
            if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a whole number";
            if (value < min || value > max) return fmt::format("{} is outside [{}, {}]", text, min, max);
            return std::string();
          },
          fmt::format("in [{}, {}]", min, max)};
}

namespace {

// A report or log path: its % patterns are checked where the options are (at submission, for a
// batch job), and expanded where the watcher knows what they stand for.
const CLI::Validator& path_pattern() {
  static const CLI::Validator pattern(
      [](std::string& text) { return path_pattern_error(text).value_or(std::string()); }, "");
  return pattern;
}

}  // namespace

// Long on purpose: one registration per option.
void add_model_options(CLI::App& command, stats::ModelConfig& config) {
  command
      .add_option("--alpha", config.alarm.alpha,
                  "Significance level: the accepted probability of a false alarm (per job with "
                  "the default budget, per test with --budget per-test)")
      ->check(number_from(1e-12, 0.5))
      ->capture_default_str();
  command
      .add_option_function<std::string>(
          "--budget",
          [&config](const std::string& value) {
            config.alarm.budget = value == "per-test" ? stats::AlarmBudget::PerTest : stats::AlarmBudget::PerJob;
          },
          "How alpha is spent: per-job bounds the false-alarm probability of the whole job; "
          "per-test is the paper's rule")
      ->check(CLI::IsMember({"per-job", "per-test"}))
      ->default_str("per-job");
  command
      .add_option_function<std::string>(
          "--thresholds",
          [&config](const std::string& value) {
            config.thresholds = value == "paper" ? stats::ThresholdRule::Paper : stats::ThresholdRule::EveryValue;
          },
          "Suspicion thresholds tested: every-value (every sample value, alpha split) or paper "
          "(the tightest ladder step's only)")
      ->check(CLI::IsMember({"every-value", "paper"}))
      ->default_str("every-value");
  command
      .add_option_function<std::string>(
          "--bound",
          [&config](const std::string& value) {
            config.bound = value == "ladder" ? stats::SuspicionBound::Ladder : stats::SuspicionBound::Exact;
          },
          "How a suspicion's probability q is bounded: exact (Clopper-Pearson, under alpha) or "
          "ladder (the paper's p + e)")
      ->check(CLI::IsMember({"exact", "ladder"}))
      ->default_str("exact");
  command
      .add_option_function<std::string>(
          "--stasis", [&config](const std::string& value) { config.stasis.enabled = value == "on"; },
          "Stasis evidence (ranks whose call paths do not move) besides S: on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  command
      .add_option("--stasis-min", config.stasis.early_min_seconds,
                  "The model-free stasis rule never fires on a standstill shorter than this, seconds")
      ->check(positive_number())
      ->capture_default_str();
  command
      .add_option("--horizon", config.alarm.horizon_seconds,
                  "Job length in seconds the per-job budget is planned for (longer jobs stay "
                  "covered)")
      ->check(positive_number())
      ->capture_default_str();
  command.add_option("--interval", config.initial_interval, "Initial sampling interval I, seconds")
      ->check(positive_number())
      ->capture_default_str();
  command.add_option("--max-interval", config.max_interval, "I never doubles beyond this, seconds")
      ->check(positive_number())
      ->capture_default_str();
  command.add_option("--sets", config.sets, "Disjoint monitored rank sets")
      ->check(whole_number_from(1, 16))
      ->capture_default_str();
  command.add_option("--turn", config.observations_per_turn, "Observations of one set before switching to the next")
      ->check(whole_number_from(1, 100000))
      ->capture_default_str();
  command.add_option("--window", config.window, "Samples the model keeps per set (0: all)")->capture_default_str();
}

void add_watch_options(CLI::App& command, watch::WatchOptions& options) {
  add_model_options(command, options.watchdog.model);
  command.add_option("--ranks", options.watchdog.sampled_ranks, "C: ranks sampled per set (--sets disjoint sets)")
      ->check(whole_number_from(1, 10000))
      ->capture_default_str();
  command
      .add_option_function<std::string>(
          "--action",
          [&options](const std::string& word) {
            // The check below runs first: every word that gets here names an action.
            if (const auto action = watch::action_from_string(word)) options.action = *action;
          },
          "On a confirmed hang: kill (terminate the job), report (and keep watching), stop (leave the ranks "
          "stopped for a debugger)")
      ->check(CLI::IsMember({"kill", "report", "stop"}))
      ->default_str(std::string(watch::to_string(options.action)));
  command
      .add_option("--report", options.report,
                  "Report path (JSON); the text report, DOT, SVG and sample trace go beside it, missing "
                  "directories are created (default: ./parastack-HOST-PID.json, written by the leader); %j "
                  "job id, %A and %a job array id and index, %h host, %p process id, %u user, %% a %")
      ->type_name("PATH")
      ->check(path_pattern());
  command.add_option("--grace", options.grace, "Seconds between SIGTERM and SIGKILL with action kill")
      ->check(number_from(0.0, 3600.0))
      ->capture_default_str();
  command
      .add_option("--log-file", options.log_file,
                  "Log to this file instead of stderr, appending (a job's monitors all append to it, at "
                  "log-level info unless it is given; missing directories are created; patterns as in --report)")
      ->type_name("PATH")
      ->check(path_pattern());
  command.add_option("--log-level", options.log_level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  command.add_option("--seed", options.seed, "Seed for the random choices (0: random)")->capture_default_str();
}

void JobSelectorOptions::add_to(CLI::App& command) {
  slurm_ = command.add_option("--slurm-job", slurm_job_, "A Slurm job id (JOB.STEP: that step only)");
  pbs_ = command.add_option("--pbs-job", pbs_job_, "A PBS/Torque job id");
  pid_ = command.add_option("--pid", launcher_, "The launcher's pid (mpirun, srun...)")
             ->check(whole_number_from(1, std::numeric_limits<int>::max()));
  slurm_->excludes(pbs_)->excludes(pid_);
  pbs_->excludes(pid_);
}

std::optional<sampler::JobSelector> JobSelectorOptions::selector(const std::string& who, bool launches_now) const {
  if (slurm_->count() + pbs_->count() + pid_->count() != 1) {
    std::cerr << who << ": give one of --slurm-job, --pbs-job or --pid\n";
    return std::nullopt;
  }
  if (slurm_->count()) return sampler::JobSelector{sampler::JobSelector::Kind::Slurm, {}, slurm_job_};
  if (pbs_->count()) return sampler::JobSelector{sampler::JobSelector::Kind::Pbs, {}, pbs_job_};
  const os::Pid launcher{launcher_};
  return sampler::JobSelector{sampler::JobSelector::Kind::Launcher,
                              launcher,
                              {},
                              launches_now ? sampler::launches_under(launcher) : std::vector<std::string>{}};
}

}  // namespace parastack::cli
