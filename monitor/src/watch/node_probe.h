// The node worker: the ranks of one MPI application instance on this node, sampled for real, seen
// through the watchdog's JobProbe interface. The leader (stats::Watchdog: model and decisions)
// only ever talks to a JobProbe, so the monitor network adds an MPI transport behind the same
// interface rather than a second loop.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "parastack/diagnosis/prefix_tree.h"
#include "parastack/stats/watchdog.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"

namespace parastack::watch {

// A rank as a report lists it.
struct RankRecord {
  int rank = -1;
  int pid = 0;
  std::string host;
  std::string state;         // "IN_MPI", "OUT_MPI" or why it could not be sampled
  std::string mpi_function;  // when IN_MPI
};

class NodeProbe : public stats::JobProbe {
 public:
  // ranks: the instance's ranks, indexed as the watchdog indexes them. job_running is polled while
  // waiting (it also gives the caller a place to forward signals); the probe's clock starts now.
  NodeProbe(std::vector<sampler::DiscoveredRank> ranks, std::function<bool()> job_running,
            sampler::SampleOptions options = {});

  double now() override;
  bool wait_until(double t) override;
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& ranks) override;
  std::vector<std::optional<std::uint64_t>> io_bytes() override;

  // Every rank's stack, merged into one call-graph prefix tree (2D trace/space), and every rank's
  // state at that moment. Each rank is stopped once, for one sample.
  diagnosis::PrefixTree gather_stacks(std::vector<RankRecord>& records);

  const std::vector<sampler::DiscoveredRank>& ranks() const { return ranks_; }
  // Wall-clock (Unix) seconds at probe time t.
  double unix_time(double t) const { return start_unix_ + t; }
  // True while at least one rank of the instance is alive (checked at most once a second).
  bool any_rank_alive();
  std::uint64_t samples_taken() const { return samples_taken_; }

 private:
  std::vector<sampler::DiscoveredRank> ranks_;
  std::function<bool()> job_running_;
  sampler::SampleOptions options_;
  sampler::StackSampler sampler_;
  std::chrono::steady_clock::time_point start_;
  double start_unix_;
  std::chrono::steady_clock::time_point next_alive_check_;
  bool alive_ = true;
  std::uint64_t samples_taken_ = 0;
};

}  // namespace parastack::watch
