// parastack run [options] -- LAUNCHER ARGS...: the watchdog on one node. Starts the launcher and
// leads one monitor in this process (watch::lead over SoloMonitors: the same leader and node worker
// as parastack-monitor's network, without MPI). On a confirmed hang the leader gathers every rank's
// stack into one prefix tree, writes the report, then acts: kill (default), report (and keep
// watching) or stop (leave the job stopped for a debugger). A healthy job's output and exit status
// pass through untouched.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <thread>

#include "cli/commands.h"
#include "cli/path_patterns.h"
#include "cli/site_config.h"
#include "network/monitors.h"
#include "node/node_worker.h"
#include "os/host.h"
#include "os/launched_job.h"
#include "os/proc.h"
#include "parastack/stats/trace.h"
#include "sampler/rank_discovery.h"
#include "watch/leader.h"
#include "watch/logging.h"
#include "watch/report.h"

namespace parastack::cli {
namespace {

// The parastack run that watches a command, in that command's environment (PID:START).
constexpr const char* kRunWatcherVariable = "PARASTACK_RUN_WATCHER";

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct RunOptions {
  watch::WatchOptions watch;
  double startup_timeout = 120;
  bool mpi_progress = false;
  std::string progress_library = PARASTACK_PROGRESS_LIBRARY;
  std::string config;
  std::vector<std::string> command;
};

// Open MPI's `-x LD_PRELOAD=VALUE` replaces the launcher's LD_PRELOAD in the ranks, which would
// drop the progress library without a word (a fault injector or a profiler preloaded that way):
// the library goes first in that value too. True if the command had one.
bool preload_also_in_command(std::vector<std::string>& command, const std::string& library) {
  const std::string_view name = "LD_PRELOAD=";
  bool found = false;
  for (std::size_t i = 0; i + 1 < command.size(); ++i) {
    if ((command[i] == "-x" || command[i] == "--x") && command[i + 1].starts_with(name)) {
      const std::string value = command[i + 1].substr(name.size());
      command[i + 1] = std::string(name) + library + (value.empty() ? "" : ":" + value);
      found = true;
    }
  }
  return found;
}

// What --report's and --log-file's patterns stand for here: the batch job this runs in, if any
// (two runs in one job tell their files apart by %p), else this run's pid.
PathFields run_path_fields() {
  std::string job = std::to_string(::getpid());
  for (const char* variable : {"PBS_JOBID", "SLURM_JOB_ID"}) {
    if (const char* id = std::getenv(variable); id && *id) job = id;
  }
  return own_path_fields(job);
}

int run_watchdog(RunOptions options) {
  if (options.command.empty()) {
    std::cerr << "parastack run: no command after '--' (example: parastack run -- mpirun -np 4 ./app)\n";
    return kExitUsage;
  }
  if (auto error = stats::config_error(options.watch.watchdog)) {
    std::cerr << "parastack run: " << *error << "\n";
    return kExitUsage;
  }
  const PathFields fields = run_path_fields();
  options.watch.report = expand_path_pattern(options.watch.report, fields);
  options.watch.log_file = expand_path_pattern(options.watch.log_file, fields);
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = watch::make_logger(options.watch.log_file, options.watch.log_level, "parastack");
  } catch (const std::exception& e) {
    std::cerr << "parastack run: cannot open the log file " << options.watch.log_file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  spdlog::logger& log = *logger;
  // What lower layers log (the node worker's discovery problems) goes to this log too: spdlog's
  // own default writes to stdout, which under `parastack run` is the job's.
  spdlog::set_default_logger(logger);
  const std::string host = os::host_name();
  // Before the job starts: a report that cannot be written is said first.
  watch::Session session(options.watch, host, options.command, 0, log);
  session.leading().startup_timeout = options.startup_timeout;
  if (!os::become_subreaper()) log.warn("cannot become a child subreaper: orphaned ranks may escape a kill");
  os::catch_job_signals();  // passed on to the job once it has started
  // The SPANK plugin and pbs_parastack name the batch job their monitors watch, every step of it
  // included.
  const char* watched_job = std::getenv("PARASTACK_WATCHED_JOB");
  const char* slurm_job = std::getenv("SLURM_JOB_ID");
  const char* pbs_job = std::getenv("PBS_JOBID");
  if (watched_job && *watched_job &&
      ((slurm_job && std::string_view(watched_job) == slurm_job) ||
       (pbs_job && std::string_view(watched_job) == pbs_job))) {
    log.warn(
        "job {} is already watched by parastack (sbatch --parastack or pbs_parastack): two watchers both sample it "
        "and both act on a hang; one is enough (docs/user-guide.md, \"A job watched twice\")",
        watched_job);
  }

  // One parastack run around another (a launcher alias wrapped twice, a script that adds its own):
  // both would watch the job. Said, not refused: each watches correctly (see above).
  if (const char* outer = std::getenv(kRunWatcherVariable)) {
    if (const auto watcher = os::parse_identity(outer); watcher && os::is_alive(*watcher)) {
      log.warn(
          "this command is already watched by another parastack run (pid {}): two watchers both sample it and both "
          "act on a hang; one is enough (docs/user-guide.md, \"A job watched twice\")",
          watcher->pid.value);
    }
  }
  if (const auto self = os::identify(os::Pid{::getpid()})) {
    ::setenv(kRunWatcherVariable, os::to_string(*self).c_str(), 1);
  }

  std::vector<std::string> command = options.command;
  if (options.mpi_progress) {
    // Through the launcher's environment: Open MPI's local ranks inherit it (mpirun's -x and
    // mca_base_env_list cannot be used: mixing the two is fatal to the job). The library is inert
    // in processes that never call MPI, mpirun included.
    const auto library = std::filesystem::absolute(options.progress_library).string();
    if (::access(library.c_str(), R_OK) != 0) {
      std::cerr << "parastack run: --mpi-progress: cannot read the progress library " << library << ": "
                << std::strerror(errno) << " (install it, or name it with --mpi-progress-library)\n";
      return kExitUsage;
    }
    const char* preload = std::getenv("LD_PRELOAD");
    const std::string value = library + (preload && *preload ? std::string(":") + preload : "");
    ::setenv("LD_PRELOAD", value.c_str(), 1);
    if (preload_also_in_command(command, library)) {
      log.info("--mpi-progress: the ranks load {} before the command's own -x LD_PRELOAD", library);
    } else {
      log.info("--mpi-progress: the ranks load {} (LD_PRELOAD)", library);
    }
  }
  auto started = os::LaunchedJob::start(command);
  if (auto* error = std::get_if<std::string>(&started)) {
    std::cerr << "parastack run: " << *error << "\n";
    return kExitUsage;
  }
  auto& job = std::get<os::LaunchedJob>(started);
  session.report().launcher_pid = job.pid().value;
  log.info("watching {} (pid {}); alpha {}, {} ranks per set, action {}", options.command.front(), job.pid().value,
           options.watch.watchdog.model.alarm.alpha, options.watch.watchdog.sampled_ranks,
           watch::to_string(options.watch.action));

  watch::JobControl control;
  os::forward_signals_to(job);
  control.running = [&job] { return job.running(); };
  control.end_hint = "kill " + std::to_string(job.pid().value);
  // An srun's tasks are slurmstepd's children, not the launcher's: found by the port they carry.
  session.leading().launches = [pid = job.pid()] { return sampler::launches_under(pid); };
  node::LiveNodeWorker worker({sampler::JobSelector::Kind::Launcher, job.pid(), {}});
  control.terminate = [&job, &worker, &log](double grace) {
    const int killed = job.terminate(std::chrono::milliseconds(static_cast<long>(grace * 1000)));
    // srun passes SIGTERM to its tasks, but a task that ignores it outlives a killed srun (they
    // are not its processes): what is left of the ranks found ends here.
    if (worker.ranks_alive()) {
      log.warn("rank(s) outlived the launcher (not its processes: srun's tasks): SIGKILL to them");
      worker.signal(SIGKILL);
    }
    return killed;
  };
  network::SoloMonitors monitors(worker, host);

  const auto outcome = session.lead(monitors, control);
  if (outcome == watch::Outcome::Hang) return kExitHang;
  if (outcome == watch::Outcome::NoRanks) {
    log.error(
        "no MPI rank appeared under '{}' within {} s (--startup-timeout): is it an MPI launcher "
        "(mpirun, mpiexec, srun)? parastack stops watching; the command runs on to its end",
        options.command.front(), options.startup_timeout);
    job.wait_exit();
    return kExitNotMpi;
  }
  const int status = job.wait_exit();
  if (const std::string signals = os::signals_passed_on(); !signals.empty()) {
    // Or the report would read as an ordinary end ("completed, exit status 143").
    const std::string note = signals + " sent to parastack, passed on to the command";
    log.info("{}: it ended with status {}", note, status);
    session.report().notes.push_back(note);
  }
  session.write_final_report(status);
  return status;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  auto* command =
      app.add_subcommand("run",
                         "Run an MPI job under the watchdog: parastack run [options] -- mpirun -np N ./app. A hang is "
                         "detected statistically (no timeout), explained in a report, and acted on; a healthy job's "
                         "output and exit status pass through untouched.");
  add_watch_options(*command, options->watch);
  command
      ->add_option("--startup-timeout", options->startup_timeout,
                   "Seconds to wait for the first MPI rank before giving up watching")
      ->check(number_from(0.1, 86400.0))
      ->capture_default_str();
  command->add_flag("--mpi-progress", options->mpi_progress,
                    "Preload the MPI progress library into the ranks: at a communication hang the report names "
                    "the least-progressed ranks and any deadlock cycle (docs/diagnosis.md)");
  command
      ->add_option("--mpi-progress-library", options->progress_library, "The progress library --mpi-progress preloads")
      ->capture_default_str();
  command->add_option("command", options->command, "The launcher and its arguments, after --");
  auto* config = command
                     ->add_option("--config", options->config,
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
