// The leader: finds each MPI program of the job through the monitors, watches it with the ParaStack
// loop (stats::Watchdog over a ClusterProbe), and on a confirmed hang gathers every rank's stack,
// writes the report and acts. `parastack run` leads one monitor in its own process;
// `parastack-monitor` leads one monitor per node over Open MPI. Same code, same decisions.
#pragma once

#include <spdlog/logger.h>

#include <functional>
#include <optional>
#include <string>

#include "network/monitors.h"
#include "parastack/stats/watchdog.h"
#include "watch/report.h"

namespace parastack::watch {

struct LeaderOptions {
  stats::WatchdogConfig watchdog;
  Action action = Action::Kill;
  double grace = 10;  // seconds between SIGTERM and SIGKILL
  // No rank seen this long after the start: give up (Outcome::NoRanks). Unset: wait for ever.
  std::optional<double> startup_timeout;
  // After a program ends and no other appears for this long, the job is over (unset: only when
  // the job says so through JobControl::running).
  std::optional<double> linger;
  std::uint64_t seed = 1;
  ReportPaths paths;
  // Keep the sample trace in memory and write it beside the report only if there is a hang (a
  // batch job's monitors are killed with the job: a healthy job's directory gets no file).
  bool trace_on_hang_only = false;
  // The Open MPI launches under the job's launcher, asked before every discovery so that monitors
  // on other nodes find their ranks (sampler::launches_under). Unset: none.
  std::function<std::vector<std::string>()> launches;
};

// What the leader may do to the job itself, beyond its ranks.
struct JobControl {
  std::function<bool()> running;  // the job (or its launcher) still exists; polled often
  // Ends the job (SIGTERM, `grace` seconds, SIGKILL); the count of processes that needed SIGKILL.
  std::function<int(double grace)> terminate;
  std::string terminate_how;  // the report's words for it; empty: SIGTERM, grace, SIGKILL
  std::string end_hint;       // action stop: how a user ends the stopped job ("kill 1234")
  // Called once a hang's report is written, before the action: tell people (mail, job comment).
  std::function<void(const RunReport&)> notify;
};

enum class Outcome {
  Ended,           // the job ended; no hang, or hangs reported with action report
  Hang,            // a hang was confirmed and acted on (kill, stop)
  NoRanks,         // no MPI rank appeared within the startup timeout
  MonitoringLost,  // a monitor stopped answering, or watching failed; the job runs on unwatched
};

// Leads until the job ends or a hang is acted on. `report` arrives with the job's own fields set
// (command, host...) and leaves with the verdict; a hang's report is written here, the final
// "completed" report is the caller's (it knows the exit status).
Outcome lead(network::Monitors& monitors, const LeaderOptions& options, JobControl& job, RunReport& report,
             spdlog::logger& log);

// Writes the report files; on failure the whole text report goes to the log, so it is never lost.
bool write_report(const RunReport& report, const ReportPaths& paths, spdlog::logger& log);

// Why a file cannot be created where the report goes, its missing directories included (they are
// made with its first file), or nullopt. Checked before the job starts, while it is young.
std::optional<std::string> report_path_problem(const std::string& path);
// Why one of the report's names (JSON, text, DOT, SVG, trace) is taken by something that is no
// file (a directory, a device, a pipe), or nullopt. Then none of its files is written, not even
// those beside it (as root, `--report /dev/null` would leave /dev/null.txt in /dev): its text
// goes to the log.
std::optional<std::string> report_name_taken(const ReportPaths& paths);

}  // namespace parastack::watch
