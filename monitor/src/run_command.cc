// parastack run [options] -- LAUNCHER ARGS...: the watchdog on one node. Starts the launcher, finds
// its ranks, and runs the ParaStack loop (stats::Watchdog, the leader) on them through a NodeProbe
// (the node worker). On a confirmed hang it gathers every rank's stack into one prefix tree, writes
// the report, then acts: kill (default), report (and keep watching) or stop (leave the job stopped
// for a debugger). A healthy job's output and exit status pass through untouched.
#include <signal.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "commands.h"
#include "os/launched_job.h"
#include "parastack/stats/trace.h"
#include "site_config.h"
#include "sampler/rank_discovery.h"
#include "watch/node_probe.h"
#include "watch/report.h"

namespace parastack::cli {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// When to tell the user that no model could be built yet (seconds of watching).
constexpr double kUnbuiltWarning = 300;

struct RunOptions {
  stats::WatchdogConfig watchdog;
  std::string action = "kill";
  std::string report;
  std::string log_file;
  std::string log_level = "info";
  double grace = 10;
  double startup_timeout = 120;
  std::uint64_t seed = 0;  // 0: random
  std::string config;
  std::vector<std::string> command;
};

// Signals to parastack are for the job: forwarded to the launcher. A terminal's Ctrl-C already
// reaches the launcher (same process group), so a SIGINT sent by the kernel is not forwarded twice.
volatile sig_atomic_t pending_signal = 0;

void remember_signal(int signal, siginfo_t* info, void*) {
  if (signal == SIGINT && info && info->si_code == SI_KERNEL) return;
  pending_signal = signal;
}

void install_signal_forwarding() {
  struct sigaction action {};
  action.sa_sigaction = remember_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(s, &action, nullptr);
}

std::string hostname() {
  utsname name{};
  return ::uname(&name) == 0 ? name.nodename : "localhost";
}

std::shared_ptr<spdlog::logger> make_logger(const RunOptions& options) {
  std::shared_ptr<spdlog::logger> logger;
  if (options.log_file.empty()) {
    logger = std::make_shared<spdlog::logger>("parastack", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>(
        "parastack", std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.log_file));
  }
  logger->set_pattern("parastack %H:%M:%S.%e %l: %v");
  logger->set_level(spdlog::level::from_str(options.log_level));
  logger->flush_on(spdlog::level::info);
  return logger;
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

// Whether a file can be created where the report goes, checked before the launch so the user
// hears at once (the job still runs: the report then goes to the log).
std::optional<std::string> report_path_problem(const std::string& path) {
  const auto dir = std::filesystem::absolute(path).parent_path();
  if (!std::filesystem::is_directory(dir)) return dir.string() + " is not a directory";
  if (::access(dir.c_str(), W_OK) != 0) return "cannot write in " + dir.string() + ": " + std::strerror(errno);
  return std::nullopt;
}

// Writes the report files; on failure the whole text report goes to the log, so it is never lost.
bool write_report(const watch::RunReport& report, const watch::ReportPaths& paths, spdlog::logger& log) {
  const std::string text = watch::to_text(report);
  std::vector<std::string> problems;
  if (auto e = write_file(paths.json, watch::to_json(report).dump(2) + "\n")) problems.push_back(*e);
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

struct Instance {
  std::string id;
  std::vector<sampler::DiscoveredRank> ranks;
};

enum class WaitResult { Found, JobEnded, TimedOut };

// Waits until one MPI application instance under the launcher has all its ranks on this node (or
// its count stopped changing: a job spanning nodes shows only the local ones).
WaitResult wait_for_instance(os::LaunchedJob& job, const std::set<std::string>& watched,
                             std::optional<Clock::time_point> deadline, const std::function<bool()>& job_running,
                             Instance& found, spdlog::logger& log) {
  std::size_t last_count = 0;
  auto stable_since = Clock::now();
  std::set<std::string> problems_logged;
  while (job_running()) {
    const auto discovery = sampler::discover_ranks({sampler::JobSelector::Kind::Launcher, job.pid(), {}});
    for (const auto& problem : discovery.problems) {
      if (problems_logged.insert(problem).second) log.warn("{}", problem);
    }
    std::map<std::string, std::vector<sampler::DiscoveredRank>> instances;
    for (const auto& r : discovery.ranks) {
      if (!watched.contains(r.instance)) instances[r.instance].push_back(r);
    }
    if (!instances.empty()) {
      auto& [id, ranks] = *instances.begin();
      const int world = ranks.front().world_size;
      if (ranks.size() != last_count) {
        last_count = ranks.size();
        stable_since = Clock::now();
      }
      const bool complete = world > 0 && static_cast<int>(ranks.size()) >= world;
      if (complete || Clock::now() - stable_since > 2s) {
        if (instances.size() > 1) {
          log.warn("{} MPI programs run at once under the launcher; watching {} only", instances.size(), id);
        }
        found = {id, ranks};
        return WaitResult::Found;
      }
    } else if (deadline && Clock::now() > *deadline) {
      return WaitResult::TimedOut;
    }
    std::this_thread::sleep_for(100ms);
  }
  return WaitResult::JobEnded;
}

int run_watchdog(RunOptions options) {
  if (options.command.empty()) {
    std::cerr << "parastack run: no command after '--' (example: parastack run -- mpirun -np 4 ./app)\n";
    return kExitUsage;
  }
  if (auto error = stats::config_error(options.watchdog)) {
    std::cerr << "parastack run: " << *error << "\n";
    return kExitUsage;
  }
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = make_logger(options);
  } catch (const std::exception& e) {
    std::cerr << "parastack run: cannot open the log file " << options.log_file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  spdlog::logger& log = *logger;
  const std::string host = hostname();
  if (options.report.empty()) {
    options.report = "parastack-" + host + "-" + std::to_string(::getpid()) + ".json";
  }
  const auto paths = watch::report_paths(options.report);
  if (auto problem = report_path_problem(paths.json)) {
    log.error("the report cannot be written to {} ({}); the job runs and is watched, and a report "
              "will go to this log",
              paths.json, *problem);
  }
  if (!os::become_subreaper()) log.warn("cannot become a child subreaper: orphaned ranks may escape a kill");
  install_signal_forwarding();

  auto started = os::LaunchedJob::start(options.command);
  if (auto* error = std::get_if<std::string>(&started)) {
    std::cerr << "parastack run: " << *error << "\n";
    return kExitUsage;
  }
  auto& job = std::get<os::LaunchedJob>(started);
  const std::function<bool()> job_running = [&job] {
    if (const int signal = pending_signal) {
      pending_signal = 0;
      job.forward(signal);
    }
    return job.running();
  };
  log.info("watching {} (pid {}); alpha {}, {} ranks per set, action {}", options.command.front(),
           job.pid().value, options.watchdog.model.alarm.alpha, options.watchdog.sampled_ranks, options.action);

  const std::uint64_t seed = options.seed ? options.seed : std::random_device{}();
  watch::RunReport report;
  report.command = options.command;
  report.launcher_pid = job.pid().value;
  report.host = host;
  report.action = options.action;
  report.config = options.watchdog;
  report.trace_path = paths.trace;
  report.started_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

  std::set<std::string> watched;
  bool hang_reported = false;
  const auto startup_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(options.startup_timeout));
  while (true) {
    Instance instance;
    const auto waited = wait_for_instance(job, watched, watched.empty() ? std::optional(startup_deadline) : std::nullopt,
                                          job_running, instance, log);
    if (waited == WaitResult::JobEnded) break;
    if (waited == WaitResult::TimedOut) {
      log.error("no MPI rank appeared under '{}' within {} s (--startup-timeout): is it an MPI launcher "
                "(mpirun, mpiexec, srun)? parastack stops watching; the command runs on to its end",
                options.command.front(), options.startup_timeout);
      job.wait_exit();
      return kExitNotMpi;
    }
    watched.insert(instance.id);
    report.instance = instance.id;
    watch::NodeProbe probe(instance.ranks, job_running);
    stats::Watchdog watchdog(options.watchdog, static_cast<int>(instance.ranks.size()), seed + watched.size());
    log.info("found {} rank(s) of MPI program {} ({}); sampling {} set(s) of {}", instance.ranks.size(),
             instance.ranks.front().command, instance.id, watchdog.sets().size(), watchdog.sets().front().size());
    std::ofstream trace(paths.trace, std::ios::trunc);
    if (!trace) log.warn("cannot write the sample trace {}: {}", paths.trace, std::strerror(errno));
    bool hang_episode = false;  // a hang was reported and no healthy sample has been seen since
    bool ready_logged = false, unbuilt_warned = false;
    stats::WatchdogHooks hooks;
    hooks.on_decision = [&](const stats::Decision& d) {
      if (trace) trace << stats::format_trace_line(d.observation) << "\n" << std::flush;
      if (d.verdict == stats::Verdict::Healthy) hang_episode = false;
      if (!ready_logged && watchdog.model().ready()) {
        ready_logged = true;
        log.info("model built after {:.1f} s (I = {} s); testing every sample from now on", d.observation.t, d.interval);
      }
      // Said once: without a model nothing can be detected, and the user should know why.
      if (!ready_logged && !unbuilt_warned && d.observation.t > kUnbuiltWarning) {
        unbuilt_warned = true;
        log.warn("no model after {:.0f} s (I = {} s): the sampled ranks' states do not vary randomly (for "
                 "example always inside MPI), so a hang cannot be told from this behaviour yet; "
                 "watching on",
                 d.observation.t, d.interval);
      }
      log.debug("t={:.3f} set={} S={}/{} {} model_samples={} streak={}/{}", d.observation.t, d.observation.set,
                d.observation.n_out, d.observation.n, stats::to_string(d.verdict), d.model_samples, d.streak,
                d.required_streak);
    };
    hooks.on_alarm = [&](const stats::Alarm& alarm) {
      ++report.alarms;
      if (alarm.slowdown) {
        ++report.slowdowns;
        if (report.slowdown_evidence.size() < 20) report.slowdown_evidence.push_back(alarm.evidence);
        log.info("alarm at t={:.1f} s was a transient slowdown ({}); watching on", alarm.decision.observation.t,
                 alarm.evidence);
      } else {
        log.warn("alarm at t={:.1f} s: no progress on any sampled rank; checking all ranks", alarm.decision.observation.t);
      }
    };

    while (auto finding = watchdog.watch(probe, hooks)) {
      if (hang_episode) {  // the hang we reported goes on (action report)
        watchdog.resume_after_hang();
        continue;
      }
      report.verdict = "hang";
      report.finding = finding;
      report.faulty_ranks.clear();
      for (int index : finding->faulty_ranks) report.faulty_ranks.push_back(instance.ranks[index].rank);
      report.detected_at = probe.unix_time(finding->confirmed_at);
      report.onset_estimate = probe.unix_time(finding->decision.streak_onset);
      report.observations = watchdog.observations();
      report.interval = watchdog.model().interval();
      report.stacks = watch::stack_views(probe.gather_stacks(report.ranks),
                                         "parastack: merged stacks of all ranks at detection");
      if (!report.stacks->svg_problem.empty()) log.warn("no SVG in the report: {}", report.stacks->svg_problem);
      report.samples = probe.samples_taken();
      report.ended_at = probe.unix_time(probe.now());
      log.error("HANG detected: {} error{}", finding->computation_error() ? "computation" : "communication",
                finding->computation_error() ? ", faulty rank(s) " + [&] {
                  std::string list;
                  for (int r : report.faulty_ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
                  return list;
                }() : std::string(": every rank waits in MPI"));
      if (options.action == "kill") {
        report.action_taken = "the job was terminated (SIGTERM, then SIGKILL after " +
                              std::to_string(static_cast<int>(options.grace)) + " s)";
        write_report(report, paths, log);
        const int killed = job.terminate(std::chrono::milliseconds(static_cast<long>(options.grace * 1000)));
        log.info("job terminated{}", killed ? " (" + std::to_string(killed) + " process(es) needed SIGKILL)" : "");
        return kExitHang;
      }
      if (options.action == "stop") {
        std::string pids;
        for (const auto& r : instance.ranks) {
          ::kill(r.pid.value, SIGSTOP);
          pids += " " + std::to_string(r.pid.value);
        }
        const int representative = report.faulty_ranks.empty() ? 0 : report.faulty_ranks.front();
        int representative_pid = instance.ranks.front().pid.value;
        for (const auto& r : instance.ranks) {
          if (r.rank == representative) representative_pid = r.pid.value;
        }
        report.action_taken = "the ranks were left stopped for a debugger (e.g. gdb -p " +
                              std::to_string(representative_pid) + "); resume them with kill -CONT" + pids +
                              ", or end the job with kill " + std::to_string(job.pid().value);
        write_report(report, paths, log);
        log.info("{}", report.action_taken);
        return kExitHang;
      }
      report.action_taken = "reported; the job was left running and is still watched";
      write_report(report, paths, log);
      hang_reported = hang_episode = true;
      watchdog.resume_after_hang();
    }
    report.observations += watchdog.observations();
    report.samples += probe.samples_taken();
    report.interval = watchdog.model().interval();
    if (job.running()) log.info("the ranks of {} have ended; looking for the next MPI program", instance.id);
  }

  const int status = job.wait_exit();
  if (watched.empty()) {
    log.warn("the command ended (exit status {}) before any MPI rank was seen", status);
  }
  if (!hang_reported) {
    report.verdict = "completed";
    report.exit_status = status;
    report.action_taken = "none";
    report.ended_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    write_report(report, paths, log);
  }
  return status;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  auto* command = app.add_subcommand(
      "run",
      "Run an MPI job under the watchdog: parastack run [options] -- mpirun -np N ./app. A hang is "
      "detected statistically (no timeout), explained in a report, and acted on; a healthy job's "
      "output and exit status pass through untouched.");
  add_model_options(*command, options->watchdog.model);
  command->add_option("--ranks", options->watchdog.sampled_ranks, "C: ranks sampled per set (two disjoint sets)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command->add_option("--action", options->action,
                      "On a confirmed hang: kill (terminate the job), report (and keep watching), stop "
                      "(leave the ranks stopped for a debugger)")
      ->check(CLI::IsMember({"kill", "report", "stop"}))
      ->capture_default_str();
  command->add_option("--report", options->report,
                      "Report path (JSON); the text report, DOT, SVG and sample trace go beside it "
                      "(default: ./parastack-HOST-PID.json)");
  command->add_option("--grace", options->grace, "Seconds between SIGTERM and SIGKILL with action kill")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  command->add_option("--startup-timeout", options->startup_timeout,
                      "Seconds to wait for the first MPI rank before giving up watching")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  command->add_option("--log-file", options->log_file, "Log to this file instead of stderr");
  command->add_option("--log-level", options->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  command->add_option("--seed", options->seed, "Seed for the random choices (0: random)");
  command->add_option("command", options->command, "The launcher and its arguments, after --");
  auto* config = command->add_option("--config", options->config,
                                     std::string("Site configuration: key = value lines with the long option "
                                                 "names; the command line overrides it (default: ") +
                                         kSiteConfig + " if it exists)")
                     ->envname("PARASTACK_CONFIG");
  return [options, command, config] {
    // Read before anything is launched: a bad site file is an error, never a silent default.
    std::string path = options->config;
    if (config->count() == 0 && std::filesystem::exists(kSiteConfig)) path = kSiteConfig;
    if (!path.empty()) {
      auto settings = read_site_config(path);
      if (auto* error = std::get_if<std::string>(&settings)) {
        std::cerr << "parastack run: " << *error << "\n";
        return kExitUsage;
      }
      if (auto error = apply_site_config(*command, path, std::get<std::vector<Setting>>(settings))) {
        std::cerr << "parastack run: " << *error << "\n";
        return kExitUsage;
      }
    }
    return run_watchdog(*options);
  };
}

}  // namespace parastack::cli
