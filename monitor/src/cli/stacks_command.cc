// parastack stacks: a one-shot snapshot of a running job's stacks on this node, merged into one
// call-graph prefix tree (like STAT's stat-cl). One sample per rank gives a 2D trace/space tree;
// --samples N gives a 3D trace/space/time tree. Each sample stops a rank once, briefly.
#include <chrono>
#include <iostream>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "node/stack_views.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"

namespace parastack::cli {
namespace {

struct StacksOptions {
  JobSelectorOptions job;
  int samples = 1;
  double interval = 0.2;
  std::string format = "text";
  bool expand_mpi = false;
};

int print_node_stacks(const StacksOptions& options, const sampler::JobSelector& selector) {
  const auto discovery = sampler::discover_ranks(selector);
  for (const auto& problem : discovery.problems) std::cerr << "parastack stacks: " << problem << "\n";
  if (discovery.ranks.empty()) {
    std::cerr << "parastack stacks: no MPI ranks found\n";
    return kExitNoRanks;
  }
  diagnosis::PrefixTree tree(diagnosis::TreeOptions{options.expand_mpi});
  sampler::StackSampler stack_sampler;
  sampler::SampleOptions with_frames;
  with_frames.frames = true;
  std::set<std::string> instances;
  std::set<int> stopped;    // ranks a sample found stopped by a signal
  std::set<int> in_kernel;  // ranks a sample found waiting in the kernel
  for (int round = 0; round < options.samples; ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::duration<double>(options.interval));
    for (const auto& rank : discovery.ranks) {
      instances.insert(rank.instance);
      // By identity, not bare pid: over --samples and --interval a rank may end and its pid pass on.
      const auto sample = stack_sampler.sample(os::ProcessIdentity{rank.pid, rank.start_ticks}, with_frames);
      if (sample.job_control_stopped) stopped.insert(rank.rank);
      if (sample.failure == os::StopFailure::InKernel) in_kernel.insert(rank.rank);
      tree.add(node::stack_trace_of(sample), static_cast<diagnosis::Rank>(rank.rank));
    }
  }
  if (instances.size() > 1) {
    std::cerr << "parastack stacks: note: " << instances.size()
              << " MPI programs found; their rank numbers overlap in one tree\n";
  }
  const auto note = [](const std::set<int>& ranks, const char* what) {
    if (ranks.empty()) return;
    std::string list;
    for (int rank : ranks) list += (list.empty() ? "" : ",") + std::to_string(rank);
    std::cerr << "parastack stacks: note: rank(s) " << list << ": " << what << "\n";
  };
  note(stopped, kStoppedBySignal);
  note(in_kernel, kInKernel);
  const auto views = node::stack_views(tree,
                                       "parastack stacks: " + std::to_string(discovery.ranks.size()) + " ranks, " +
                                           std::to_string(options.samples) + " sample(s) each",
                                       options.format == "svg");
  return node::print_stack_view(views, options.format, std::cout, std::cerr, "parastack stacks") ? kExitOk : kExitUsage;
}

}  // namespace

std::function<int()> add_stacks_command(CLI::App& app) {
  auto options = std::make_shared<StacksOptions>();
  auto* command =
      app.add_subcommand("stacks",
                         "Merge the stacks of a running job's ranks on this node into one call-graph prefix "
                         "tree (STAT-style), with equivalence classes. Each sample stops a rank once.");
  options->job.add_to(*command);
  command->add_option("--samples", options->samples, "Samples per rank (more than 1: a 3D tree)")
      ->check(whole_number_from(1, 10000))
      ->capture_default_str();
  command->add_option("--interval", options->interval, "Seconds between samples")
      ->check(number_from(0.0, 3600.0))
      ->capture_default_str();
  command->add_option("--format", options->format, "text, dot, svg (needs Graphviz) or json")
      ->check(CLI::IsMember({"text", "dot", "svg", "json"}))
      ->capture_default_str();
  command->add_flag("--expand-mpi", options->expand_mpi, "Keep the MPI library's internal frames");
  return [options] {
    const auto selector = options->job.selector("parastack stacks", true);
    return selector ? print_node_stacks(*options, *selector) : kExitUsage;
  };
}

}  // namespace parastack::cli
