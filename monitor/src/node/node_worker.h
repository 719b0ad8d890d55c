// The node worker: what one monitor does on its node, and nothing else. It finds the job's ranks
// here, samples the ones the leader names, reports every rank's state, merges its ranks' stacks
// into one prefix tree and signals its ranks. It decides nothing: the leader (stats::Watchdog
// behind a ClusterProbe) does, on one node or on thousands, through the same requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "parastack/diagnosis/prefix_tree.h"
#include "parastack/diagnosis/progress.h"
#include "parastack/stats/verification.h"
#include "sampler/progress_reader.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"

namespace parastack::node {

// A rank as a report lists it.
struct RankRecord {
  int rank = -1;
  int pid = 0;
  std::string host;
  std::string state;         // "IN_MPI", "OUT_MPI" or why it could not be sampled
  std::string mpi_function;  // when IN_MPI
  // Its stack from the outermost frame to the first MPI frame, and each frame's call site (the
  // stacks-only order of a communication hang: diagnosis/stack_order.h).
  std::vector<std::string> path;
  std::vector<std::uint64_t> call_sites;
  // What the progress library (--mpi-progress) says the rank waits for; else why not.
  std::optional<diagnosis::RankProgress> progress;
  std::string progress_problem;
};

// A rank on this node, as the leader's rank table holds it.
struct NodeRank {
  int rank = -1;
  int world_size = 0;
  int pid = 0;
  std::string host;
  std::string instance;
  std::string command;
  std::uint64_t start_ticks = 0;  // with pid, the rank's identity (os::ProcessIdentity); not on the wire
};

// One of my ranks traced by another process (a debugger), by its index in ranks(): tracer is its
// pid, or 0 when the rank is free now but a sample of the window held_ranks() asks about found it
// held. Or stopped by a signal (kill -STOP, a suspended job), now or at a sample of that window. Or
// waiting uninterruptibly in the kernel (state D: a stalled file system), now or at such a sample.
struct HeldRank {
  int local = 0;
  int tracer = 0;
  bool stopped = false;
  bool in_kernel = false;
};

class NodeWorker {
 public:
  virtual ~NodeWorker() = default;
  // The ranks here of every MPI program not adopted yet, by instance then rank. `launches`: the
  // Open MPI launches the leader found under the job's launcher (sampler::JobSelector::launches).
  virtual std::vector<NodeRank> discover(const std::vector<std::string>& launches) = 0;
  // From now on "my ranks" are this instance's ranks of the last discover(), in that order.
  virtual void adopt(const std::string& instance) = 0;
  virtual const std::vector<NodeRank>& ranks() const = 0;
  // Sampling of my ranks by their index in ranks(). A rank that cannot be sampled is Unknown.
  virtual std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) = 0;
  // Every rank's state for the checks of all ranks (stats::checked_state).
  virtual std::vector<stats::RankState> all_states() = 0;
  virtual std::vector<std::optional<stats::WorkCounters>> work_counters() = 0;
  // My ranks traced by a process other than this monitor now (from /proc: nobody is stopped), or
  // found so by a sample of the last `within_seconds` (the evidence an alarm is judged on).
  virtual std::vector<HeldRank> held_ranks(double within_seconds) = 0;
  // Every rank's stack (one sample each) merged into one tree; their states into records.
  virtual diagnosis::PrefixTree gather_stacks(std::vector<RankRecord>& records) = 0;
  virtual void signal(int signal) = 0;
  // Whether any of my ranks is still alive (dead and zombie ranks are not).
  virtual bool ranks_alive() = 0;
  virtual std::uint64_t samples_taken() const = 0;
};

// Which of a job's ranks one monitor takes when several monitors share a machine (tests, and
// emulated nodes): monitor `index` of `count` takes ranks r with r * count / world_size == index,
// as a block mapping of the ranks onto `count` nodes would place them. Count 1 takes all.
struct NodeShare {
  int index = 0;
  int count = 1;
  bool takes(int rank, int world_size) const;
};

// Real ranks: discovered in /proc, sampled with ptrace.
class LiveNodeWorker final : public NodeWorker {
 public:
  LiveNodeWorker(sampler::JobSelector selector, NodeShare share = {}, sampler::SampleOptions options = {});

  std::vector<NodeRank> discover(const std::vector<std::string>& launches) override;
  void adopt(const std::string& instance) override;
  const std::vector<NodeRank>& ranks() const override { return ranks_; }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) override;
  std::vector<stats::RankState> all_states() override;
  std::vector<std::optional<stats::WorkCounters>> work_counters() override;
  std::vector<HeldRank> held_ranks(double within_seconds) override;
  diagnosis::PrefixTree gather_stacks(std::vector<RankRecord>& records) override;
  void signal(int signal) override;
  bool ranks_alive() override;
  std::uint64_t samples_taken() const override { return samples_taken_; }

 private:
  // My ranks `local` (indices in ranks()), one sample each, a brief hold by another tracer waited
  // out (sampler::kBriefHold); forgets the gone, remembers the held.
  std::vector<sampler::RankSample> sample_ranks(const std::vector<int>& local, const sampler::SampleOptions& options);

  sampler::JobSelector selector_;
  NodeShare share_;
  sampler::SampleOptions options_;
  sampler::StackSampler sampler_;
  sampler::ProgressCounters progress_counters_;  // ranks that run with the progress library
  std::map<std::string, std::vector<NodeRank>> discovered_;
  std::set<std::string> adopted_;
  std::vector<NodeRank> ranks_;
  std::set<std::string> problems_logged_;
  std::uint64_t samples_taken_ = 0;
  // When a sample last found each rank traced by another process, stopped by a signal, or waiting
  // in the kernel (held_ranks).
  std::map<int, std::chrono::steady_clock::time_point> seen_held_, seen_stopped_, seen_in_kernel_;
};

}  // namespace parastack::node
