#include "parastack/diagnosis/prefix_tree.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "parastack/diagnosis/serialize.h"

namespace parastack::diagnosis {
namespace {

Frame app(const char* name) { return Frame{name, "app", "", false}; }
Frame mpi(const char* name) { return Frame{name, "libmpi.so", "", true}; }

struct Sample {
  Rank rank;
  StackTrace trace;
};

// Random samples over a small alphabet, so paths share prefixes, the same function appears at
// several depths, traces end at interior nodes and some go through MPI frames.
std::vector<Sample> random_samples(std::mt19937_64& rng, int count, Rank max_rank) {
  static const char* kNames[] = {"main", "solve", "exchange", "compute", "io"};
  static const char* kMpi[] = {"MPI_Barrier", "MPI_Wait", "opal_progress"};
  std::vector<Sample> samples;
  for (int i = 0; i < count; ++i) {
    Sample s{static_cast<Rank>(rng() % max_rank), {app("main")}};
    const int depth = static_cast<int>(rng() % 5);
    for (int d = 0; d < depth; ++d) {
      if (rng() % 5 == 0) {
        s.trace.push_back(mpi(kMpi[rng() % 3]));
      } else {
        s.trace.push_back(app(kNames[rng() % 5]));
      }
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

PrefixTree build(const std::vector<Sample>& samples, TreeOptions options = {}) {
  PrefixTree tree(options);
  for (const auto& s : samples) tree.add(s.trace, s.rank);
  return tree;
}

// The names a sample leaves in the tree: cut after the first MPI frame unless expanded.
std::vector<std::string> pruned_path(const StackTrace& trace, bool expand_mpi) {
  std::vector<std::string> path;
  for (const auto& frame : trace) {
    path.push_back(node_name(frame));
    if (frame.mpi && !expand_mpi) break;
  }
  return path;
}

TEST(PrefixTree, MergeIsCommutativeAndAssociative) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const auto sa = random_samples(rng, static_cast<int>(rng() % 30), 200);
    const auto sb = random_samples(rng, static_cast<int>(rng() % 30), 200);
    const auto sc = random_samples(rng, static_cast<int>(rng() % 30), 200);
    const PrefixTree a = build(sa), b = build(sb), c = build(sc);

    PrefixTree ab = a, ba = b;
    ab.merge(b);
    ba.merge(a);
    ASSERT_TRUE(ab == ba) << "round " << round;
    ASSERT_EQ(serialize(ab), serialize(ba));

    PrefixTree ab_c = ab, bc = b, a_bc = a;
    ab_c.merge(c);
    bc.merge(c);
    a_bc.merge(bc);
    ASSERT_TRUE(ab_c == a_bc) << "round " << round;
    ASSERT_EQ(serialize(ab_c), serialize(a_bc));

    // And merging equals adding every sample to one tree.
    std::vector<Sample> all = sa;
    all.insert(all.end(), sb.begin(), sb.end());
    all.insert(all.end(), sc.begin(), sc.end());
    ASSERT_TRUE(ab_c == build(all)) << "round " << round;
  }
}

TEST(PrefixTree, EqualityNoticesDifferences) {
  PrefixTree a, b;
  a.add(StackTrace{app("main"), app("solve")}, 1);
  b.add(StackTrace{app("main"), app("solve")}, 2);
  EXPECT_FALSE(a == b);
  PrefixTree c;
  c.add(StackTrace{app("main"), app("solve")}, 1);
  c.add(StackTrace{app("main"), app("solve")}, 1);
  EXPECT_FALSE(a == c);  // same ranks, more samples
  PrefixTree d;
  d.add(StackTrace{app("main"), app("solve")}, 1);
  d.add(StackTrace{app("main")}, 1);
  EXPECT_FALSE(c == d);  // same ranks and counts, but one sample ends at main
}

TEST(PrefixTree, RankSetsAndCountsAreExact) {
  std::mt19937_64 rng(11);
  for (const bool expand : {false, true}) {
    for (int round = 0; round < 100; ++round) {
      const auto samples = random_samples(rng, 1 + static_cast<int>(rng() % 80), 300);
      const PrefixTree tree = build(samples, TreeOptions{.expand_mpi = expand});
      std::map<std::vector<std::string>, std::set<Rank>> ranks;
      std::map<std::vector<std::string>, std::uint64_t> counts;
      for (const auto& s : samples) {
        const auto path = pruned_path(s.trace, expand);
        for (std::size_t k = 1; k <= path.size(); ++k) {
          const std::vector<std::string> prefix(path.begin(), path.begin() + static_cast<long>(k));
          ranks[prefix].insert(s.rank);
          ++counts[prefix];
        }
      }
      ASSERT_EQ(tree.node_count(), ranks.size() + 1);
      EXPECT_EQ(tree.root().samples, samples.size());
      for (NodeId id = 1; id < tree.node_count(); ++id) {
        const auto path = tree.path(id);
        ASSERT_TRUE(ranks.count(path));
        const auto& reference = ranks[path];
        EXPECT_EQ(tree.node(id).ranks.to_vector(), std::vector<Rank>(reference.begin(), reference.end()));
        EXPECT_EQ(tree.node(id).samples, counts[path]);
      }
    }
  }
}

// Brute force: the terminal set of a path is the ranks with a sample that ends exactly there;
// the classes are the distinct non-empty terminal sets.
std::set<std::vector<Rank>> brute_force_classes(const std::vector<Sample>& samples) {
  std::map<std::vector<std::string>, std::set<Rank>> ends;
  for (const auto& s : samples) ends[pruned_path(s.trace, false)].insert(s.rank);
  std::set<std::vector<Rank>> classes;
  for (const auto& [path, ranks] : ends) classes.insert({ranks.begin(), ranks.end()});
  return classes;
}

TEST(PrefixTree, EquivalenceClassesMatchBruteForce) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 300; ++round) {
    // Half the rounds 2D trace/space (one trace per rank, classes partition the ranks), half 3D.
    std::vector<Sample> samples = random_samples(rng, 1 + static_cast<int>(rng() % 60), 100);
    if (round % 2 == 0) {
      std::map<Rank, Sample> one_per_rank;
      for (auto& s : samples) one_per_rank.emplace(s.rank, s);
      samples.clear();
      for (auto& [rank, s] : one_per_rank) samples.push_back(s);
    }
    // Build from two halves merged, so the classes of merged trees are tested too.
    const auto half = samples.begin() + static_cast<long>(samples.size() / 2);
    PrefixTree tree = build({samples.begin(), half});
    tree.merge(build({half, samples.end()}));

    const auto classes = tree.equivalence_classes();
    std::set<std::vector<Rank>> found;
    for (const auto& c : classes) {
      ASSERT_FALSE(c.ranks.empty());
      EXPECT_EQ(c.representative, c.ranks.to_vector().front());
      for (const NodeId id : c.nodes) EXPECT_EQ(tree.node(id).terminal_ranks(), c.ranks);
      found.insert(c.ranks.to_vector());
    }
    ASSERT_EQ(found.size(), classes.size()) << "a class listed twice";
    ASSERT_EQ(found, brute_force_classes(samples)) << "round " << round;
    for (std::size_t i = 1; i < classes.size(); ++i) EXPECT_LT(classes[i - 1].ranks, classes[i].ranks);
    if (round % 2 == 0) {  // 2D: the classes partition the ranks
      std::size_t total = 0;
      for (const auto& c : classes) total += c.ranks.size();
      EXPECT_EQ(total, tree.root().ranks.size());
    }
  }
}

TEST(PrefixTree, SameFunctionOnDifferentPathsIsDifferentNodes) {
  PrefixTree tree;
  tree.add(StackTrace{app("main"), app("solve"), app("exchange")}, 0);
  tree.add(StackTrace{app("main"), app("exchange")}, 1);
  // root, main, solve, exchange under solve, exchange under main
  EXPECT_EQ(tree.node_count(), 5u);
  const auto classes = tree.equivalence_classes();
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(tree.path(classes[0].nodes[0]), (std::vector<std::string>{"main", "solve", "exchange"}));
  EXPECT_EQ(tree.path(classes[1].nodes[0]), (std::vector<std::string>{"main", "exchange"}));
}

TEST(PrefixTree, ALeafThatGrowsChildrenKeepsItsEndingRanks) {
  PrefixTree tree;
  tree.add(StackTrace{app("main"), app("compute")}, 3);
  tree.add(StackTrace{app("main"), app("compute"), mpi("MPI_Allreduce")}, 4);
  const auto classes = tree.equivalence_classes();
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].ranks, RankSet{3});
  EXPECT_EQ(tree.path(classes[0].nodes[0]), (std::vector<std::string>{"main", "compute"}));
  EXPECT_EQ(classes[1].ranks, RankSet{4});
}

TEST(PrefixTree, PruningFoldsBelowTheFirstMpiFrameUnlessExpanded) {
  const StackTrace trace{app("main"), app("exchange"), mpi("MPI_Waitall"), mpi("ompi_request_default_wait_all"),
                         mpi("opal_progress")};
  const StackTrace other{app("main"), app("exchange"), mpi("MPI_Waitall"), mpi("ompi_request_wait"),
                         mpi("opal_progress")};
  PrefixTree folded, expanded(TreeOptions{.expand_mpi = true});
  folded.add(trace, 0);
  folded.add(other, 1);
  expanded.add(trace, 0);
  expanded.add(other, 1);
  // main, exchange, MPI_Waitall: the two ranks wait in the same call and form one class.
  EXPECT_EQ(folded.node_count(), 4u);
  ASSERT_EQ(folded.equivalence_classes().size(), 1u);
  EXPECT_EQ(folded.equivalence_classes()[0].ranks, (RankSet{0, 1}));
  // Expanded: the library internals split them.
  EXPECT_EQ(expanded.node_count(), 8u);
  EXPECT_EQ(expanded.equivalence_classes().size(), 2u);
  EXPECT_TRUE(expanded.folded_at_mpi() == folded);
  EXPECT_FALSE(expanded == folded);
}

TEST(PrefixTree, FoldingEqualsBuildingFolded) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 100; ++round) {
    const auto samples = random_samples(rng, 1 + static_cast<int>(rng() % 50), 64);
    ASSERT_TRUE(build(samples, TreeOptions{.expand_mpi = true}).folded_at_mpi() == build(samples));
  }
}

TEST(PrefixTree, TraceTimeCountsSamplesPerNode) {
  // 2D trace/time: ten samples of rank 5, seven in MPI_Recv and three computing.
  PrefixTree tree;
  for (int i = 0; i < 7; ++i) tree.add(StackTrace{app("main"), app("halo"), mpi("MPI_Recv")}, 5);
  for (int i = 0; i < 3; ++i) tree.add(StackTrace{app("main"), app("compute")}, 5);
  EXPECT_EQ(tree.shape(), TreeShape::TraceTime);
  EXPECT_EQ(tree.root().samples, 10u);
  const auto& main_node = tree.node(tree.root().children[0]);
  EXPECT_EQ(main_node.samples, 10u);
  ASSERT_EQ(main_node.children.size(), 2u);
  EXPECT_EQ(tree.node(main_node.children[0]).name, "compute");
  EXPECT_EQ(tree.node(main_node.children[0]).samples, 3u);
  EXPECT_EQ(tree.node(main_node.children[1]).name, "halo");
  EXPECT_EQ(tree.node(main_node.children[1]).samples, 7u);
  EXPECT_EQ(tree.node(main_node.children[1]).ranks, RankSet{5});
}

TEST(PrefixTree, TraceSpaceTimeHasRankSetsAndCounts) {
  PrefixTree tree;
  for (Rank r = 0; r < 8; ++r) {
    tree.add(StackTrace{app("main"), mpi("MPI_Barrier")}, r);
    tree.add(StackTrace{app("main"), r == 3 ? app("compute") : mpi("MPI_Barrier")}, r);
  }
  EXPECT_EQ(tree.shape(), TreeShape::TraceSpaceTime);
  const auto& main_node = tree.node(tree.root().children[0]);
  EXPECT_EQ(main_node.samples, 16u);
  const auto& barrier = tree.node(main_node.children[0]);
  EXPECT_EQ(barrier.name, "MPI_Barrier");
  EXPECT_EQ(barrier.samples, 15u);
  EXPECT_EQ(barrier.ranks.to_ranges(), "0-7");
  const auto& compute = tree.node(main_node.children[1]);
  EXPECT_EQ(compute.samples, 1u);
  EXPECT_EQ(compute.ranks.to_ranges(), "3");
  // Rank 3 ends in both, so it is in both classes (3D classes may overlap).
  const auto classes = tree.equivalence_classes();
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].ranks.to_ranges(), "0-7");
  EXPECT_EQ(classes[1].ranks.to_ranges(), "3");
  EXPECT_EQ(classes[1].representative, 3u);
}

TEST(PrefixTree, ShapeTellsTheView) {
  PrefixTree tree;
  EXPECT_EQ(tree.shape(), TreeShape::Empty);
  tree.add(StackTrace{app("main")}, 0);
  tree.add(StackTrace{app("main")}, 1);
  EXPECT_EQ(tree.shape(), TreeShape::TraceSpace);
  EXPECT_TRUE(tree.equivalence_classes().size() == 1);
}

TEST(PrefixTree, NodeNames) {
  EXPECT_EQ(node_name(Frame{"solve", "app", "", false}), "solve");
  EXPECT_EQ(node_name(Frame{"solve", "app", "solve.c:42", false}), "solve at solve.c:42");
  EXPECT_EQ(node_name(Frame{"", "libfoo.so", "", false}), "?? in libfoo.so");
  EXPECT_EQ(node_name(Frame{}), "??");
  // Line-level frames are different nodes; an unknown function is named by its module.
  PrefixTree tree;
  tree.add(StackTrace{Frame{"solve", "app", "solve.c:42", false}}, 0);
  tree.add(StackTrace{Frame{"solve", "app", "solve.c:57", false}}, 1);
  tree.add(StackTrace{Frame{"", "libfoo.so", "", false}}, 2);
  EXPECT_EQ(tree.root().children.size(), 3u);
}

TEST(PrefixTree, MergingWithItselfDoublesCounts) {
  PrefixTree tree;
  tree.add(StackTrace{app("main"), app("solve")}, 2);
  tree.merge(tree);
  EXPECT_EQ(tree.root().samples, 2u);
  EXPECT_EQ(tree.node_count(), 3u);
}

}  // namespace
}  // namespace parastack::diagnosis
