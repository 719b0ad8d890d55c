// One watch, as every entrance runs it: `parastack run` (one monitor in its own process) and
// `parastack-monitor` (one per node, under mpirun or a scheduler). The entrance says how the job is
// found, how it ends and whom to tell (JobControl); the session does the rest the same way for all:
// report paths (checked before the job is watched), the report's job fields, the leader's options,
// the lead, and the final report of a job that ended without a hang.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "network/monitors.h"
#include "parastack/stats/watchdog.h"
#include "watch/leader.h"
#include "watch/report.h"

namespace parastack::watch {

// The options every entrance shares, under the same names everywhere (cli::add_watch_options).
struct WatchOptions {
  stats::WatchdogConfig watchdog;
  Action action = Action::Kill;
  std::string report;    // the JSON report's path; empty: parastack-HOST-PID.json here
  std::string log_file;  // empty: stderr
  std::string log_level = "info";
  double grace = 10;       // seconds between SIGTERM and SIGKILL
  std::uint64_t seed = 0;  // 0: random
};

class Session {
 public:
  // host: where the leader runs; command and launcher_pid: the job as the report names it. A
  // report path that cannot be written is said in the log now, while the job is still young.
  Session(const WatchOptions& options, std::string host, std::vector<std::string> command, int launcher_pid,
          spdlog::logger& log);

  LeaderOptions& leading() { return leading_; }  // to add what only this entrance knows
  RunReport& report() { return report_; }
  const ReportPaths& paths() const { return leading_.paths; }

  Outcome lead(network::Monitors& monitors, JobControl& job);

  // The job ended without a hang: the final report says so (with the launcher's exit status when
  // known). Nothing is written after a hang, whose report lead() wrote.
  void write_final_report(std::optional<int> exit_status);

 private:
  spdlog::logger& log_;
  LeaderOptions leading_;
  RunReport report_;
};

}  // namespace parastack::watch
