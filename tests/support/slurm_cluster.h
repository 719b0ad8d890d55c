// A real Slurm cluster for a test (tests/slurm/cluster.sh): munged, slurmctld and one slurmd per
// node, the node either this machine or emulated hosts in their own namespaces. Jobs are submitted
// by an unprivileged user (pstest), as on a real cluster; the parastack binaries and SPANK plugin
// are copied where that user can run them (the build may live under /root).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace parastack::testing {

class ChildProcess;

struct SlurmJob {
  std::string id;
  std::string state;   // COMPLETED, CANCELLED, FAILED... ("" if Slurm no longer knows the job)
  std::string record;  // scontrol show job -o
};

class SlurmCluster {
 public:
  // Why no cluster can run here (not root, no Slurm), or nothing.
  static std::optional<std::string> unavailable();

  // nodes 0: one slurmd, this machine; N: node1..nodeN in namespaces. `binaries` are copied to
  // bin(). Throws if the cluster does not come up.
  SlurmCluster(int nodes, const std::vector<std::string>& binaries);
  ~SlurmCluster();  // down()
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  std::filesystem::path bin() const { return dir_ / "bin"; }
  std::filesystem::path jobs() const { return dir_ / "jobs"; }  // the jobs' working directory
  static std::string user() { return "pstest"; }
  // The plugstack.conf line for the plugin (read at every submission and job start): the build's
  // plugin and monitor, or, with PARASTACK_INSTALLED_PLUGIN=PATH in the environment (packaging/
  // test-packages.sh), the installed plugin with its own default monitor.
  void set_plugstack(const std::string& plugin_arguments);
  std::string plugstack_line(const std::string& plugin_arguments) const;  // that line alone
  // plugstack.conf as a whole (other plugins, or none of parastack's).
  void set_plugstack_text(const std::string& text);

  // Runs a Slurm command as the user in jobs(); its exit status, stdout and stderr.
  struct Result {
    int status = -1;
    std::string out, err;
  };
  Result as_user(const std::vector<std::string>& argv) const;
  // The same as root, Slurm's administrator (scontrol suspend, resume).
  Result as_admin(const std::vector<std::string>& argv) const;
  // The same, running on while the test goes on (srun, salloc): stdout and stderr to jobs()/out,
  // jobs()/err. The process (and whatever it left) ends with the returned object.
  std::unique_ptr<ChildProcess> start_as_user(const std::vector<std::string>& argv, const std::string& out,
                                              const std::string& err) const;
  // Writes an executable job script in jobs() owned by the user; its path.
  std::string script(const std::string& name, const std::string& body) const;
  // sbatch --parsable ARGS...; the job id. Throws if the submission fails.
  std::string submit(const std::vector<std::string>& args) const;
  // Waits until the job has ended; its final state and record.
  SlurmJob wait_ended(const std::string& id, int timeout_seconds) const;
  SlurmJob job(const std::string& id) const;
  // Whether the job has not ended yet: pending, running, or not yet known to the controller.
  bool job_active(const std::string& id) const;
  // The job's steps right now (squeue -s): "ID NAME" lines.
  std::string steps(const std::string& id) const;
  // Shell lines for a job script: watch (not wait for) the script's background jobs, and leave in
  // $most the most monitor steps (steps named parastack) the job had at once while they ran.
  static std::string most_monitor_steps_while_background_jobs_run();
  // The job's processes of this cluster running `program` (its first 15 characters, as /proc's
  // comm keeps them): pid by task (SLURM_PROCID).
  std::map<int, pid_t> processes(const std::string& id, const std::string& program) const;
  // What the job left behind: the user's processes, and the job's cgroups. Empty when clean.
  std::vector<std::string> leftovers(const std::string& id) const;

 private:
  // A process of this cluster's jobs, any user's (a job's environment holds the cluster's SLURM_CONF).
  struct ClusterProcess {
    pid_t pid = 0;
    uid_t uid = 0;
    std::string comm;         // /proc's name, at most 15 characters
    std::string environment;  // /proc's environ after a NUL: each variable found as "\0NAME=VALUE\0"
  };
  std::vector<ClusterProcess> cluster_processes() const;

  std::filesystem::path dir_;
  std::vector<std::string> environment_;  // SLURM_CONF and friends, for the user's commands
  // cluster.sh down (every daemon, job, cgroup and file goes), then the scratch directory.
  void down() noexcept;
};

}  // namespace parastack::testing
