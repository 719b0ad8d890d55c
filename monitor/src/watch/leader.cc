#include "watch/leader.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "network/cluster_probe.h"
#include "os/files.h"
#include "parastack/stats/trace.h"
#include "watch/held_trace.h"

namespace parastack::watch {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// When to tell the user that no model could be built yet (seconds of watching).
constexpr double kUnbuiltWarning = 300;
// How long no test can fire before the log says so and why (a test job hung at its first MPI
// call would otherwise look watched until the warning above, or its end).
constexpr double kUnwatchedNotice = 60;
// How long no sampled rank can be read before the log says so.
constexpr double kUnreadNotice = 10;

// The stasis model watches once a run at a place never seen in health could fire within the
// longest streak the S model is allowed to need; before that its bounds are all but 1.
bool stasis_model_on(const stats::HangModel& model, const stats::StasisDecision& st) {
  return st.new_place_streak > 0 && st.new_place_streak <= model.config().max_required_streak;
}

// Whether a test could have fired at this decision (returned), and the time since the previous one
// counted as watched or not (RunReport::coverage). Before the job has shown its ranks moving, a
// run with a rank outside MPI is watched (the model-free rule judges it, at four times its length)
// and one whose ranks are all in MPI is not.
bool account_coverage(Coverage& coverage, const stats::HangModel& model, const stats::Decision& d, double& last_t) {
  const auto& st = d.stasis;
  const bool stasis_on = model.config().stasis.enabled && (st.early_applies || stasis_model_on(model, st));
  if (stasis_on && !coverage.stasis_since) coverage.stasis_since = d.observation.t;
  if (model.ready() && !coverage.model_since) coverage.model_since = model.ready_since();
  const double span = std::max(0.0, d.observation.t - last_t);
  last_t = d.observation.t;
  if (d.verdict == stats::Verdict::Unwatched) {
    coverage.unwatched_seconds += span;
    coverage.why_unwatched =
        d.observation.serial_end
            ? "the job's serial end: ranks waited in MPI_Finalize while another worked outside MPI, which no test "
              "judges (it looks like a rank spinning while the others wait)"
            : "observations came late: the node kept the monitor, or a rank it had to stop, off the CPU, so the "
              "time before them was not watched";
    return false;
  }
  if (stasis_on || model.ready()) {
    coverage.watched_seconds += span;
    return true;
  }
  coverage.unwatched_seconds += span;
  // Paths that were read but never changed are held in one still run, not learned as pairs: they
  // were read all the same. A job's last observations, of ranks ending, read none: that is not why
  // a job read for a minute was unwatched.
  if (st.pairs > 0 || st.known || st.early_streak > 0) coverage.paths_read_at = d.observation.t;
  const bool paths_read = coverage.paths_read_at && d.observation.t - *coverage.paths_read_at < kUnreadNotice;
  // Without MPI's own counts a job standing still from its start cannot be told from a loop around
  // one MPI call (stasis.h); say what would tell them apart.
  coverage.why_unwatched =
      !paths_read ? "the S model is not built yet and the ranks' call paths could not be read"
      : d.observation.counted
          ? "the S model is not built yet (the sampled states do not vary randomly) and the ranks' call paths have "
            "not shown movement yet"
          : "the S model is not built yet (the sampled states do not vary randomly) and the ranks' call paths have "
            "not shown movement yet (with the MPI progress library, --mpi-progress or mpi-progress=on, MPI's own "
            "call counts would show it from the first sample)";
  return false;
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
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

std::optional<std::string> report_name_taken(const ReportPaths& paths) {
  for (const auto& file : {paths.json, paths.text, paths.dot, paths.svg, paths.trace}) {
    if (auto problem = os::not_a_file_problem(file)) return problem;
  }
  return std::nullopt;
}

std::optional<std::string> report_path_problem(const std::string& path) {
  if (auto taken = report_name_taken(report_paths(path))) return taken;
  // Missing directories are made with the first file: the nearest one that exists must take them.
  auto dir = std::filesystem::absolute(path).parent_path();
  std::error_code error;
  while (!std::filesystem::exists(dir, error) && dir.has_relative_path()) dir = dir.parent_path();
  if (!std::filesystem::is_directory(dir, error)) return dir.string() + " is not a directory";
  return os::cannot_create_in(dir.string());
}

bool write_report(const RunReport& report, const ReportPaths& paths, spdlog::logger& log) {
  const std::string text = to_text(report);
  std::vector<std::string> problems;
  const auto write = [&problems](const std::string& path, std::string_view content) {
    // The files share a directory: one it cannot make is said once, not once per file.
    auto e = os::write_file_atomically(path, content);
    if (e && std::find(problems.begin(), problems.end(), *e) == problems.end()) problems.push_back(std::move(*e));
  };
  if (auto taken = report_name_taken(paths)) {
    problems.push_back(std::move(*taken));  // and none of its files beside it (/dev/null.txt in /dev)
  } else {
    write(paths.json, to_json(report).dump(2) + "\n");
    write(paths.text, text);
    if (report.stacks) {
      write(paths.dot, report.stacks->dot);
      if (!report.stacks->svg.empty()) write(paths.svg, report.stacks->svg);
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

namespace {

// The words for a hang in the log: "computation error, faulty rank(s) 6" or "communication error...".
std::string hang_words(const stats::HangFinding& finding, const std::vector<int>& faulty_ranks) {
  switch (finding.type()) {
    case stats::HangType::Computation:
      return "computation error, faulty rank(s) " + join(faulty_ranks);
    case stats::HangType::Communication:
      return "communication error: every rank waits in MPI";
    case stats::HangType::Undetermined:
      break;
  }
  return "type undetermined: the job ended before all its ranks were checked";
}

// A confirmed hang into the report: the finding, the faulty ranks, when, and every rank's stack.
void record_hang(RunReport& report, const stats::HangFinding& finding, network::ClusterProbe& probe,
                 const stats::Watchdog& watchdog, spdlog::logger& log) {
  report.verdict = JobVerdict::Hang;
  report.finding = finding;
  report.faulty_ranks.clear();
  for (int index : finding.faulty_ranks) report.faulty_ranks.push_back(probe.rank_of(index));
  report.detected_at = probe.unix_time(finding.confirmed_at);
  report.onset_estimate = probe.unix_time(finding.decision.onset());
  report.observations = watchdog.observations();
  report.interval = watchdog.model().interval();
  auto stacks = probe.gather_stacks();
  report.ranks = std::move(stacks.records);
  const int world_size = probe.table().empty() ? 0 : probe.table().front().rank.world_size;
  report.behind = analyse_behind(report.ranks, world_size);
  diagnosis::RankSet behind;
  for (int r : report.behind->least_progressed) behind.insert(static_cast<diagnosis::Rank>(r));
  report.stacks = node::stack_views(stacks.tree, "parastack: merged stacks of all ranks at detection", true, behind);
  if (!report.behind->least_progressed.empty()) {
    log.info("least-progressed rank(s) {} (from the {})", join(report.behind->least_progressed),
             report.behind->source == "mpi-progress" ? "MPI progress library" : "stacks");
  }
  if (!report.stacks->svg_problem.empty()) log.warn("no SVG in the report: {}", report.stacks->svg_problem);
  report.samples = probe.samples_taken();
  report.ended_at = probe.unix_time(probe.now());
}

// What the action does, in the report's words (written before it is taken: a kill may end us).
std::string describe_action(const LeaderOptions& options, const JobControl& job, const network::ClusterProbe& probe,
                            const RunReport& report) {
  switch (options.action) {
    case Action::Kill:
      return !job.terminate_how.empty() ? job.terminate_how
                                        : "the job was terminated (SIGTERM, then SIGKILL after " +
                                              std::to_string(static_cast<int>(options.grace)) + " s)";
    case Action::Stop: {
      std::string pids;
      std::set<std::string> hosts;
      int representative_pid = probe.table().front().rank.pid;
      const int representative = report.faulty_ranks.empty() ? probe.rank_of(0) : report.faulty_ranks.front();
      for (const auto& e : probe.table()) {
        pids += " " + std::to_string(e.rank.pid);
        hosts.insert(e.rank.host);
        if (e.rank.rank == representative) representative_pid = e.rank.pid;
      }
      return "the ranks were left stopped for a debugger (e.g. gdb -p " + std::to_string(representative_pid) +
             (hosts.size() > 1 ? " on its host" : "") + "); resume them with kill -CONT" + pids +
             ", or end the job with " + job.end_hint;
    }
    case Action::Report:
      return "reported; the job was left running and is still watched";
  }
  return "?";
}

// Whether a sample finds any of the program's ranks still there (a monitor lost: assume so).
bool any_rank_left(network::ClusterProbe& probe) {
  try {
    const auto states = probe.all_states(static_cast<int>(probe.table().size()));
    return std::any_of(states.begin(), states.end(), [](stats::RankState s) { return s != stats::RankState::Unknown; });
  } catch (const network::MonitorLost&) {
    return true;
  }
}

// Report, tell, act: one order for every action. True when watching ends (kill, stop).
bool act_on_hang(const LeaderOptions& options, JobControl& job, network::ClusterProbe& probe, RunReport& report,
                 spdlog::logger& log) {
  // The program ended under the checks (someone else killed it, or it ended by itself): there is
  // nothing left to act on, and a batch job's scancel or qdel would end the steps after it. (Ranks
  // that outlive their launcher, still hung, are acted on as usual.)
  const bool nothing_left = report.finding && report.finding->ended_during_checks && !any_rank_left(probe);
  report.action_taken = nothing_left ? "none: the program had ended before its ranks were checked"
                                     : describe_action(options, job, probe, report);
  // Stopped at once, as they were found; the report and the mail then take their time.
  if (!nothing_left && options.action == Action::Stop) probe.signal(SIGSTOP);
  write_report(report, options.paths, log);
  if (job.notify) job.notify(report);
  if (nothing_left) {
    log.info("no action: the program had ended before its ranks were checked");
    return false;
  }
  switch (options.action) {
    case Action::Kill: {
      const int killed = job.terminate(options.grace);
      log.info("job terminated{}", killed ? " (" + std::to_string(killed) + " process(es) needed SIGKILL)" : "");
      return true;
    }
    case Action::Stop:
      log.info("{}", report.action_taken);
      return true;
    case Action::Report:
      return false;
  }
  return false;
}

// The sample trace: written as it goes, or held in memory and written only for a hang.
class TraceSink {
 public:
  TraceSink(const LeaderOptions& options, spdlog::logger& log) : options_(options), log_(log) {
    if (options_.trace_on_hang_only || report_name_taken(options_.paths)) return;  // said at the start
    file_ = os::AppendFile(options_.paths.trace);
    if (!file_.ok()) log_.warn("the sample trace: {}", file_.error());
  }
  void add(const stats::Observation& o) {
    if (options_.trace_on_hang_only) {
      held_.add(stats::format_trace_line(o));
    } else if (file_.ok() && !file_.write(stats::format_trace_line(o) + "\n")) {
      log_.warn("the sample trace {}: {}; it stops here", options_.paths.trace, file_.error());
    }
  }
  // Writes the held trace; a note for the report if it is not whole.
  std::optional<std::string> keep_for_hang() {
    if (!options_.trace_on_hang_only) return std::nullopt;
    if (report_name_taken(options_.paths)) return std::nullopt;
    if (const auto error = os::write_file_atomically(options_.paths.trace, held_.text())) {
      log_.warn("the sample trace: {}", *error);
    }
    if (held_.dropped_lines() == 0) return std::nullopt;
    return "the sample trace holds the watch's last lines only: its first " + std::to_string(held_.dropped_lines()) +
           " were dropped to bound the monitor's memory (a replay of it builds its models afresh)";
  }

 private:
  const LeaderOptions& options_;
  spdlog::logger& log_;
  os::AppendFile file_;
  HeldTrace held_;
};

// The hooks that log the watch of one program, trace it and account for what it covered.
stats::WatchdogHooks watch_hooks(const stats::Watchdog& watchdog, TraceSink& trace, RunReport& report,
                                 bool& hang_episode, spdlog::logger& log) {
  struct Progress {
    double last_decision_t = 0;
    bool ready_logged = false, unbuilt_warned = false, stasis_logged = false;
    std::optional<double> unread_since;  // since when no sampled rank could be read
    bool unread_said = false;
    std::string held_said;  // the last held alarm's reason, until a healthy sample
    bool late_said = false;
    bool serial_end_said = false;
    std::optional<double> unwatched_since;  // since when no test could fire, when none can now
    bool unwatched_said = false;
  };
  auto progress = std::make_shared<Progress>();
  stats::WatchdogHooks hooks;
  hooks.on_decision = [&, progress](const stats::Decision& d) {
    trace.add(d.observation);
    if (d.verdict == stats::Verdict::Healthy) {
      hang_episode = false;
      progress->held_said.clear();
    }
    const bool watched = account_coverage(report.coverage, watchdog.model(), d, progress->last_decision_t);
    // Said once a job, for a stretch in which nothing could fire for other reasons than lateness or
    // the serial end (said on their own): what the report will say, while it can still help.
    if (watched || d.verdict == stats::Verdict::Unwatched) {
      progress->unwatched_since.reset();
    } else if (!progress->unwatched_since) {
      progress->unwatched_since = d.observation.t;
    } else if (!progress->unwatched_said && d.observation.t - *progress->unwatched_since >= kUnwatchedNotice) {
      progress->unwatched_said = true;
      log.info("not watched for the last {:.0f} s: {}; watching on", d.observation.t - *progress->unwatched_since,
               report.coverage.why_unwatched);
    }
    // The watch's start when it comes before the model's: nothing said it until the report. (Not a
    // standstill with a rank outside MPI before the job has moved, judged then too: a job's start.)
    const auto& st = d.stasis;
    const bool stasis_watches =
        watchdog.model().config().stasis.enabled &&
        ((st.early_applies && !st.early_before_movement) || stasis_model_on(watchdog.model(), st));
    if (!progress->stasis_logged && stasis_watches && !watchdog.model().ready()) {
      progress->stasis_logged = true;
      log.info(
          "stasis tests from t={:.1f} s: the ranks' call paths have shown movement, so a standstill is judged "
          "before the S model is built",
          d.observation.t);
    }
    if (!progress->ready_logged && watchdog.model().ready()) {
      progress->ready_logged = true;
      log.info("model built after {:.1f} s (I = {} s); testing every sample from now on", d.observation.t, d.interval);
    }
    // Said once: without a model nothing can be detected, and the user should know why.
    if (!progress->ready_logged && !progress->unbuilt_warned && d.observation.t > kUnbuiltWarning) {
      progress->unbuilt_warned = true;
      log.warn(
          "no model after {:.0f} s (I = {} s): the sampled ranks' states do not vary randomly (for "
          "example always inside MPI), so a hang cannot be told from this behaviour yet; watching on",
          d.observation.t, d.interval);
    }
    // Said once a job: its end is not judged, and the log should not look as if it were.
    if (d.observation.serial_end && !progress->serial_end_said) {
      progress->serial_end_said = true;
      log.info(
          "ranks have finished (MPI_Finalize) while another works outside MPI: the job's serial end is not "
          "judged (a rank summing up alone looks like one spinning while the others wait); watching on");
    }
    // Said once a job: a CI node's healthy job was once confirmed hung on samples 20 s apart.
    if (d.verdict == stats::Verdict::Unwatched && !d.observation.serial_end && !progress->late_said) {
      progress->late_said = true;
      log.info(
          "an observation came {:.1f} s late (the node kept the monitor, or a rank it had to stop, off the CPU): "
          "the time before it is not watched, and what the samples before it showed is not evidence any more; "
          "watching on",
          d.observation.late_by);
    }
    // A job whose ranks are all stopped (kill -STOP, a debugger) is not observed at all: said once
    // it lasts, so that a paused job's log does not look like a watch that stopped.
    if (d.verdict == stats::Verdict::Skipped) {
      if (!progress->unread_since) progress->unread_since = d.observation.t;
      if (!progress->unread_said && d.observation.t - *progress->unread_since >= kUnreadNotice) {
        progress->unread_said = true;
        log.info(
            "no sampled rank could be read for {:.0f} s (stopped by a signal, held by a debugger, waiting in the "
            "kernel, or ending): "
            "nothing is judged until they can be; watching on",
            d.observation.t - *progress->unread_since);
      }
    } else {
      if (progress->unread_said) {
        log.info("the sampled ranks can be read again after {:.0f} s; watching on",
                 d.observation.t - *progress->unread_since);
      }
      progress->unread_since.reset();
      progress->unread_said = false;
    }
    log.debug(
        "t={:.3f} set={} S={}/{} {} model_samples={} streak={}/{} still={} run={} bound={:.3g} early={}/{:.1f}s "
        "late={:.3f}s",
        d.observation.t, d.observation.set, d.observation.n_out, d.observation.n, stats::to_string(d.verdict),
        d.model_samples, d.streak, d.required_streak, d.stasis.still, d.stasis.streak, d.stasis.streak_bound,
        d.stasis.early_streak, d.stasis.early_needed, d.observation.late_by);
  };
  hooks.on_alarm = [&, progress](const stats::Alarm& alarm) {
    if (!alarm.withdrawn) ++report.alarms;  // a withdrawn alarm was counted when it was raised
    if (alarm.serial_end) {
      // No slowdown: the job is ending, and the report's coverage says that its end went unwatched.
      log.info("alarm at t={:.1f} s is the job's serial end ({}): not judged from now on; watching on",
               alarm.decision.observation.t, alarm.evidence);
    } else if (alarm.slowdown) {
      ++report.slowdowns;
      if (report.slowdown_evidence.size() < 20) report.slowdown_evidence.push_back(alarm.evidence);
      if (alarm.held) {
        // Said once while it lasts: a mount stalled for an hour, or a debugger session, raises an
        // alarm every few seconds, each held for the same reason.
        // By its reason, not its figures: a starved rank's shares differ from one alarm to the next.
        const std::string reason = alarm.evidence.substr(0, alarm.evidence.find(':'));
        const auto level = reason == progress->held_said ? spdlog::level::debug : spdlog::level::warn;
        log.log(level, "alarm at t={:.1f} s: {}: no hang is judged on it; watching on", alarm.decision.observation.t,
                alarm.evidence);
        progress->held_said = reason;
      } else {
        log.info("alarm at t={:.1f} s was a transient slowdown ({}); watching on", alarm.decision.observation.t,
                 alarm.evidence);
      }
    } else {
      log.warn("alarm at t={:.1f} s: no progress on any sampled rank; checking all ranks",
               alarm.decision.observation.t);
    }
  };
  return hooks;
}

enum class ProgramEnd { Ended, Acted };

// Watches one MPI program until its ranks end or a hang is acted on (kill, stop). With action
// report, a hang is reported once and watched on; `hang_reported` says whether one was.
ProgramEnd watch_program(network::Monitors& monitors, const LeaderOptions& options, JobControl& job,
                         std::vector<network::TableEntry> table, const std::string& instance, std::uint64_t seed,
                         RunReport& report, bool& hang_reported, spdlog::logger& log) {
  report.instance = instance;
  // Every monitor adopts: those without ranks of this program forget the previous one's.
  std::vector<int> everyone(static_cast<std::size_t>(monitors.count()));
  for (int m = 0; m < monitors.count(); ++m) everyone[static_cast<std::size_t>(m)] = m;
  monitors.call(everyone, network::adopt_request(instance));
  network::ClusterProbe probe(monitors, std::move(table), job.running);
  const int rank_count = static_cast<int>(probe.table().size());
  stats::Watchdog watchdog(options.watchdog, rank_count, seed);
  std::set<std::string> hosts;
  for (const auto& e : probe.table()) hosts.insert(e.rank.host);
  log.info("found {} rank(s) of MPI program {} ({}) on {} host(s); sampling {} set(s) of {}", rank_count,
           probe.table().front().rank.command, instance, hosts.size(), watchdog.sets().size(),
           watchdog.sets().front().size());
  TraceSink trace(options, log);
  bool hang_episode = false;  // a hang was reported and no healthy sample has been seen since
  const auto hooks = watch_hooks(watchdog, trace, report, hang_episode, log);
  while (auto finding = watchdog.watch(probe, hooks)) {
    if (hang_episode) {  // the hang we reported goes on (action report)
      watchdog.resume_after_hang();
      continue;
    }
    if (auto partial = trace.keep_for_hang()) report.notes.push_back(std::move(*partial));
    record_hang(report, *finding, probe, watchdog, log);
    // warn, not error: a batch job's stderr gets only errors, and its one line is the verdict with
    // the report's path, written once the report is (notify).
    log.warn("HANG detected: {}", hang_words(*finding, report.faulty_ranks));
    if (act_on_hang(options, job, probe, report, log)) return ProgramEnd::Acted;
    hang_reported = hang_episode = true;
    watchdog.resume_after_hang();
  }
  report.observations += watchdog.observations();
  report.samples += probe.samples_taken();
  report.interval = watchdog.model().interval();
  return ProgramEnd::Ended;
}

}  // namespace

Outcome lead(network::Monitors& monitors, const LeaderOptions& options, JobControl& job, RunReport& report,
             spdlog::logger& log) {
  if (monitors.count() > 1) log.info("{} monitors on {}", monitors.count(), monitor_hosts(monitors));
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
      report.coverage.found_at = std::chrono::duration<double>(Clock::now() - started).count();
      if (watch_program(monitors, options, job, std::move(table), instance, options.seed + watched.size(), report,
                        hang_reported, log) == ProgramEnd::Acted) {
        return Outcome::Hang;
      }
      last_program_end = Clock::now();
      if (job.running()) log.info("the ranks of {} have ended; looking for the next MPI program", instance);
    }
  } catch (const network::MonitorLost& lost) {
    log.error("monitoring lost on {}: {}; parastack stops watching and the job runs on unwatched",
              lost.monitor >= 0 && lost.monitor < monitors.count() ? monitors.host(lost.monitor) : "a node",
              lost.what());
    report.verdict = JobVerdict::MonitoringLost;
    report.notes.push_back(std::string("monitoring lost: ") + lost.what());
    return Outcome::MonitoringLost;
  } catch (const std::exception& e) {
    // A bug or a corrupt reply (network::WireError) ends the watch, never the job: it runs on, and
    // `parastack run` still waits for it and returns its exit status.
    log.error("watching failed: {}; parastack stops watching and the job runs on unwatched", e.what());
    report.verdict = JobVerdict::MonitoringLost;
    report.notes.push_back(std::string("watching failed: ") + e.what());
    return Outcome::MonitoringLost;
  }
  if (watched.empty()) log.warn("the job ended before any MPI rank was seen");
  if (!watched.empty() && !report.coverage.ever_watched()) {
    log.warn("the job ended without ever being watched: {}", report.coverage.why_unwatched);
  }
  if (hang_reported) report.verdict = JobVerdict::Hang;
  return Outcome::Ended;
}

}  // namespace parastack::watch
