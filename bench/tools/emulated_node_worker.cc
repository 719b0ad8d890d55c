#include "emulated_node_worker.h"

#include "parastack/stackbench/emulator.h"
#include "parastack/stats/random.h"

namespace parastack::bench {

struct EmulatedNodeWorker::Generator {
  stackbench::Workload workload;
  stackbench::TraceGenerator traces;
  stats::SplitMix rng;
  Generator(const stackbench::Workload& w, std::uint64_t seed) : workload(w), traces(w), rng(seed) {}
};

EmulatedNodeWorker::EmulatedNodeWorker(int index, int count, std::uint32_t per_monitor, std::uint64_t seed)
    : index_(index) {
  stackbench::Workload workload;
  workload.monitors = static_cast<std::uint32_t>(count);
  workload.tasks_per_monitor = per_monitor;
  generator_ = std::make_unique<Generator>(workload, seed + static_cast<std::uint64_t>(index));
  const int world = count * static_cast<int>(per_monitor);
  table_.reserve(per_monitor);
  for (std::uint32_t i = 0; i < per_monitor; ++i) {
    const int rank = index * static_cast<int>(per_monitor) + static_cast<int>(i);
    table_.push_back({rank, world, 100000 + rank, "emulated" + std::to_string(index), "emulated", "emulated"});
  }
}

EmulatedNodeWorker::~EmulatedNodeWorker() = default;

std::vector<NodeRank> EmulatedNodeWorker::discover(const std::vector<std::string>&) {
  return ranks_.empty() ? table_ : std::vector<NodeRank>{};
}

void EmulatedNodeWorker::adopt(const std::string&) { ranks_ = table_; }

std::vector<stats::RankSnapshot> EmulatedNodeWorker::snapshot(const std::vector<int>& local) {
  std::vector<stats::RankSnapshot> states;
  for (std::size_t i = 0; i < local.size(); ++i) {
    ++samples_taken_;
    const bool out = generator_->rng.uniform() < 0.5;
    // One of a few call paths at random: an emulated rank moves, as a healthy one does.
    const std::uint64_t path = 1 + generator_->rng.below(8);
    states.push_back({out ? stats::RankState::OutMpi : stats::RankState::InMpi, out ? "" : "MPI_Allreduce", path});
  }
  return states;
}

std::vector<stats::RankState> EmulatedNodeWorker::all_states() {
  std::vector<stats::RankState> states(ranks_.size());
  for (auto& s : states) s = generator_->rng.uniform() < 0.5 ? stats::RankState::OutMpi : stats::RankState::InMpi;
  samples_taken_ += ranks_.size();
  return states;
}

diagnosis::PrefixTree EmulatedNodeWorker::gather_stacks(std::vector<RankRecord>& records) {
  records.clear();  // a million records would measure the report, not the merge
  samples_taken_ += ranks_.size();
  return stackbench::build_monitor_tree(generator_->workload, generator_->traces, static_cast<std::uint32_t>(index_));
}

}  // namespace parastack::bench
