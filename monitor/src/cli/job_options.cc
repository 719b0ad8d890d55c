#include "cli/job_options.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace parastack::cli {

// In columns (clang-format would give the list one or two names a line).
// clang-format off
const std::vector<std::string> kJobOptions{
    "alpha",    "budget",       "horizon",   "thresholds", "bound",           "stasis",       "stasis-min",
    "interval", "max-interval", "sets",      "turn",       "window",          "ranks",        "action",
    "report",   "grace",        "log-level", "log-file",   "seed",            "monitor-timeout", "mpi-progress",
    "mpi-progress-library"};
// clang-format on

std::vector<std::string> expand_job_options(const std::vector<std::string>& argv) {
  std::vector<std::string> direct, chosen_order;
  std::map<std::string, std::string> chosen;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    std::string list;
    if (arg == "--job-options") {
      if (i + 1 >= argv.size()) throw std::runtime_error("--job-options needs a value");
      list = argv[++i];
    } else if (arg.rfind("--job-options=", 0) == 0) {
      list = arg.substr(14);
    } else {
      direct.push_back(arg);
      continue;
    }
    std::stringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      if (item.empty()) continue;
      const auto equals = item.find('=');
      const std::string name = item.substr(0, equals);
      if (std::find(kJobOptions.begin(), kJobOptions.end(), name) == kJobOptions.end()) {
        throw std::runtime_error("unknown option '" + name + "' (--parastack=help lists them)");
      }
      if (equals == std::string::npos || equals + 1 == item.size()) {
        throw std::runtime_error("option '" + name + "' needs a value: " + name + "=VALUE");
      }
      if (!chosen.contains(name)) chosen_order.push_back(name);
      chosen[name] = item.substr(equals + 1);
    }
  }
  // A job that asks for a log file wants the watch's log in it, not only the errors that are all a
  // batch job's stderr gets by default (the plugin's --log-level error).
  if (chosen.contains("log-file") && !chosen.contains("log-level")) {
    chosen_order.push_back("log-level");
    chosen["log-level"] = "info";
  }
  std::vector<std::string> args{argv[0]};
  for (std::size_t i = 0; i < direct.size(); ++i) {
    const auto& arg = direct[i];
    const bool overridden = std::any_of(chosen_order.begin(), chosen_order.end(), [&](const std::string& name) {
      return arg == "--" + name || arg.rfind("--" + name + "=", 0) == 0;
    });
    if (!overridden) {
      args.push_back(arg);
    } else if (arg.find('=') == std::string::npos) {
      ++i;  // and its value
    }
  }
  for (const auto& name : chosen_order) args.push_back("--" + name + "=" + chosen[name]);
  return args;
}

void list_job_options(CLI::App& app) {
  std::cout << "sbatch --parastack[=OPTIONS] (Slurm): watch the job for hangs. OPTIONS is a comma-separated list\n"
               "of NAME=VALUE (e.g. --parastack=action=report,alpha=0.001); --parastack=off opts out.\n"
               "pbs_parastack job.sh -- --NAME=VALUE ... (Torque/PBS) takes the same names.\n\n";
  // Where a batch job's monitors differ from parastack run, whose options these are: the
  // integrations start them at log-level error (a healthy job's stderr gets nothing), name the
  // report after the job, and leave the end of a killed job to the scheduler's KillWait.
  const std::map<std::string, std::pair<std::string, std::string>> in_a_batch_job{
      {"report", {" (default: ./parastack-HOST-PID.json, written by the leader)", "parastack-JOBID.json"}},
      {"log-level", {"", "error"}},
      {"grace", {"", "not used: the scheduler's KillWait"}}};
  for (const auto& name : kJobOptions) {
    const CLI::Option* option = app.get_option_no_throw("--" + name);
    if (!option) continue;
    std::string line = "  " + name + "=" + (option->get_type_name().empty() ? "VALUE" : option->get_type_name());
    if (line.size() < 32) line.resize(32, ' ');
    std::string description = option->get_description(), default_words = option->get_default_str();
    if (const auto batch = in_a_batch_job.find(name); batch != in_a_batch_job.end()) {
      const auto& [run_words, batch_default] = batch->second;
      if (const auto at = description.find(run_words); !run_words.empty() && at != std::string::npos) {
        description.erase(at, run_words.size());
      }
      default_words = batch_default;
    }
    std::cout << line << " " << description;
    if (!default_words.empty()) std::cout << " [default: " << default_words << "]";
    std::cout << "\n";
  }
  std::cout.flush();
}

}  // namespace parastack::cli
