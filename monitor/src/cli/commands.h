// Subcommands of the parastack program. Each registers its options on the CLI and runs after
// parsing; run() returns the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "parastack/stats/hang_model.h"
#include "sampler/rank_discovery.h"
#include "watch/session.h"

namespace parastack::cli {

// Documented exit statuses (docs/user-guide.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;           // bad options or unreadable/invalid input
inline constexpr int kExitHang = 3;            // a hang was confirmed
inline constexpr int kExitNoRanks = 4;         // no MPI rank was found
inline constexpr int kExitNotMpi = 5;          // run: no MPI rank appeared within the startup timeout
inline constexpr int kExitMonitoringLost = 6;  // parastack-monitor: a monitor stopped answering

// The site configuration `parastack run` and pbs_parastack read (PARASTACK_CONFIG or --config
// override the path): SYSCONFDIR/parastack/parastack.conf of the installation (CMake).
#ifndef PARASTACK_SITE_CONFIG
#define PARASTACK_SITE_CONFIG "/etc/parastack/parastack.conf"
#endif
inline constexpr const char* kSiteConfig = PARASTACK_SITE_CONFIG;

// What `parastack stack` and `stacks` say of a process a sample found stopped by a signal: its
// stack is where someone paused it, and the sample left it as it was.
inline constexpr const char* kStoppedBySignal =
    "stopped by a signal (kill -STOP, Ctrl-Z or a suspended job; kill -CONT resumes it): the stack is where "
    "it stopped, and it is left stopped";
// ... and of one waiting in the kernel (os::StopFailure::InKernel), which no sample can stop.
inline constexpr const char* kInKernel =
    "waiting uninterruptibly in the kernel (state D) for a file system or a device, often a stalled NFS or "
    "Lustre mount: no stack can be taken until the wait ends, and it is left alone (as root, cat "
    "/proc/PID/stack shows the kernel's side)";

// Which job a command looks at: exactly one of --slurm-job ID, --pbs-job ID, --pid LAUNCHER.
class JobSelectorOptions {
 public:
  void add_to(CLI::App& command);
  // The selector, or nullopt after telling the user (prefixed by `who`) what is missing.
  // With `launches_now`, a --pid selector also holds the launches under that process at this
  // moment (an srun's tasks are not its descendants): for the commands that look once.
  std::optional<sampler::JobSelector> selector(const std::string& who, bool launches_now = false) const;

 private:
  std::string slurm_job_, pbs_job_;
  int launcher_ = 0;
  CLI::Option *slurm_ = nullptr, *pbs_ = nullptr, *pid_ = nullptr;
};

// Also on every floating-point option: CLI::Range and CLI::PositiveNumber let "nan" through (each
// comparison with NaN is false), and NaN seconds made into a duration or an integer is undefined
// behaviour (--grace nan at the kill, --interval nan between samples).
const CLI::Validator& finite_number();

// Numbers from the command line, a site file or a job's --parastack=..., refused in words the user
// can act on: CLI::Range says "Value abc not in range 0.000000 to 0.500000" for a word, and prints
// an alpha of 1e-12 as 0.000000. Each refuses what is not a (finite, whole) number first.
CLI::Validator number_from(double min, double max);  // min <= x <= max
CLI::Validator positive_number();                    // x > 0
CLI::Validator whole_number_from(long long min, long long max);

// --monitor-timeout, the batch jobs' monitors' own (parastack-monitor), also checked where a site
// file sets it for them (apply_site_config: `parastack run` itself has no use for it).
CLI::Option* add_monitor_timeout_option(CLI::App& command, double& seconds);

// Model options shared by every command that runs the model (--alpha, --budget, ...).
void add_model_options(CLI::App& command, stats::ModelConfig& config);
// The options of every entrance that watches a job (parastack run, parastack-monitor): the model's,
// --ranks, --action, --report, --grace, --log-file, --log-level, --seed.
void add_watch_options(CLI::App& command, watch::WatchOptions& options);

std::function<int()> add_replay_command(CLI::App& app);
std::function<int()> add_simulate_command(CLI::App& app);
std::function<int()> add_ranks_command(CLI::App& app);
std::function<int()> add_stack_command(CLI::App& app);
std::function<int()> add_run_command(CLI::App& app);
std::function<int()> add_stacks_command(CLI::App& app);
std::function<int()> add_config_command(CLI::App& app);

// The site configuration file with every setting commented out at its default (parastack config).
std::string site_config_template();

}  // namespace parastack::cli
