#include "watch/session.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>

namespace parastack::watch {
namespace {

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

Session::Session(const WatchOptions& options, std::string host, std::vector<std::string> command, int launcher_pid,
                 spdlog::logger& log)
    : log_(log) {
  const std::string path =
      options.report.empty() ? "parastack-" + host + "-" + std::to_string(::getpid()) + ".json" : options.report;
  leading_.paths = report_paths(path);
  if (auto problem = report_path_problem(leading_.paths.json)) {
    log_.error(
        "the report cannot be written to {} ({}); the job runs and is watched, and a report will go to "
        "this log",
        leading_.paths.json, *problem);
  }
  leading_.watchdog = options.watchdog;
  leading_.action = options.action;
  leading_.grace = options.grace;
  leading_.seed = options.seed ? options.seed : std::random_device{}();

  report_.command = std::move(command);
  report_.launcher_pid = launcher_pid;
  report_.host = std::move(host);
  report_.action = options.action;
  report_.config = options.watchdog;
  report_.trace_path = leading_.paths.trace;
  report_.started_at = unix_now();
}

Outcome Session::lead(network::Monitors& monitors, JobControl& job) {
  return watch::lead(monitors, leading_, job, report_, log_);
}

void Session::write_final_report(std::optional<int> exit_status) {
  if (report_.verdict == JobVerdict::Hang) return;
  if (report_.verdict == JobVerdict::Undecided) report_.verdict = JobVerdict::Completed;
  if (report_.action_taken.empty()) report_.action_taken = "none";  // also when monitoring was lost
  report_.exit_status = exit_status;
  report_.ended_at = unix_now();
  // A job in which no rank was ever sampled has no trace to replay: none is named.
  std::error_code error;
  if (!report_.trace_path.empty() && !std::filesystem::exists(report_.trace_path, error)) report_.trace_path.clear();
  write_report(report_, leading_.paths, log_);
}

}  // namespace parastack::watch
