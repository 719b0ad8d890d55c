#include "watch/leader.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "network/cluster_probe.h"
#include "parastack/stats/trace.h"

namespace parastack::watch {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// When to tell the user that no model could be built yet (seconds of watching).
constexpr double kUnbuiltWarning = 300;

// Whether a test could have fired at this decision, and the time since the previous one counted as
// watched or not (RunReport::coverage).
void account_coverage(Coverage& coverage, const stats::HangModel& model, const stats::Decision& d, double& last_t) {
  const auto& st = d.stasis;
  const bool stasis_on = model.config().stasis.enabled && (st.early_applies || st.first_bound < 1);
  if (stasis_on && !coverage.stasis_since) coverage.stasis_since = d.observation.t;
  if (model.ready() && !coverage.model_since) coverage.model_since = model.ready_since();
  const double span = std::max(0.0, d.observation.t - last_t);
  last_t = d.observation.t;
  if (stasis_on || model.ready()) {
    coverage.watched_seconds += span;
    return;
  }
  coverage.unwatched_seconds += span;
  coverage.why_unwatched =
      st.pairs == 0 ? "the S model is not built yet and the ranks' call paths could not be read"
                    : "the S model is not built yet (the sampled states do not vary randomly) and the ranks' "
                      "call paths have not shown movement yet";
}


Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Writes a file whole or not at all (temporary name, then rename); the error in words, if any.
std::optional<std::string> write_file(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot create " + temporary + ": " + std::strerror(errno);
    out << content;
    out.flush();
    if (!out) {
      const std::string error = std::strerror(errno);
      out.close();
      std::filesystem::remove(temporary);
      return "cannot write " + temporary + ": " + error;
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary);
    return "cannot rename to " + path + ": " + error.message();
  }
  return std::nullopt;
}

enum class WaitResult { Found, JobEnded, TimedOut };

// Asks every monitor for the ranks of programs not watched yet until one program has all its ranks
// (or its count stopped changing for 2 s: a rank that never started must not stall the watch).
WaitResult wait_for_program(network::Monitors& monitors, const LeaderOptions& options, JobControl& job,
                            std::optional<Clock::time_point> deadline, std::vector<network::TableEntry>& found,
                            std::string& instance, spdlog::logger& log) {
  std::size_t last_count = 0;
  auto stable_since = Clock::now();
  while (job.running()) {
    std::map<std::string, std::vector<network::TableEntry>> programs;
    const auto request = network::discover_request(options.launches ? options.launches() : std::vector<std::string>{});
    for (auto& entry : network::decode_discovery(monitors.reduce(request))) {
      programs[entry.rank.instance].push_back(std::move(entry));
    }
    if (!programs.empty()) {
      auto& [id, entries] = *programs.begin();
      const int world = entries.front().rank.world_size;
      if (entries.size() != last_count) {
        last_count = entries.size();
        stable_since = Clock::now();
      }
      const bool complete = world > 0 && static_cast<int>(entries.size()) >= world;
      if (complete || Clock::now() - stable_since > 2s) {
        if (programs.size() > 1) {
          log.warn("{} MPI programs run at once; watching {} now, the others after it", programs.size(), id);
        }
        if (!complete && world > 0) {
          log.warn("only {} of the {} ranks of {} were found; watching those", entries.size(), world, id);
        }
        instance = id;
        found = std::move(entries);
        return WaitResult::Found;
      }
    } else if (deadline && Clock::now() > *deadline) {
      return WaitResult::TimedOut;
    }
    std::this_thread::sleep_for(100ms);
  }
  return WaitResult::JobEnded;
}

std::string join(const std::vector<int>& values) {
  std::string list;
  for (int v : values) list += (list.empty() ? "" : ",") + std::to_string(v);
  return list;
}

std::string monitor_hosts(network::Monitors& monitors) {
  std::set<std::string> hosts;
  for (int m = 0; m < monitors.count(); ++m) hosts.insert(monitors.host(m));
  std::string list;
  for (const auto& h : hosts) list += (list.empty() ? "" : " ") + h;
  return list;
}

}  // namespace

std::optional<std::string> report_path_problem(const std::string& path) {
  const auto dir = std::filesystem::absolute(path).parent_path();
  if (!std::filesystem::is_directory(dir)) return dir.string() + " is not a directory";
  if (::access(dir.c_str(), W_OK) != 0) return "cannot write in " + dir.string() + ": " + std::strerror(errno);
  return std::nullopt;
}

bool write_report(const RunReport& report, const ReportPaths& paths, spdlog::logger& log) {
  const std::string text = to_text(report);
  std::vector<std::string> problems;
  if (auto e = write_file(paths.json, to_json(report).dump(2) + "\n")) problems.push_back(*e);
  if (auto e = write_file(paths.text, text)) problems.push_back(*e);
  if (report.stacks) {
    if (auto e = write_file(paths.dot, report.stacks->dot)) problems.push_back(*e);
    if (!report.stacks->svg.empty()) {
      if (auto e = write_file(paths.svg, report.stacks->svg)) problems.push_back(*e);
    }
  }
  if (problems.empty()) {
    log.info("report written: {} and {}", paths.json, paths.text);
    return true;
  }
  for (const auto& p : problems) log.error("report: {}", p);
  log.error("the report could not be written; here it is:\n{}", text);
  return false;
}

Outcome lead(network::Monitors& monitors, const LeaderOptions& options, JobControl& job, RunReport& report,
             spdlog::logger& log) {
  if (monitors.count() > 1) {
    log.info("{} monitors on {}", monitors.count(), monitor_hosts(monitors));
  }
  std::set<std::string> watched;
  bool hang_reported = false;
  const auto started = Clock::now();
  std::optional<Clock::time_point> last_program_end;
  try {
    while (true) {
      std::optional<Clock::time_point> deadline;
      if (watched.empty() && options.startup_timeout) deadline = started + seconds(*options.startup_timeout);
      if (!watched.empty() && options.linger) deadline = *last_program_end + seconds(*options.linger);
      std::vector<network::TableEntry> table;
      std::string instance;
      const auto waited = wait_for_program(monitors, options, job, deadline, table, instance, log);
      if (waited == WaitResult::JobEnded) break;
      if (waited == WaitResult::TimedOut) {
        if (watched.empty()) return Outcome::NoRanks;
        log.info("no MPI program appeared within {} s of the last one's end: the job is over", *options.linger);
        break;
      }
      watched.insert(instance);
      report.instance = instance;
      // Every monitor adopts: those without ranks of this program forget the previous one's.
      std::vector<int> everyone(static_cast<std::size_t>(monitors.count()));
      for (int m = 0; m < monitors.count(); ++m) everyone[static_cast<std::size_t>(m)] = m;
      monitors.call(everyone, network::adopt_request(instance));
      network::ClusterProbe probe(monitors, std::move(table), job.running);
      const int rank_count = static_cast<int>(probe.table().size());
      stats::Watchdog watchdog(options.watchdog, rank_count, options.seed + watched.size());
      std::set<std::string> hosts;
      for (const auto& e : probe.table()) hosts.insert(e.rank.host);
      log.info("found {} rank(s) of MPI program {} ({}) on {} host(s); sampling {} set(s) of {}", rank_count,
               probe.table().front().rank.command, instance, hosts.size(), watchdog.sets().size(),
               watchdog.sets().front().size());
      std::ofstream trace;
      std::string held_trace;  // trace_on_hang_only
      if (!options.trace_on_hang_only) {
        trace.open(options.paths.trace, std::ios::trunc);
        if (!trace) log.warn("cannot write the sample trace {}: {}", options.paths.trace, std::strerror(errno));
      }
      bool hang_episode = false;  // a hang was reported and no healthy sample has been seen since
      double last_decision_t = 0;
      report.coverage.found_at = std::chrono::duration<double>(Clock::now() - started).count();
      bool ready_logged = false, unbuilt_warned = false;
      stats::WatchdogHooks hooks;
      hooks.on_decision = [&](const stats::Decision& d) {
        if (options.trace_on_hang_only) {
          held_trace += stats::format_trace_line(d.observation) + "\n";
        } else if (trace) {
          trace << stats::format_trace_line(d.observation) << "\n" << std::flush;
        }
        if (d.verdict == stats::Verdict::Healthy) hang_episode = false;
        account_coverage(report.coverage, watchdog.model(), d, last_decision_t);
        if (!ready_logged && watchdog.model().ready()) {
          ready_logged = true;
          log.info("model built after {:.1f} s (I = {} s); testing every sample from now on", d.observation.t,
                   d.interval);
        }
        // Said once: without a model nothing can be detected, and the user should know why.
        if (!ready_logged && !unbuilt_warned && d.observation.t > kUnbuiltWarning) {
          unbuilt_warned = true;
          log.warn("no model after {:.0f} s (I = {} s): the sampled ranks' states do not vary randomly (for "
                   "example always inside MPI), so a hang cannot be told from this behaviour yet; "
                   "watching on",
                   d.observation.t, d.interval);
        }
        log.debug("t={:.3f} set={} S={}/{} {} model_samples={} streak={}/{} still={} run={} bound={:.3g} early={}/{:.1f}s",
                  d.observation.t, d.observation.set, d.observation.n_out, d.observation.n, stats::to_string(d.verdict),
                  d.model_samples, d.streak, d.required_streak, d.stasis.still, d.stasis.streak, d.stasis.streak_bound,
                  d.stasis.early_streak, d.stasis.early_needed);
      };
      hooks.on_alarm = [&](const stats::Alarm& alarm) {
        ++report.alarms;
        if (alarm.slowdown) {
          ++report.slowdowns;
          if (report.slowdown_evidence.size() < 20) report.slowdown_evidence.push_back(alarm.evidence);
          log.info("alarm at t={:.1f} s was a transient slowdown ({}); watching on", alarm.decision.observation.t,
                   alarm.evidence);
        } else {
          log.warn("alarm at t={:.1f} s: no progress on any sampled rank; checking all ranks",
                   alarm.decision.observation.t);
        }
      };

      while (auto finding = watchdog.watch(probe, hooks)) {
        if (hang_episode) {  // the hang we reported goes on (action report)
          watchdog.resume_after_hang();
          continue;
        }
        report.verdict = "hang";
        report.finding = finding;
        if (options.trace_on_hang_only && !(std::ofstream(options.paths.trace, std::ios::trunc) << held_trace)) {
          log.warn("cannot write the sample trace {}: {}", options.paths.trace, std::strerror(errno));
        }
        report.faulty_ranks.clear();
        for (int index : finding->faulty_ranks) report.faulty_ranks.push_back(probe.rank_of(index));
        report.detected_at = probe.unix_time(finding->confirmed_at);
        report.onset_estimate = probe.unix_time(finding->decision.onset());
        report.observations = watchdog.observations();
        report.interval = watchdog.model().interval();
        auto stacks = probe.gather_stacks();
        report.ranks = std::move(stacks.records);
        report.stacks = node::stack_views(stacks.tree, "parastack: merged stacks of all ranks at detection");
        if (!report.stacks->svg_problem.empty()) log.warn("no SVG in the report: {}", report.stacks->svg_problem);
        report.samples = probe.samples_taken();
        report.ended_at = probe.unix_time(probe.now());
        log.error("HANG detected: {} error{}", finding->computation_error() ? "computation" : "communication",
                  finding->computation_error() ? ", faulty rank(s) " + join(report.faulty_ranks)
                                               : std::string(": every rank waits in MPI"));
        if (options.action == "kill") {
          report.action_taken = !job.terminate_how.empty()
                                    ? job.terminate_how
                                    : "the job was terminated (SIGTERM, then SIGKILL after " +
                                          std::to_string(static_cast<int>(options.grace)) + " s)";
          write_report(report, options.paths, log);
          if (job.notify) job.notify(report);
          const int killed = job.terminate(options.grace);
          log.info("job terminated{}", killed ? " (" + std::to_string(killed) + " process(es) needed SIGKILL)" : "");
          return Outcome::Hang;
        }
        if (options.action == "stop") {
          probe.signal(SIGSTOP);
          std::string pids;
          int representative_pid = probe.table().front().rank.pid;
          const int representative = report.faulty_ranks.empty() ? probe.rank_of(0) : report.faulty_ranks.front();
          for (const auto& e : probe.table()) {
            pids += " " + std::to_string(e.rank.pid);
            if (e.rank.rank == representative) representative_pid = e.rank.pid;
          }
          report.action_taken = "the ranks were left stopped for a debugger (e.g. gdb -p " +
                                std::to_string(representative_pid) + (hosts.size() > 1 ? " on its host" : "") +
                                "); resume them with kill -CONT" + pids + ", or end the job with " + job.end_hint;
          write_report(report, options.paths, log);
          if (job.notify) job.notify(report);
          log.info("{}", report.action_taken);
          return Outcome::Hang;
        }
        report.action_taken = "reported; the job was left running and is still watched";
        write_report(report, options.paths, log);
        if (job.notify) job.notify(report);
        hang_reported = hang_episode = true;
        watchdog.resume_after_hang();
      }
      report.observations += watchdog.observations();
      report.samples += probe.samples_taken();
      report.interval = watchdog.model().interval();
      last_program_end = Clock::now();
      if (job.running()) log.info("the ranks of {} have ended; looking for the next MPI program", instance);
    }
  } catch (const network::MonitorLost& lost) {
    log.error("monitoring lost on {}: {}; parastack stops watching and the job runs on unwatched",
              lost.monitor >= 0 && lost.monitor < monitors.count() ? monitors.host(lost.monitor) : "a node",
              lost.what());
    report.verdict = "monitoring lost";
    report.notes.push_back(std::string("monitoring lost: ") + lost.what());
    return Outcome::MonitoringLost;
  }
  if (watched.empty()) log.warn("the job ended before any MPI rank was seen");
  if (!watched.empty() && !report.coverage.ever_watched()) {
    log.warn("the job ended without ever being watched: {}", report.coverage.why_unwatched);
  }
  if (hang_reported) report.verdict = "hang";
  return Outcome::Ended;
}

}  // namespace parastack::watch
