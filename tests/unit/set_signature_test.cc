// What an observation's signatures say (stats/set_signature.h): busy-waiting ranks are told apart
// from active ones, and stay apart whether a sample finds them in the polling call or in the loop.
#include "parastack/stats/set_signature.h"

#include <gtest/gtest.h>

namespace parastack::stats {
namespace {

RankSnapshot in_mpi(const char* call, std::uint64_t path) { return {RankState::InMpi, call, path}; }
RankSnapshot out(std::uint64_t path) { return {RankState::OutMpi, {}, path}; }
const RankSnapshot unknown{RankState::Unknown, {}, 0};

TEST(SetSignatures, WithoutPollingBothSignaturesAreTheSame) {
  SetSignatures signatures;
  const auto o = signatures.observe(1, 0, {in_mpi("MPI_Recv", 10), out(11), in_mpi("MPI_Allreduce", 12), out(13)});
  EXPECT_EQ(o.n, 4);
  EXPECT_EQ(o.n_out, 2);
  EXPECT_NE(o.path, 0u);
  EXPECT_EQ(o.active_path, o.path);
  EXPECT_EQ(o.active_out, 2);
  EXPECT_FALSE(o.polling);
}

TEST(SetSignatures, BusyWaitingRanksAreLeftOutOfTheActiveSignature) {
  SetSignatures signatures;
  // Rank 1 spins at 7; the others poll in one loop (place 20), once found in its code.
  const auto a =
      signatures.observe(1, 0, {in_mpi("MPI_Test", 20), out(7), in_mpi("MPI_Testany", 20), in_mpi("MPI_Iprobe", 20)});
  const auto b = signatures.observe(2, 0, {out(20), out(7), in_mpi("MPI_Test", 20), in_mpi("MPI_Test", 20)});
  EXPECT_TRUE(signatures.is_polling_place(20));
  EXPECT_FALSE(signatures.is_polling_place(7));
  EXPECT_TRUE(a.polling);
  EXPECT_EQ(b.n_out, 2);       // S counts the poller seen in its loop code, as the paper's S does
  EXPECT_EQ(b.active_out, 1);  // ... but it waits: only the spinning rank is active
  EXPECT_EQ(b.waiting_out, 1);
  EXPECT_TRUE(few_outside(b));  // one rank outside MPI that does not wait: the picture of a hang
  EXPECT_EQ(a.active_path, b.active_path);
  EXPECT_NE(a.active_path, 0u);
  EXPECT_NE(a.active_path, kEveryoneWaiting);
  // The spinning rank moving is a new active signature.
  const auto c = signatures.observe(3, 0, {out(20), out(8), in_mpi("MPI_Test", 20), in_mpi("MPI_Test", 20)});
  EXPECT_NE(c.active_path, b.active_path);
}

TEST(SetSignatures, ASetOfWaitersHasNoActiveRank) {
  SetSignatures signatures;
  const auto o =
      signatures.observe(1, 0, {in_mpi("MPI_Test", 20), in_mpi("MPI_Testany", 21), unknown, in_mpi("MPI_Iprobe", 0)});
  EXPECT_EQ(o.active_path, kEveryoneWaiting);
  EXPECT_EQ(o.active_out, 0);
  // A polling call whose path is unknown (no application frame) still waits.
  const auto p = signatures.observe(2, 0, {in_mpi("MPI_Test", 0), unknown, in_mpi("MPI_Test", 0), unknown});
  EXPECT_EQ(p.active_path, kEveryoneWaiting);
  EXPECT_EQ(p.path, 0u);
}

TEST(SetSignatures, TooFewKnownRanksGiveNoSignature) {
  SetSignatures signatures;
  const auto o = signatures.observe(1, 0, {out(7), unknown, unknown, unknown});
  EXPECT_EQ(o.path, 0u);
  EXPECT_EQ(o.active_path, 0u);
  // Which ranks are known belongs to the signature: a rank that comes and goes is never still.
  const auto a = signatures.observe(2, 0, {out(7), out(8), unknown, in_mpi("MPI_Recv", 9)});
  const auto b = signatures.observe(3, 0, {out(7), out(8), in_mpi("MPI_Recv", 9), unknown});
  EXPECT_NE(a.path, b.path);
  EXPECT_NE(a.active_path, b.active_path);
}

// With the progress library a sample also carries the rank's count of completed MPI calls.
RankSnapshot counted(RankSnapshot s, std::uint64_t completed) {
  s.mpi_completed = completed;
  return s;
}

TEST(SetSignatures, ACompletedMpiCallIsMovementAtTheSameCallSite) {
  SetSignatures signatures;
  // A loop around one MPI_Allreduce: the same paths at every sample, but calls completed between.
  const auto a = signatures.observe(1, 0, {counted(in_mpi("MPI_Allreduce", 10), 5), counted(out(11), 7)});
  const auto b = signatures.observe(2, 0, {counted(in_mpi("MPI_Allreduce", 10), 6), counted(out(11), 7)});
  const auto c = signatures.observe(3, 0, {counted(in_mpi("MPI_Allreduce", 10), 6), counted(out(11), 7)});
  EXPECT_NE(a.path, b.path);
  EXPECT_NE(a.active_path, b.active_path);
  // Nothing completed and nobody moved: still, as without the library.
  EXPECT_EQ(b.path, c.path);
  EXPECT_EQ(b.active_path, c.active_path);
  EXPECT_NE(c.path, 0u);
  // A rank whose count is unknown (its page unreadable) is judged by its path alone.
  const auto d = signatures.observe(4, 0, {in_mpi("MPI_Allreduce", 10), out(11)});
  const auto e = signatures.observe(5, 0, {in_mpi("MPI_Allreduce", 10), out(11)});
  EXPECT_EQ(d.path, e.path);
}

// An observation progressed when some rank of the set completed an MPI call since the set's previous
// one, whatever its stack shows; per set, and only between two known counts.
TEST(SetSignatures, AnObservationProgressedWhenACountGrewSinceTheSetsPreviousOne) {
  SetSignatures signatures;
  EXPECT_FALSE(signatures.observe(1, 0, {counted(in_mpi("MPI_Test", 20), 3), counted(out(7), 1)}).progressed);
  EXPECT_FALSE(signatures.observe(1, 1, {counted(in_mpi("MPI_Test", 20), 9), counted(out(7), 9)}).progressed);
  EXPECT_FALSE(signatures.observe(2, 0, {counted(out(20), 3), counted(out(7), 1)}).progressed);
  EXPECT_TRUE(signatures.observe(3, 0, {counted(in_mpi("MPI_Test", 20), 3), counted(out(7), 2)}).progressed);
  EXPECT_FALSE(signatures.observe(4, 0, {in_mpi("MPI_Test", 20), counted(out(7), 2)}).progressed);
  EXPECT_FALSE(signatures.observe(5, 0, {counted(in_mpi("MPI_Test", 20), 4), counted(out(7), 2)}).progressed);
  EXPECT_TRUE(signatures.observe(6, 1, {counted(in_mpi("MPI_Test", 20), 10), counted(out(7), 9)}).progressed);
  // Without the library nothing ever progressed.
  EXPECT_FALSE(signatures.observe(7, 2, {in_mpi("MPI_Test", 20), out(7)}).progressed);
  EXPECT_FALSE(signatures.observe(8, 2, {out(21), out(8)}).progressed);
}

TEST(SetSignatures, APollerWithACountIsActiveAndMovesWhenATestSucceeds) {
  SetSignatures signatures;
  // Rank 0 polls in its loop (place 20); rank 1 computes at 7.
  const auto a = signatures.observe(1, 0, {counted(in_mpi("MPI_Test", 20), 3), counted(out(7), 1)});
  const auto b = signatures.observe(2, 0, {counted(out(20), 3), counted(out(7), 1)});
  const auto c = signatures.observe(3, 0, {counted(in_mpi("MPI_Test", 20), 4), counted(out(7), 1)});
  // Hopping between the test and its loop with nothing completed is not movement; a test that
  // found its message is. With its count the poller is an active rank, waiting inside MPI.
  EXPECT_EQ(a.path, b.path);
  EXPECT_NE(b.path, c.path);
  EXPECT_EQ(a.active_path, b.active_path);
  EXPECT_NE(b.active_path, c.active_path);
  EXPECT_EQ(c.active_ranks, 2);
  EXPECT_EQ(b.active_out, 1);  // the computing rank; the poller seen in its loop code waits
  // Which polling call or loop a counted poller is found in does not matter, only its count.
  const auto d = signatures.observe(4, 0, {counted(in_mpi("MPI_Iprobe", 21), 4), counted(out(7), 1)});
  EXPECT_EQ(c.active_path, d.active_path);
  EXPECT_EQ(c.path, d.path);
}

TEST(SetSignatures, ACountedRankThatPolledInVainWaitsWhereverItIsFound) {
  SetSignatures signatures;
  // Rank 0 waits for a halo that never comes: between its polls it works (place 30, never seen
  // polling). Its page says it polled in vain since the last look, and completed nothing.
  RankSnapshot working = counted(out(30), 12);
  working.mpi_polled = true;
  RankSnapshot polling = counted(in_mpi("MPI_Test", 20), 12);
  polling.mpi_polled = true;
  const auto a = signatures.observe(1, 0, {working, counted(in_mpi("MPI_Recv", 8), 4)});
  const auto b = signatures.observe(2, 0, {polling, counted(in_mpi("MPI_Recv", 8), 4)});
  EXPECT_EQ(a.active_path, b.active_path);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.active_out, 0);  // it waits: counted as in MPI
  EXPECT_TRUE(a.counted);
  // Without the polls it is a rank at work in its own code: there, moving is moving.
  const auto c = signatures.observe(3, 0, {counted(out(30), 12), counted(in_mpi("MPI_Recv", 8), 4)});
  EXPECT_NE(c.active_path, b.active_path);
  EXPECT_EQ(c.active_out, 1);
}

TEST(SetSignatures, ASetOfCountedPollersIsWatched) {
  SetSignatures signatures;
  // Every rank polls: without counts nobody is active; with them, everybody is.
  const auto a = signatures.observe(1, 0, {in_mpi("MPI_Test", 20), in_mpi("MPI_Iprobe", 21)});
  EXPECT_EQ(a.active_path, kEveryoneWaiting);
  const auto b = signatures.observe(2, 0, {counted(in_mpi("MPI_Test", 20), 9), counted(in_mpi("MPI_Iprobe", 0), 3)});
  EXPECT_TRUE(has_active_rank(b));
  EXPECT_EQ(b.active_ranks, 2);
  EXPECT_EQ(b.active_out, 0);
  EXPECT_NE(b.path, 0u);  // a poller's unknown path does not matter once its count is known
  EXPECT_TRUE(b.counted);
  // One poller without a count (its page unreadable) waits unseen: not counted.
  const auto c = signatures.observe(3, 0, {counted(in_mpi("MPI_Test", 20), 9), in_mpi("MPI_Iprobe", 21)});
  EXPECT_FALSE(c.counted);
  EXPECT_EQ(c.active_ranks, 1);
  // Nor is a set with a blocked rank whose count is unknown: its place is its call site alone, and
  // a loop around that one call would look still (stasis.h's model-free rule).
  const auto d = signatures.observe(4, 0, {counted(in_mpi("MPI_Recv", 8), 9), in_mpi("MPI_Allreduce", 22)});
  EXPECT_EQ(d.active_ranks, 2);
  EXPECT_FALSE(d.counted);
}

// A rank in MPI_Finalize has no path (the sampler gives it none) and has done its part. It makes
// the set readable: the classic last-message hang, rank 0 in a receive that rank 1 never sent
// while 1..3 finish, is then watched. Beside a rank at work outside MPI it makes the observation
// the job's serial end, which nothing judges (HangModel, StasisModel).
TEST(SetSignatures, RanksInMpiFinalizeAreKnownAndBesideARankAtWorkMakeTheSerialEnd) {
  SetSignatures signatures;
  const RankSnapshot finishing = in_mpi("MPI_Finalize", 0), finishing_ompi = in_mpi("ompi_mpi_finalize", 0);
  const auto last_message = signatures.observe(1, 0, {in_mpi("MPI_Recv", 8), finishing, finishing_ompi, finishing});
  EXPECT_EQ(last_message.n, 4);
  EXPECT_EQ(last_message.finished, 3);
  EXPECT_FALSE(last_message.serial_end);
  EXPECT_EQ(last_message.active_ranks, 1);
  EXPECT_TRUE(has_active_rank(last_message));
  EXPECT_EQ(last_message.path, 0u);  // the stasis model's signature is as it was: one known rank of 4
  // The same receive again is the same active signature: still.
  EXPECT_EQ(signatures.observe(2, 0, {in_mpi("MPI_Recv", 8), finishing, finishing_ompi, finishing}).active_path,
            last_message.active_path);

  const auto serial_end = signatures.observe(3, 0, {out(30), finishing, finishing, finishing});
  EXPECT_EQ(serial_end.finished, 3);
  EXPECT_TRUE(serial_end.serial_end);
  // So is a set whose rank outside MPI could not be placed (an incomplete unwind): it may be at work.
  EXPECT_TRUE(signatures.observe(4, 0, {in_mpi("MPI_Recv", 8), out(0), finishing, finishing}).serial_end);
  // A busy-waiting rank seen in its loop code is no rank at work.
  signatures.observe(5, 0, {in_mpi("MPI_Test", 20), finishing});
  EXPECT_FALSE(signatures.observe(6, 0, {out(20), finishing}).serial_end);
  // Everyone finishing: nobody active, which is never evidence.
  const auto all = signatures.observe(7, 0, {finishing, finishing, finishing, finishing});
  EXPECT_EQ(all.active_path, kEveryoneWaiting);
  EXPECT_FALSE(all.serial_end);
  // MPI_Init is not finished work: a rank there may be waiting for one still preparing to start.
  const auto starting = signatures.observe(
      8, 0, {in_mpi("MPI_Recv", 8), in_mpi("MPI_Init", 0), in_mpi("MPI_Init", 0), in_mpi("MPI_Init_thread", 0)});
  EXPECT_EQ(starting.finished, 0);
  EXPECT_EQ(starting.active_path, 0u);
}

// A rank whose comm thread polls (MPI_Iprobe, so IN_MPI) while its main thread computes: S counts
// it in MPI, as §6 says, but for stillness it works outside MPI, so a set of them is never the
// still picture of a hang, and none of them is a busy-waiter left out of the active signature.
TEST(SetSignatures, ARankAtWorkOnAnotherThreadIsInMpiForSButOutsideForStillness) {
  SetSignatures signatures;
  RankSnapshot working = in_mpi("MPI_Iprobe", 40);
  working.at_work_outside = true;
  RankSnapshot polled_in_vain = working;
  polled_in_vain.mpi_completed = 3;
  polled_in_vain.mpi_polled = true;
  const auto o = signatures.observe(1, 0, {working, working, polled_in_vain, in_mpi("MPI_Allreduce", 12)});
  EXPECT_EQ(o.n, 4);
  EXPECT_EQ(o.n_out, 0);  // S
  EXPECT_EQ(o.at_work_outside, 3);
  EXPECT_FALSE(o.polling);
  EXPECT_FALSE(signatures.is_polling_place(40));
  EXPECT_EQ(o.active_ranks, 4);  // none waits, not even the one whose comm thread polled in vain
  EXPECT_FALSE(few_outside(o));
  EXPECT_FALSE(few_active_outside(o));
  // One such rank of four is "few", as one computing rank is.
  const auto p = signatures.observe(2, 0, {working, in_mpi("MPI_Recv", 10), in_mpi("MPI_Allreduce", 12), unknown});
  EXPECT_EQ(p.at_work_outside, 1);
  EXPECT_TRUE(few_outside(p));
  EXPECT_TRUE(few_active_outside(p));
  // Beside a rank in MPI_Finalize it is the job's serial end, as a computing rank is.
  const auto q = signatures.observe(3, 0, {working, in_mpi("MPI_Finalize", 0), in_mpi("MPI_Finalize", 0), unknown});
  EXPECT_TRUE(q.serial_end);
}

TEST(SetSignatures, PollingPlacesAreBounded) {
  SetSignatures signatures;
  for (std::uint64_t place = 1; place <= SetSignatures::kMaxPollingPlaces + 10; ++place) {
    signatures.observe(1, 0, {in_mpi("MPI_Test", place)});
  }
  EXPECT_TRUE(signatures.is_polling_place(1));
  EXPECT_FALSE(signatures.is_polling_place(SetSignatures::kMaxPollingPlaces + 5));
}

}  // namespace
}  // namespace parastack::stats
