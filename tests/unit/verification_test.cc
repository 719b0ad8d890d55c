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

TEST(Verification, StartupAndShutdownInEveryBindingSpelling) {
  for (const char* name : {"MPI_Init", "PMPI_Init_thread", "mpi_init_", "MPI_INIT_THREAD", "ompi_mpi_init"}) {
    EXPECT_TRUE(is_startup_function(name)) << name;
    EXPECT_FALSE(is_shutdown_function(name)) << name;
  }
  for (const char* name : {"MPI_Finalize", "PMPI_Finalize", "pmpi_finalize__", "MPI_FINALIZE", "ompi_mpi_finalize"}) {
    EXPECT_TRUE(is_shutdown_function(name)) << name;
    EXPECT_FALSE(is_startup_function(name)) << name;
  }
  for (const char* name : {"MPI_Initialized", "MPI_Finalized", "MPI_Recv", "", "init", "finalize", "my_finalize"}) {
    EXPECT_FALSE(is_startup_function(name)) << name;
    EXPECT_FALSE(is_shutdown_function(name)) << name;
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

RankSnapshot at(RankSnapshot s, std::uint64_t path) {
  s.path = path;
  return s;
}

TEST(Verification, PollingAtAnotherPlaceIsAWaitThatEnded) {
  // A healthy polling code: a rank polls for its halo (place 1), works in its loop, then polls for
  // the global sum (place 2). The work it did in between is not needed to see that it moved.
  const auto halo_then_sum = find_progress(
      {{at(in("MPI_Iprobe"), 1), at(out(), 7), at(in("MPI_Test"), 1), at(out(), 8), at(in("MPI_Test"), 2)}});
  ASSERT_TRUE(halo_then_sum.has_value());
  EXPECT_EQ(halo_then_sum->at, 4u);
  EXPECT_EQ(halo_then_sum->from.path, 1u);
  EXPECT_EQ(halo_then_sum->to.path, 2u);
  EXPECT_TRUE(halo_then_sum->changed_place);
  EXPECT_FALSE(find_progress({{in("MPI_Test"), in("MPI_Allreduce")}})->changed_place);
  // A hung poller stays where it waits, whatever it does between polls and whichever polling call
  // of its loop a sample finds (hpcc alternates between MPI_Test and MPI_Testany in one loop: one
  // place). A rank that hops back and forth moved at each hop.
  EXPECT_FALSE(find_progress(
      {{at(in("MPI_Test"), 3), at(out(), 9), at(in("MPI_Testany"), 3), at(out(), 9), at(in("MPI_Test"), 3)}}));
  EXPECT_EQ(progress_columns({{at(in("MPI_Test"), 1), at(in("MPI_Test"), 2), at(out(), 5), at(in("MPI_Test"), 2),
                               at(in("MPI_Test"), 1)}}),
            (std::vector<std::size_t>{1, 4}));
  // An unknown place (path 0: the sampler could not tell) is never a move.
  EXPECT_FALSE(find_progress({{at(in("MPI_Test"), 1), at(in("MPI_Test"), 0), at(in("MPI_Test"), 1)}}));
  // Two hung pollers, each at its own place, with their loops' work in between.
  EXPECT_FALSE(find_progress({{at(in("MPI_Test"), 1), at(out(), 6), at(in("MPI_Test"), 1)},
                              {at(out(), 6), at(in("MPI_Iprobe"), 2), at(out(), 6), at(in("MPI_Iprobe"), 2)}}));
}

// An MPI_THREAD_MULTIPLE rank whose comm thread polls (its own place 1) while its main thread
// works: the rank's place mixes both threads' (10, 11...), its MPI thread's is apart.
RankSnapshot working_beside_poll(std::uint64_t mixed, std::uint64_t poll) {
  RankSnapshot s = at(in("MPI_Iprobe"), mixed);
  s.at_work_outside = true;
  s.mpi_thread_path = poll;
  return s;
}

TEST(Verification, AWorkingThreadGoingRoundItsHelpersBesideAPollIsNoWaitThatEnded) {
  // A main thread spinning through two helpers (mixed places 10 and 11 in turn) beside a comm
  // thread polling on at one place: no step, as a single-threaded rank's spin is none. Read in the
  // mixed place it was "polling at another place" at every other snapshot.
  EXPECT_FALSE(find_progress({{working_beside_poll(10, 1), working_beside_poll(11, 1), working_beside_poll(10, 1),
                               working_beside_poll(11, 1)}}));
  // The comm thread found polling elsewhere while the main thread works: its wait ended.
  const auto ended = find_progress({{working_beside_poll(10, 1), working_beside_poll(11, 2)}});
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->changed_place);
  // The main thread done working, blocked in a call beside the poll, or the other way round: moves.
  EXPECT_TRUE(find_progress({{working_beside_poll(10, 1), at(in("MPI_Allreduce"), 4)}}));
  EXPECT_TRUE(find_progress({{at(in("MPI_Allreduce"), 4), working_beside_poll(10, 1)}}));
  // Its MPI thread's place unknown: never a move.
  EXPECT_FALSE(find_progress({{working_beside_poll(10, 1), working_beside_poll(11, 0), working_beside_poll(10, 1)}}));
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
  // With counts on both, a poller at two places whose count stands is in one loop that polls from
  // both (a helper around MPI_Test called from two call sites): its waits did not end.
  EXPECT_FALSE(find_progress({{counted(at(in("MPI_Test"), 1), 8), counted(at(in("MPI_Test"), 2), 8)}}));
  EXPECT_TRUE(find_progress({{counted(at(in("MPI_Test"), 1), 8), at(in("MPI_Test"), 2)}}));
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

TEST(Verification, IoOrNewMemoryOfAnyRankMeansTheJobIsWorking) {
  using Counts = std::vector<std::optional<WorkCounters>>;
  const auto io = [](std::uint64_t bytes) { return WorkCounters{bytes, 50 << 20}; };
  const Counts before{io(100), io(5000), std::nullopt, io(7)};
  EXPECT_FALSE(find_work(before, Counts{io(100), io(5000 + 4096), io(1u << 30), io(7)}));  // small, unknown
  const auto writer = find_work(before, Counts{io(100), io(5000), std::nullopt, io(7 + (1u << 20))});
  ASSERT_TRUE(writer);
  EXPECT_EQ(writer->rank, 3u);
  EXPECT_EQ(writer->kind, WorkProgress::Kind::Io);
  EXPECT_EQ(describe_work(*writer), "rank 3 is doing I/O: 1.0 MiB");
  EXPECT_EQ(find_work(before, Counts{io(100), io(9000), std::nullopt, io(7)}, 4000)->rank, 1u);
  EXPECT_FALSE(find_work(before, Counts{io(0), io(0), io(0), io(0)}));  // counters never go back: a new pid

  // A rank filling new memory grows in RAM; a hung one does not, and memory given back is no work.
  const auto resident = [](std::uint64_t mib) { return WorkCounters{1000, mib << 20}; };
  const Counts quiet{resident(30), resident(31), resident(29)};
  EXPECT_FALSE(find_work(quiet, quiet)) << "a hung rank maps no new memory";
  EXPECT_FALSE(find_work(quiet, Counts{resident(30), resident(31 + 1), resident(29)}));
  const auto filler = find_work(quiet, Counts{resident(30), resident(31), resident(29 + 24)});
  ASSERT_TRUE(filler);
  EXPECT_EQ(filler->rank, 2u);
  EXPECT_EQ(filler->kind, WorkProgress::Kind::Memory);
  EXPECT_EQ(filler->bytes, std::uint64_t{24} << 20);
  EXPECT_EQ(describe_work(*filler), "rank 2 is filling new memory: +24.0 MiB resident");
  EXPECT_FALSE(find_work(quiet, Counts{resident(30), resident(3), resident(29)}));  // freed
}

// Counters of a rank on `node` that has lived `age` seconds, `ran` of them on a CPU and `waited` in
// the run queue (seconds each).
WorkCounters scheduled(double age, double ran, double waited, int node = 0) {
  const auto ns = [](double seconds) { return static_cast<std::uint64_t>(seconds * 1e9); };
  return WorkCounters{.io_bytes = 1000,
                      .resident_bytes = 50 << 20,
                      .cpu_ns = ns(ran),
                      .run_delay_ns = ns(waited),
                      .age_ns = ns(age),
                      .node = node};
}

TEST(Verification, TheRanksOfANodeThatDoesNotRunThemAreStarved) {
  using Counts = std::vector<std::optional<WorkCounters>>;
  // Four ranks 100 s old that ran 40 % of the time and waited for a CPU 60 % (2 cores, 4 ranks).
  const Counts before(4, scheduled(100, 40, 60));
  // Ten seconds later (three nice -10 hogs arrived): each ran 0.1 s and waited the rest.
  const Counts starved(4, scheduled(110, 40.1, 69.9));
  const auto found = find_starvation(before, starved);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rank, 0u);
  EXPECT_EQ(found->ranks, 4);
  EXPECT_NEAR(found->ran, 0.04, 1e-9);
  EXPECT_NEAR(found->usually_ran, 1.6, 1e-9);
  EXPECT_NEAR(found->waited, 0.99, 1e-9);
  EXPECT_EQ(describe_starvation(*found),
            "the node of rank 0 is short of CPU: its 4 ranks ran on 0.04 CPUs in the last 10.0 s (usually on 1.60) and "
            "waited for one 99 % of the time");
  // A node of the job that is not loaded says nothing; the loaded one is named by its first rank.
  Counts two_nodes_before = before, two_nodes_after = starved;
  for (int r = 0; r < 2; ++r) {
    two_nodes_before[r] = scheduled(100, 40, 60, 7);
    two_nodes_after[r] = scheduled(110, 44, 66, 7);
  }
  for (int r = 2; r < 4; ++r) {
    two_nodes_before[r]->node = two_nodes_after[r]->node = 9;
  }
  const auto one = find_starvation(two_nodes_before, two_nodes_after);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->rank, 2u);
  EXPECT_EQ(one->ranks, 2);
}

TEST(Verification, AHangDoesNotStarveItsNode) {
  using Counts = std::vector<std::optional<WorkCounters>>;
  const Counts before(4, scheduled(100, 40, 60));
  // A spin hang on 2 cores: the spinning rank runs all the time and its yielding peers, though
  // runnable, not at all (measured on ps_solver). The node's ranks ran on 1 CPU: not starved.
  const Counts spin{scheduled(110, 40, 70), scheduled(110, 40, 70), scheduled(110, 50, 60), scheduled(110, 40, 70)};
  EXPECT_FALSE(find_starvation(before, spin));
  // Deadlocked in yielding receives (about as much CPU as before), or asleep (neither runs nor waits).
  EXPECT_FALSE(find_starvation(before, Counts(4, scheduled(110, 44, 66))));
  EXPECT_FALSE(find_starvation(before, Counts(4, scheduled(110, 40, 60))));
  // Together a fifth of their usual CPU, not less, is slowed, not starved.
  EXPECT_FALSE(find_starvation(before, Counts(4, scheduled(110, 40.81, 69.19))));
  // Ranks that ran little but did not wait for a CPU (they slept) are not starved.
  EXPECT_FALSE(find_starvation(before, Counts(4, scheduled(110, 40, 64))));
}

TEST(Verification, StarvationNeedsKnownCountersAndAWindow) {
  using Counts = std::vector<std::optional<WorkCounters>>;
  const Counts before{scheduled(100, 40, 60)};
  EXPECT_TRUE(find_starvation(before, Counts{scheduled(110, 40, 70)}));
  EXPECT_FALSE(find_starvation(before, Counts{scheduled(100.4, 40, 60.4)})) << "under half a second tells nothing";
  EXPECT_FALSE(find_starvation(before, Counts{std::nullopt}));
  EXPECT_FALSE(find_starvation(Counts{std::nullopt}, Counts{scheduled(110, 40, 70)}));
  EXPECT_FALSE(find_starvation(Counts{scheduled(0, 0, 0)}, Counts{scheduled(10, 0, 10)})) << "age unknown";
  EXPECT_FALSE(find_starvation(Counts{WorkCounters{}}, Counts{WorkCounters{}})) << "no schedstat";
  EXPECT_FALSE(find_starvation(before, Counts{scheduled(5, 0, 5)})) << "a new process with the pid";
  EXPECT_FALSE(find_starvation(before, Counts{scheduled(110, 39, 70)})) << "counters went down";
  EXPECT_FALSE(find_starvation(Counts{scheduled(100, 0, 60)}, Counts{scheduled(110, 0, 70)}))
      << "a rank that never ran has no usual share to fall from";
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

// A rank whose comm thread is in MPI while its main thread runs outside it is outside in a check
// (it may be the one spinning for ever), though S counts it in MPI.
TEST(Verification, ARankAtWorkBesideItsThreadInMpiIsOutsideInTheChecksOfAllRanks) {
  RankSnapshot working{RankState::InMpi, "MPI_Iprobe", 7};
  EXPECT_EQ(checked_state(working), RankState::InMpi);
  working.at_work_outside = true;
  EXPECT_EQ(checked_state(working), RankState::OutMpi);
  EXPECT_EQ(checked_state(RankSnapshot{}), RankState::Unknown);
  EXPECT_EQ(checked_state(RankSnapshot{RankState::OutMpi, {}, 3}), RankState::OutMpi);
}

TEST(Verification, NoneOutMeansCommunicationError) {
  using S = RankState;
  EXPECT_TRUE(persistently_out_ranks({{S::InMpi, S::InMpi}, {S::InMpi, S::InMpi}}).empty());
}

}  // namespace
}  // namespace parastack::stats
