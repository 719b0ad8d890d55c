// Emulated ranks for the monitor network's benchmark (parastack-monitor-bench): a NodeWorker whose
// ranks exist only as random states and STATBench's synthetic stack traces. A bench tool's part,
// never linked into the product.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/node_worker.h"

namespace parastack::bench {

using node::NodeRank;
using node::NodeWorker;
using node::RankRecord;

// Emulated ranks for the monitor network's benchmark (bench/monitor-network.sh, parastack-monitor-bench): monitor
// `index` of `count` pretends to hold ranks [index * per_monitor, (index + 1) * per_monitor) of one instance, in or out
// of MPI at random, with STATBench's synthetic stack traces.
class EmulatedNodeWorker final : public NodeWorker {
 public:
  EmulatedNodeWorker(int index, int count, std::uint32_t per_monitor, std::uint64_t seed);
  ~EmulatedNodeWorker() override;

  std::vector<NodeRank> discover(const std::vector<std::string>& launches) override;
  void adopt(const std::string& instance) override;
  const std::vector<NodeRank>& ranks() const override { return ranks_; }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) override;
  std::vector<stats::RankState> all_states() override;
  std::vector<std::optional<stats::WorkCounters>> work_counters() override { return {}; }
  std::vector<node::HeldRank> held_ranks(double) override { return {}; }
  diagnosis::PrefixTree gather_stacks(std::vector<RankRecord>& records) override;
  void signal(int) override {}
  bool ranks_alive() override { return true; }
  std::uint64_t samples_taken() const override { return samples_taken_; }

 private:
  struct Generator;
  int index_;
  std::unique_ptr<Generator> generator_;
  std::vector<NodeRank> table_, ranks_;
  std::uint64_t samples_taken_ = 0;
};

}  // namespace parastack::bench
