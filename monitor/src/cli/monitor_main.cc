// parastack-monitor: the watchdog across nodes, as an Open MPI program with one process per node
//   mpirun --map-by ppr:1:node parastack-monitor --pid LAUNCHER | --slurm-job ID | --pbs-job ID
//   srun --overlap --ntasks-per-node=1 parastack-monitor --slurm-job $SLURM_JOB_ID
// Rank 0 leads (watch::lead: the model and every decision) and monitors its own node; the others
// only serve requests (network::serve). Its benchmark on emulated ranks is a tool of its own
// (bench/tools/monitor_network_bench.cc), not part of the product.
#include <mpi.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/path_patterns.h"
#include "network/cluster_probe.h"
#include "network/mpi_monitors.h"
#include "node/node_worker.h"
#include "node/stack_views.h"
#include "os/batch_system.h"
#include "os/proc.h"
#include "os/session_directory.h"
#include "os/stopped_thread.h"
#include "watch/leader.h"
#include "watch/logging.h"

namespace parastack::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct MonitorOptions {
  watch::WatchOptions watch;
  JobSelectorOptions job;
  double timeout = 60;
  double linger = 0;
  bool share_node = false;
  // Slurm (the SPANK plugin): mail the report; the actions a site lets jobs choose.
  bool mail = false;
  std::string mailer;   // a sendmail-compatible program; empty: /usr/sbin/sendmail
  std::string mail_to;  // pbs_parastack: the job's -M addresses (empty: the job's owner)
  std::string allowed_actions;
  // The batch script, as PID:START_TICKS on the leader's node: the monitors end when it exits, so
  // that its step ends quietly without anybody signalling them.
  std::string batch_script;
  // The exit status after a confirmed hang. The plugin asks for 0: the verdict is already in the
  // job's stderr, and a non-zero status makes the monitors' srun add a line of its own there.
  int hang_exit_status = kExitHang;
  // --mpi-progress: the job's ranks were given the progress library (the SPANK plugin and
  // pbs_parastack preload it when the job asks; the monitors only read what it keeps).
  bool mpi_progress = false;
  std::string progress_library = PARASTACK_PROGRESS_LIBRARY;
  bool check_options = false, list_options = false;
  // --stacks: print the job's merged stacks once and exit (parastack stacks across nodes).
  bool stacks = false;
  int stack_samples = 1;
  double stack_interval = 0.2;
  std::string stack_format = "text";
};

volatile sig_atomic_t stop_requested = 0;
void request_stop(int) { stop_requested = 1; }
void not_ours(int) {}

// parastack stacks across nodes: every monitor samples its ranks once per round; the trees merge up
// the tree of monitors (GatherStacks), never one message per rank to the leader.
int print_stacks_across_nodes(network::Monitors& monitors, const MonitorOptions& options,
                              const sampler::JobSelector& selector) {
  const auto launches = selector.kind == sampler::JobSelector::Kind::Launcher
                            ? sampler::launches_under(selector.launcher)
                            : std::vector<std::string>{};
  // A program still starting has fewer ranks than its world size: give it up to 10 s.
  std::vector<network::TableEntry> table;
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (true) {
    table = network::decode_discovery(monitors.reduce(network::discover_request(launches)));
    std::map<std::string, std::pair<std::size_t, int>> found;  // instance -> ranks here, world size
    for (const auto& entry : table) {
      auto& [count, world] = found[entry.rank.instance];
      ++count;
      world = entry.rank.world_size;
    }
    const bool complete = !found.empty() && std::all_of(found.begin(), found.end(), [](const auto& f) {
      return f.second.second <= 0 || static_cast<int>(f.second.first) >= f.second.second;
    });
    if (complete || Clock::now() > give_up) {
      if (!complete && !found.empty()) std::cerr << "parastack-monitor --stacks: note: not every rank was found\n";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (table.empty()) {
    std::cerr << "parastack-monitor --stacks: no MPI ranks found on the " << monitors.count() << " monitor(s)' nodes\n";
    return kExitNoRanks;
  }
  std::set<std::string> instances, hosts;
  for (const auto& entry : table) {
    instances.insert(entry.rank.instance);
    hosts.insert(entry.rank.host);
  }
  if (instances.size() > 1) {
    std::cerr << "parastack-monitor --stacks: note: " << instances.size()
              << " MPI programs found; their rank numbers overlap in one tree\n";
  }
  std::vector<int> everyone(static_cast<std::size_t>(monitors.count()));
  std::iota(everyone.begin(), everyone.end(), 0);
  diagnosis::PrefixTree tree;
  for (int round = 0; round < options.stack_samples; ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::duration<double>(options.stack_interval));
    for (const auto& instance : instances) {
      monitors.call(everyone, network::adopt_request(instance));
      tree.merge(network::decode_stacks(monitors.reduce(network::plain_request(network::Request::GatherStacks))).tree);
    }
  }
  const auto views = node::stack_views(tree,
                                       "parastack stacks: " + std::to_string(table.size()) + " ranks on " +
                                           std::to_string(hosts.size()) + " host(s), " +
                                           std::to_string(options.stack_samples) + " sample(s) each",
                                       options.stack_format == "svg");
  return node::print_stack_view(views, options.stack_format, std::cout, std::cerr, "parastack-monitor --stacks")
             ? kExitOk
             : kExitUsage;
}

// The words for a hang in a mail subject: "computation error on rank(s) 6" or "communication error".
std::string hang_summary(const watch::RunReport& report) {
  if (report.finding && report.finding->type() == stats::HangType::Undetermined) return "hang of undetermined type";
  if (!report.finding || !report.finding->computation_error()) return "communication error";
  std::string ranks;
  for (int r : report.faulty_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  return "computation error on rank(s) " + ranks;
}

// The report's words for how the leader found the job.
std::vector<std::string> job_words(const sampler::JobSelector& selector) {
  using Kind = sampler::JobSelector::Kind;
  switch (selector.kind) {
    case Kind::Launcher:
      return {"parastack-monitor", "--pid=" + std::to_string(selector.launcher.value)};
    case Kind::Slurm:
      return {"parastack-monitor", "--slurm-job=" + selector.job_id};
    case Kind::Pbs:
      return {"parastack-monitor", "--pbs-job=" + selector.job_id};
  }
  return {"parastack-monitor"};
}

// Mails a batch job's report to `to`. The mail is the last thing done about a hang: the job is
// already reported and about to end, so a mailer that fails costs only the mail (one line).
void mail_report(const std::string& mailer, const std::string& to, const std::string& subject,
                 const watch::RunReport& r, spdlog::logger& log) {
  if (to.empty()) {
    log.warn("no one to mail the report to (no address given, no user name)");
  } else if (const auto problem = os::send_mail(mailer, to, subject + "; " + r.action_taken, watch::to_text(r));
             !problem.empty()) {
    log.error("the report could not be mailed to {}: {}", to, problem);
  } else {
    log.warn("report mailed to {}", to);
  }
}

// Before scancel or qdel, which end the srun or mpirun that forwards this monitor's stderr to the
// job's: that forwarder has read the lines so far (the last one says what is being done to the job).
void let_the_job_read_its_last_lines(spdlog::logger& log) {
  log.flush();
  os::await_output_taken(STDERR_FILENO, std::chrono::seconds(2));
}

// A batch job under Slurm: Slurm ends it (every step, the batch script, these monitors too) and
// records why; the owner learns it by mail. Report and mail go first: scancel ends this process.
void control_slurm_job(watch::JobControl& control, const std::string& job, const watch::ReportPaths& paths,
                       const MonitorOptions& options, spdlog::logger& log) {
  control.terminate_how = "the job was cancelled (scancel " + job + ")";
  control.terminate = [job, &log](double) {
    log.warn("cancelling job {} (scancel)", job);
    let_the_job_read_its_last_lines(log);
    if (!os::slurm_cancel(job)) log.error("scancel {} failed; cancel the job by hand", job);
    return 0;
  };
  control.notify = [job, paths, mail = options.mail, mailer = options.mailer, &log](const watch::RunReport& r) {
    const std::string summary = "job " + job + " hung: " + hang_summary(r);
    log.error("{}; report: {} (text: {})", summary, paths.json, paths.text);
    os::site_log("parastack: Slurm " + summary + "; report " + paths.json);
    std::string problem;
    const std::string whole_job = job.substr(0, job.find('.'));  // a step's job
    if (!os::slurm_set_comment(whole_job, "parastack: hang (" + hang_summary(r) + "), report " + paths.text, problem)) {
      log.warn("the job's Comment was not set: {}", problem);
    }
    if (mail) mail_report(mailer, os::slurm_mail_recipient(whole_job), "parastack: Slurm " + summary, r, log);
  };
}

// A PBS job (pbs_parastack): `qdel` ends it (Torque, or a PBS front end over Slurm), after the
// report and the mail, as for Slurm.
void control_pbs_job(watch::JobControl& control, const std::string& job, const watch::ReportPaths& paths,
                     const MonitorOptions& options, spdlog::logger& log) {
  control.terminate_how = "the job was deleted (qdel " + job + ")";
  control.terminate = [job, &log](double) {
    log.warn("deleting job {} (qdel)", job);
    let_the_job_read_its_last_lines(log);
    if (!os::pbs_delete(job)) log.error("qdel {} failed; delete the job by hand", job);
    return 0;
  };
  control.notify = [job, paths, options, &log](const watch::RunReport& r) {
    const std::string summary = "job " + job + " hung: " + hang_summary(r);
    log.error("{}; report: {} (text: {})", summary, paths.json, paths.text);
    os::site_log("parastack: PBS " + summary + "; report " + paths.json);
    if (options.mail) {
      mail_report(options.mailer, options.mail_to.empty() ? os::user_name() : options.mail_to,
                  "parastack: PBS " + summary, r, log);
    }
  };
}

// --batch-script's process, if it is alive on this node. Otherwise (a malformed value, or the
// leading monitor is not on the batch host) the monitors live until the job's end ends them, as
// without the option: never end monitoring because of a process we cannot see.
std::optional<os::ProcessIdentity> batch_script_on_this_node(const std::string& value, spdlog::logger& log) {
  if (value.empty()) return std::nullopt;
  const auto script = os::parse_identity(value);
  if (!script) {
    log.error("--batch-script {}: not PID:START; monitoring lasts until the job ends", value);
    return std::nullopt;
  }
  if (!os::is_alive(*script)) {
    log.warn("the batch script (pid {}) is not on this node; monitoring lasts until the job ends", script->pid.value);
    return std::nullopt;
  }
  return script;
}

int run_leader(network::MpiMonitors& monitors, const MonitorOptions& options, const sampler::JobSelector& selector,
               spdlog::logger& log) {
  using Kind = sampler::JobSelector::Kind;
  watch::Session session(options.watch, monitors.host(0), job_words(selector),
                         selector.kind == Kind::Launcher ? selector.launcher.value : 0, log);
  watch::LeaderOptions& leading = session.leading();
  if (options.linger > 0) leading.linger = options.linger;
  if (selector.kind == Kind::Launcher) {
    leading.launches = [&] { return sampler::launches_under(selector.launcher); };
  }
  const std::optional<os::ProcessIdentity> script = batch_script_on_this_node(options.batch_script, log);
  if (selector.kind == Kind::Pbs && script) {
    // The Open MPI launches under the job script: on the other nodes, the ranks they started
    // through ssh are found by these, having no PBS_JOBID.
    leading.launches = [pid = script->pid] { return sampler::launches_under(pid); };
  }
  watch::JobControl control;
  control.running = [&] {
    if (stop_requested) return false;
    if (script && !os::is_alive(*script)) {
      log.info("the batch script (pid {}) has ended: monitoring ends with it", script->pid.value);
      return false;
    }
    // With --pid the job lives as long as its launcher (on the leader's node); a batch job's
    // monitors live as long as the allocation, which ends them.
    return selector.kind != Kind::Launcher || ::kill(selector.launcher.value, 0) == 0 || errno == EPERM;
  };
  std::vector<int> everyone(static_cast<std::size_t>(monitors.count()));
  std::iota(everyone.begin(), everyone.end(), 0);
  control.terminate = [&](double grace) {
    // Every rank on every node: the launcher sees its ranks die and ends the job.
    monitors.call(everyone, network::signal_request(SIGTERM));
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
    while (Clock::now() < until && control.running()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    monitors.call(everyone, network::signal_request(SIGKILL));
    return 0;
  };
  control.end_hint = selector.kind == Kind::Launcher ? "kill " + std::to_string(selector.launcher.value)
                     : selector.kind == Kind::Slurm  ? "scancel " + selector.job_id
                                                     : "qdel " + selector.job_id;
  if (selector.kind == Kind::Slurm) control_slurm_job(control, selector.job_id, session.paths(), options, log);
  if (selector.kind == Kind::Pbs) control_pbs_job(control, selector.job_id, session.paths(), options, log);
  // A batch job's monitors keep the sample trace in memory unless there is a hang.
  leading.trace_on_hang_only = selector.kind != Kind::Launcher;

  const auto outcome = session.lead(monitors, control);
  if (outcome == watch::Outcome::MonitoringLost) {
    session.write_final_report(std::nullopt);
    return kExitMonitoringLost;
  }
  if (outcome == watch::Outcome::Hang) return options.hang_exit_status;
  // A batch job's monitors end with the job: nothing to say unless something happened (a healthy
  // job's directory gets no parastack file).
  if (selector.kind == Kind::Launcher) session.write_final_report(std::nullopt);
  return kExitOk;
}

// Every option of parastack-monitor: the watch's (shared with parastack run), how to find the job,
// the network's, --stacks, and the SPANK plugin's.
void add_monitor_options(CLI::App& app, MonitorOptions& options, std::string& job_options_help) {
  add_watch_options(app, options.watch);
  options.job.add_to(app);
  add_monitor_timeout_option(app, options.timeout);
  app.add_option("--linger", options.linger,
                 "After a program ends, end monitoring if no other starts within this many seconds (0: "
                 "wait for the job's end)")
      ->check(number_from(0.0, 1e9));
  app.add_flag("--share-node", options.share_node,
               "Testing: monitors share one machine; monitor m of M takes the block of ranks r with "
               "r * M / world_size == m, as if each were on its own node");
  app.add_flag("--stacks", options.stacks,
               "Do not watch: print the job's stacks from every node, merged into one call-graph prefix "
               "tree (parastack stacks across nodes), and exit");
  app.add_option("--stack-samples", options.stack_samples, "--stacks: samples per rank (more than 1: a 3D tree)")
      ->check(whole_number_from(1, 10000))
      ->capture_default_str();
  app.add_option("--stack-interval", options.stack_interval, "--stacks: seconds between samples")
      ->check(number_from(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--stack-format", options.stack_format, "--stacks: text, dot, svg (needs Graphviz) or json")
      ->check(CLI::IsMember({"text", "dot", "svg", "json"}))
      ->capture_default_str();
  app.add_option("--mpi-progress", options.mpi_progress,
                 "on: the job asked for the MPI progress library (the SPANK plugin and pbs_parastack preload it "
                 "into the ranks; a monitor reads the counts of whichever ranks keep them, docs/diagnosis.md)")
      // The words the plugin and pbs_parastack read (options.c, in_job.cc): any other that parsed as
      // a boolean here (enable, y, 2) was accepted at submission and then preloaded nothing.
      ->check(CLI::IsMember({"on", "off", "yes", "no", "true", "false", "1", "0"}))
      ->default_str("off");
  app.add_option("--mpi-progress-library", options.progress_library, "The library mpi-progress=on preloads")
      ->check([](const std::string& path) { return path.starts_with('/') ? std::string() : "an absolute path"; })
      ->capture_default_str();
  app.add_flag("--mail", options.mail,
               "With --slurm-job or --pbs-job: mail the hang report to the job's --mail-user (Slurm) or --mail-to, "
               "else to its owner");
  app.add_option("--mail-to", options.mail_to, "With --mail: the addresses to mail to (pbs_parastack: qsub -M)");
  app.add_option("--mailer", options.mailer,
                 "With --mail: the sendmail-compatible program to mail with (run as MAILER -t -oi -odi, the message on "
                 "stdin; default /usr/sbin/sendmail)");
  app.add_option("--batch-script", options.batch_script,
                 "With --slurm-job or --pbs-job: PID:START (start time in clock ticks, /proc/PID/stat field 22) "
                 "of the batch script (or of a step's task 0) on the leading monitor's node; monitoring ends when "
                 "it exits (SPANK plugin, pbs_parastack)");
  app.add_option("--hang-exit-status", options.hang_exit_status,
                 "Exit status of the monitors after a confirmed hang (the SPANK plugin asks for 0)")
      ->check(whole_number_from(0, 255))
      ->capture_default_str();
  app.add_option("--allowed-actions", options.allowed_actions,
                 "Comma-separated actions the site lets jobs choose (SPANK plugin's actions=)");
  app.add_option("--job-options", job_options_help, "NAME=VALUE,...: options as --parastack=OPTIONS gives them");
  app.add_flag("--check-options", options.check_options, "Check the options and exit (at job submission)");
  app.add_flag("--list-options", options.list_options, "List the options a job may set with --parastack and exit");
}

// Parses the command line (before MPI starts: a usage error must not need an MPI job to be
// reported) and checks what parsing cannot. An exit status when the program ends here.
std::optional<int> parse_monitor_options(CLI::App& app, MonitorOptions& options, int argc, char** argv,
                                         std::optional<sampler::JobSelector>& selector) {
  std::vector<std::string> args;
  try {
    args = expand_job_options(std::vector<std::string>(argv, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "parastack: --parastack: " << e.what() << "\n";
    return kExitUsage;
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them backwards
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (options.list_options) {
    list_job_options(app);
    return kExitOk;
  }
  const std::string_view action = watch::to_string(options.watch.action);
  if (!options.allowed_actions.empty()) {
    std::stringstream allowed(options.allowed_actions);
    bool ok = false;
    for (std::string a; std::getline(allowed, a, ',');) ok = ok || a == action;
    if (!ok) {
      std::cerr << "parastack: action=" << action
                << " is not allowed on this cluster (allowed: " << options.allowed_actions << ")\n";
      return kExitUsage;
    }
  }
  if (!options.check_options && !(selector = options.job.selector("parastack-monitor"))) return kExitUsage;
  if (auto error = stats::config_error(options.watch.watchdog)) {
    std::cerr << "parastack-monitor: " << *error << "\n";
    return kExitUsage;
  }
  if (options.check_options) return kExitOk;
  return std::nullopt;
}

// This monitor's part of the watch: the leader (MPI rank 0) watches and reports, the others serve
// it. Returns the exit status; a monitor that must not finalize has already aborted.
int watch_across_nodes(const MonitorOptions& options, const sampler::JobSelector& selector, int self, int size,
                       spdlog::logger& logger) {
  node::NodeShare share;
  if (options.share_node) share = {self, size};
  auto here = selector;
  // --pid names a process on the leader's node; elsewhere that number is some other process, and
  // the leader's launches (Discover) say which ranks are the job's.
  if (self != 0) here.launcher = os::Pid{0};
  node::LiveNodeWorker worker(here, share);
  const auto hosts = network::gather_hosts();
  int status = 0;
  if (self != 0) {
    network::serve(worker);
  } else {
    network::MpiMonitors monitors(worker, hosts, std::chrono::duration<double>(options.timeout));
    status = options.stacks ? print_stacks_across_nodes(monitors, options, selector)
                            : run_leader(monitors, options, selector, logger);
    if (status == kExitMonitoringLost) {
      // A monitor does not answer: finalizing would wait for it for ever. End every monitor (the
      // job is a different MPI job and is not touched).
      logger.flush();
      MPI_Abort(MPI_COMM_WORLD, status);
    }
    monitors.release();
  }
  return status;
}

}  // namespace
}  // namespace parastack::cli

namespace {

// Open MPI 4.1.4 under Slurm 22.05's PMIx (srun --mpi=pmix), across nodes: now and then one
// process leaves MPI_Init while another still waits in the modex's fence, and the first message
// of the one reaches the other before its PML has registered to take it: a call through a null
// pointer, a monitor that dies as it starts (CI, twice; a plain MPI program that only calls
// MPI_Init_thread and MPI_Allgather does it about once in 290 starts on a loaded machine). Without
// that fence (each monitor asks for a peer's address when it first needs it) the only fence left
// is the one MPI_Init ends with, after the PML is ready: 0 in 2,400 (bench/mpi-start.sh). Only
// there: under mpirun, with several monitors on one node (--share-node), these settings made
// MPI_Init fail ("PML add procs failed", a local peer's address not found). Neither is set if the
// site or the user already set it.
void skip_the_modex_fence_under_slurm() {
  const char* space = std::getenv("PMIX_NAMESPACE");
  if (!space || !std::string_view(space).starts_with("slurm.pmix.")) return;
  ::setenv("OMPI_MCA_pmix_base_async_modex", "1", 0);
  ::setenv("OMPI_MCA_pmix_base_collect_data", "0", 0);
}

// The monitors' own Open MPI session directory (os/session_directory.h). Started by mpirun, the
// monitors have their mpirun's (which pbs_parastack keeps apart, and docs/user-guide.md says how);
// started by srun, one of their own. Open MPI empties it at MPI_Finalize but leaves it: it goes
// with this object, after MPI_Finalize, and those of monitors killed with their job go when the
// next monitor of the user starts on the node.
class OwnSessionDirectory {
 public:
  OwnSessionDirectory() {
    namespace os = parastack::os;
    if (std::getenv("OMPI_MCA_orte_top_session_dir")) return;
    const char* tmp = std::getenv("TMPDIR");
    const std::string under = tmp && *tmp ? tmp : "/tmp";
    os::remove_stale_monitors_session_directories(under);
    path_ = os::own_monitors_session_directory(under);
    ::setenv("OMPI_MCA_orte_top_session_dir", path_.c_str(), 1);
  }
  ~OwnSessionDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  OwnSessionDirectory(const OwnSessionDirectory&) = delete;
  OwnSessionDirectory& operator=(const OwnSessionDirectory&) = delete;

 private:
  std::string path_;  // empty: somebody else's, left alone
};

int monitor_main(int argc, char** argv) {
  using namespace parastack;
  using namespace parastack::cli;
  MonitorOptions options;
  CLI::App app{"parastack-monitor: the parastack watchdog across nodes, one MPI process per node (rank 0 leads)"};
  std::string job_options_help;  // expanded before parsing (expand_job_options); listed in --help
  add_monitor_options(app, options, job_options_help);
  std::optional<sampler::JobSelector> selector;
  if (const auto status = parse_monitor_options(app, options, argc, argv, selector)) return *status;
  // A batch job's report= and log-file= patterns (checked at submission): the job's id as its
  // default report name has it, this node's host, this monitor's pid.
  const PathFields fields = own_path_fields(
      selector->kind == sampler::JobSelector::Kind::Launcher ? std::to_string(::getpid()) : selector->job_id);
  options.watch.report = expand_path_pattern(options.watch.report, fields);
  options.watch.log_file = expand_path_pattern(options.watch.log_file, fields);

  // Before MPI_Init: a SIGTERM that lands while the monitors start up ends them the same way, with
  // the same line in the log, not silently.
  ::signal(SIGTERM, request_stop);
  ::signal(SIGINT, request_stop);
  // A job's own signals reach its monitors too: sbatch --signal=USR1@T and scancel --signal signal
  // every step, the monitors' included. Not theirs to act on: by default each would end them, and
  // the watch, with a line in the job's stderr. Caught rather than ignored, so that the programs
  // the monitors run (scancel, the mailer) start with the defaults.
  for (int s : {SIGHUP, SIGUSR1, SIGUSR2}) ::signal(s, not_ours);
  // The log before MPI: a file that cannot be opened (log-file=) ends every monitor with one line
  // in the job's stderr, not with an MPI_Abort and its banner.
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = watch::make_logger(options.watch.log_file, options.watch.log_level, "parastack");
  } catch (const std::exception& e) {
    std::cerr << "parastack-monitor: cannot open the log file " << options.watch.log_file << ": " << e.what()
              << "; the job runs on unwatched\n";
    return kExitUsage;
  }
  spdlog::set_default_logger(logger);
  const OwnSessionDirectory session_directory;  // removed after MPI_Finalize, when the object goes
  skip_the_modex_fence_under_slurm();
  int provided = 0;
  {
    // Open MPI's threads, started here, inherit this mask: the signals a sample holds back then
    // reach only the main thread, which holds them while it holds a rank. Taken by one of those
    // threads, a Ctrl-Z or a SIGQUIT would act on the whole process in the middle of a sample.
    const os::TerminationSignalsHeld only_the_main_thread_takes_them;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  }
  int self = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &self);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (self != 0) watch::set_log_prefix(*logger, "parastack monitor " + std::to_string(self));

  int status = 0;
  try {
    status = watch_across_nodes(options, *selector, self, size, *logger);
    if (stop_requested) logger->warn("asked to stop (SIGTERM or SIGINT): monitoring ends here, the job runs on");
  } catch (const std::exception& e) {
    // The worker's destructor has detached from every rank on the way here; the job runs on.
    logger->error("this monitor failed ({}); monitoring ends, the job is not touched", e.what());
    logger->flush();
    MPI_Abort(MPI_COMM_WORLD, kExitMonitoringLost);
  }
  MPI_Finalize();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return monitor_main(argc, argv);
  } catch (const std::exception& e) {
    // Before MPI_Init (option set-up): the watch after it catches its own failures.
    std::cerr << "parastack-monitor: " << e.what() << "\n";
    return parastack::cli::kExitUsage;
  }
}
