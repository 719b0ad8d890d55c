#include "parastack/stackbench/emulator.h"

#include <gtest/gtest.h>

#include <map>

namespace parastack::stackbench {
namespace {

using diagnosis::PrefixTree;
using diagnosis::RankEncoding;

Workload small() {
  Workload w;
  w.monitors = 37;  // not a multiple of the fan-out, so the last parent has fewer children
  w.tasks_per_monitor = 24;
  return w;
}

// Every sample of every rank added to one tree: what any reduction must produce.
PrefixTree reference(const Workload& w) {
  const TraceGenerator generator(w);
  PrefixTree tree;
  for (diagnosis::Rank r = 0; r < w.ranks(); ++r) {
    for (const auto& trace : generator.samples(r)) tree.add(trace, r);
  }
  return tree;
}

TEST(Stackbench, EveryReductionAndEncodingGivesTheSameTree) {
  const auto expected = reference(small());
  for (const auto reduction : {Reduction::Flat, Reduction::Tree}) {
    for (const auto encoding : {RankEncoding::BitVector, RankEncoding::RangeString}) {
      RunConfig config;
      config.workload = small();
      config.reduction = reduction;
      config.fanout = 4;
      config.encode.encoding = encoding;
      config.threads = 2;
      const auto result = run(config);
      EXPECT_TRUE(result.tree == expected) << describe(config);
      EXPECT_EQ(result.tree.root().ranks.size(), small().ranks());
      // 37 monitors -> 10 parents -> 3 parents -> the root
      EXPECT_EQ(result.levels, reduction == Reduction::Flat ? 1u : 3u) << describe(config);
      EXPECT_GT(result.root_bytes, 0u);
      EXPECT_GE(result.total_bytes, result.root_bytes);
    }
  }
}

TEST(Stackbench, ClassesFollowRankModuloClassCount) {
  const auto w = small();
  const auto tree = reference(w);
  // Ranks of one class share their traces, so every class holds whole residues mod 5.
  for (const auto& c : tree.equivalence_classes()) {
    std::map<std::uint32_t, std::size_t> residues;
    c.ranks.for_each([&](diagnosis::Rank r) { ++residues[r % w.classes]; });
    for (const auto& [residue, count] : residues)
      EXPECT_EQ(count, w.ranks() / w.classes + (residue < w.ranks() % w.classes));
  }
  EXPECT_EQ(tree.shape(), diagnosis::TreeShape::TraceSpaceTime);
}

TEST(Stackbench, TheTransportCarriesTheSteps) {
  // A transport that records what it was asked to do, as an MPI transport would send it.
  struct Recording final : Transport {
    std::vector<std::size_t> level_sizes;
    std::vector<std::string> reduce_level(std::vector<std::vector<std::string>> groups,
                                          const MergeStep& step) override {
      level_sizes.push_back(groups.size());
      std::vector<std::string> out;
      for (const auto& g : groups) out.push_back(step(g));
      return out;
    }
  } transport;
  RunConfig config;
  config.workload = small();
  config.fanout = 4;
  const auto result = run(config, transport);
  EXPECT_EQ(transport.level_sizes, (std::vector<std::size_t>{10, 3}));
  EXPECT_TRUE(result.tree == reference(small()));
}

}  // namespace
}  // namespace parastack::stackbench
