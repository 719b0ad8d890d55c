// parastack replay TRACE.jsonl: feed a recorded sample trace to the model and show each decision.
// The trace holds what the monitor fed its model, in order, so the replay takes the same decisions
// the monitor's model took (verification, which needs live stacks, is not replayed).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <variant>

#include "cli/commands.h"
#include "parastack/stats/trace.h"
#include "watch/report.h"

namespace parastack::cli {
namespace {

struct ReplayOptions {
  std::string trace_path;
  bool json = false;
  bool quiet = false;
  stats::ModelConfig model;
};

nlohmann::json decision_json(const stats::Decision& d) {
  nlohmann::json j{{"t", d.observation.t},
                   {"set", d.observation.set},
                   {"n_out", d.observation.n_out},
                   {"n", d.observation.n},
                   {"s", d.sample},
                   {"decision", stats::to_string(d.verdict)},
                   {"interval", d.interval},
                   {"samples", d.model_samples},
                   {"streak", d.streak}};
  if (d.threshold) {
    watch::put_threshold(j, *d.threshold);
    j["k"] = d.required_streak;
    j["test_alpha"] = d.test_alpha;
  }
  if (d.runs_test) {
    j["runs_test"] = {{"n_pos", d.runs_test->n_pos},
                      {"n_neg", d.runs_test->n_neg},
                      {"runs", d.runs_test->runs},
                      {"random", d.runs_test->random}};
    if (d.runs_test->exact) {
      j["runs_test"]["region"] = {d.runs_test->region.lower, d.runs_test->region.upper};
    }
  }
  if (d.interval_doubled) j["interval_doubled"] = true;
  if (d.stasis.known) {
    j["stasis"] = {
        {"still", d.stasis.still},
        {"run", d.stasis.streak},
        {"bound", d.stasis.streak_bound},
        {"c", d.stasis.first_bound},
        {"s_steps", std::vector<double>(d.stasis.step_bounds.begin(), d.stasis.step_bounds.begin() + d.stasis.steps)},
        {"s", d.stasis.continue_bound},
        {"early_run", d.stasis.early_streak},
        {"early_needed", d.stasis.early_needed},
        {"early_applies", d.stasis.early_applies},
        {"early_before_movement", d.stasis.early_before_movement}};
    if (d.stasis.early_streak > 0) j["stasis"]["early_onset"] = d.stasis.early_onset;
  }
  if (d.verdict == stats::Verdict::Hang) j["evidence"] = stats::to_string(d.evidence);
  return j;
}

// The evidence that raised a hang, in words.
std::string describe_alarm(const stats::Decision& d, const stats::AlarmPolicy& policy) {
  char text[512];
  const auto& st = d.stasis;
  switch (d.evidence) {
    case stats::Evidence::EarlyStasis:
      std::snprintf(text, sizeof text,
                    "set %d: no sampled rank moved for %.3f s (%d observations; busy-waiting ranks left aside); the "
                    "model-free stasis rule needs %.3f s%s",
                    d.observation.set, d.observation.t - st.early_onset, st.early_streak, st.early_needed,
                    st.early_before_movement
                        ? " (before the job had shown movement: a rank outside MPI, or ranks in MPI_Finalize)"
                        : "");
      break;
    case stats::Evidence::Stasis:
      std::snprintf(text, sizeof text, "set %d: %d consecutive still observations since t=%.3f, bound %s = %.3g",
                    d.observation.set, st.streak, st.streak_onset, stats::bound_formula(st).c_str(), st.streak_bound);
      break;
    default:
      std::snprintf(text, sizeof text, "set %d: %d consecutive suspicions S<=%.3f since t=%.3f, q=%.3f, k=%d",
                    d.observation.set, d.streak, d.threshold ? d.threshold->value : 0.0, d.streak_onset,
                    d.threshold ? d.threshold->q : 0.0, d.required_streak);
  }
  char alpha[32];
  std::snprintf(alpha, sizeof alpha, "%g", policy.alpha);  // as given: 0.001, 1e-06 (to_string: 0.001000, 0.000001)
  return std::string(text) + ", alpha=" + alpha + " " + std::string(stats::to_string(policy.budget));
}

void print_decision_text(const stats::Decision& d) {
  std::printf("t=%10.3f set=%d S=%.3f I=%.3f n=%zu", d.observation.t, d.observation.set, d.sample, d.interval,
              d.model_samples);
  if (d.threshold) {
    std::printf(" e=%.2f S<=%.3f p=%.3f q=%.3f k=%d", d.threshold->tolerance, d.threshold->value, d.threshold->p_hat,
                d.threshold->q, d.required_streak);
  }
  std::printf(" streak=%d %s", d.streak, std::string(stats::to_string(d.verdict)).c_str());
  if (d.runs_test) {
    std::printf(" [runs test: R=%d N1=%d N0=%d %s]", d.runs_test->runs, d.runs_test->n_pos, d.runs_test->n_neg,
                d.runs_test->random ? "random" : "not random");
  }
  if (d.interval_doubled) std::printf(" [I doubled]");
  if (d.stasis.streak > 0) {
    std::printf(" [still x%d bound=%.3g early %d/%.1fs]", d.stasis.streak, d.stasis.streak_bound, d.stasis.early_streak,
                d.stasis.early_needed);
  }
  std::printf("\n");
}

// The trace's observations, or the first problem (file and line) in words.
std::variant<std::vector<stats::Observation>, std::string> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "cannot read " + path + ": " + std::strerror(errno);
  // A directory opens, and then reads as an empty trace: "no hang" for a path typed wrong.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) return "cannot read " + path + ": " + std::strerror(EISDIR);
  std::vector<stats::Observation> trace;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = stats::parse_trace_line(line);
    if (auto* error = std::get_if<stats::TraceError>(&parsed)) {
      return path + ":" + std::to_string(number) + ": " + error->message;
    }
    trace.push_back(std::get<stats::Observation>(parsed));
  }
  if (in.bad()) return "cannot read " + path + ": " + std::strerror(errno);
  return trace;
}

// The last line(s): the verdict, as JSON or text.
void print_summary(const ReplayOptions& options, const stats::HangModel& model,
                   const std::optional<stats::Decision>& alarm, std::uint64_t observations) {
  const auto& alarm_policy = options.model.alarm;
  if (options.json) {
    nlohmann::json summary{
        {"verdict", alarm ? "hang" : "no_hang"},
        {"detected_t", alarm ? nlohmann::json(alarm->observation.t) : nlohmann::json()},
        {"onset_t", alarm ? nlohmann::json(alarm->onset()) : nlohmann::json()},
        {"observations", observations},
        {"model_ready_t", model.ready_since() ? nlohmann::json(*model.ready_since()) : nlohmann::json()},
        {"alpha", alarm_policy.alpha},
        {"budget", stats::to_string(alarm_policy.budget)},
        {"horizon", alarm_policy.horizon_seconds},
        {"interval", model.interval()}};
    if (alarm) {
      summary["set"] = alarm->observation.set;
      summary["evidence"] = stats::to_string(alarm->evidence);
      if (alarm->threshold) summary["q"] = alarm->threshold->q;
      summary["k"] = alarm->required_streak;
    }
    std::cout << summary.dump() << "\n";
  } else if (alarm) {
    std::printf("verdict: hang at t=%.3f s (%s)\n", alarm->observation.t, describe_alarm(*alarm, alarm_policy).c_str());
  } else {
    const std::string built =
        model.ready() ? "built at t=" + std::to_string(*model.ready_since()) + " s" : "never built: nothing was tested";
    std::printf("verdict: no hang (%llu observations, model %s, I=%.3f s)\n",
                static_cast<unsigned long long>(observations), built.c_str(), model.interval());
  }
}

int run_replay(const ReplayOptions& options) {
  auto read = read_trace(options.trace_path);
  if (auto* error = std::get_if<std::string>(&read)) {
    std::cerr << "parastack replay: " << *error << "\n";
    return kExitUsage;
  }
  const auto& trace = std::get<std::vector<stats::Observation>>(read);
  // The trace says how many sets were sampled (a small job is one set of every rank), whatever
  // --sets says: the model needs every set to have one before it counts as built.
  auto config = options.model;
  int sets = 1;
  for (const auto& o : trace) sets = std::max(sets, o.set + 1);
  if (sets <= 16) config.sets = sets;
  stats::HangModel model(config);
  std::optional<stats::Decision> alarm;
  std::uint64_t observations = 0;
  for (const auto& observation : trace) {
    const auto decision = model.observe(observation);
    ++observations;
    if (!options.quiet) {
      if (options.json) {
        std::cout << decision_json(decision).dump() << "\n";
      } else {
        print_decision_text(decision);
      }
    }
    if (decision.verdict == stats::Verdict::Hang) {
      alarm = decision;
      break;  // the monitor acts on the first confirmed hang
    }
  }
  print_summary(options, model, alarm, observations);
  return alarm ? kExitHang : kExitOk;
}

}  // namespace

std::function<int()> add_replay_command(CLI::App& app) {
  auto options = std::make_shared<ReplayOptions>();
  auto* command =
      app.add_subcommand("replay",
                         "Feed a sample trace (JSON Lines: t, set, n_out, n) to the hang model and print each decision "
                         "and the verdict. Exit status: 0 no hang, 3 hang, 2 bad input.");
  command->add_option("trace", options->trace_path, "The trace file (JSON Lines)")->required();
  command->add_flag("--json", options->json, "One JSON object per decision; the last line is the summary");
  command->add_flag("--quiet", options->quiet, "Print only the verdict");
  add_model_options(*command, options->model);
  return [options] {
    if (auto error = stats::config_error(options->model)) {
      std::cerr << "parastack replay: " << *error << "\n";
      return kExitUsage;
    }
    return run_replay(*options);
  };
}

}  // namespace parastack::cli
