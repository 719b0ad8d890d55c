#include "sampler/rank_discovery.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <set>

#include "os/host.h"
#include "os/proc.h"

namespace parastack::sampler {
namespace {

std::optional<int> to_int(const std::string& text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

const std::string* find(const std::vector<std::pair<std::string, std::string>>& env, std::string_view key) {
  for (const auto& [k, v] : env) {
    if (k == key) return &v;
  }
  return nullptr;
}

// Parent links of every process on this node.
struct ProcessTree {
  std::map<pid_t, pid_t> parent_of;
  std::map<pid_t, std::string> command_of;
  std::map<pid_t, std::uint64_t> start_of;

  ProcessTree() {
    for (const os::Pid pid : os::list_processes()) {
      if (auto stat = os::read_stat(pid)) {
        parent_of[pid.value] = stat->parent.value;
        command_of[pid.value] = stat->comm;
        start_of[pid.value] = stat->start_ticks;
      }
    }
  }
  bool descends_from(pid_t pid, pid_t ancestor) const {
    if (ancestor <= 0) return false;
    for (int hops = 0; hops < 64 && pid > 1; ++hops) {
      auto it = parent_of.find(pid);
      if (it == parent_of.end()) return false;
      pid = it->second;
      if (pid == ancestor) return true;
    }
    return false;
  }
};

}  // namespace

std::string launch_key(std::string_view hnp_uri) {
  // Drop quotes a command line may carry; keep "JOBFAMILY.0;tcp://ADDR:PORT" (the job family alone
  // is 16 bits, and two mpiruns may share it).
  while (!hnp_uri.empty() && (hnp_uri.front() == '"' || hnp_uri.front() == '\'')) hnp_uri.remove_prefix(1);
  while (!hnp_uri.empty() && (hnp_uri.back() == '"' || hnp_uri.back() == '\'')) hnp_uri.remove_suffix(1);
  const auto first = hnp_uri.find(';');
  if (first == std::string_view::npos) return std::string(hnp_uri);
  return std::string(hnp_uri.substr(0, hnp_uri.find(';', first + 1)));
}

std::string srun_launch_key(std::string_view port, std::string_view job) {
  return "srun:" + std::string(port) + "@" + std::string(job);
}

std::string srun_launch_key_from(std::string_view port, std::string_view address) {
  return "srun:" + std::string(port) + "#" + std::string(address);
}

bool launched_by_srun(const std::vector<std::string>& launches,
                      const std::vector<std::pair<std::string, std::string>>& environment) {
  const auto* port = find(environment, "SLURM_SRUN_COMM_PORT");
  if (!port || port->empty()) return false;
  const auto known = [&](const std::string& key) {
    return std::find(launches.begin(), launches.end(), key) != launches.end();
  };
  const auto* job = find(environment, "SLURM_JOB_ID");
  const auto* srun_host = find(environment, "SLURM_SRUN_COMM_HOST");
  return (job && !job->empty() && known(srun_launch_key(*port, *job))) ||
         (srun_host && !srun_host->empty() && known(srun_launch_key_from(*port, *srun_host)));
}

std::vector<std::string> launches_under(os::Pid launcher) {
  std::set<std::string> keys;
  const ProcessTree tree;
  std::optional<std::vector<std::string>> addresses;  // read once, and only for an srun
  for (const auto& [pid_value, command] : tree.command_of) {
    if (pid_value != launcher.value && !tree.descends_from(pid_value, launcher.value)) continue;
    const os::Pid pid{pid_value};
    const auto environment = os::read_environ(pid);
    if (environment) {
      if (auto it = environment->find("OMPI_MCA_orte_hnp_uri"); it != environment->end()) {
        keys.insert(launch_key(it->second));
      }
    }
    if (command == "srun") {
      // Inside an allocation srun has the job's id from it; otherwise it allocates one itself,
      // whose id never reaches its /proc environment, and its tasks are told apart from another
      // host's srun on the same port by the address they call it back at.
      std::string job;
      if (environment) {
        for (const char* name : {"SLURM_JOB_ID", "SLURM_JOBID"}) {
          if (auto it = environment->find(name); job.empty() && it != environment->end()) job = it->second;
        }
      }
      if (job.empty() && !addresses) addresses = os::host_addresses();
      for (const std::uint16_t port : os::listening_tcp_ports(pid).value_or(std::vector<std::uint16_t>{})) {
        if (!job.empty()) {
          keys.insert(srun_launch_key(std::to_string(port), job));
          continue;
        }
        for (const auto& address : *addresses) keys.insert(srun_launch_key_from(std::to_string(port), address));
      }
    }
    // "ssh node2 orted ... -mca orte_hnp_uri \"123.0;tcp://...\" ...", as separate arguments or
    // as one remote command string.
    if (auto arguments = os::read_cmdline(pid)) {
      std::string line;
      for (const auto& a : *arguments) line += a + ' ';
      for (auto at = line.find("orte_hnp_uri "); at != std::string::npos; at = line.find("orte_hnp_uri ", at + 1)) {
        auto start = line.find_first_not_of(" \"'", at + 13);
        if (start == std::string::npos) break;
        const auto end = line.find_first_of(" \"'", start);
        keys.insert(launch_key(std::string_view(line).substr(start, end - start)));
      }
    }
  }
  return {keys.begin(), keys.end()};
}

bool is_launcher_or_daemon(const std::string& command) {
  // Open MPI (mpirun, orted; prte* in Open MPI 5), MPICH and Intel MPI (hydra, pmi_proxy), MVAPICH
  // (mpirun_rsh, its per-node mpispawn), and the batch systems' and ssh's daemons.
  static const std::set<std::string> kNotRanks{
      "mpirun",    "mpiexec",    "orterun", "orted",      "prted",    "prterun",         "prte",
      "srun",      "slurmstepd", "slurmd",  "mpirun_rsh", "mpispawn", "hydra_pmi_proxy", "mpiexec.hydra",
      "pmi_proxy", "pbs_mom",    "pbsdsh",  "sshd"};
  return kNotRanks.contains(command) || command.starts_with("parastack");
}

std::optional<RankIdentity> rank_identity(const std::vector<std::pair<std::string, std::string>>& env,
                                          const std::vector<std::pair<std::string, std::string>>& launcher) {
  RankIdentity identity;
  const auto inherited = [&](std::string_view key, const std::string& value) {
    const auto* theirs = find(launcher, key);
    return theirs && *theirs == value;
  };
  // The MPI-specific variables first; SLURM_PROCID is set for every srun task, MPI or not, and for
  // the batch script itself, so it only counts in a numbered step. A variable set for the process
  // itself before one it inherited from its launcher: the ranks of an mpiexec.hydra that srun
  // started as a task carry that task's PMIX_RANK (its launcher's number, 0 in every rank of a
  // one-node job) beside their own PMI_RANK. Only when all it has is inherited does it count
  // (a proxy numbered k by Slurm's PMI-2 that runs rank k).
  static constexpr std::array<std::pair<const char*, const char*>, 4> kRankVariables{{
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMIX_RANK", "PMIX_SIZE"},
      {"PMI_RANK", "PMI_SIZE"},
      {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
  }};
  bool pmix_numbered = false;
  for (const bool own_only : {true, false}) {
    for (const auto& [rank_key, size_key] : kRankVariables) {
      const auto* value = find(env, rank_key);
      if (!value || (own_only && inherited(rank_key, *value))) continue;
      if (auto rank = to_int(*value)) {
        identity.rank = *rank;
        if (const auto* size = find(env, size_key)) identity.world_size = to_int(*size).value_or(0);
        pmix_numbered = std::string_view(rank_key) == "PMIX_RANK";
        break;
      }
    }
    if (identity.rank >= 0) break;
  }
  const auto* step = find(env, "SLURM_STEP_ID");
  if (identity.rank < 0) {
    const auto* procid = find(env, "SLURM_PROCID");
    if (!procid || !step || !to_int(*step)) return std::nullopt;
    identity.rank = to_int(*procid).value_or(-1);
    if (const auto* size = find(env, "SLURM_NTASKS")) identity.world_size = to_int(*size).value_or(0);
    if (identity.rank < 0) return std::nullopt;
  }
  // The instance that numbered the rank: an inherited PMIx namespace is the launcher's step's.
  const auto* ns = find(env, "PMIX_NAMESPACE");
  if (ns && (pmix_numbered || !inherited("PMIX_NAMESPACE", *ns))) {
    identity.instance = *ns;
  } else if (const auto* jobid = find(env, "OMPI_MCA_ess_base_jobid")) {
    identity.instance = "ompi:" + *jobid;
  } else if (const auto* job = find(env, "SLURM_JOB_ID"); job && step) {
    identity.instance = "slurm:" + *job + "." + *step;
  } else {
    identity.instance = "unknown";
  }
  return identity;
}

namespace {

// Whether a process's environment places it in the selected job: a batch job's id, or (for a
// launcher on another node) one of the launcher's Open MPI launches. Descendants of a --pid
// launcher belong to it without asking.
bool in_selected_job(const JobSelector& selector, bool descendant,
                     const std::vector<std::pair<std::string, std::string>>& env) {
  switch (selector.kind) {
    case JobSelector::Kind::Launcher: {
      if (descendant) return true;
      const auto* uri = find(env, "OMPI_MCA_orte_hnp_uri");
      if (uri &&
          std::find(selector.launches.begin(), selector.launches.end(), launch_key(*uri)) != selector.launches.end()) {
        return true;
      }
      return launched_by_srun(selector.launches, env);
    }
    case JobSelector::Kind::Slurm: {
      // "12" is every step of job 12; "12.3" only its step 3 (srun --parastack outside a watched
      // batch job).
      const auto dot = selector.job_id.find('.');
      const auto* job = find(env, "SLURM_JOB_ID");
      if (!job || *job != selector.job_id.substr(0, dot)) return false;
      if (dot == std::string::npos) return true;
      const auto* step = find(env, "SLURM_STEP_ID");
      return step && *step == selector.job_id.substr(dot + 1);
    }
    case JobSelector::Kind::Pbs: {
      const auto* job = find(env, "PBS_JOBID");
      // "123.server" matches "123" and "123.server".
      if (job && (*job == selector.job_id || job->substr(0, job->find('.')) == selector.job_id)) return true;
      // Ranks that an mpirun of the job script started through ssh (Open MPI without Torque's TM
      // launcher, as Debian builds it) carry no PBS_JOBID: the launches the leader found under the
      // script say they are the job's.
      const auto* uri = find(env, "OMPI_MCA_orte_hnp_uri");
      return uri &&
             std::find(selector.launches.begin(), selector.launches.end(), launch_key(*uri)) != selector.launches.end();
    }
  }
  return false;
}

// Drops the processes a rank forked (their parent is the same rank of the same instance), keeps
// the rest in (instance, rank) order.
std::vector<DiscoveredRank> without_forked_children(std::map<pid_t, DiscoveredRank> candidates,
                                                    const std::map<pid_t, pid_t>& parent_of) {
  std::vector<DiscoveredRank> ranks;
  for (auto& [pid_value, rank] : candidates) {
    const auto parent_link = parent_of.find(pid_value);
    const auto parent = parent_link == parent_of.end() ? candidates.end() : candidates.find(parent_link->second);
    const bool forked =
        parent != candidates.end() && parent->second.rank == rank.rank && parent->second.instance == rank.instance;
    if (!forked) ranks.push_back(rank);
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const auto& a, const auto& b) { return std::tie(a.instance, a.rank) < std::tie(b.instance, b.rank); });
  return ranks;
}

// Whose processes the job's ranks are: the launcher's owner, else the user this monitor runs as
// (the scheduler plugins start monitors as the job's user). Nobody else's process is ever a rank.
uid_t job_owner(const JobSelector& selector) {
  if (selector.kind == JobSelector::Kind::Launcher && selector.launcher.value > 0) {
    if (const auto status = os::read_status(selector.launcher)) return status->real_uid;
  }
  return ::geteuid();
}

}  // namespace

Discovery discover_ranks(const JobSelector& selector) {
  Discovery discovery;
  const uid_t owner = job_owner(selector);
  const pid_t self = ::getpid();
  const std::string host = os::host_name();
  const ProcessTree tree;
  const bool by_launch = selector.kind == JobSelector::Kind::Launcher && !selector.launches.empty();

  // The environment of a rank's parent when that is a launcher or daemon (read once each): what a
  // rank inherited from it is not its own (rank_identity). A root-owned one (slurmstepd) is not
  // readable by a monitor of the job's user, and need not be: a task's variables are set in the
  // task, not inherited from slurmstepd.
  std::map<pid_t, std::vector<std::pair<std::string, std::string>>> launchers;
  const auto launcher_environment = [&](pid_t parent) -> const std::vector<std::pair<std::string, std::string>>& {
    auto [it, added] = launchers.try_emplace(parent);
    const auto command = tree.command_of.find(parent);
    if (added && command != tree.command_of.end() && is_launcher_or_daemon(command->second)) {
      if (auto environment = os::read_environ(os::Pid{parent}))
        it->second.assign(environment->begin(), environment->end());
    }
    return it->second;
  };

  std::map<pid_t, DiscoveredRank> candidates;
  for (const auto& [pid_value, command] : tree.command_of) {
    if (pid_value == self || is_launcher_or_daemon(command)) continue;
    const bool descendant = tree.descends_from(pid_value, selector.launcher.value);
    if (selector.kind == JobSelector::Kind::Launcher && !descendant && !by_launch) continue;
    const os::Pid pid{pid_value};
    // Another user's process is not read, let alone traced, even by a monitor running as root,
    // whatever its environment claims.
    const auto status = os::read_status(pid);
    if (!status) continue;  // gone
    if (status->real_uid != owner) {
      if (descendant) {
        discovery.problems.push_back("pid " + std::to_string(pid_value) + " (" + command + "): owned by uid " +
                                     std::to_string(status->real_uid) + ", not by the job's owner (uid " +
                                     std::to_string(owner) + "): not watched");
      }
      continue;
    }
    auto environment = os::read_environ(pid);
    if (!environment) {
      // Only worth reporting when we know the process is part of the job.
      if (descendant && errno != ENOENT && errno != ESRCH) {
        discovery.problems.push_back("pid " + std::to_string(pid_value) + " (" + command +
                                     "): cannot read its environment: " + std::strerror(errno));
      }
      continue;
    }
    const std::vector<std::pair<std::string, std::string>> env(environment->begin(), environment->end());
    if (!in_selected_job(selector, descendant, env)) continue;
    auto identity = rank_identity(env, launcher_environment(tree.parent_of.at(pid_value)));
    if (!identity) continue;
    DiscoveredRank rank;
    rank.rank = identity->rank;
    rank.world_size = identity->world_size;
    rank.pid = pid;
    rank.start_ticks = tree.start_of.at(pid_value);
    rank.threads = os::list_threads(pid).size();
    rank.host = host;
    rank.instance = identity->instance;
    rank.command = command;
    candidates.emplace(pid_value, std::move(rank));
  }
  discovery.ranks = without_forked_children(std::move(candidates), tree.parent_of);
  return discovery;
}

}  // namespace parastack::sampler
