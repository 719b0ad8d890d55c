// parastack ranks: the MPI ranks of a job on this node, each with its current state.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "os/proc.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"

namespace parastack::cli {
namespace {

struct RanksOptions {
  JobSelectorOptions job;
  bool json = false;
};

int run_ranks(const RanksOptions& options, const sampler::JobSelector& selector) {
  if (selector.kind == sampler::JobSelector::Kind::Launcher && !os::identify(selector.launcher)) {
    std::cerr << "parastack ranks: no process has pid " << selector.launcher.value << "\n";
    return kExitNoRanks;
  }
  const auto discovery = sampler::discover_ranks(selector);
  for (const auto& problem : discovery.problems) std::cerr << "parastack ranks: " << problem << "\n";
  sampler::StackSampler stack_sampler;
  nlohmann::json out = nlohmann::json::array();
  if (!options.json) std::printf("%6s %8s %8s %-16s %-20s %s\n", "RANK", "PID", "THREADS", "HOST", "INSTANCE", "STATE");
  for (const auto& rank : discovery.ranks) {
    const auto sample = stack_sampler.sample(os::ProcessIdentity{rank.pid, rank.start_ticks});
    std::string state = sample.describe();
    if (options.json) {
      nlohmann::json entry{
          {"rank", rank.rank},       {"pid", rank.pid.value},   {"host", rank.host}, {"instance", rank.instance},
          {"threads", rank.threads}, {"command", rank.command}, {"state", state}};
      if (rank.world_size > 0) entry["world_size"] = rank.world_size;
      if (!sample.mpi_function.empty()) entry["mpi_function"] = sample.mpi_function;
      if (sample.job_control_stopped) entry["stopped_by_signal"] = true;
      out.push_back(std::move(entry));
    } else {
      if (!sample.mpi_function.empty()) state += " (" + sample.mpi_function + ")";
      if (sample.job_control_stopped) state += ", stopped by a signal";
      std::printf("%6d %8d %8zu %-16s %-20s %s\n", rank.rank, rank.pid.value, rank.threads, rank.host.c_str(),
                  rank.instance.c_str(), state.c_str());
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
  auto* command =
      app.add_subcommand("ranks",
                         "List the MPI ranks of a job on this node with their state (IN_MPI, OUT_MPI or why "
                         "it could not be sampled).");
  options->job.add_to(*command);
  command->add_flag("--json", options->json, "A JSON array of {rank, pid, host, state, ...}");
  return [options] {
    const auto selector = options->job.selector("parastack ranks", true);
    return selector ? run_ranks(*options, *selector) : kExitUsage;
  };
}

}  // namespace parastack::cli
