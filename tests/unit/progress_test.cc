#include "parastack/diagnosis/progress.h"

#include <gtest/gtest.h>

namespace parastack::diagnosis {
namespace {

using Activity = RankProgress::Activity;
using Kind = WaitOperation::Kind;
constexpr std::uint64_t kWorld = 1;

// A rank of a `size`-rank job that has entered `world_collectives` collectives on the world.
RankProgress rank_at(Rank rank, int size, std::uint64_t world_collectives) {
  RankProgress r;
  r.rank = rank;
  r.comms.push_back({kWorld, size, static_cast<int>(rank), world_collectives});
  return r;
}

RankProgress in_collective(Rank rank, int size, std::uint64_t sequence, const char* call = "MPI_Allreduce") {
  RankProgress r = rank_at(rank, size, sequence);
  r.activity = Activity::Collective;
  r.call = call;
  r.operation = {Kind::Collective, WaitOperation::kUnknownPeer, WaitOperation::kAnyTag, kWorld, sequence};
  return r;
}

RankProgress receiving(Rank rank, int size, std::uint64_t world_collectives, int from, int tag = 0) {
  RankProgress r = rank_at(rank, size, world_collectives);
  r.activity = Activity::Receive;
  r.call = "MPI_Recv";
  r.operation = {Kind::Receive, from, tag, kWorld, 0};
  return r;
}

TEST(Progress, ARankComputingWhileTheOthersWaitInACollectiveIsTheLeastProgressed) {
  std::vector<RankProgress> ranks{in_collective(0, 4, 5), in_collective(1, 4, 5), rank_at(2, 4, 4),
                                  in_collective(3, 4, 5)};
  const auto a = analyse_progress(ranks, 4);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{2}));
  EXPECT_TRUE(a.deadlocks.empty());
  ASSERT_EQ(a.edges.size(), 3u);
  for (const auto& e : a.edges) {
    EXPECT_EQ(e.to, 2u);
    EXPECT_TRUE(e.collective);
  }
  ASSERT_EQ(a.chain.size(), 1u);
  EXPECT_EQ(a.chain[0].from, 0u);
  EXPECT_EQ(a.chain[0].to, 2u);
  EXPECT_NE(a.summary.find("least-progressed rank(s): 2."), std::string::npos) << a.summary;
}

TEST(Progress, ARankThatSkippedACollectiveIsPrunedOutOfItsCycleWithTheNeighbourItWaitsFor) {
  // Rank 2 skipped collective #5 and waits for a message from rank 1, which is in #5 waiting on 2.
  std::vector<RankProgress> ranks{in_collective(0, 4, 5), in_collective(1, 4, 5), receiving(2, 4, 4, 1),
                                  in_collective(3, 4, 5)};
  const auto a = analyse_progress(ranks, 4);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{2}));
  EXPECT_TRUE(a.deadlocks.empty());
  ASSERT_EQ(a.cycles.size(), 1u);
  EXPECT_EQ(a.cycles[0], (std::vector<Rank>{1, 2}));
}

// ps_poller --deadlock: rank 1 waits in a wildcard receive nobody sends; the others poll for its
// halo (MPI_Test, MPI_Iprobe), which the page does not record. Pollers wait on somebody unknown:
// they are never named, and with nobody else to name the analysis names nobody rather than a poller.
TEST(Progress, RanksPollingInVainAreNeverTheLeastProgressed) {
  std::vector<RankProgress> ranks{rank_at(0, 4, 3), receiving(1, 4, 3, WaitOperation::kAnySource), rank_at(2, 4, 3),
                                  rank_at(3, 4, 3)};
  for (Rank r : {0u, 2u, 3u}) {
    ranks[r].activity = Activity::Other;
    ranks[r].call = "a polling loop (MPI_Test)";
  }
  const auto a = analyse_progress(ranks, 4);
  EXPECT_EQ(a.edges.size(), 3u);  // the wildcard receive still waits on every other member
  EXPECT_TRUE(a.least_progressed.empty());
  EXPECT_NE(a.summary.find("rank(s) 0,2-3 wait in calls whose wait the library does not record"), std::string::npos)
      << a.summary;
  // The same ranks outside MPI (computing) are where the job stopped.
  for (Rank r : {0u, 2u, 3u}) ranks[r].activity = Activity::Outside;
  EXPECT_EQ(analyse_progress(ranks, 4).least_progressed, (std::vector<Rank>{0, 2, 3}));
}

TEST(Progress, TwoRanksReceivingFromEachOtherAreADeadlockAndBothLeastProgressed) {
  std::vector<RankProgress> ranks{in_collective(0, 5, 8), receiving(1, 5, 7, 2, 99), receiving(2, 5, 7, 1, 99),
                                  in_collective(3, 5, 8), in_collective(4, 5, 8)};
  const auto a = analyse_progress(ranks, 5);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{1, 2}));
  ASSERT_EQ(a.deadlocks.size(), 1u);
  EXPECT_EQ(a.deadlocks[0], (std::vector<Rank>{1, 2}));
  EXPECT_TRUE(a.cycles.empty());
  ASSERT_FALSE(a.chain.empty());
  EXPECT_EQ(a.chain.front().from, 0u);
  EXPECT_NE(a.summary.find("deadlock"), std::string::npos) << a.summary;
}

TEST(Progress, ACollectiveOnASubCommunicatorWaitsOnlyOnItsOwnMembers) {
  // Halves {0,1} (comm 77) and {2,3} (comm 88). Rank 0 is in its half's #3, rank 1 (2 entered) computes;
  // ranks 2 and 3 are both in their half's #9: nobody is behind there.
  auto half = [](RankProgress r, std::uint64_t comm, int rank_in_half, std::uint64_t entered, bool inside) {
    r.comms.push_back({comm, 2, rank_in_half, entered});
    if (inside) {
      r.activity = Activity::Collective;
      r.call = "MPI_Bcast";
      r.operation = {Kind::Collective, WaitOperation::kUnknownPeer, WaitOperation::kAnyTag, comm, entered};
    }
    return r;
  };
  std::vector<RankProgress> ranks{half(rank_at(0, 4, 6), 77, 0, 3, true), half(rank_at(1, 4, 6), 77, 1, 2, false),
                                  half(rank_at(2, 4, 6), 88, 0, 9, true), half(rank_at(3, 4, 6), 88, 1, 9, true)};
  const auto a = analyse_progress(ranks, 4);
  ASSERT_EQ(a.edges.size(), 1u);
  EXPECT_EQ(a.edges[0].from, 0u);
  EXPECT_EQ(a.edges[0].to, 1u);
  EXPECT_NE(a.edges[0].why.find("collective #3 on comm 000000000000004d; rank 1 has entered 2"), std::string::npos)
      << a.edges[0].why;
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{1}));
}

TEST(Progress, ACycleThroughCollectivesOnTwoCommunicatorsNamesBothRanks) {
  // Rank 0 entered its half's #3 but only 5 world collectives; rank 1 is in the world's #6 but has
  // entered 2 on the half: each is behind the other on one communicator. Ranks 2 and 3 wait on 0.
  auto r0 = in_collective(0, 4, 5, "MPI_Bcast");
  r0.comms.push_back({77, 2, 0, 3});
  r0.operation = {Kind::Collective, WaitOperation::kUnknownPeer, WaitOperation::kAnyTag, 77, 3};
  auto r1 = in_collective(1, 4, 6);
  r1.comms.push_back({77, 2, 1, 2});
  std::vector<RankProgress> ranks{r0, r1, in_collective(2, 4, 6), in_collective(3, 4, 6)};
  const auto a = analyse_progress(ranks, 4);
  ASSERT_EQ(a.cycles.size(), 1u);
  EXPECT_EQ(a.cycles[0], (std::vector<Rank>{0, 1}));
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{0, 1}));
  for (const auto& e : a.edges) {
    if (e.from == 0) {
      EXPECT_EQ(e.to, 1u);
    }
    if (e.from == 2 || e.from == 3) {
      EXPECT_EQ(e.to, 0u);
    }
  }
}

TEST(Progress, CollectivesOnTwoCommunicatorsEnteredInOppositeOrderCannotBeOrdered) {
  // Rank 0 is in comm 50's #1 (rank 1 has not entered it); rank 1 is in comm 60's #1 (rank 0 has
  // not entered it): a cycle of collective waits; both are named.
  RankProgress r0 = rank_at(0, 2, 0), r1 = rank_at(1, 2, 0);
  r0.comms.push_back({50, 2, 0, 1});
  r0.comms.push_back({60, 2, 0, 0});
  r1.comms.push_back({50, 2, 1, 0});
  r1.comms.push_back({60, 2, 1, 1});
  r0.activity = r1.activity = Activity::Collective;
  r0.call = r1.call = "MPI_Barrier";
  r0.operation = {Kind::Collective, WaitOperation::kUnknownPeer, WaitOperation::kAnyTag, 50, 1};
  r1.operation = {Kind::Collective, WaitOperation::kUnknownPeer, WaitOperation::kAnyTag, 60, 1};
  std::vector<RankProgress> ranks{r0, r1};
  const auto a = analyse_progress(ranks, 2);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{0, 1}));
  EXPECT_TRUE(a.deadlocks.empty());
  ASSERT_EQ(a.cycles.size(), 1u);
}

TEST(Progress, AWildcardReceiveWaitsOnEveryOtherMemberAndIsStillFoundBehindACollective) {
  // Rank 0 waits for a message from anybody; everyone else is in a barrier rank 0 has not entered.
  auto r0 = receiving(0, 4, 2, WaitOperation::kAnySource);
  std::vector<RankProgress> ranks{r0, in_collective(1, 4, 3, "MPI_Barrier"), in_collective(2, 4, 3, "MPI_Barrier"),
                                  in_collective(3, 4, 3, "MPI_Barrier")};
  const auto a = analyse_progress(ranks, 4);
  int from_zero = 0;
  for (const auto& e : a.edges) from_zero += e.from == 0;
  EXPECT_EQ(from_zero, 3);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{0}));
}

TEST(Progress, PendingRequestsOfAWaitAreEdgesAndMpiProcNullIsNobody) {
  RankProgress r0 = rank_at(0, 3, 1);
  r0.activity = Activity::Wait;
  r0.call = "MPI_Waitall";
  r0.wait_total = 3;
  r0.waits = {{Kind::Receive, 2, 4, kWorld, 0},
              {Kind::Send, 1, 4, kWorld, 0},
              {Kind::Receive, WaitOperation::kNullPeer, 4, kWorld, 0}};
  std::vector<RankProgress> ranks{r0, rank_at(1, 3, 1), rank_at(2, 3, 1)};
  const auto a = analyse_progress(ranks, 3);
  ASSERT_EQ(a.edges.size(), 2u);
  EXPECT_EQ(a.edges[0].to, 1u);
  EXPECT_EQ(a.edges[1].to, 2u);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{1, 2}));
  EXPECT_NE(describe(r0).find("MPI_Waitall on 3 request(s)"), std::string::npos) << describe(r0);
}

TEST(Progress, EveryRankInTheSameCollectiveNamesNobody) {
  std::vector<RankProgress> ranks{in_collective(0, 3, 4), in_collective(1, 3, 4), in_collective(2, 3, 4)};
  const auto a = analyse_progress(ranks, 3);
  EXPECT_TRUE(a.edges.empty());
  EXPECT_TRUE(a.least_progressed.empty());
  EXPECT_NE(a.summary.find("no rank waits on another"), std::string::npos) << a.summary;
}

TEST(Progress, ARankWithoutFactsIsReportedAndNeverNamed) {
  // Rank 2's page could not be read; rank 1 waits on it.
  std::vector<RankProgress> ranks{in_collective(0, 3, 2), receiving(1, 3, 1, 2)};
  const auto a = analyse_progress(ranks, 3);
  EXPECT_EQ(a.without_facts, (std::vector<Rank>{2}));
  for (Rank r : a.least_progressed) EXPECT_NE(r, 2u);
  EXPECT_NE(a.summary.find("No facts from rank(s) 2"), std::string::npos) << a.summary;
}

TEST(Progress, AnIdleRankNobodyWaitsOnIsNotASuspect) {
  std::vector<RankProgress> ranks{rank_at(0, 2, 0), rank_at(1, 2, 0)};
  const auto a = analyse_progress(ranks, 2);
  EXPECT_TRUE(a.least_progressed.empty());
  EXPECT_NE(a.summary.find("every rank is outside MPI"), std::string::npos) << a.summary;
}

TEST(Progress, ALongChainIsAnalysedWithoutRecursion) {
  // 200,000 ranks each receiving from the next; the last computes.
  const int n = 200000;
  std::vector<RankProgress> ranks;
  ranks.reserve(n);
  for (int r = 0; r + 1 < n; ++r) ranks.push_back(receiving(static_cast<Rank>(r), n, 0, r + 1));
  ranks.push_back(rank_at(n - 1, n, 0));
  const auto a = analyse_progress(ranks, n);
  EXPECT_EQ(a.least_progressed, (std::vector<Rank>{n - 1}));
  EXPECT_EQ(a.chain.size(), static_cast<std::size_t>(n - 1));
}

TEST(Progress, CommunicatorNames) {
  EXPECT_EQ(comm_name(1), "world");
  EXPECT_EQ(comm_name(0x1234), "0000000000001234");
}

}  // namespace
}  // namespace parastack::diagnosis
