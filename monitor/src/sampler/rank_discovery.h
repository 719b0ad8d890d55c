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
  os::Pid launcher;  // Launcher: the ranks are its descendants
  std::string job_id;  // Slurm or PBS job id
};

struct DiscoveredRank {
  int rank = -1;
  int world_size = 0;    // 0 when the environment does not say
  os::Pid pid;
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

// The rank and instance a process environment describes, if it is a rank's (exposed for tests).
struct RankIdentity {
  int rank = -1;
  int world_size = 0;
  std::string instance;
};
std::optional<RankIdentity> rank_identity(const std::vector<std::pair<std::string, std::string>>& environment);

// Launchers, daemons and parastack's own processes, by command name.
bool is_launcher_or_daemon(const std::string& command);

}  // namespace parastack::sampler
