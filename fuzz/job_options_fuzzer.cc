// What users type: the job's option list (`sbatch --parastack=LIST`, expanded by
// expand_job_options for parastack-monitor) and parastack run's command line. Input: arguments, one
// per line; the first byte picks the entrance (even: parastack-monitor --job-options..., odd:
// parastack run ...). expand_job_options refuses with std::runtime_error only and keeps what it
// promises (one --NAME=VALUE per listed name, the last value winning, no list left); the options
// parse or fail with CLI11's ParseError only, and what parses is inside the options' checks.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "cli/commands.h"
#include "cli/job_options.h"

namespace {

using namespace parastack;
using namespace parastack::cli;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The value each listed name ends with: the last one given, in any list.
std::map<std::string, std::string> last_values(const std::vector<std::string>& argv) {
  std::map<std::string, std::string> chosen;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    std::string list;
    if (argv[i] == "--job-options" && i + 1 < argv.size()) {
      list = argv[++i];
    } else if (argv[i].starts_with("--job-options=")) {
      list = argv[i].substr(14);
    } else {
      continue;
    }
    std::stringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      if (!item.empty()) chosen[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
    }
  }
  return chosen;
}

// What parsing accepted and config_error did not refuse is a real configuration: finite, inside
// the options' ranges. (What parsing cannot judge, config_error judges, in words.)
void check_parsed(const watch::WatchOptions& o) {
  if (const auto error = stats::config_error(o.watchdog)) {
    FUZZ_REQUIRE(!error->empty());
    return;
  }
  const auto& model = o.watchdog.model;
  FUZZ_REQUIRE(model.alarm.alpha >= 1e-12 && model.alarm.alpha <= 0.5);
  FUZZ_REQUIRE(model.initial_interval > 0 && std::isfinite(model.initial_interval));
  FUZZ_REQUIRE(model.max_interval > 0 && std::isfinite(model.max_interval));
  FUZZ_REQUIRE(model.alarm.horizon_seconds > 0 && std::isfinite(model.alarm.horizon_seconds));
  FUZZ_REQUIRE(model.stasis.early_min_seconds > 0 && std::isfinite(model.stasis.early_min_seconds));
  FUZZ_REQUIRE(model.sets >= 1 && model.sets <= 16);
  FUZZ_REQUIRE(o.watchdog.sampled_ranks >= 1 && o.watchdog.sampled_ranks <= 10000);
  FUZZ_REQUIRE(o.grace >= 0 && o.grace <= 3600);  // false for NaN
}

// parastack-monitor --check-options: the list expanded, then the watch options parsed.
void monitor_entrance(const std::vector<std::string>& argv) {
  std::vector<std::string> args;
  try {
    args = expand_job_options(argv);
  } catch (const std::runtime_error& e) {
    FUZZ_REQUIRE(std::string(e.what()).size() > 0);
    return;
  }
  FUZZ_REQUIRE(!args.empty() && args.front() == argv.front());
  const auto chosen = last_values(argv);
  std::map<std::string, int> seen;
  for (std::size_t i = 1; i < args.size(); ++i) {
    FUZZ_REQUIRE(args[i] != "--job-options" && !args[i].starts_with("--job-options="));
    for (const auto& [name, value] : chosen) {
      if (args[i].starts_with("--" + name + "=") && args[i] == "--" + name + "=" + value) ++seen[name];
    }
  }
  for (const auto& [name, value] : chosen) FUZZ_REQUIRE(seen[name] >= 1);

  watch::WatchOptions options;
  CLI::App app;
  add_watch_options(app, options);
  JobSelectorOptions job;
  job.add_to(app);
  app.add_flag("--check-options");
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them backwards
    app.parse(reversed);
  } catch (const CLI::ParseError&) {
    return;
  }
  check_parsed(options);
}

// parastack run [options] -- command: the real subcommand, parsed but never run.
void run_entrance(std::vector<std::string> argv) {
  CLI::App app;
  app.require_subcommand(1);
  const auto run_watchdog = add_run_command(app);  // holds the options; parsed, never called
  argv.front() = "run";
  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError&) {
    return;
  }
  FUZZ_REQUIRE(app.got_subcommand("run"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  auto argv = lines(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (argv.size() > 64) return 0;  // a command line, not a file
  argv.insert(argv.begin(), "parastack-monitor");
  if (data[0] % 2 == 0) {
    monitor_entrance(argv);
  } else {
    run_entrance(argv);
  }
  return 0;
}
