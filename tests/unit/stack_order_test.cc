#include "parastack/diagnosis/stack_order.h"

#include <gtest/gtest.h>

namespace parastack::diagnosis {
namespace {

RankStack at(Rank rank, std::vector<std::string> path, std::vector<std::uint64_t> sites, bool in_mpi = true) {
  return {rank, in_mpi, std::move(path), std::move(sites)};
}

TEST(StackOrder, RanksOutsideMpiWhileTheOthersWaitAreTheSuspects) {
  std::vector<RankStack> ranks{at(0, {"main", "MPI_Allreduce"}, {0x80, 0}), at(1, {"main", "MPI_Allreduce"}, {0x80, 0}),
                               at(2, {"main", "compute"}, {0x40, 0x12}, false)};
  const auto o = order_by_stacks(ranks);
  ASSERT_EQ(o.groups.size(), 2u);
  ASSERT_EQ(o.least_progressed.size(), 1u);
  EXPECT_EQ(o.groups[o.least_progressed[0]].ranks.to_ranges(), "2");
  EXPECT_NE(o.why.find("outside MPI"), std::string::npos) << o.why;
}

TEST(StackOrder, TheGroupAtTheEarlierCallSiteOfOneFunctionIsBehind) {
  // Rank 3 waits in a receive main calls at +0x40; the others in an allreduce at +0x80.
  std::vector<RankStack> ranks;
  for (Rank r : {0u, 1u, 2u}) ranks.push_back(at(r, {"main", "step", "MPI_Allreduce"}, {0x10, 0x80, 0x5}));
  ranks.push_back(at(3, {"main", "step", "MPI_Recv"}, {0x10, 0x40, 0x9}));
  const auto o = order_by_stacks(ranks);
  ASSERT_EQ(o.groups.size(), 2u);
  EXPECT_EQ(o.groups[0].ranks.to_ranges(), "0-2");  // largest first
  ASSERT_EQ(o.least_progressed.size(), 1u);
  EXPECT_EQ(o.groups[o.least_progressed[0]].ranks.to_ranges(), "3");
  EXPECT_NE(o.why.find("step+0x40, before rank(s) 0-2 at step+0x80"), std::string::npos) << o.why;
  EXPECT_NE(o.why.find("loop"), std::string::npos) << "the caveat must be stated";
}

// A group's one-line "where": its last three named frames. Unnamed ones (libffi's, between a
// Python rank's ctypes call and MPI) were shown as "??" and crowded out the frames that say where.
TEST(StackOrder, AGroupIsSummedUpByItsLastNamedFrames) {
  const auto where = [](std::vector<std::string> path) {
    const std::vector<RankStack> ranks{at(0, std::move(path), {})};
    return order_by_stacks(ranks).groups.at(0).where;
  };
  EXPECT_EQ(where({"main", "MPI_Barrier"}), "main > MPI_Barrier");
  EXPECT_EQ(where({"_start", "main", "step", "MPI_Recv"}), "... > main > step > MPI_Recv");
  EXPECT_EQ(where({"main", "allreduce", "ffi_call", "", "", "MPI_Allreduce"}),
            "... > allreduce > ffi_call > ... > MPI_Allreduce");
  EXPECT_EQ(where({"main", "", "compute"}), "main > ... > compute");
  EXPECT_EQ(where({"main", "compute", ""}), "main > compute > ...");
  EXPECT_EQ(where({"", ""}), "??");
}

// A Python frame's name carries its line ("main (ring.py:168)"), so one Python function waiting at
// two lines looked like two functions, and the stacks never ordered a Python job's ranks, although
// the frames carry their instruction offsets for that. Rank 1 waits in a receive at line 168, the
// others in a barrier at line 170 (ps_ring.py deadlock, through ctypes).
TEST(StackOrder, OnePythonFunctionWaitingAtTwoLinesIsInCodeOrder) {
  const std::vector<std::string> module{"_PyEval_EvalFrameDefault", "<module> (/x/ring.py:177)"};
  auto path = [&](const std::string& line, const std::string& mpi) {
    auto p = module;
    p.insert(p.end(), {"main (/x/ring.py:" + line + ")", mpi});
    return p;
  };
  std::vector<RankStack> ranks;
  for (Rank r : {0u, 2u, 3u}) ranks.push_back(at(r, path("170", "MPI_Barrier"), {0x10, 0x20, 0x1c8, 0}));
  ranks.push_back(at(1, path("168", "MPI_Recv"), {0x10, 0x20, 0x1a4, 0}));
  const auto o = order_by_stacks(ranks);
  ASSERT_EQ(o.least_progressed.size(), 1u) << o.why;
  EXPECT_EQ(o.groups[o.least_progressed[0]].ranks.to_ranges(), "1");
  EXPECT_NE(o.why.find("rank(s) 1 wait at main (/x/ring.py:168), before rank(s) 0,2-3 at main (/x/ring.py:170)"),
            std::string::npos)
      << o.why;
  // Two Python functions, or a Python frame beside a C one of the same text, are not ordered.
  const std::vector<RankStack> apart{at(0, {"main (/x/a.py:3)", "MPI_Recv"}, {0x10, 0}),
                                     at(1, {"other (/x/a.py:9)", "MPI_Recv"}, {0x20, 0})};
  EXPECT_TRUE(order_by_stacks(apart).least_progressed.empty());
  const std::vector<RankStack> not_python{at(0, {"f(int)", "MPI_Recv"}, {0x10, 0}),
                                          at(1, {"f(long)", "MPI_Recv"}, {0x20, 0})};
  EXPECT_TRUE(order_by_stacks(not_python).least_progressed.empty());
}

TEST(StackOrder, WhereInsideMpiARankWaitsDoesNotSplitAGroup) {
  std::vector<RankStack> ranks{at(0, {"main", "MPI_Barrier"}, {0x20, 0x111}),
                               at(1, {"main", "MPI_Barrier"}, {0x20, 0x222})};
  const auto o = order_by_stacks(ranks);
  ASSERT_EQ(o.groups.size(), 1u);
  EXPECT_TRUE(o.least_progressed.empty());
  EXPECT_NE(o.why.find("same place"), std::string::npos) << o.why;
}

TEST(StackOrder, PathsPartingInDifferentFunctionsOrUnknownSitesCannotBeOrdered) {
  std::vector<RankStack> ranks{at(0, {"main", "a", "MPI_Recv"}, {0x10, 0x4, 0}),
                               at(1, {"main", "b", "MPI_Recv"}, {0x10, 0x4, 0}),
                               at(2, {"main", "MPI_Barrier"}, {0, 0})};
  const auto o = order_by_stacks(ranks);
  EXPECT_EQ(o.groups.size(), 3u);
  EXPECT_TRUE(o.least_progressed.empty());
  EXPECT_NE(o.why.find("cannot order"), std::string::npos) << o.why;
}

TEST(StackOrder, SeveralEarliestGroupsAreAllNamed) {
  // main calls f (rank 0) and g (rank 1) through one call site (a function pointer): no order
  // between them, both before +0x90.
  std::vector<RankStack> ranks{at(0, {"main", "f", "MPI_Recv"}, {0x10, 0x10, 0}),
                               at(1, {"main", "g", "MPI_Send"}, {0x10, 0x10, 0}),
                               at(2, {"main", "MPI_Barrier"}, {0x90, 0}), at(3, {"main", "MPI_Barrier"}, {0x90, 0})};
  const auto o = order_by_stacks(ranks);
  ASSERT_EQ(o.least_progressed.size(), 2u);
  RankSet named;
  for (auto g : o.least_progressed) named |= o.groups[g].ranks;
  EXPECT_EQ(named.to_ranges(), "0-1");
}

// The classic last message never sent: rank 1 waits for rank 0, which has gone on to MPI_Finalize
// with ranks 2 and 3. The compiler put main's MPI_Finalize call below the receive (a real job,
// 2026-12-07: main+0x1ab and main+0x238), so code order alone named the finished ranks as behind.
// Finished ranks are done: the ranks still waiting are behind them, and only they are ordered.
TEST(StackOrder, RanksInMpiFinalizeAreNeverBehindTheRanksStillWaiting) {
  const auto finished = [](Rank r) {
    RankStack s = at(r, {"main", "ompi_mpi_finalize"}, {0x1ab, 0});
    s.finished = true;
    return s;
  };
  std::vector<RankStack> ranks{finished(0), at(1, {"main", "MPI_Recv"}, {0x238, 0}), finished(2), finished(3)};
  auto o = order_by_stacks(ranks);
  ASSERT_EQ(o.least_progressed.size(), 1u) << o.why;
  EXPECT_EQ(o.groups[o.least_progressed[0]].ranks.to_ranges(), "1");
  EXPECT_NE(o.why.find("rank(s) 1 wait in MPI while rank(s) 0,2-3 have finished"), std::string::npos) << o.why;

  // Two groups still waiting, at two call sites of main: code order among them, the finished aside.
  ranks.push_back(at(4, {"main", "MPI_Barrier"}, {0x300, 0}));
  o = order_by_stacks(ranks);
  ASSERT_EQ(o.least_progressed.size(), 1u) << o.why;
  EXPECT_EQ(o.groups[o.least_progressed[0]].ranks.to_ranges(), "1");
  EXPECT_NE(o.why.find("among them, in code order rank(s) 1 wait at main+0x238, before rank(s) 4"), std::string::npos)
      << o.why;

  // Everyone finished but nobody else waits: nothing to say beyond "the same place".
  const std::vector<RankStack> all{finished(0), finished(1)};
  EXPECT_TRUE(order_by_stacks(all).least_progressed.empty());
}

}  // namespace
}  // namespace parastack::diagnosis
