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
#include <iostream>
#include <numeric>
#include <random>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "network/cluster_probe.h"
#include "network/mpi_monitors.h"
#include "os/slurm_job.h"
#include "watch/leader.h"
#include "watch/logging.h"
#include "node/node_worker.h"
#include "node/stack_views.h"

namespace parastack::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct MonitorOptions {
  stats::WatchdogConfig watchdog;
  JobSelectorOptions job;
  std::string action = "kill";
  std::string report;
  std::string log_file;
  std::string log_level = "info";
  double grace = 10;
  double timeout = 60;
  double linger = 0;
  std::uint64_t seed = 0;
  bool share_node = false;
  // Slurm (the SPANK plugin): mail the report; the actions a site lets jobs choose.
  bool mail = false;
  std::string allowed_actions;
  bool check_options = false, list_options = false;
  // --stacks: print the job's merged stacks once and exit (parastack stacks across nodes).
  bool stacks = false;
  int stack_samples = 1;
  double stack_interval = 0.2;
  std::string stack_format = "text";
};

volatile sig_atomic_t stop_requested = 0;
void request_stop(int) { stop_requested = 1; }

// parastack stacks across nodes: every monitor samples its ranks once per round; the trees merge up
// the tree of monitors (GatherStacks), never one message per rank to the leader.
int run_stacks(network::Monitors& monitors, const MonitorOptions& options, const sampler::JobSelector& selector) {
  const auto launches = selector.kind == sampler::JobSelector::Kind::Launcher
                            ? sampler::open_mpi_launches(selector.launcher)
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

// The options a job may set with --parastack=NAME=VALUE,... (the SPANK plugin): the watchdog's,
// not how monitors find the job or the test and benchmark switches.
const std::vector<std::string> kJobOptions{"alpha",  "budget", "horizon", "thresholds", "bound", "stasis", "stasis-min", "interval",
                                           "max-interval", "sets", "turn", "window", "ranks",
                                           "action", "report", "grace", "log-level", "seed",
                                           "monitor-timeout"};

// Replaces every --job-options LIST (NAME=VALUE,...) by --NAME=VALUE arguments; a later value of a
// name wins over an earlier one and over the same option given directly. Throws on a bad list.
std::vector<std::string> expand_job_options(int argc, char** argv) {
  std::vector<std::string> direct, chosen_order;
  std::map<std::string, std::string> chosen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string list;
    if (arg == "--job-options") {
      if (i + 1 >= argc) throw std::runtime_error("--job-options needs a value");
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
  std::cout << "sbatch --parastack[=OPTIONS]: watch the job for hangs. OPTIONS is a comma-separated list of\n"
               "NAME=VALUE (e.g. --parastack=action=report,alpha=0.001); --parastack=off opts out.\n\n";
  for (const auto& name : kJobOptions) {
    const CLI::Option* option = app.get_option_no_throw("--" + name);
    if (!option) continue;
    std::string line = "  " + name + "=" + (option->get_type_name().empty() ? "VALUE" : option->get_type_name());
    if (line.size() < 32) line.resize(32, ' ');
    std::cout << line << " " << option->get_description();
    if (!option->get_default_str().empty()) std::cout << " [default: " << option->get_default_str() << "]";
    std::cout << "\n";
  }
  std::cout.flush();
}

// The words for a hang in a mail subject: "computation error on rank(s) 6" or "communication error".
std::string hang_summary(const watch::RunReport& report) {
  if (!report.finding || !report.finding->computation_error()) return "communication error";
  std::string ranks;
  for (int r : report.faulty_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  return "computation error on rank(s) " + ranks;
}

int run_leader(network::MpiMonitors& monitors, const MonitorOptions& options, const sampler::JobSelector& selector,
               spdlog::logger& log) {
  watch::RunReport report;
  report.host = monitors.host(0);
  report.action = options.action;
  report.config = options.watchdog;
  report.launcher_pid = selector.kind == sampler::JobSelector::Kind::Launcher ? selector.launcher.value : 0;
  report.command = {"parastack-monitor", selector.kind == sampler::JobSelector::Kind::Launcher
                                             ? "--pid=" + std::to_string(selector.launcher.value)
                                             : (selector.kind == sampler::JobSelector::Kind::Slurm ? "--slurm-job=" : "--pbs-job=") + selector.job_id};
  std::string path = options.report.empty() ? "parastack-" + report.host + "-" + std::to_string(::getpid()) + ".json"
                                            : options.report;
  const auto paths = watch::report_paths(path);
  report.trace_path = paths.trace;
  report.started_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (auto problem = watch::report_path_problem(paths.json)) {
    log.error("the report cannot be written to {} ({}); a report will go to this log", paths.json, *problem);
  }

  watch::LeaderOptions leading;
  leading.watchdog = options.watchdog;
  leading.action = options.action;
  leading.grace = options.grace;
  if (options.linger > 0) leading.linger = options.linger;
  leading.seed = options.seed ? options.seed : std::random_device{}();
  leading.paths = paths;
  if (selector.kind == sampler::JobSelector::Kind::Launcher) {
    leading.launches = [&] { return sampler::open_mpi_launches(selector.launcher); };
  }
  watch::JobControl control;
  control.running = [&] {
    if (stop_requested) return false;
    // With --pid the job lives as long as its launcher (on the leader's node); a batch job's
    // monitors live as long as the allocation, which ends them.
    return selector.kind != sampler::JobSelector::Kind::Launcher || ::kill(selector.launcher.value, 0) == 0 ||
           errno == EPERM;
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
  control.end_hint = selector.kind == sampler::JobSelector::Kind::Launcher
                         ? "kill " + std::to_string(selector.launcher.value)
                         : (selector.kind == sampler::JobSelector::Kind::Slurm ? "scancel " : "qdel ") + selector.job_id;

  if (selector.kind == sampler::JobSelector::Kind::Slurm) {
    // A batch job: Slurm ends it (every step, the batch script, these monitors too) and records
    // why; the owner learns it by mail. Report and mail go first: scancel ends this process.
    const std::string job = selector.job_id;
    leading.trace_on_hang_only = true;
    control.terminate_how = "the job was cancelled (scancel " + job + ")";
    control.terminate = [job, &log](double) {
      log.warn("cancelling job {} (scancel)", job);
      if (!os::slurm_cancel(job)) log.error("scancel {} failed; cancel the job by hand", job);
      return 0;
    };
    control.notify = [job, paths, &options, &log](const watch::RunReport& r) {
      const std::string summary = "job " + job + " hung: " + hang_summary(r);
      log.error("{}; report: {} (text: {})", summary, paths.json, paths.text);
      std::string problem;
      if (!os::slurm_set_comment(job, "parastack: hang (" + hang_summary(r) + "), report " + paths.text, problem)) {
        log.warn("the job's Comment was not set: {}", problem);
      }
      if (!options.mail) return;
      const std::string to = os::slurm_mail_recipient(job);
      if (to.empty()) {
        log.warn("no one to mail the report to (no --mail-user, no user name)");
      } else if (!os::send_mail(to, "parastack: Slurm " + summary + "; " + r.action_taken, watch::to_text(r))) {
        log.error("the report could not be mailed to {} (sendmail failed)", to);
      } else {
        log.warn("report mailed to {}", to);
      }
    };
  }

  const auto outcome = watch::lead(monitors, leading, control, report, log);
  if (outcome == watch::Outcome::MonitoringLost) {
    write_report(report, paths, log);
    return 6;
  }
  if (outcome == watch::Outcome::Hang) return kExitHang;
  // A batch job's monitors end with the job: nothing to say unless something happened (a healthy
  // job's directory gets no parastack file).
  if (report.verdict != "hang" && selector.kind != sampler::JobSelector::Kind::Slurm) {
    report.verdict = "completed";
    report.action_taken = "none";
    report.ended_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    write_report(report, paths, log);
  }
  return kExitOk;
}

}  // namespace
}  // namespace parastack::cli

int main(int argc, char** argv) {
  using namespace parastack;
  using namespace parastack::cli;
  MonitorOptions options;
  CLI::App app{"parastack-monitor: the parastack watchdog across nodes, one MPI process per node (rank 0 leads)"};
  add_model_options(app, options.watchdog.model);
  options.job.add_to(app);
  app.add_option("--ranks", options.watchdog.sampled_ranks, "C: ranks sampled per set (two disjoint sets)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--action", options.action, "On a confirmed hang: kill, report or stop")
      ->check(CLI::IsMember({"kill", "report", "stop"}))
      ->capture_default_str();
  app.add_option("--report", options.report, "Report path (JSON), written by the leader");
  app.add_option("--grace", options.grace, "Seconds between SIGTERM and SIGKILL with action kill")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--monitor-timeout", options.timeout,
                 "Seconds a monitor may take to answer before its node counts as lost (monitoring then "
                 "stops; the job runs on)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--linger", options.linger,
                 "After a program ends, end monitoring if no other starts within this many seconds (0: "
                 "wait for the job's end)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--log-file", options.log_file, "Log to this file instead of stderr");
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "Seed for the random choices (0: random)");
  app.add_flag("--share-node", options.share_node,
               "Testing: monitors share one machine; monitor m of M takes the block of ranks r with "
               "r * M / world_size == m, as if each were on its own node");
  app.add_flag("--stacks", options.stacks,
               "Do not watch: print the job's stacks from every node, merged into one call-graph prefix "
               "tree (parastack stacks across nodes), and exit");
  app.add_option("--stack-samples", options.stack_samples, "--stacks: samples per rank (more than 1: a 3D tree)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--stack-interval", options.stack_interval, "--stacks: seconds between samples")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--stack-format", options.stack_format, "--stacks: text, dot, svg (needs Graphviz) or json")
      ->check(CLI::IsMember({"text", "dot", "svg", "json"}))
      ->capture_default_str();
  app.add_flag("--mail", options.mail,
               "With --slurm-job: mail the hang report to the job's --mail-user, else to its owner");
  app.add_option("--allowed-actions", options.allowed_actions,
                 "Comma-separated actions the site lets jobs choose (SPANK plugin's actions=)");
  std::string job_options_help;  // expanded before parsing (expand_job_options); listed in --help
  app.add_option("--job-options", job_options_help, "NAME=VALUE,...: options as --parastack=OPTIONS gives them");
  app.add_flag("--check-options", options.check_options, "Check the options and exit (at job submission)");
  app.add_flag("--list-options", options.list_options, "List the options a job may set with --parastack and exit");
  // Parse before MPI starts: a usage error must not need an MPI job to be reported.
  std::vector<std::string> args;
  try {
    args = expand_job_options(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "parastack: --parastack: " << e.what() << "\n";
    return kExitUsage;
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them backwards
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (options.list_options) {
    list_job_options(app);
    return kExitOk;
  }
  if (!options.allowed_actions.empty()) {
    std::stringstream allowed(options.allowed_actions);
    bool ok = false;
    for (std::string a; std::getline(allowed, a, ',');) ok = ok || a == options.action;
    if (!ok) {
      std::cerr << "parastack: action=" << options.action << " is not allowed on this cluster (allowed: "
                << options.allowed_actions << ")\n";
      return kExitUsage;
    }
  }
  std::optional<sampler::JobSelector> selector;
  if (!options.check_options && !(selector = options.job.selector("parastack-monitor"))) {
    return kExitUsage;
  }
  if (auto error = stats::config_error(options.watchdog)) {
    std::cerr << "parastack-monitor: " << *error << "\n";
    return kExitUsage;
  }
  if (options.check_options) return kExitOk;

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int self = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &self);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = watch::make_logger(options.log_file, options.log_level,
                                self == 0 ? "parastack" : "parastack monitor " + std::to_string(self));
  } catch (const std::exception& e) {
    std::cerr << "parastack-monitor: cannot open the log file " << options.log_file << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, kExitUsage);
  }
  spdlog::set_default_logger(logger);
  ::signal(SIGTERM, request_stop);
  ::signal(SIGINT, request_stop);

  node::NodeShare share;
  if (options.share_node) share = {self, size};
  auto here = *selector;
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
    status = options.stacks ? run_stacks(monitors, options, *selector) : run_leader(monitors, options, *selector, *logger);
    if (status == 6) {
      // A monitor does not answer: finalizing would wait for it for ever. End every monitor (the
      // job is a different MPI job and is not touched).
      logger->flush();
      MPI_Abort(MPI_COMM_WORLD, status);
    }
    monitors.release();
  }
  MPI_Finalize();
  return status;
}
