// Finds the MPI ranks of a job on this node from /proc: never from `ps`, never assuming that rank
// order follows pid order. A rank is a process whose environment carries its rank
// (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK, or SLURM_PROCID in a numbered
// srun step); launchers and daemons (mpirun, orted, prted, srun, slurmstepd, hydra_pmi_proxy...)
// and parastack itself are not ranks, and neither is a child a rank forked (it inherits the rank's
// environment). Ranks are grouped by MPI application instance: a job script may run several MPI
// programs one after another or at once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "os/ids.h"

namespace parastack::sampler {

struct JobSelector {
  enum class Kind { Launcher, Slurm, Pbs };
  Kind kind = Kind::Launcher;
  // Launcher: the ranks are its descendants (pid 0 on a node where the launcher does not run)...
  os::Pid launcher;
  std::string job_id;  // Slurm or PBS job id (PBS: or a rank of one of `launches`)
  // ...or, on any node, ranks of these launches (launches_under() on the launcher's node, or
  // under a PBS job's script on its first node): Open MPI's, or srun's (whose tasks are never
  // the launcher's descendants, even on its own node: slurmstepd starts them).
  std::vector<std::string> launches = {};
};

struct DiscoveredRank {
  int rank = -1;
  int world_size = 0;  // 0 when the environment does not say
  os::Pid pid;
  std::uint64_t start_ticks = 0;  // /proc/PID/stat's start time: with pid, os::ProcessIdentity
  std::size_t threads = 0;
  std::string host;
  std::string instance;  // which MPI application instance (PMIx namespace, Open MPI job id, step)
  std::string command;   // /proc/PID/comm
};

struct Discovery {
  std::vector<DiscoveredRank> ranks;  // sorted by instance, then rank
  std::vector<std::string> problems;  // processes that looked relevant but could not be read
};

Discovery discover_ranks(const JobSelector& selector);

// The launches started under `launcher` (itself included) on this node, as keys that their ranks
// carry on every node:
// - Open MPI (ORTE): mpirun's address (OMPI_MCA_orte_hnp_uri), read from local ranks'
//   environments and from the command lines of the ssh/rsh processes that start orted elsewhere;
// - Slurm's srun: each port an srun process listens on, with its job when srun runs inside an
//   allocation (its tasks carry SLURM_SRUN_COMM_PORT and SLURM_JOB_ID), or else with each address
//   of this host (they carry the one slurmd knows srun's host by, SLURM_SRUN_COMM_HOST): a port
//   alone is another host's srun's too.
// A node other than the launcher's cannot see the launcher's process tree, and srun's tasks are in
// no process tree of srun's: this is how their ranks are found.
std::vector<std::string> launches_under(os::Pid launcher);

// The launch key of an ORTE URI ("JOBFAMILY.0;tcp://ADDR:PORT;..."): its job and first address.
std::string launch_key(std::string_view hnp_uri);
// The launch key of an srun listening on `port` inside Slurm job `job`: "srun:PORT@JOB".
std::string srun_launch_key(std::string_view port, std::string_view job);
// The launch key of an srun that made its own allocation (its job id is unknown where it runs),
// listening on `port` of a host that has `address`: "srun:PORT#ADDRESS".
std::string srun_launch_key_from(std::string_view port, std::string_view address);
// Whether a task environment comes from one of these srun launches: its SLURM_SRUN_COMM_PORT with
// its SLURM_JOB_ID, or with its SLURM_SRUN_COMM_HOST.
bool launched_by_srun(const std::vector<std::string>& launches,
                      const std::vector<std::pair<std::string, std::string>>& environment);

// The rank and instance a process environment describes, if it is a rank's (exposed for tests).
// `launcher`: the environment of the process's parent if that is a launcher or daemon (else
// empty); a variable the process inherited from it with the same value numbers the launcher, and
// counts only when the process has no variable of its own.
struct RankIdentity {
  int rank = -1;
  int world_size = 0;
  std::string instance;
};
std::optional<RankIdentity> rank_identity(const std::vector<std::pair<std::string, std::string>>& environment,
                                          const std::vector<std::pair<std::string, std::string>>& launcher = {});

// Launchers, daemons and parastack's own processes, by command name.
bool is_launcher_or_daemon(const std::string& command);

}  // namespace parastack::sampler
