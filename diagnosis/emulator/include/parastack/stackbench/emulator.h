// STATBench for parastack: emulated monitors generate synthetic stack traces and merge them through
// the real diagnosis library, so the merge can be measured at a million ranks on two cores
// (Lee et al., "Benchmarking the Stack Trace Analysis Tool for BlueGene/L", ParCo 2007).
//
// As in STATBench, traces are random but controlled by a depth, a breadth and a number of
// equivalence classes: the generator is seeded with rank % classes, so every rank of a class has
// the same samples. Emulated monitors are threads today; the reduction runs through a Transport
// so the same steps can later run in MPI processes of the monitor network.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "parastack/diagnosis/prefix_tree.h"
#include "parastack/diagnosis/serialize.h"

namespace parastack::stackbench {

struct Workload {
  std::uint32_t monitors = 1024;
  std::uint32_t tasks_per_monitor = 128;  // ranks one monitor samples (STATBench: per daemon)
  std::uint32_t depth = 7;                // at most this many calls below main
  std::uint32_t breadth = 2;              // functions to choose from at each call
  std::uint32_t classes = 5;              // equivalence classes: the generator's seed is rank % classes
  std::uint32_t samples_per_task = 3;     // traces per rank: > 1 makes 3D trace/space/time trees
  std::uint64_t ranks() const { return std::uint64_t{monitors} * tasks_per_monitor; }
};

// Deterministic traces. Each class's samples are generated once from its seed: the seed fixes
// them, so generating them again per rank would only measure the random generator.
class TraceGenerator {
 public:
  explicit TraceGenerator(const Workload& workload);
  const std::vector<diagnosis::StackTrace>& samples(diagnosis::Rank rank) const {
    return by_class_[rank % by_class_.size()];
  }

 private:
  std::vector<std::vector<diagnosis::StackTrace>> by_class_;
};

// What one emulated monitor does: add every sample of its ranks to a local tree.
diagnosis::PrefixTree build_monitor_tree(const Workload& workload, const TraceGenerator& generator,
                                         std::uint32_t monitor);

// Decodes every message and merges them into one tree. Throws std::runtime_error on a bad message.
diagnosis::PrefixTree merge_messages(std::span<const std::string> messages);

// One reduction step: a parent's children's messages in, the parent's message out.
using MergeStep = std::function<std::string(std::span<const std::string> children)>;

// How one level of the reduction runs. Threads now; MPI processes once the monitor network exists.
class Transport {
 public:
  virtual ~Transport() = default;
  // groups[i] holds the messages parent i receives; returns what each parent sends up, in order.
  virtual std::vector<std::string> reduce_level(std::vector<std::vector<std::string>> groups,
                                                const MergeStep& step) = 0;
};

// Parents of a level run on a fixed number of threads (each level in parallel).
class ThreadTransport final : public Transport {
 public:
  explicit ThreadTransport(unsigned threads);
  std::vector<std::string> reduce_level(std::vector<std::vector<std::string>> groups, const MergeStep& step) override;
  unsigned threads() const { return threads_; }

 private:
  unsigned threads_;
};

// Runs body(i) for i in [0, count) on `threads` threads.
void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& body);

enum class Reduction {
  Flat,  // the root receives every monitor's message (1-deep tree)
  Tree,  // k-ary: parents of fanout children, level by level, until the root has <= fanout
};

struct RunConfig {
  Workload workload;
  Reduction reduction = Reduction::Tree;
  std::uint32_t fanout = 32;
  diagnosis::EncodeOptions encode;
  unsigned threads = 0;  // 0: std::thread::hardware_concurrency()
};

struct RunResult {
  RunConfig config;
  std::uint32_t levels = 0;      // communication levels including the root
  double build_seconds = 0;      // monitors: add samples to local trees and encode (parallel)
  double merge_seconds = 0;      // from all monitor messages ready to the root's merged tree
  std::uint64_t root_bytes = 0;  // what the root receives
  std::uint64_t largest_message = 0;
  std::uint64_t total_bytes = 0;  // every message on every link
  std::size_t tree_nodes = 0;
  std::size_t classes = 0;
  diagnosis::PrefixTree tree;  // the root's result
};

RunResult run(const RunConfig& config, Transport& transport);
RunResult run(const RunConfig& config);  // with a ThreadTransport

// A markdown table, one row per run.
std::string format_table(std::span<const RunResult> results);
std::string describe(const RunConfig& config);  // "tree k=32, bit vectors"

}  // namespace parastack::stackbench
