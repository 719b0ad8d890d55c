// parastack ranks: the MPI ranks of a job on this node, each with its current state.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"

namespace parastack::cli {
namespace {

struct RanksOptions {
  std::string slurm_job, pbs_job;
  int launcher = 0;
  bool json = false;
};

int run_ranks(const RanksOptions& options) {
  sampler::JobSelector selector;
  if (!options.slurm_job.empty()) {
    selector = {sampler::JobSelector::Kind::Slurm, {}, options.slurm_job};
  } else if (!options.pbs_job.empty()) {
    selector = {sampler::JobSelector::Kind::Pbs, {}, options.pbs_job};
  } else {
    selector = {sampler::JobSelector::Kind::Launcher, os::Pid{options.launcher}, {}};
  }
  const auto discovery = sampler::discover_ranks(selector);
  for (const auto& problem : discovery.problems) std::cerr << "parastack ranks: " << problem << "\n";
  sampler::StackSampler stack_sampler;
  nlohmann::json out = nlohmann::json::array();
  if (!options.json) std::printf("%6s %8s %8s %-16s %-20s %s\n", "RANK", "PID", "THREADS", "HOST", "INSTANCE", "STATE");
  for (const auto& rank : discovery.ranks) {
    const auto sample = stack_sampler.sample(rank.pid);
    std::string state = sample.describe();
    if (options.json) {
      nlohmann::json entry{{"rank", rank.rank},         {"pid", rank.pid.value},
                           {"host", rank.host},         {"instance", rank.instance},
                           {"threads", rank.threads},   {"command", rank.command},
                           {"state", state}};
      if (rank.world_size > 0) entry["world_size"] = rank.world_size;
      if (!sample.mpi_function.empty()) entry["mpi_function"] = sample.mpi_function;
      out.push_back(std::move(entry));
    } else {
      if (!sample.mpi_function.empty()) state += " (" + sample.mpi_function + ")";
      std::printf("%6d %8d %8zu %-16s %-20s %s\n", rank.rank, rank.pid.value, rank.threads,
                  rank.host.c_str(), rank.instance.c_str(), state.c_str());
    }
  }
  if (options.json) std::cout << out.dump(2) << "\n";
  if (discovery.ranks.empty()) {
    std::cerr << "parastack ranks: no MPI ranks found\n";
    return kExitNoRanks;
  }
  return kExitOk;
}

}  // namespace

std::function<int()> add_ranks_command(CLI::App& app) {
  auto options = std::make_shared<RanksOptions>();
  auto* command = app.add_subcommand(
      "ranks", "List the MPI ranks of a job on this node with their state (IN_MPI, OUT_MPI or why "
               "it could not be sampled).");
  auto* slurm = command->add_option("--slurm-job", options->slurm_job, "A Slurm job id");
  auto* pbs = command->add_option("--pbs-job", options->pbs_job, "A PBS/Torque job id");
  auto* pid = command->add_option("--pid", options->launcher, "The launcher's pid (mpirun, srun...)")
                  ->check(CLI::PositiveNumber);
  slurm->excludes(pbs)->excludes(pid);
  pbs->excludes(pid);
  command->add_flag("--json", options->json, "A JSON array of {rank, pid, host, state, ...}");
  return [options, slurm, pbs, pid] {
    if (slurm->count() + pbs->count() + pid->count() != 1) {
      std::cerr << "parastack ranks: give one of --slurm-job, --pbs-job or --pid\n";
      return kExitUsage;
    }
    return run_ranks(*options);
  };
}

}  // namespace parastack::cli
