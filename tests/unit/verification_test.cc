#include "parastack/stats/verification.h"

#include <gtest/gtest.h>

namespace parastack::stats {
namespace {

RankSnapshot in(const char* function) { return {RankState::InMpi, function}; }
RankSnapshot out() { return {RankState::OutMpi, {}}; }
RankSnapshot unknown() { return {RankState::Unknown, {}}; }

TEST(Verification, PollingFamilyInEveryBindingSpelling) {
  for (const char* name : {"MPI_Test", "PMPI_Test", "MPI_Testany", "MPI_Testsome", "PMPI_Testall", "MPI_Iprobe",
                           "mpi_test_", "MPI_TESTALL", "pmpi_iprobe__"}) {
    EXPECT_TRUE(is_polling_function(name)) << name;
  }
  for (const char* name : {"MPI_Wait", "MPI_Recv", "MPI_Test_cancelled", "MPI_Probe", "Test", "my_test"}) {
    EXPECT_FALSE(is_polling_function(name)) << name;
  }
}

TEST(Verification, HangShowsNoProgress) {
  // Every target blocked in the same call at both snapshots, one spinning outside MPI.
  EXPECT_FALSE(
      find_progress({{in("MPI_Allreduce"), in("PMPI_Allreduce")}, {in("MPI_Wait"), in("MPI_Wait")}, {out(), out()}}));
}

TEST(Verification, MovingBetweenMpiFunctionsIsProgress) {
  const auto evidence = find_progress({{in("MPI_Wait"), in("MPI_Wait")}, {in("MPI_Wait"), in("MPI_Allreduce")}});
  ASSERT_TRUE(evidence.has_value());
  EXPECT_EQ(evidence->rank_index, 1u);
  EXPECT_EQ(evidence->to.mpi_function, "MPI_Allreduce");
}

TEST(Verification, SteppingInOrOutOfABlockingCallIsProgress) {
  EXPECT_TRUE(find_progress({{out(), in("MPI_Recv")}}));
  EXPECT_TRUE(find_progress({{in("MPI_Barrier"), out()}}));
}

TEST(Verification, BusyWaitingIsNotProgress) {
  EXPECT_FALSE(find_progress({{out(), in("MPI_Test"), out(), in("MPI_Testall")}}));
  EXPECT_FALSE(find_progress({{in("MPI_Iprobe"), in("MPI_Test")}}));
  // ...but leaving the wait for another call is.
  EXPECT_TRUE(find_progress({{in("MPI_Test"), in("MPI_Allreduce")}}));
}

RankSnapshot counted(RankSnapshot s, std::uint64_t completed) {
  s.mpi_completed = completed;
  return s;
}

TEST(Verification, ACompletedMpiCallIsProgressWhateverTheStackShows) {
  // With the progress library: a poller whose test found its message, a rank back in the same
  // blocking call of its loop.
  const auto poller = find_progress({{counted(in("MPI_Test"), 8), counted(out(), 8), counted(in("MPI_Test"), 9)}});
  ASSERT_TRUE(poller.has_value());
  EXPECT_EQ(poller->at, 2u);
  EXPECT_TRUE(find_progress({{counted(in("MPI_Allreduce"), 40), counted(in("MPI_Allreduce"), 41)}}));
  // Counts that did not grow are no evidence: a hang stays a hang, with or without the library.
  EXPECT_FALSE(find_progress({{counted(in("MPI_Test"), 8), counted(out(), 8), counted(in("MPI_Testall"), 8)},
                              {counted(in("MPI_Recv"), 3), counted(in("MPI_Recv"), 3)},
                              {counted(in("MPI_Wait"), 5), in("MPI_Wait"), counted(in("MPI_Wait"), 4)}}));
  EXPECT_EQ(progress_columns({{counted(in("MPI_Recv"), 1), counted(in("MPI_Recv"), 1), counted(in("MPI_Recv"), 2)}}),
            std::vector<std::size_t>{2});
}

TEST(Verification, UnknownSnapshotsAreSkippedNotCounted) {
  EXPECT_FALSE(find_progress({{in("MPI_Wait"), unknown(), in("MPI_Wait")}}));
  EXPECT_TRUE(find_progress({{in("MPI_Wait"), unknown(), in("MPI_Bcast")}}));
}

TEST(Verification, IoProgressOfAnyRankMeansTheJobIsWorking) {
  using Counts = std::vector<std::optional<std::uint64_t>>;
  const Counts before{100, 5000, std::nullopt, 7};
  EXPECT_FALSE(find_io_progress(before, Counts{100, 5000 + 4096, 1u << 30, 7}));  // small, unknown
  EXPECT_EQ(find_io_progress(before, Counts{100, 5000, std::nullopt, 7 + (1u << 20)}), 3u);
  EXPECT_EQ(find_io_progress(before, Counts{100, 9000, std::nullopt, 7}, 4000), 1u);
  EXPECT_FALSE(find_io_progress(before, Counts{0, 0, 0, 0}));  // counters never go back: a new pid
}

TEST(Verification, FaultyRanksAreOutInEveryCheck) {
  using S = RankState;
  const std::vector<std::vector<S>> checks{
      {S::InMpi, S::OutMpi, S::OutMpi, S::InMpi, S::Unknown},
      {S::InMpi, S::OutMpi, S::InMpi, S::InMpi, S::Unknown},
      {S::InMpi, S::OutMpi, S::OutMpi, S::Unknown, S::Unknown},
  };
  EXPECT_EQ(persistently_out_ranks(checks), std::vector<int>{1});
}

TEST(Verification, NoneOutMeansCommunicationError) {
  using S = RankState;
  EXPECT_TRUE(persistently_out_ranks({{S::InMpi, S::InMpi}, {S::InMpi, S::InMpi}}).empty());
}

}  // namespace
}  // namespace parastack::stats
