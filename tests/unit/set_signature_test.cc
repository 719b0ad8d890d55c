// What an observation's signatures say (stats/set_signature.h): busy-waiting ranks are told apart
// from active ones, and stay apart whether a sample finds them in the polling call or in the loop.
#include "parastack/stats/set_signature.h"

#include <gtest/gtest.h>

#include <vector>

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

// A spin whose loop (place 50, in a function main called: 9) calls two helpers on every pass.
constexpr std::uint64_t kLoop = 50, kMain = 9, kRelax = 101, kResidual = 102;
RankSnapshot in_helper(std::uint64_t helper, std::uint64_t loop = kLoop) {
  RankSnapshot s = out(helper);
  s.enclosing = {loop, kMain};
  return s;
}

// The set's path at each observation of a rank found at `places` beside one blocked in MPI_Recv.
std::vector<std::uint64_t> paths_of(SetSignatures& signatures, const std::vector<RankSnapshot>& places) {
  std::vector<std::uint64_t> paths;
  double t = 0;
  for (const auto& place : places) {
    const auto o = signatures.observe(t += 0.1, 0, {place, in_mpi("MPI_Recv", 10)});
    EXPECT_NE(o.path, 0u);
    EXPECT_EQ(o.active_path, o.path);
    paths.push_back(o.path);
  }
  return paths;
}

// Moving until it has come back to a place it left (the fourth sample), then still at the loop
// kLoop, whichever helper, kernel or the loop's own code a sample finds it in: its place is the
// loop's own, where a sample in the loop's code alone would stand.
void expect_at_the_loop_from_the_fourth_sample(const std::vector<std::uint64_t>& paths) {
  ASSERT_GE(paths.size(), 5u);
  EXPECT_NE(paths[0], paths[1]);
  EXPECT_NE(paths[1], paths[2]);
  EXPECT_NE(paths[2], paths[3]);
  for (std::size_t i = 4; i < paths.size(); ++i) EXPECT_EQ(paths[i], paths[3]) << i;
  SetSignatures plain;
  EXPECT_EQ(paths[3], plain.observe(1, 0, {out(kLoop), in_mpi("MPI_Recv", 10)}).path);
}

TEST(SetSignatures, ALoopThroughTwoHelpersStandsStillAtTheLoop) {
  SetSignatures signatures;
  const auto paths =
      paths_of(signatures, {in_helper(kRelax), in_helper(kResidual), in_helper(kRelax), in_helper(kResidual),
                            in_helper(kRelax), in_helper(kRelax), out(kLoop), in_helper(kResidual)});
  expect_at_the_loop_from_the_fourth_sample(paths);
}

TEST(SetSignatures, ALoopAndTheOneHelperItCallsAreOnePlace) {
  SetSignatures signatures;
  RankSnapshot loop = out(kLoop);
  loop.enclosing = {kMain, 0};
  const auto paths = paths_of(signatures, {loop, in_helper(kRelax), loop, in_helper(kRelax), in_helper(kRelax), loop});
  EXPECT_NE(paths[0], paths[1]);
  EXPECT_NE(paths[1], paths[2]);
  // From the return to the helper on, the loop's place: where its own code already stood.
  for (std::size_t i = 3; i < paths.size(); ++i) EXPECT_EQ(paths[i], paths[2]) << i;
}

// The same loop whose helpers spend their time in kernels of their own (relax() sweeping rows with
// a row kernel, residual() calling cblas_dnrm2, which runs OpenBLAS's dnrm2_k): samples find it
// three calls in from the loop, in two kernels that share no caller below it.
TEST(SetSignatures, ALoopWhoseHelpersCallKernelsStandsStillAtTheLoopThreeCallsOut) {
  constexpr std::uint64_t kSweep = 201, kRowKernel = 301, kNrm2 = 202, kNrm2Kernel = 302;
  RankSnapshot row = out(kRowKernel), nrm2 = out(kNrm2Kernel), sweep = out(kSweep);
  row.enclosing = {kSweep, kRelax, kLoop};
  nrm2.enclosing = {kNrm2, kResidual, kLoop};
  sweep.enclosing = {kRelax, kLoop, kMain};
  SetSignatures signatures;
  const auto paths = paths_of(signatures, {row, nrm2, row, nrm2, row, sweep, nrm2, row});
  expect_at_the_loop_from_the_fourth_sample(paths);
  // One call deeper (the kernels four calls in) it is not seen: its places share nothing within
  // three calls, and it moves for ever (docs/statistics.md, Known limits).
  RankSnapshot deep_row = out(kRowKernel), deep_nrm2 = out(kNrm2Kernel);
  deep_row.enclosing = {401, kSweep, kRelax};
  deep_nrm2.enclosing = {402, kNrm2, kResidual};
  SetSignatures deeper;
  const auto moving = paths_of(deeper, {deep_row, deep_nrm2, deep_row, deep_nrm2, deep_row, deep_nrm2});
  for (std::size_t i = 1; i < moving.size(); ++i) EXPECT_NE(moving[i], moving[i - 1]) << i;
}

TEST(SetSignatures, ARankWhoseOtherThreadGoesRoundALoopStandsAtItToo) {
  // Its comm thread polls (IN_MPI) while its main thread loops through two helpers: the sampler
  // mixes both threads' places into path and enclosing alike.
  const auto working = [](std::uint64_t helper) {
    RankSnapshot s = in_helper(helper);
    s.state = RankState::InMpi;
    s.mpi_function = "MPI_Iprobe";
    s.at_work_outside = true;
    return s;
  };
  SetSignatures signatures;
  const auto paths =
      paths_of(signatures, {working(kRelax), working(kResidual), working(kRelax), working(kResidual), working(kRelax)});
  EXPECT_NE(paths[2], paths[3]);
  EXPECT_EQ(paths[3], paths[4]);
  EXPECT_FALSE(signatures.is_polling_place(kRelax));  // its poll teaches nothing: it is at work
}

TEST(SetSignatures, PhasesCalledOneAfterTheOtherStillMove) {
  // One function calls three phases in turn: it never comes back to a phase it left.
  SetSignatures signatures;
  const auto paths = paths_of(signatures, {in_helper(101), in_helper(101), in_helper(101), in_helper(102),
                                           in_helper(102), in_helper(102), in_helper(103), in_helper(103)});
  EXPECT_NE(paths[2], paths[3]);
  EXPECT_EQ(paths[3], paths[4]);
  EXPECT_EQ(paths[4], paths[5]);
  EXPECT_NE(paths[5], paths[6]);
}

TEST(SetSignatures, ALoopEndsWhenTheRankLeavesItAndMustComeBackAgain) {
  SetSignatures signatures;
  const auto paths = paths_of(
      signatures, {in_helper(kRelax), in_helper(kResidual), in_helper(kRelax), in_helper(kResidual), in_helper(kRelax),
                   in_mpi("MPI_Allreduce", 12), in_helper(kRelax), in_helper(kResidual), in_helper(kRelax)});
  EXPECT_EQ(paths[3], paths[4]);
  EXPECT_NE(paths[4], paths[5]);
  // After the MPI call it is a rank in a helper again, moving, until four samples come back.
  EXPECT_NE(paths[6], paths[4]);
  EXPECT_NE(paths[7], paths[6]);
  EXPECT_NE(paths[8], paths[7]);
  // A helper of another function (another loop, or another call of it) ends it too.
  SetSignatures other;
  const auto moved = paths_of(
      other, {in_helper(kRelax), in_helper(kResidual), in_helper(kRelax), in_helper(kResidual), in_helper(kRelax, 51)});
  EXPECT_NE(moved[4], moved[3]);
}

TEST(SetSignatures, APollerWorkingInHelpersOfItsPollingLoopIsNoLoop) {
  // Rank 0 polls in the loop at 20 (learned from its MPI_Test), and works in two helpers it calls
  // between polls: how it waits (busy-waiting rules), not a loop that stands still.
  SetSignatures signatures;
  signatures.observe(0, 0, {in_mpi("MPI_Test", 20), in_mpi("MPI_Recv", 10)});
  const auto paths = paths_of(signatures, {in_helper(kRelax, 20), in_helper(kResidual, 20), in_helper(kRelax, 20),
                                           in_helper(kResidual, 20), in_helper(kRelax, 20)});
  for (std::size_t i = 1; i < paths.size(); ++i) EXPECT_NE(paths[i], paths[i - 1]) << i;
  // Nor one called from a helper of the polling loop (the loop two calls out is the poller's).
  SetSignatures deeper;
  deeper.observe(0, 0, {in_mpi("MPI_Test", 20), in_mpi("MPI_Recv", 10)});
  RankSnapshot a = out(201), b = out(202);
  a.enclosing = b.enclosing = {60, 20};
  const auto nested = paths_of(deeper, {a, b, a, b, a});
  for (std::size_t i = 1; i < nested.size(); ++i) EXPECT_NE(nested[i], nested[i - 1]) << i;
  // Nor kernels three calls in from it.
  SetSignatures deepest;
  deepest.observe(0, 0, {in_mpi("MPI_Test", 20), in_mpi("MPI_Recv", 10)});
  a.enclosing = {70, 60, 20};
  b.enclosing = {71, 60, 20};
  const auto kernels = paths_of(deepest, {a, b, a, b, a});
  for (std::size_t i = 1; i < kernels.size(); ++i) EXPECT_NE(kernels[i], kernels[i - 1]) << i;
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
